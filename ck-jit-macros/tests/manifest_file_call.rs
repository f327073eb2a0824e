//! `#[lazy_kernel(manifest_file = "...")]` end to end: C blobs that no
//! embedded manifest records, declared from a manifest file, compiled by the
//! system C compiler on their first call. Each case runs in a child process
//! of its own, because the runtime reads its environment once per process.

use std::path::Path;
use std::process::Command;

use ck_jit_macros::lazy_kernel;

/// Compiled with FACTOR 3 by the manifest file, 5 by `deployed.json`.
#[lazy_kernel(manifest_file = "fixtures/fallback/ck_jit_manifest.json")]
unsafe extern "C" fn fb_scale(x: i32) -> i32;

#[lazy_kernel(manifest_file = "fixtures/fallback/ck_jit_manifest.json")]
extern "C" {
    fn fb_offset(x: i32) -> i32;
}

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/fallback");

/// Runs [`child_calls_the_kernels`] in a new process with `fallback` as
/// `CK_JIT_MANIFEST`, and returns what it printed.
fn run_child(case: &str, fallback: Option<&Path>) -> String {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "ck-jit-macros-manifest-file-{case}-{}",
        std::process::id()
    ));
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args([
            "child_calls_the_kernels",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("CK_JIT_ROOT_CK_JIT_MACROS_FALLBACK", FIXTURES)
        .env("CK_JIT_CACHE_DIR", &cache)
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_LAUNCHER")
        .env_remove("CK_JIT_MANIFEST");
    if let Some(fallback) = fallback {
        child.env("CK_JIT_MANIFEST", fallback);
    }
    let out = child.output().unwrap();
    let _ = std::fs::remove_dir_all(&cache);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

#[test]
fn without_a_fallback_manifest_the_named_file_compiles_and_calls_the_blobs() {
    let text = run_child("file", None);
    assert!(text.contains("fb_scale(7) = 21"), "{text}");
    assert!(text.contains("fb_offset(7) = 1007"), "{text}");
}

#[test]
fn a_fallback_manifest_that_records_the_blob_is_used_first() {
    // deployed.json compiles fb_scale with FACTOR 5 and lacks fb_offset,
    // which is then still found through the named file.
    let text = run_child("fallback", Some(&Path::new(FIXTURES).join("deployed.json")));
    assert!(text.contains("fb_scale(7) = 35"), "{text}");
    assert!(text.contains("fb_offset(7) = 1007"), "{text}");
}

#[test]
#[ignore = "run in a process of its own by the tests above"]
fn child_calls_the_kernels() {
    assert!(!fb_scale::__SLOT.is_ready());
    // SAFETY: the blob defines `int fb_scale(int)`.
    println!("fb_scale(7) = {}", unsafe { fb_scale(7) });
    assert!(fb_scale::__SLOT.is_ready(), "loaded once, kept");
    fb_offset::prepare().unwrap();
    // SAFETY: the blob defines `int fb_offset(int)`.
    println!("fb_offset(7) = {}", unsafe { fb_offset(7) });
}
