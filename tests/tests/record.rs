//! `CK_JIT_RECORD=FILE`: every process adds the names of the blobs it
//! loads; many processes writing one file leave each name once, whole.

use std::process::Command;

use ck_jit_tests::{c_manifest, Tree};

const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");

#[test]
fn sixteen_processes_record_each_name_once_without_torn_lines() {
    let t = Tree::new("record");
    let names: Vec<String> = (0..8).map(|i| format!("recorded_kernel_{i}")).collect();
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, i as i32 + 1, 0);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let manifest = t.write_manifest(&c_manifest(&t.dir, &refs, "cc", &[]));
    let record = t.path("used.txt");
    // A line from an earlier run, without its newline: kept, and ended.
    std::fs::write(&record, "from_an_earlier_run").unwrap();
    // All sixteen started before any is waited for, each with a cache of
    // its own so every one compiles and records at about the same time.
    let children: Vec<_> = (0..16)
        .map(|i| {
            Command::new(PROBE)
                .arg(&manifest)
                .arg(t.path(&format!("cache-{i}")))
                .arg(&names[i % 8])
                .arg("1")
                .env("CK_JIT_RECORD", &record)
                .env_remove("CK_JIT_MANIFEST")
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(text.ends_with('\n'), "{text:?}");
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 9, "{text}");
    lines.sort();
    let mut want: Vec<&str> = refs.clone();
    want.push("from_an_earlier_run");
    want.sort();
    assert_eq!(lines, want);
}

#[test]
fn an_unwritable_record_file_does_not_fail_the_call() {
    let t = Tree::new("record-bad");
    t.c_blob("k", 2, 0);
    let manifest = t.write_manifest(&c_manifest(&t.dir, &["k"], "cc", &[]));
    let out = Command::new(PROBE)
        .arg(&manifest)
        .arg(t.cache_dir())
        .arg("k")
        .arg("4")
        .env("CK_JIT_RECORD", t.path("no/such/dir/used.txt"))
        .env_remove("CK_JIT_MANIFEST")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"value\":8"), "{text}");
    // Said once, on stderr, naming the file and the variable.
    let err = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("CK_JIT_RECORD"))
        .collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(said[0].contains("no/such/dir/used.txt"), "{err}");
}
