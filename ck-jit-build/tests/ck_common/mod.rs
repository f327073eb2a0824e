//! Test support for the CK integration tests: the blob list of a real CK
//! codegen run, CK's file name for a blob's traits, and CK-shaped trees
//! written from them by `tree.rs` (the writer the `ck-fmha` example's
//! build script uses too).

#![allow(dead_code)]

pub mod tree;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ck_jit_build::ck::{Bias, BlobTraits, Direction, Kind, Mask, Mode, Rope, VLayout};

/// Every file name of the reference codegen run, `direction/file.cpp`.
pub fn blob_list() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ck-fmha-blobs.txt");
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The parsed traits of every blob in the list (or those `keep` accepts).
pub fn blob_traits(keep: impl Fn(&BlobTraits) -> bool) -> Vec<BlobTraits> {
    blob_list()
        .iter()
        .filter(|l| !l.ends_with("_api.cpp"))
        .map(|l| BlobTraits::parse(l).unwrap())
        .filter(|t| keep(t))
        .collect()
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "ck-jit-build-ck-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn x(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join("x")
}

fn tile_name(t: &BlobTraits) -> String {
    let mut n = format!("b{}", x(&t.tile));
    for r in &t.warps {
        n.push_str(&format!("_r{}", x(r)));
    }
    for w in &t.warp_tiles {
        n.push_str(&format!("_w{}", x(w)));
    }
    if let Some(o) = t.occupancy {
        n.push_str(&format!("_o{o}"));
    }
    n
}

fn mode(t: &BlobTraits) -> &'static str {
    t.mode.map_or("", Mode::as_str)
}

/// The file stem CK's codegen gives a kernel with these traits.
pub fn render_name(t: &BlobTraits) -> String {
    let pad = t.pad.token();
    let mut n = String::new();
    let opt = |n: &mut String, on: bool, tok: &str| {
        if on {
            n.push('_');
            n.push_str(tok);
        }
    };
    let vl = |v: Option<VLayout>| if v == Some(VLayout::Row) { "vr" } else { "vc" };
    let head = format!("{}{}_{}", t.kind.file_prefix(), t.hdim, t.dtype);
    match t.kind {
        Kind::Fwd | Kind::FwdSplitkv => {
            n.push_str(&format!("{head}_{}", mode(t)));
            if let Some(p) = &t.partitioner {
                n.push_str(&format!("_{p}"));
            }
            n.push_str(&format!(
                "_{}_{}_{}",
                tile_name(t),
                t.pipeline.as_deref().unwrap_or(""),
                vl(t.vlayout)
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.bias != Bias::No, t.bias.as_str());
            opt(&mut n, t.mask == Mask::Masked, "mask");
            opt(&mut n, t.lse, "lse");
            opt(&mut n, t.dropout, "dropout");
            opt(&mut n, t.squant, "squant");
            opt(&mut n, t.pagedkv, "pagedkv");
        }
        Kind::FwdSplitkvCombine => {
            n.push_str(&format!(
                "{head}_{}_{}_{}",
                mode(t),
                tile_name(t),
                t.pipeline.as_deref().unwrap_or("")
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.lse, "lse");
            opt(&mut n, t.squant, "squant");
        }
        Kind::FwdAppendkv => {
            n.push_str(&format!("{head}_{}_{}", tile_name(t), vl(t.vlayout)));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.rope != Rope::No, t.rope.as_str());
            opt(&mut n, t.pagedkv, "pagedkv");
        }
        Kind::BwdDotDoO => {
            // No block tile: `..._<mode>_o<occupancy>[_pad]`.
            n.push_str(&format!("{head}_{}_o{}", mode(t), t.occupancy.unwrap_or(0)));
            opt(&mut n, !pad.is_empty(), &pad);
        }
        Kind::BwdConvertDq => {
            let tile = format!("b{}", x(&t.tile));
            n.push_str(&format!(
                "{head}_{tile}_{}_o{}",
                mode(t),
                t.occupancy.unwrap_or(0)
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.deterministic, "deterministic");
        }
        Kind::BwdDqDkDv => {
            n.push_str(&format!(
                "{head}_{}_{}_{}",
                mode(t),
                tile_name(t),
                t.pipeline.as_deref().unwrap_or("")
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.bias != Bias::No, t.bias.as_str());
            opt(&mut n, t.dbias, "dbias");
            opt(&mut n, t.mask == Mask::Masked, "mask");
            if t.dropout {
                n.push_str("_dropout");
                if let Some(v) = &t.dropout_variant {
                    n.push_str(&format!("_{v}"));
                }
                opt(&mut n, t.store_randval, "storerandval");
            }
            opt(&mut n, t.deterministic, "deterministic");
        }
    }
    n
}

/// `direction/<name>.cpp`: where CK's codegen writes the blob of `t`.
pub fn blob_path(t: &BlobTraits) -> String {
    format!("{}/{}.cpp", t.kind.direction().as_str(), render_name(t))
}

/// A blob source as CK writes it for these traits, kernel replaced.
pub fn blob_source(t: &BlobTraits) -> String {
    tree::blob_source(&render_name(t), t)
}

/// The `*_api.cpp` CK writes for `direction`, dispatching to the blobs of
/// `traits` of the direction's main kind.
pub fn api_source(direction: Direction, traits: &[BlobTraits]) -> String {
    tree::api_source(direction, &traits.iter().collect::<Vec<_>>())
}

/// Writes a CK-shaped generated tree under `dir`: each blob of `traits` as
/// `<direction>/<name>.cpp` and the four dispatchers. Returns the number of
/// blobs written.
pub fn write_tree(dir: &Path, traits: &[BlobTraits]) -> usize {
    let paths: Vec<String> = traits.iter().map(blob_path).collect();
    let names: Vec<&str> = paths.iter().map(String::as_str).collect();
    tree::write_tree(dir, &names).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes an empty file for every name of the list under `dir` (the
/// preset only reads names).
pub fn write_empty_tree(dir: &Path) -> usize {
    let list = blob_list();
    for rel in &list {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, "").unwrap();
    }
    list.len()
}
