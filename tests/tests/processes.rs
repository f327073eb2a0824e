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
