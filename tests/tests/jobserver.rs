//! `Runtime::warmup` run by `make -jN` through a `+` recipe takes its
//! compile slots from make's jobserver: with `CK_JIT_JOBS=8` and eight cold
//! blobs, no more than N compiles ever run at once. The same warmup run
//! directly goes past N (so the bound is make's, and the count can fail),
//! and under a recipe without `+` (make names a jobserver whose
//! descriptors it closed) it warns once and keeps its own limit; a run
//! that only hits the cache never looks at the jobserver.
//!
//! The mocked compiler appends `+`/`-` lines around each compile
//! (`running=` mode, `O_APPEND`); the highest running sum is the most
//! compiles that ran at once. Nothing here depends on timing: the compiles
//! sleep only so that they overlap when nothing holds them back.

use std::fs;
use std::path::PathBuf;
use std::process::{Command, Output};

use ck_jit_tests::{c_manifest, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");
const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");
const BLOBS: usize = 8;

/// A tree of eight cold blobs whose compiles record themselves and take
/// 300 ms each; the probe's `--warmup` argv for them.
fn setup(t: &Tree) -> Vec<String> {
    let names: Vec<String> = (0..BLOBS).map(|i| format!("k{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, 2, i as i32);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mode = format!("--mock-mode=running={},sleep=300", running(t).display());
    let m = c_manifest(&t.dir, &refs, MOCK, &[&mode]);
    let manifest = t.write_manifest(&m);
    vec![
        PROBE.to_string(),
        manifest.display().to_string(),
        t.cache_dir().display().to_string(),
        "--warmup".to_string(),
        names.join(","),
    ]
}

fn running(t: &Tree) -> PathBuf {
    t.path("running.log")
}

/// `program` with no `CK_JIT_*` or make variables of the test's own
/// environment (a `make test` around this must not decide the outcome),
/// eight local slots, and the tree's home and cache.
fn command(t: &Tree, program: &str) -> Command {
    let mut c = Command::new(program);
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CK_JIT_")
            || ["MAKEFLAGS", "MFLAGS", "CARGO_MAKEFLAGS", "MAKELEVEL"].contains(&k.as_str())
        {
            c.env_remove(k);
        }
    }
    c.env("CK_JIT_JOBS", BLOBS.to_string())
        .env("HOME", t.path("home"))
        .env("XDG_CACHE_HOME", t.path("xdg"))
        .current_dir(&t.dir);
    c
}

/// Runs `argv` as the only recipe of a Makefile under `make -j<jobs>`,
/// marked `+` (make passes its jobserver) or not.
fn under_make(t: &Tree, argv: &[String], jobs: usize, plus: bool) -> Output {
    let recipe: Vec<String> = argv.iter().map(|a| format!("'{a}'")).collect();
    t.write(
        "Makefile",
        &format!(
            "all:\n\t{}{}\n",
            if plus { "+" } else { "" },
            recipe.join(" ")
        ),
    );
    command(t, "make")
        .arg("-s")
        .arg(format!("-j{jobs}"))
        .output()
        .unwrap_or_else(|e| panic!("GNU make is needed (apt-get install make): {e}"))
}

fn directly(t: &Tree, argv: &[String]) -> Output {
    command(t, &argv[0])
        .args(&argv[1..])
        .output()
        .expect("run the probe")
}

/// The most compiles that ran at once, after checking that all eight ran
/// and ended.
fn most_at_once(t: &Tree, out: &Output) -> usize {
    let text = format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the warmup failed: {text}");
    assert!(
        text.contains(&format!("\"compiles\":{BLOBS}")),
        "not every blob compiled: {text}"
    );
    let log = fs::read_to_string(running(t)).expect("the compilers' running log");
    let (most, started, open) = ck_jit_tests::concurrency(&log, "+", "-");
    assert_eq!((started, open), (BLOBS, 0), "{log}");
    most
}

#[test]
fn warmup_under_make_j3_never_runs_more_than_3_compiles_though_8_are_allowed() {
    let t = Tree::new("jobserver-make3");
    let argv = setup(&t);
    let out = under_make(&t, &argv, 3, true);
    let most = most_at_once(&t, &out);
    eprintln!("make -j3, CK_JIT_JOBS=8: at most {most} compiles at once");
    assert!(most <= 3, "{most} compiles ran at once under make -j3");
}

#[test]
fn warmup_without_make_runs_more_than_3_compiles_at_once() {
    let t = Tree::new("jobserver-none");
    let argv = setup(&t);
    let out = directly(&t, &argv);
    let most = most_at_once(&t, &out);
    eprintln!("no make, CK_JIT_JOBS=8: at most {most} compiles at once");
    assert!(
        most > 3,
        "only {most} compiles overlapped with 8 allowed: the make -j3 test proves nothing"
    );
}

#[test]
fn warmup_under_make_without_plus_warns_once_and_keeps_its_own_limit() {
    let t = Tree::new("jobserver-closed");
    let argv = setup(&t);
    let out = under_make(&t, &argv, 3, false);
    let most = most_at_once(&t, &out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprintln!("make -j3 without '+': at most {most} compiles at once; stderr:\n{stderr}");
    assert_eq!(
        stderr.matches("cannot be used").count(),
        1,
        "expected one warning about the unusable jobserver: {stderr}"
    );
    assert!(
        stderr.contains("MAKEFLAGS") && stderr.contains("'+'"),
        "the warning should name MAKEFLAGS and the fix: {stderr}"
    );
    assert!(
        most > 3,
        "{most} at once: the local limit of 8 should apply"
    );
    // All cached now: a run that compiles nothing never looks at the
    // jobserver, so it has nothing to warn about.
    let again = under_make(&t, &argv, 3, false);
    let stdout = String::from_utf8_lossy(&again.stdout);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(
        again.status.success() && stdout.contains("\"compiles\":0"),
        "{stdout}{stderr}"
    );
    assert!(
        !stderr.contains("jobserver"),
        "cache hits looked at the jobserver: {stderr}"
    );
}
