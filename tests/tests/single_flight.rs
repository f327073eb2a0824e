//! A variant is compiled at most once per cache: N threads and N processes
//! asking for the same cold blob cause one compiler run, and all get a
//! working pointer. Different blobs compile in parallel.

use std::process::Command;
use std::sync::Arc;

use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");
const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");

#[test]
fn sixteen_threads_one_compile() {
    let t = Tree::new("threads");
    t.c_blob("k", 7, 1);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log, "--mock-mode=sleep=300"]);
    let rt = Arc::new(t.runtime(&m, test_config()));
    let handles: Vec<_> = (0..16)
        .map(|_| {
            let rt = rt.clone();
            std::thread::spawn(move || call(rt.resolve("k", None).expect("resolve"), 3))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), 22);
    }
    assert_eq!(t.compiles(), 1);
}

#[test]
fn sixteen_processes_in_sequence_compile_once() {
    let t = Tree::new("procs");
    t.c_blob("k", 5, 2);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log, "--mock-mode=sleep=500"]);
    let manifest = t.write_manifest(&m);
    let children: Vec<_> = (0..16)
        .map(|_| {
            Command::new(PROBE)
                .arg(&manifest)
                .arg(t.cache_dir())
                .arg("k")
                .arg("4")
                .output()
        })
        .map(|o| o.expect("spawn probe"))
        .collect();
    for out in children {
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["value"], 22, "{text}");
    }
    assert_eq!(t.compiles(), 1);
}

#[test]
fn sixteen_processes_started_together_one_compile() {
    // Started all at once (not one after another as above): a real stampede.
    let t = Tree::new("stampede");
    t.c_blob("k", 5, 2);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log, "--mock-mode=sleep=500"]);
    let manifest = t.write_manifest(&m);
    let children: Vec<_> = (0..16)
        .map(|_| {
            Command::new(PROBE)
                .arg(&manifest)
                .arg(t.cache_dir())
                .arg("k")
                .arg("4")
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("spawn probe")
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(v["value"], 22, "{text}");
    }
    assert_eq!(t.compiles(), 1);
}

#[test]
fn different_blobs_compile_in_parallel_bounded_by_jobs() {
    let t = Tree::new("parallel");
    let names = ["a", "b", "c", "d"];
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, i as i32 + 1, 0);
    }
    let log = format!("--mock-log={}", t.compile_log().display());
    // Each compile waits until all four run at once: serialised compiles
    // would fail.
    let m = c_manifest(&t.dir, &names, MOCK, &[&log, "--mock-mode=barrier=4"]);
    let mut c = test_config();
    c.jobs = 4;
    ck_jit_rt::set_jobs(4);
    let rt = t.runtime(&m, c.clone());
    let results = rt.warmup(&names);
    assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
    assert_eq!(t.compiles(), 4);
    for (i, n) in names.iter().enumerate() {
        assert_eq!(call(rt.resolve(n, None).unwrap(), 1), i as i32 + 1);
    }

    // With two jobs, three compiles can never run at once.
    let t = Tree::new("bounded");
    for n in &names[..3] {
        t.c_blob(n, 1, 0);
    }
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(
        &t.dir,
        &names[..3],
        MOCK,
        &[&log, "--mock-mode=barrier=3:2"],
    );
    ck_jit_rt::set_jobs(2);
    let results = t.runtime(&m, c).warmup(&names[..3]);
    ck_jit_rt::set_jobs(4);
    assert!(results.iter().all(|(_, r)| r.is_err()), "{results:?}");
}
