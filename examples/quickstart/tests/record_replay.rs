//! The deployment loop: run a representative workload with
//! `CK_JIT_RECORD`, prebuild exactly what it used with
//! `ck-jit build --blob-list`, serve with `CK_JIT_OFFLINE=1`.

use std::path::{Path, PathBuf};
use std::process::Command;

const QUICKSTART: &str = env!("CARGO_BIN_EXE_quickstart");
const MANIFEST: &str = concat!(env!("OUT_DIR"), "/ck_jit_manifest.json");

/// The `ck-jit` tool of this workspace, built if this test run has not.
fn ck_jit() -> PathBuf {
    let dir = Path::new(QUICKSTART).parent().unwrap().to_path_buf();
    let tool = dir.join("ck-jit");
    if !tool.exists() {
        let profile = if dir.ends_with("release") {
            vec!["--release"]
        } else {
            vec![]
        };
        let ok = Command::new(env!("CARGO"))
            .args(["build", "-q", "-p", "ck-jit-cli", "--bin", "ck-jit"])
            .args(profile)
            .status()
            .unwrap();
        assert!(ok.success(), "building ck-jit");
    }
    tool
}

fn quickstart(vars: &[(&str, &Path)], offline: bool) -> String {
    let mut c = Command::new(QUICKSTART);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CK_JIT_") {
            c.env_remove(k);
        }
    }
    c.envs(vars.iter().map(|(k, v)| (k, v.as_os_str())));
    if offline {
        c.env("CK_JIT_OFFLINE", "1");
    }
    let out = c.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    text
}

#[test]
fn record_then_prebuild_then_serve_offline() {
    let dir = std::env::temp_dir().join(format!("ck-jit-record-replay-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let record = dir.join("used-blobs.txt");

    // 1. A representative run, recording.
    quickstart(
        &[
            ("CK_JIT_CACHE_DIR", &dir.join("dev-cache")),
            ("CK_JIT_RECORD", &record),
        ],
        false,
    );
    let mut used: Vec<String> = std::fs::read_to_string(&record)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    used.sort();
    assert_eq!(
        used,
        [
            "dot_f32",
            "dot_f64",
            "saxpy_f32",
            "saxpy_f64",
            "vadd_f32",
            "vadd_f64",
            "vadd_i32"
        ]
    );

    // 2. Prebuild exactly those into the image's cache.
    let image = dir.join("image-cache");
    let out = Command::new(ck_jit())
        .arg("--manifest")
        .arg(MANIFEST)
        .arg("--cache-dir")
        .arg(&image)
        .args(["build", "--blob-list"])
        .arg(&record)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // 3. Serve with compiling off: every kernel comes from that cache.
    let text = quickstart(&[("CK_JIT_CACHE_DIR", &image)], true);
    assert!(text.contains("0 compiled, 7 from cache"), "{text}");

    // Offline without the prebuild: a clear error, not a compile.
    let mut c = Command::new(QUICKSTART);
    c.env("CK_JIT_CACHE_DIR", dir.join("empty-cache"))
        .env("CK_JIT_OFFLINE", "1")
        .env_remove("CK_JIT_RECORD");
    let out = c.output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("CK_JIT_OFFLINE=1"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}
