//! A manifest that exists but does not parse is a compile error naming it.
//! Its own test binary, because the variable it sets is process-wide.

#[test]
fn broken_manifest() {
    std::env::set_var(
        "CK_JIT_CHECK_MANIFEST",
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/malformed_manifest.json"
        ),
    );
    trybuild::TestCases::new().compile_fail("tests/broken_manifest/*.rs");
}
