//! Compile-time behaviour of `#[lazy_kernel]` as a user sees it: every case
//! under `tests/ui` must fail with exactly its checked-in `.stderr`, every
//! case under `tests/pass` must compile (warnings denied) and run.

#[test]
fn ui() {
    // Blob names in every case are checked against this fixture; the child
    // cargo and rustc inherit the variable.
    std::env::set_var(
        "CK_JIT_CHECK_MANIFEST",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/manifest.json"),
    );
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
    t.pass("tests/pass/*.rs");
}
