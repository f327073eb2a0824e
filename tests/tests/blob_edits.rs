//! Editing a blob recompiles no Rust code when the build watches the
//! crate's sources (`Watch::CrateSources`): cargo keeps the crate and its
//! binary fresh, and the runtime still compiles the edited source, whose
//! bytes are part of the cache key. A blob added with its `#[lazy_kernel]`
//! declaration is recorded in the manifest with that change.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use ck_jit_tests::Tree;

fn fixture(t: &Tree) -> PathBuf {
    ck_jit_tests::fixture_crate(t, "blob-edits")
}

/// The target directory, kept between runs so that the dependencies are
/// built once; each run's copy of the crate is a package of its own.
fn target() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("blob-edits-build")
}

/// `cargo build -v` of the crate; its output, which says for each unit
/// whether it was `Fresh` or `Compiling`.
fn cargo_build(dir: &Path) -> String {
    let out = ck_jit_tests::cargo_build_fixture(dir, |c| {
        c.arg("-v").env("CARGO_TARGET_DIR", target());
    });
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "fixture build failed:\n{text}");
    text
}

fn binary() -> PathBuf {
    target().join("debug").join("blob-edits")
}

fn run(cache: &Path) -> String {
    let out: Output = Command::new(binary())
        .env("CK_JIT_CACHE_DIR", cache)
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_LAUNCHER")
        .env_remove("CK_JIT_MANIFEST")
        .output()
        .expect("fixture binary runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "fixture binary failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

fn mtime(path: &Path) -> SystemTime {
    fs::metadata(path).unwrap().modified().unwrap()
}

/// Writes `text` to `path` with a modification time later than the last
/// build's binary, which cargo wrote after everything it compares against:
/// on a file system with coarse timestamps the write is repeated until the
/// clock has moved past it, so that cargo cannot miss the change.
fn write_after_build(path: &Path, text: &str) {
    let built = mtime(&binary());
    loop {
        fs::write(path, text).unwrap();
        if mtime(path) > built {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn compiled_the_crate(log: &str) -> bool {
    log.lines()
        .any(|l| l.trim_start().starts_with("Compiling blob-edits"))
}

#[test]
fn editing_a_blob_keeps_the_crate_fresh_and_the_runtime_compiles_the_edit() {
    let t = Tree::new("blob-edits");
    let dir = fixture(&t);
    let cache = t.path("cache");
    let log = cargo_build(&dir);
    assert!(compiled_the_crate(&log), "{log}");
    assert_eq!(run(&cache), "one=1\n");

    // The blob's content changes, not the set of blobs.
    let built = mtime(&binary());
    write_after_build(&dir.join("kernels/one.c"), "int one(void) { return 11; }\n");
    let log = cargo_build(&dir);
    assert!(
        !compiled_the_crate(&log),
        "the crate was recompiled:\n{log}"
    );
    assert!(
        log.lines()
            .any(|l| l.trim_start().starts_with("Fresh blob-edits")),
        "{log}"
    );
    assert_eq!(mtime(&binary()), built, "the binary was relinked");
    assert_eq!(run(&cache), "one=11\n", "the runtime used the old source");

    // A blob added with its declaration: the change to the crate's sources
    // reruns the build script, and the macro finds the blob in the manifest
    // (a name missing from it would be a compile error).
    fs::write(dir.join("kernels/two.c"), "int two(void) { return 2; }\n").unwrap();
    let main = fs::read_to_string(dir.join("src/main.rs")).unwrap();
    let main = main
        .replace(
            "unsafe extern \"C\" fn one() -> i32;",
            "unsafe extern \"C\" fn one() -> i32;\n\n#[lazy_kernel]\nunsafe extern \"C\" fn two() -> i32;",
        )
        .replace(
            "println!(\"one={}\", unsafe { one() });",
            "println!(\"one={} two={}\", unsafe { one() }, unsafe { two() });",
        );
    write_after_build(&dir.join("src/main.rs"), &main);
    let log = cargo_build(&dir);
    assert!(compiled_the_crate(&log), "{log}");
    assert_eq!(run(&cache), "one=11 two=2\n");
}
