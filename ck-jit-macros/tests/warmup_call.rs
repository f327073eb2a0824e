//! Warming up blobs by name, ahead of their declared kernels' calls: a
//! blob's kernels may name their own entry points (`symbol = "..."`, a
//! family's `symbol`), and warm-up resolves those, as the calls will, not
//! the manifest's. C blobs compiled by the system C compiler. Each case
//! runs in a child process of its own, because the runtime reads its
//! environment once per process and counts compiles for the process.

use std::path::Path;
use std::process::Command;

use ck_jit_macros::lazy_kernel;

static WARM: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("fixtures/warmup/manifest.json"));

#[lazy_kernel(manifest = WARM)]
extern "C" {
    /// The README's case: blob `dot_v2`, whose entry point is `dot`.
    #[lazy_kernel(blob = "dot_v2", symbol = "dot")]
    fn dot(x: i32) -> i32;
    /// One blob, two entry points, one kernel each.
    #[lazy_kernel(blob = "pair_v2", symbol = "first")]
    fn first(x: i32) -> i32;
    #[lazy_kernel(blob = "pair_v2", symbol = "second")]
    fn second(x: i32) -> i32;
    /// The manifest's own symbol spec (the blob's name).
    fn plain(x: i32) -> i32;
}

/// Every member of family `fam` exports `fam_entry`.
#[lazy_kernel(family = "fam", manifest = WARM, symbol = "fam_entry")]
unsafe extern "C" fn fam(x: i32) -> i32;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/warmup");

/// Runs the ignored test `case` in a new process with a cache of its own,
/// and returns what it printed.
fn in_child(case: &str) -> String {
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "ck-jit-macros-warmup-{case}-{}",
        std::process::id()
    ));
    let out = Command::new(std::env::current_exe().unwrap())
        .args([case, "--exact", "--ignored", "--nocapture"])
        .env("CK_JIT_ROOT_CK_JIT_MACROS_WARMUP", FIXTURES)
        .env("CK_JIT_CACHE_DIR", &cache)
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_LAUNCHER")
        .env_remove("CK_JIT_MANIFEST")
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&cache);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("1 passed"), "the case ran: {text}");
    text
}

/// The runtime the kernels of [`WARM`] resolve through.
fn runtime() -> &'static ck_jit_rt::Runtime {
    WARM.runtime().unwrap()
}

/// Warms `blobs` up, asserting that each succeeded.
fn warm(rt: &ck_jit_rt::Runtime, blobs: &[&str]) {
    for (blob, result) in rt.warmup(blobs) {
        if let Err(e) = result {
            panic!("warm-up of {blob}: {e}");
        }
    }
}

fn compiles() -> u64 {
    ck_jit_rt::stats().compiles
}

#[test]
fn warming_up_a_blob_declared_with_a_symbol_leaves_its_call_nothing_to_compile() {
    in_child("child_warms_up_a_blob_declared_with_a_symbol");
}

#[test]
#[ignore = "run in a process of its own by the test above"]
fn child_warms_up_a_blob_declared_with_a_symbol() {
    warm(runtime(), &["dot_v2", "plain"]);
    assert_eq!(compiles(), 2);
    assert!(
        dot::__SLOT.is_ready(),
        "the warm-up filled the kernel's slot"
    );
    assert!(plain::__SLOT.is_ready());
    // SAFETY: the blob defines `int dot(int)`.
    assert_eq!(unsafe { dot(7) }, 21);
    // SAFETY: the blob defines `int plain(int)`.
    assert_eq!(unsafe { plain(7) }, 6);
    assert_eq!(compiles(), 2, "the calls compiled nothing");
}

#[test]
fn a_blob_declared_with_two_symbols_warms_up_both() {
    in_child("child_warms_up_both_symbols_of_a_blob");
}

#[test]
#[ignore = "run in a process of its own by the test above"]
fn child_warms_up_both_symbols_of_a_blob() {
    warm(runtime(), &["pair_v2"]);
    assert!(first::__SLOT.is_ready() && second::__SLOT.is_ready());
    // SAFETY: the blob defines `int first(int)` and `int second(int)`.
    assert_eq!(unsafe { (first(7), second(7)) }, (8, 9));
    assert_eq!(compiles(), 1, "one blob, compiled once");
}

#[test]
fn warming_up_a_family_member_resolves_the_familys_symbol() {
    in_child("child_warms_up_a_family_member");
}

#[test]
#[ignore = "run in a process of its own by the test above"]
fn child_warms_up_a_family_member() {
    warm(runtime(), &["fam_a"]);
    let kernel = fam::by_name("fam_a").unwrap();
    assert!(kernel.member().is_ready(), "the warm-up filled the member");
    // SAFETY: every member of the family defines `int fam_entry(int)`.
    assert_eq!(unsafe { fam::call(kernel, 7) }, 17);
    assert_eq!(compiles(), 1);
}

#[test]
fn preparing_a_declared_blob_together_leaves_its_call_nothing_to_compile() {
    in_child("child_prepares_a_declared_blob");
}

#[test]
#[ignore = "run in a process of its own by the test above"]
fn child_prepares_a_declared_blob() {
    runtime().prepare_together(&["dot_v2", "pair_v2"]).unwrap();
    assert_eq!(compiles(), 2);
    // SAFETY: as in the cases above.
    assert_eq!(unsafe { (dot(7), first(7), second(7)) }, (21, 8, 9));
    assert_eq!(compiles(), 2, "the calls compiled nothing");
}

#[test]
fn the_public_runtime_is_the_one_the_dispatchers_use() {
    in_child("child_warms_up_through_the_public_runtime");
}

#[test]
#[ignore = "run in a process of its own by the test above"]
fn child_warms_up_through_the_public_runtime() {
    let rt = ck_jit_rt::runtime().unwrap();
    assert!(std::ptr::eq(rt, runtime()), "the kernels' own runtime");
    warm(rt, &["dot_v2"]);
    assert!(dot::__SLOT.is_ready());
    // SAFETY: the blob defines `int dot(int)`.
    assert_eq!(unsafe { dot(7) }, 21);
    assert_eq!(compiles(), 1, "the call found the blob loaded");
}
