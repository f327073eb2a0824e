//! Compiles are bounded by memory as well as by cores: under a budget
//! (`CK_JIT_MEMORY_BUDGET`) only as many run at once as their estimates
//! fit, the estimate being `CK_JIT_JOB_MEMORY` or learnt from the peak
//! resident size of the group's earlier compiles (kept in the cache). A
//! compiler killed by a signal, as the out-of-memory killer kills, is
//! retried once and reported as killed, never remembered as a broken blob.
//!
//! The tests of this binary share the process's compile slots and
//! variables, so they run one at a time.

use std::fs;
use std::path::Path;
use std::sync::{Mutex, MutexGuard, Once};

use ck_jit_build::manifest::Manifest;
use ck_jit_rt::config::Config;
use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");

/// The manifest's name and the group `c_manifest` writes: the key of the
/// group's estimate.
const GROUP_KEY: &str = "ck_jit_test/c";

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, m: &log::Metadata<'_>) -> bool {
        m.level() <= log::Level::Warn
    }
    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            LINES.lock().unwrap().push(record.args().to_string());
        }
    }
    fn flush(&self) {}
}

/// The warnings logged so far.
fn warnings() -> Vec<String> {
    static SET: Once = Once::new();
    SET.call_once(|| {
        log::set_logger(&Capture).expect("no other logger");
        log::set_max_level(log::LevelFilter::Warn);
    });
    LINES.lock().unwrap().clone()
}

/// The settings of the tests, with the memory variables set as given
/// (read through the environment, as a user sets them).
fn config_with(job_memory: Option<&str>, budget: Option<&str>) -> Config {
    let set = |name: &str, v: Option<&str>| match v {
        Some(v) => std::env::set_var(name, v),
        None => std::env::remove_var(name),
    };
    set("CK_JIT_JOB_MEMORY", job_memory);
    set("CK_JIT_MEMORY_BUDGET", budget);
    let c = test_config();
    set("CK_JIT_JOB_MEMORY", None);
    set("CK_JIT_MEMORY_BUDGET", None);
    assert!(c.problems.is_empty(), "{:?}", c.problems);
    c
}

/// The most compiles that ran at once, from the `+`/`-` lines the mock
/// compiler's `running=` mode appends.
fn most_at_once(file: &Path) -> i32 {
    let text = fs::read_to_string(file).unwrap_or_default();
    let mut now = 0;
    let mut most = 0;
    for line in text.lines() {
        now += if line == "+" { 1 } else { -1 };
        most = most.max(now);
    }
    most
}

/// The blob `name` (`x * mul + add`) in `t`, and a manifest of it
/// compiled by the mock compiler with its log and `mode`.
fn one_blob(t: &Tree, name: &str, mul: i32, add: i32, mode: &str) -> Manifest {
    t.c_blob(name, mul, add);
    let log = format!("--mock-log={}", t.compile_log().display());
    c_manifest(&t.dir, &[name], MOCK, &[&log, mode])
}

const BLOBS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

/// Warms `BLOBS` up with eight compile slots, each compile holding
/// `hold_mib` and waiting until two run at once (so that two do); returns
/// the most that ran at once.
fn warm_six(t: &Tree, config: Config, hold_mib: u32) -> i32 {
    for (i, n) in BLOBS.iter().enumerate() {
        t.c_blob(n, i as i32 + 1, 0);
    }
    let running = t.path("running");
    let _ = fs::remove_file(&running);
    let log = format!("--mock-log={}", t.compile_log().display());
    let mode = format!(
        "--mock-mode=hold={hold_mib},running={},barrier=2:60",
        running.display()
    );
    let m = c_manifest(&t.dir, &BLOBS, MOCK, &[&log, &mode]);
    ck_jit_rt::set_jobs(8);
    let rt = t.runtime(&m, config);
    let results = rt.warmup(&BLOBS);
    assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
    for (i, n) in BLOBS.iter().enumerate() {
        assert_eq!(call(rt.resolve(n, None).unwrap(), 1), i as i32 + 1);
    }
    most_at_once(&running)
}

/// 100 MiB for compiles counted at 40 MiB each: two at once, though eight
/// slots are free.
#[test]
fn a_budget_lets_only_as_many_compiles_run_as_their_estimates_fit() {
    let _one = one_at_a_time();
    let t = Tree::new("memory-bound");
    let most = warm_six(&t, config_with(Some("40M"), Some("100M")), 8);
    assert_eq!(most, 2, "compiles at once under the budget");
}

/// The estimate is the peak resident size of the group's compile, kept in
/// the cache: a later runtime over the same cache counts its compiles at
/// it, so 250 MiB holds two compiles of about 100 MiB.
#[test]
fn the_estimate_is_learnt_from_a_compile_and_used_by_the_next_run() {
    let _one = one_at_a_time();
    let t = Tree::new("memory-learnt");
    let m = one_blob(&t, "first", 2, 0, "--mock-mode=hold=96");
    let rt = t.runtime(&m, config_with(None, None));
    assert_eq!(call(rt.resolve("first", None).unwrap(), 3), 6);
    drop(rt);

    let kept: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(t.cache_dir().join("memory.json")).unwrap())
            .unwrap();
    let estimate = kept["groups"][GROUP_KEY]["estimate"]
        .as_u64()
        .unwrap_or_else(|| panic!("no estimate for {GROUP_KEY}: {kept}"));
    let mib = estimate >> 20;
    assert!(
        (96..=128).contains(&mib),
        "the compile held 96 MiB; the estimate is {mib} MiB"
    );

    let most = warm_six(&t, config_with(None, Some("250M")), 96);
    assert_eq!(most, 2, "compiles at once under the learnt estimate");
}

/// Killed the first time, fine the second: the call succeeds, and a
/// warning says the compile was killed and retried.
#[test]
fn a_compile_killed_once_is_retried_and_succeeds() {
    let _one = one_at_a_time();
    let before = warnings().len();
    let t = Tree::new("memory-killed-once");
    let mode = format!("--mock-mode=sigkill-first={}", t.path("runs").display());
    let m = one_blob(&t, "k", 3, 1, &mode);
    let rt = t.runtime(&m, config_with(None, None));
    let f = rt.resolve("k", None).expect("retried after the kill");
    assert_eq!(call(f, 2), 7);
    assert_eq!(t.compiles(), 2);
    let said = warnings()[before..].join("\n");
    assert!(
        said.contains("blob 'k': compiler killed by signal 9 (SIGKILL)")
            && said.contains("compiling it again, alone")
            && said.contains("compiled when retried alone"),
        "{said}"
    );
}

/// Killed every time: the error names the signal and says it was retried;
/// the failure is not remembered, so the next call compiles again.
#[test]
fn a_compile_killed_every_time_is_an_error_naming_the_signal() {
    let _one = one_at_a_time();
    let t = Tree::new("memory-killed");
    let m = one_blob(&t, "k", 3, 1, "--mock-mode=sigkill");
    let rt = t.runtime(&m, config_with(Some("64M"), Some("1G")));
    let e = rt.resolve("k", None).expect_err("killed").to_string();
    for part in [
        "blob 'k': compiler killed by signal 9 (SIGKILL), and again when retried alone",
        "counted at 64 MiB",
        "1.0 GiB available to compiles",
        "peak resident size",
        "command: ",
    ] {
        assert!(e.contains(part), "{part}: {e}");
    }
    assert_eq!(t.compiles(), 2, "one try and one retry");
    assert!(matches!(
        rt.resolve("k", None),
        Err(ck_jit_rt::Error::CompileKilled { kill, .. }) if kill.signal == 9 && kill.retried
    ));
    assert_eq!(
        t.compiles(),
        4,
        "a kill is not remembered as the blob's failure"
    );
}
