//! Processes that die mid-compile, and entries that change under processes
//! that have them loaded.

use std::process::{Command, Stdio};
use std::time::Duration;

use ck_jit_tests::{c_manifest, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");
const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");

fn probe(manifest: &std::path::Path, cache: &std::path::Path, blob: &str) -> Command {
    let mut c = Command::new(PROBE);
    c.arg(manifest).arg(cache).arg(blob).arg("3");
    c
}

/// A small deterministic generator (no dependency needed for 50 numbers).
fn lcg(seed: &mut u64) -> u64 {
    *seed = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *seed >> 33
}

#[test]
fn sigkill_during_compile_fifty_times_never_leaves_a_bad_entry() {
    let t = Tree::new("sigkill");
    t.c_blob("k", 4, 0);
    let m = c_manifest(&t.dir, &["k"], MOCK, &["--mock-mode=sleep=40"]);
    let manifest = t.write_manifest(&m);
    let cache = t.cache_dir();
    let mut seed = 0x5eed_u64;
    for round in 0..50 {
        // Each round starts cold, so the kill lands inside a compile, at a
        // point between spawn and the end of publication.
        let _ = std::fs::remove_dir_all(cache.join("v1"));
        let mut child = probe(&manifest, &cache, "k")
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(lcg(&mut seed) % 120));
        let _ = child.kill();
        let _ = child.wait();
        // Every visible entry verifies.
        let c = ck_jit_rt::maintenance::Cache::open(&cache, false).unwrap();
        for e in c.entries() {
            c.verify(&e)
                .unwrap_or_else(|why| panic!("round {round}: visible entry is bad: {why}"));
        }
        // The next request succeeds promptly (no lock left behind).
        let out = probe(&manifest, &cache, "k").output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "round {round}: {text}");
        assert!(text.contains("\"value\":12"), "round {round}: {text}");
    }
    // Temp files of the killed compiles are swept by the next open.
    let c = ck_jit_rt::maintenance::Cache::open(&cache, false).unwrap();
    c.sweep_temps(Duration::from_secs(3600));
    let left: Vec<_> = std::fs::read_dir(cache.join("tmp"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().ends_with(".tmp"))
        .collect();
    // Orphaned compilers may still be writing their files for a moment;
    // what matters is that the dead processes' files go.
    assert!(left.len() <= 2, "stale temp files left: {left:?}");
}

#[test]
fn loaded_kernel_keeps_working_while_entries_are_republished_and_evicted() {
    let t = Tree::new("republish");
    t.c_blob("k", 4, 0);
    let m = c_manifest(&t.dir, &["k"], MOCK, &[]);
    let manifest = t.write_manifest(&m);
    let cache = t.cache_dir();
    // A process that loads the kernel and keeps calling it for 1.5 s.
    let holder = probe(&manifest, &cache, "k")
        .args(["--hold-ms", "1500"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let rt = t.runtime(&m, test_config());
    for _ in 0..5 {
        // Republish: force a rebuild of the same key.
        rt.ensure("k", true).unwrap();
        // Evict everything.
        for e in rt.cache().unwrap().entries() {
            let _ = std::fs::remove_file(&e.record_path);
            let _ = std::fs::remove_file(&e.object);
        }
    }
    let out = holder.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "holder died: {text}");
    assert!(text.contains("\"value\":12"), "{text}");
}

/// Runs `cmd` with the compile timeout and verbosity the wait tests use.
fn waiting(mut cmd: Command, compile_timeout: &str) -> Command {
    cmd.env("CK_JIT_COMPILE_TIMEOUT", compile_timeout)
        .env("CK_JIT_VERBOSE", "1")
        .env_remove("CK_JIT_LOCK_TIMEOUT")
        .env_remove("CK_JIT_MANIFEST");
    cmd
}

/// Eight ranks asking for one cold blob: the ones that wait say, once,
/// which process compiles it and for how long so far; when that compile
/// is killed at `CK_JIT_COMPILE_TIMEOUT`, the waiters are released with an
/// error naming the blob rather than each compiling again until its own
/// timeout.
#[test]
fn a_waiter_says_whom_it_waits_for_and_is_released_by_the_holders_timeout() {
    let t = Tree::new("wait-timeout");
    t.c_blob("k", 4, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log, "--mock-mode=sleep=6000"]);
    let manifest = t.write_manifest(&m);
    let cache = t.cache_dir();
    let holder = waiting(probe(&manifest, &cache, "k"), "1.5")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let holder_pid = holder.id();
    // The holder has the lock once its compiler runs.
    let started = std::time::Instant::now();
    while t.compiles() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no compile started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let t0 = std::time::Instant::now();
    let out = waiting(probe(&manifest, &cache, "k"), "1.5")
        .output()
        .unwrap();
    let waited = t0.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("is being compiled by"))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(
        said[0].contains(&format!(
            "blob 'k' is being compiled by process {holder_pid}"
        )),
        "{stderr}"
    );
    assert!(!out.status.success(), "{stdout}");
    assert!(
        stdout.contains("blob 'k'")
            && stdout.contains(&format!("process {holder_pid}"))
            && stdout.contains("CK_JIT_COMPILE_TIMEOUT"),
        "{stdout}"
    );
    // Released when the holder's compile was killed, not after a compile
    // of its own (the mocked compiler takes 6 s).
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    let held = holder.wait_with_output().unwrap();
    assert!(
        String::from_utf8_lossy(&held.stdout).contains("killed after"),
        "{}",
        String::from_utf8_lossy(&held.stdout)
    );
    assert_eq!(t.compiles(), 1, "a waiter compiled again");
}

/// A holder killed (SIGKILL) frees the lock at once, and the process that
/// waited for it compiles the blob itself.
#[test]
fn a_holder_killed_frees_the_lock_and_the_waiter_compiles() {
    let t = Tree::new("wait-killed");
    t.c_blob("k", 4, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log, "--mock-mode=sleep=1500"]);
    let manifest = t.write_manifest(&m);
    let cache = t.cache_dir();
    let mut holder = waiting(probe(&manifest, &cache, "k"), "60")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while t.compiles() == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no compile started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let waiter = waiting(probe(&manifest, &cache, "k"), "60")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    holder.kill().unwrap();
    let _ = holder.wait();
    let out = waiter.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("\"value\":12"), "{stdout}");
    assert!(
        stdout.contains("\"compiles\":1"),
        "the waiter did not compile: {stdout}"
    );
    assert!(stderr.contains("is being compiled by process"), "{stderr}");
}
