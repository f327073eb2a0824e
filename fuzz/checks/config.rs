//! `ck-jit.toml` on arbitrary text, through the public entry point
//! (`from_config(..).try_manifest()`): parsing, every group setting, the
//! walk of a small fixed tree and the manifest checks.
//!
//! The file is rewritten in one temp directory per process. The tree root
//! is set with `Build::root`, which wins over the file's `root`, so a
//! fuzzed `root = "/"` cannot send the walk over the whole file system
//! (globs cannot leave the root: `..` and absolute globs are refused).
//!
//! Invariants: nothing panics; an accepted config gives a valid manifest
//! that round-trips through JSON and only names files under the root.

use std::fs;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use ck_jit_build::manifest::Manifest;

struct Scratch {
    config: PathBuf,
    root: PathBuf,
    out: PathBuf,
}

fn scratch() -> &'static Mutex<Scratch> {
    static S: OnceLock<Mutex<Scratch>> = OnceLock::new();
    S.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("ck-jit-fuzz-config-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let root = dir.join("tree");
        for rel in [
            "kernels/vec_add_f32.cpp",
            "kernels/vec_add_f64.cpp",
            "kernels/dot_f32.cu",
            "kernels/include/common.h",
            "hip/fmha_fwd_d64_fp16.hip",
            "c/k.c",
        ] {
            let p = root.join(rel);
            fs::create_dir_all(p.parent().expect("has a parent")).expect("scratch tree");
            fs::write(&p, "int k(int x) { return x; }\n").expect("scratch file");
        }
        let out = dir.join("out");
        fs::create_dir_all(&out).expect("scratch out dir");
        Mutex::new(Scratch {
            config: dir.join("ck-jit.toml"),
            root: fs::canonicalize(&root).expect("canonical root"),
            out,
        })
    })
}

/// Checks the invariants above on one input; panics on a broken one.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // One config file per process: a caller on another thread waits (a
    // panic under the lock leaves it usable for the next input).
    let s = scratch().lock().unwrap_or_else(|e| e.into_inner());
    fs::write(&s.config, text).expect("rewrite the config");
    let result = ck_jit_build::from_config(&s.config)
        .root(&s.root)
        .out_dir(&s.out)
        .cargo_metadata(false)
        .try_manifest();
    let m = match result {
        Ok(m) => m,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    m.validate()
        .expect("an accepted config gives a valid manifest");
    for b in &m.blobs {
        assert!(
            s.root.join(&b.source).is_file(),
            "{} is not a file",
            b.source
        );
    }
    let json = m.to_json();
    let back = Manifest::from_json(&json).unwrap_or_else(|e| panic!("refused: {e}\n{json}"));
    assert_eq!(back, m);
}
