//! Small text files kept in the cache root beside the entries (a
//! compiler's version, a device's architecture), written whole or not at
//! all, best effort. It reads no other module of the crate.

use std::fs;
use std::path::Path;

/// Keeps a compiler's version text at `path`, whole or not at all (a
/// temporary file renamed into place); a failure only costs a later process
/// a `--version` run.
pub(crate) fn keep_text(path: &Path, version: &str) {
    // The directory is the cache's (`compilers/`, `devices/`), made by
    // `Cache::open` with the cache's modes; never made here, where it
    // would get the umask's (and a cache root made so would be readable by
    // all).
    let Some(dir) = path.parent().filter(|d| d.is_dir()) else {
        return;
    };
    let tmp = dir.join(format!(
        ".{}.{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("v"),
        std::process::id()
    ));
    if fs::write(&tmp, version).is_ok() && fs::rename(&tmp, path).is_err() {
        let _ = fs::remove_file(&tmp);
    }
}
