//! The whole path in a real downstream crate built by cargo: its build
//! compiles no blob (a recording compiler proves it), its kernels are
//! compiled by the system C compiler on first call and return correct
//! results, and a second process hits the disk cache without running the
//! compiler.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_jit_tests::{workspace, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");

fn fixture(t: &Tree) -> PathBuf {
    ck_jit_tests::fixture_crate(t, "downstream")
}

fn cargo_build(dir: &Path, compiler: &str, log: &Path) -> PathBuf {
    let target = workspace().join("target").join("fixture-build");
    let out = ck_jit_tests::cargo_build_fixture(dir, |c| {
        c.arg("--quiet")
            .env("CARGO_TARGET_DIR", &target)
            .env("FIXTURE_COMPILER", compiler)
            .env("MOCK_CC_LOG", log);
    });
    assert!(
        out.status.success(),
        "fixture build failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("debug").join("downstream")
}

fn run(bin: &Path, cache: &Path, log: &Path, extra_env: &[(&str, &str)]) -> String {
    let mut c = Command::new(bin);
    c.env("CK_JIT_CACHE_DIR", cache).env("MOCK_CC_LOG", log);
    for (k, v) in extra_env {
        c.env(k, v);
    }
    let out = c.output().expect("fixture binary runs");
    assert!(
        out.status.success(),
        "fixture binary failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn lines(p: &Path) -> usize {
    fs::read_to_string(p)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

#[test]
fn downstream_crate_builds_without_compiling_and_compiles_on_first_call() {
    let t = Tree::new("e2e");
    let dir = fixture(&t);
    let log = t.path("compiles.log");
    let bin = cargo_build(&dir, MOCK, &log);
    assert_eq!(lines(&log), 0, "the build ran the blob compiler");

    // First process: every kernel compiled once, results right.
    let cache = t.path("cache");
    let out = run(&bin, &cache, &log, &[]);
    assert!(
        out.contains("add=42 mul=1099511627776 sum=5050 compiles=3 hits=0"),
        "{out}"
    );
    assert_eq!(lines(&log), 3);

    // Second process: all from the disk cache, no compiler run.
    let out = run(&bin, &cache, &log, &[]);
    assert!(out.contains("compiles=0 hits=3"), "{out}");
    assert_eq!(lines(&log), 3);
}

#[test]
fn downstream_kernels_compile_with_the_real_system_c_compiler() {
    let t = Tree::new("e2e-cc");
    let dir = fixture(&t);
    let log = t.path("compiles.log");
    let bin = cargo_build(&dir, MOCK, &log);
    // The manifest names the mock by path; CK_JIT_<PROGRAM> points the
    // runtime at the system compiler instead (the same override a user
    // has for hipcc or nvcc).
    let cc = ck_jit_rt::__internals::find_program("cc").expect("a system C compiler");
    let var = ck_jit_rt::config::compiler_var(MOCK);
    let cache = t.path("cache");
    let out = run(&bin, &cache, &log, &[(&var, cc.to_str().unwrap())]);
    assert!(
        out.contains("add=42 mul=1099511627776 sum=5050 compiles=3"),
        "{out}"
    );
    assert_eq!(
        lines(&log),
        0,
        "the mock ran although the real compiler was selected"
    );
    let out = run(&bin, &cache, &log, &[(&var, cc.to_str().unwrap())]);
    assert!(out.contains("compiles=0 hits=3"), "{out}");
}
