//! Scratch directories for the benchmarks' trees and caches: under the
//! cargo target directory (or `CK_JIT_BENCH_DIR`), never a shared temp
//! directory, since the runtime refuses caches others could write to.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// The workspace's target directory: `CARGO_TARGET_DIR`, else `target/`
/// beside the workspace manifest.
pub fn target_dir() -> PathBuf {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new(env!("CARGO_MANIFEST_DIR")))
        .to_path_buf();
    match std::env::var_os("CARGO_TARGET_DIR").filter(|v| !v.is_empty()) {
        Some(d) => workspace.join(d),
        None => workspace.join("target"),
    }
}

/// The root of every bench's scratch space: `CK_JIT_BENCH_DIR`, else
/// `<target>/ck-jit-benches`.
pub fn root() -> PathBuf {
    std::env::var_os("CK_JIT_BENCH_DIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| target_dir().join("ck-jit-benches"))
}

/// A fresh, empty scratch directory `name` (its previous content removed).
pub fn fresh(name: &str) -> io::Result<PathBuf> {
    let dir = root().join(name);
    remove(&dir)?;
    fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// Removes a directory tree; a missing one is fine.
pub fn remove(dir: &Path) -> io::Result<()> {
    match fs::remove_dir_all(dir) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}
