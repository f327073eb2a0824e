//! `CK_JIT_NAME` sets the cache name unless a setter or config does. Alone
//! in its test binary: it changes the process environment.

mod common;

use ck_jit_build::{BlobGroup, Build, Error};
use common::Tree;

#[test]
fn ck_jit_name_applies_below_the_setter_and_is_checked() {
    let t = Tree::new("env-name");
    t.file("k/a.cpp");
    let mut b = Build::new();
    b.root(&t.root)
        .out_dir(&t.out)
        .group(BlobGroup::new("k").glob("k/*.cpp"));

    std::env::set_var("CK_JIT_NAME", "from_env");
    assert_eq!(b.try_manifest().unwrap().name, "from_env");

    std::env::set_var("CK_JIT_NAME", "");
    assert_eq!(b.try_manifest().unwrap().name, "ck_jit");

    std::env::set_var("CK_JIT_NAME", "bad name");
    let e = b.try_manifest().unwrap_err();
    assert!(matches!(e, Error::CacheName { .. }), "{e:?}");

    std::env::set_var("CK_JIT_NAME", "from_env");
    b.name("from_setter");
    assert_eq!(b.try_manifest().unwrap().name, "from_setter");

    std::env::remove_var("CK_JIT_NAME");
    let mut b = Build::new();
    b.root(&t.root)
        .out_dir(&t.out)
        .group(BlobGroup::new("k").glob("k/*.cpp"));
    assert_eq!(b.try_manifest().unwrap().name, "ck_jit");
}

#[test]
fn without_out_dir_writing_is_an_error_naming_the_variable() {
    // Cargo sets OUT_DIR only for build scripts, not for tests.
    if std::env::var_os("OUT_DIR").is_some() {
        return;
    }
    let t = Tree::new("no-out-dir");
    t.file("k/a.cpp");
    let e = Build::new()
        .root(&t.root)
        .name("t")
        .group(BlobGroup::new("k").glob("k/*.cpp"))
        .try_write()
        .unwrap_err();
    assert!(matches!(e, Error::Env { var: "OUT_DIR", .. }), "{e:?}");
}
