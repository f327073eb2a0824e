//! `ck_jit_rt::runtime()` in a program that embeds two manifests (two
//! crates' `embed_manifest!()`): no one runtime is the program's, and the
//! error names both.

use ck_jit_rt::__private::Embedded;

static FIRST: Embedded = Embedded::from_json_str(
    r#"{"format":1,"name":"first_crate","root":"/nonexistent","groups":[],"blobs":[]}"#,
);
static SECOND: Embedded = Embedded::from_json_str(
    r#"{"format":1,"name":"second_crate","root":"/nonexistent","groups":[],"blobs":[]}"#,
);

ck_jit_rt::__declare!(&FIRST);
ck_jit_rt::__declare!(&SECOND);

#[test]
fn a_program_with_two_embedded_manifests_has_no_one_runtime() {
    let e = ck_jit_rt::runtime().unwrap_err();
    let ck_jit_rt::Error::ProgramManifest { manifests } = &e else {
        panic!("{e}");
    };
    let mut names = manifests.clone();
    names.sort();
    assert_eq!(names, ["first_crate", "second_crate"]);
    assert!(
        e.to_string().starts_with("this program embeds 2 manifests"),
        "{e}"
    );
}
