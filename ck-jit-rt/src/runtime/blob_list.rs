//! `CK_JIT_RECORD=FILE`: the names of the blobs a run loaded, so the next
//! deployment can prebuild exactly those (`ck-jit build --blob-list FILE`)
//! and serve with `CK_JIT_OFFLINE=1`.
//!
//! Each process adds a name the first time it loads that blob. Many
//! processes may record into one file: the file is locked while a name is
//! looked for and appended, so it holds each name once, one per line, and
//! never a torn line.

use std::collections::HashSet;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;

use once_cell::sync::Lazy;

static NOTED: Lazy<Mutex<HashSet<String>>> = Lazy::new(|| Mutex::new(HashSet::new()));

/// Record files this process could not write, each said once on stderr.
static UNWRITABLE: Lazy<Mutex<HashSet<String>>> = Lazy::new(|| Mutex::new(HashSet::new()));

/// Adds `blob` to the record file `path` unless it is there already. A
/// failure never fails the call; it is said once per file on stderr (a
/// record that silently holds nothing would make the next deployment's
/// prebuild miss every kernel) and logged once per blob.
pub(crate) fn note(path: &Path, blob: &str) {
    // Names are checked when a manifest is read; a line break would still
    // make two names of one.
    if blob.contains(['\n', '\r']) {
        return;
    }
    {
        let mut noted = NOTED.lock().unwrap_or_else(|e| e.into_inner());
        if !noted.insert(format!("{}\0{blob}", path.display())) {
            return;
        }
    }
    if let Err(e) = append_once(path, blob) {
        let first = UNWRITABLE
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.display().to_string());
        if first {
            eprintln!(
                "ck-jit: cannot record the blobs this process loads in {} (CK_JIT_RECORD): {e}",
                path.display()
            );
        }
        log::warn!(
            "ck-jit: cannot record blob '{blob}' in {} (CK_JIT_RECORD): {e}",
            path.display()
        );
    }
}

fn append_once(path: &Path, blob: &str) -> std::io::Result<()> {
    let mut f = OpenOptions::new()
        .read(true)
        .append(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?;
    f.lock()?;
    let mut text = String::new();
    f.read_to_string(&mut text)?;
    if text.lines().any(|l| l == blob) {
        return Ok(());
    }
    let mut line = String::with_capacity(blob.len() + 2);
    if !text.is_empty() && !text.ends_with('\n') {
        line.push('\n');
    }
    line.push_str(blob);
    line.push('\n');
    // One write of the whole line, at the end (O_APPEND), under the lock.
    f.write_all(line.as_bytes())?;
    Ok(())
}
