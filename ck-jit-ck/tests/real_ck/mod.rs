//! The real CK FMHA code generators (two versions, unmodified, in the
//! workspace's `shared/data/ck`), and scratch directories for tests that
//! run them.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// CK of 2024-10-23: four directions, no `--targets`, no `Arch` argument.
pub const CK_2024: &str = "ck-2024-10-23";
/// The CK aiter ships (2025-11): `--targets`, per-architecture blobs, six
/// directions.
pub const CK_2025: &str = "ck-2025-11";

/// The tree of one CK version, or `None` (with a visible skip) where the
/// data is not there; `CK_JIT_REQUIRE_CK_DATA` turns the skip into a
/// failure.
pub fn ck_tree(version: &str) -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/data/ck")
        .join(version);
    if dir.join("example/ck_tile/01_fmha/generate.py").is_file() {
        return Some(fs::canonicalize(dir).unwrap());
    }
    assert!(
        std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_none(),
        "CK_JIT_REQUIRE_CK_DATA is set but {} holds no CK generator",
        dir.display()
    );
    eprintln!("SKIPPED: no CK generator at {}", dir.display());
    None
}

/// A CK tree of `version` that a test may change: the FMHA example and the
/// top-level `CMakeLists.txt` (where the version has one) copied, `include/`
/// a symlink to the real headers.
pub fn ck_copy(version: &str, dest: &Path) -> Option<PathBuf> {
    let real = ck_tree(version)?;
    let example = dest.join("example/ck_tile/01_fmha");
    copy_dir(&real.join("example/ck_tile/01_fmha"), &example);
    std::os::unix::fs::symlink(real.join("include"), dest.join("include")).unwrap();
    let top = real.join("CMakeLists.txt");
    if top.is_file() {
        fs::copy(&top, dest.join("CMakeLists.txt")).unwrap();
    }
    Some(dest.to_path_buf())
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == "__pycache__" {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        if e.file_type().unwrap().is_dir() {
            copy_dir(&src, &dst);
        } else {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A scratch directory under cargo's test temp dir, removed on drop unless
/// the test panicked.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(fs::canonicalize(dir).unwrap())
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

/// The dispatchers' calls read for the recorded blobs' templates alone,
/// the headers' launch templates of those appended, checked against the
/// specialisations the recorded blob files define (read here, in order).
pub fn direct_check(
    vocab: &ck_jit_ck::Vocabulary,
    files: &ck_jit_ck::CkFmhaFiles,
) -> ck_jit_ck::__private::CallCheck {
    let mut templates = std::collections::BTreeSet::new();
    let mut defined = std::collections::BTreeSet::new();
    for (d, path) in files.blobs() {
        templates.extend(d.templates.iter().cloned());
        let text = fs::read_to_string(path).unwrap();
        for s in ck_jit_ck::__private::specialisations(&text).unwrap() {
            defined.insert(ck_jit_ck::__private::specialisation_key(
                &s.template,
                &s.args,
            ));
        }
    }
    let launchers = vocab.launcher_definitions(&templates);
    let dispatchers: Vec<(PathBuf, String)> = files
        .dispatchers()
        .map(|p| (p.to_path_buf(), fs::read_to_string(p).unwrap() + &launchers))
        .collect();
    let check = ck_jit_ck::__private::check_calls(&dispatchers, &defined).unwrap();
    assert!(check.unresolved.is_empty(), "{:?}", &check.unresolved[..1]);
    check
}
