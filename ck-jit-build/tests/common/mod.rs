//! Temporary trees for the integration tests: each test gets its own
//! directory under the system temp dir, removed when the test ends.

#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use ck_jit_build::{BlobGroup, Build, Error, Manifest};

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// `base/tree` (the root) and `base/out` (the out dir), apart so the out dir
/// is not inside the root unless a test wants it.
pub struct Tree {
    pub base: PathBuf,
    pub root: PathBuf,
    pub out: PathBuf,
}

impl Tree {
    pub fn new(tag: &str) -> Tree {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let base = std::env::temp_dir().join(format!(
            "ck-jit-build-test-{tag}-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let root = base.join("tree");
        let out = base.join("out");
        fs::create_dir_all(&root).unwrap();
        Tree { base, root, out }
    }

    /// Creates `rel` (and its directories) under the root.
    pub fn file(&self, rel: &str) -> PathBuf {
        let path = self.root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, format!("// {rel}\n")).unwrap();
        path
    }

    pub fn files(&self, rels: &[&str]) {
        for rel in rels {
            self.file(rel);
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The canonical root, as the manifest records it.
    pub fn canonical(&self) -> PathBuf {
        fs::canonicalize(&self.root).unwrap()
    }

    /// A build rooted here, writing to `out`, named `t`, printing nothing.
    pub fn build(&self) -> Build {
        let mut b = Build::new();
        b.root(&self.root)
            .out_dir(&self.out)
            .name("t")
            .cargo_metadata(false);
        b
    }

    /// The manifest for one group.
    pub fn manifest(&self, group: &BlobGroup) -> Result<Manifest, Error> {
        self.build().group(group).try_manifest()
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.base);
    }
}

/// Blob names of a manifest, in order.
pub fn names(m: &Manifest) -> Vec<&str> {
    m.blobs.iter().map(|b| b.name.as_str()).collect()
}

/// Blob sources of a manifest, in order.
pub fn sources(m: &Manifest) -> Vec<&str> {
    m.blobs.iter().map(|b| b.source.as_str()).collect()
}

pub fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap()
}
