//! Records how to compile every CK FMHA blob and compiles none of them:
//! that happens on each blob's first call.
//!
//! 1. Writes a CK-shaped generated tree (10,554 blobs and four dispatchers)
//!    from the blob list of a CK code generator run into `OUT_DIR/ck_fmha`,
//!    only when the list or the writer changed (a stamp records both). The
//!    writer, `ck-jit-build/tests/ck_common/tree.rs`, is the one the CK
//!    tests of ck-jit-build use, kept there because ck-jit-build is
//!    published with its tests and this example is not. A crate wrapping
//!    real CK gives the preset its checkout instead
//!    (`CkFmha::new().source(ck)`), and the preset runs CK's generator.
//! 2. Runs the CK preset over it: one manifest group per blob kind, CK's
//!    compile command (`hipcc`, `--offload-arch=gfx90a`, CK's flags) and
//!    the entry symbol prefix of each kind, each blob's traits as metadata.
//! 3. Rewrites the four `*_api.cpp` dispatchers into `OUT_DIR/dispatchers`
//!    for C++ consumers: every call resolves its blob through `ck_jit.h`,
//!    and a call that matches no blob fails the build.
//!
//! The stand-in CK tree `ck-standin/` provides the headers the blobs
//! include.

#[path = "../../ck-jit-build/tests/ck_common/tree.rs"]
mod tree;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ck_jit_build::ck::{CkFmha, GENERATED_SUBDIR};

/// The list of file names one CK codegen run (receipt 1, all four
/// directions) wrote.
const BLOB_LIST: &str = "../../ck-jit-build/tests/data/ck-fmha-blobs.txt";
const TREE_WRITER: &str = "../../ck-jit-build/tests/ck_common/tree.rs";
const CK_TREE: &str = "ck-standin";
const CACHE_NAME: &str = "ck_jit_ck_fmha";

fn main() {
    if let Err(e) = run() {
        eprintln!("error: ck-fmha build: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed={TREE_WRITER}");
    println!("cargo:rerun-if-changed={BLOB_LIST}");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let list = fs::read_to_string(BLOB_LIST).map_err(|e| format!("{BLOB_LIST}: {e}"))?;

    let t0 = Instant::now();
    let generated = out_dir.join(GENERATED_SUBDIR);
    let written = ensure_tree(&out_dir, &generated, &list)?;
    let tree_time = t0.elapsed();

    let t0 = Instant::now();
    let files = CkFmha::new()
        .source(CK_TREE)
        .generated_dir(&generated)
        .name(CACHE_NAME)
        .try_write()
        .map_err(|e| e.to_string())?;
    let manifest_time = t0.elapsed();

    let t0 = Instant::now();
    let rewritten = files
        .rewrite_dispatchers(out_dir.join("dispatchers"))
        .map_err(|e| e.to_string())?;
    let rewrite_time = t0.elapsed();

    // Not `cargo:` lines: kept in the build script's output file only.
    println!(
        "ck-fmha: tree {} in {tree_time:.2?}; manifest of {} blobs in {manifest_time:.2?}; \
         {} dispatchers rewritten in {rewrite_time:.2?}",
        match written {
            Some(n) => format!("of {n} blobs written"),
            None => "up to date".to_string(),
        },
        files.manifest.blobs.len(),
        rewritten.len(),
    );
    Ok(())
}

/// Writes the generated tree unless the stamp says it was written from this
/// list by this writer; returns how many blobs were written, if any.
///
/// The tree is written beside its final place and renamed there, and the
/// stamp written last, so an interrupted build leaves no tree that looks
/// complete.
fn ensure_tree(out_dir: &Path, generated: &Path, list: &str) -> Result<Option<usize>, String> {
    let stamp_path = out_dir.join(format!("{GENERATED_SUBDIR}.stamp"));
    let stamp = format!(
        "{:016x}\n",
        fnv1a64(&[
            list.as_bytes(),
            include_str!("../../ck-jit-build/tests/ck_common/tree.rs").as_bytes()
        ])
    );
    if generated.is_dir() && fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp) {
        return Ok(None);
    }
    let _ = fs::remove_file(&stamp_path);
    let fresh = out_dir.join(format!("{GENERATED_SUBDIR}.new"));
    remove_dir(&fresh)?;
    let names = tree::blob_names(list);
    let n = tree::write_tree(&fresh, &names).map_err(|e| e.to_string())?;
    remove_dir(generated)?;
    fs::rename(&fresh, generated).map_err(|e| format!("{}: {e}", generated.display()))?;
    fs::write(&stamp_path, stamp).map_err(|e| format!("{}: {e}", stamp_path.display()))?;
    Ok(Some(n))
}

fn remove_dir(dir: &Path) -> Result<(), String> {
    match fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("{}: {e}", dir.display())),
    }
}

/// FNV-1a over the parts, each followed by a separator byte: stable across
/// Rust versions, unlike `DefaultHasher`.
fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &byte in part.iter().chain(&[0xff]) {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}
