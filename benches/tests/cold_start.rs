//! The cold-start driver runs end to end with `cc` (two kernels, one
//! round) and says plainly when its compiler is missing. No timing is
//! checked here.

use std::process::Command;

use ck_jit_benches::workdir;

const COLD_START: &str = env!("CARGO_BIN_EXE_cold-start");

#[test]
fn cold_start_measures_both_processes_with_cc() {
    let dir = workdir::root().join("test-cold-start");
    let out = Command::new(COLD_START)
        .args([
            "--compiler",
            "cc",
            "--kernels",
            "2",
            "--rounds",
            "1",
            "--dir",
        ])
        .arg(&dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "whole process (spawn to exit)",
        "first hit (first resolve",
        "per kernel (2nd..Kth, K = 2)",
        "compiler identity",
    ] {
        assert!(text.contains(row), "no '{row}' in:\n{text}");
    }
    assert_eq!(text.matches("result: ").count(), 4 + 9, "{text}");
    workdir::remove(&dir).unwrap();
}

#[test]
fn a_missing_compiler_is_named_before_anything_is_written() {
    let dir = workdir::root().join("test-cold-start-missing");
    let out = Command::new(COLD_START)
        .args(["--compiler", "/nonexistent/nvcc", "--dir"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("/nonexistent/nvcc: no executable file")
            && err.contains("CUDA blobs need nvcc"),
        "{err}"
    );
    assert!(!dir.exists());
}
