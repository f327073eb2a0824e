//! A file's bytes for the rest of the process, mapped read-only (read,
//! when small): the compact manifest and the memos are read this way, a
//! few pages of each touched; objects are mapped through [`map_read_only`]
//! too. It reads no other module of the crate.

use std::fs;
use std::path::Path;

/// Files up to this size are read, not mapped (a memo of a few dozen hits
/// is a few KiB).
const READ_UP_TO: usize = 64 << 10;

/// The bytes of the file at `path`, mapped read-only for the rest of the
/// process (read, when it is small or mapping is refused); `None` if it
/// cannot be read.
/// A library's compact manifest is 580 KB at aiter's scale, of which a
/// lookup reads a few pages: copying it all was a tenth of a warm
/// process's first call.
pub(crate) fn map_for_process(path: &Path) -> Option<&'static [u8]> {
    let f = fs::File::open(path).ok()?;
    let len = usize::try_from(f.metadata().ok()?.len()).ok()?;
    if len <= READ_UP_TO {
        // One `read`: a small file's mapping costs more (the mapping's
        // set-up, then a page fault a page).
        return read_for_process(&f, len);
    }
    // Never unmapped, so the slice lives as long as the process. Builds
    // replace the file by rename, so the mapped one stays whole.
    if let Some(p) = map_read_only(&f, len) {
        // SAFETY: `len` readable bytes, mapped for good.
        return Some(unsafe { std::slice::from_raw_parts(p, len) });
    }
    read_for_process(&f, len)
}

/// The first `len` bytes of the open file `f`, read and kept for the rest
/// of the process: the very file whose size was taken (bytes appended
/// meanwhile are not read, as they would not be mapped).
fn read_for_process(f: &fs::File, len: usize) -> Option<&'static [u8]> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(len);
    f.take(len as u64).read_to_end(&mut bytes).ok()?;
    Some(Box::leak(bytes.into_boxed_slice()))
}

/// A private read-only mapping of `len` (> 0) bytes of `f`; `None` if the
/// system refuses. The caller owns it: unmaps it, or keeps it for good.
pub(crate) fn map_read_only(f: &fs::File, len: usize) -> Option<*const u8> {
    use std::os::fd::AsRawFd;
    // SAFETY: a fresh private read-only mapping of an open file; the
    // pointer is checked before it is handed on.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        )
    };
    (p != libc::MAP_FAILED).then_some(p as *const u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mapped_manifest_reads_as_the_file_and_outlives_its_replacement() {
        let dir = std::env::temp_dir().join(format!("ck-jit-map-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.ckm");
        let old: Vec<u8> = (0..70_000u32).map(|i| (i % 251) as u8).collect();
        fs::write(&path, &old).unwrap();
        let mapped = map_for_process(&path).unwrap();
        assert_eq!(mapped, &old[..]);
        // Replaced by rename, as builds write it: the mapping keeps the old.
        let new = dir.join("m.ckm.tmp");
        fs::write(&new, b"new").unwrap();
        fs::rename(&new, &path).unwrap();
        assert_eq!(mapped, &old[..]);
        assert_eq!(map_for_process(&path).unwrap(), b"new");
        fs::write(dir.join("empty"), b"").unwrap();
        assert_eq!(map_for_process(&dir.join("empty")).unwrap(), b"");
        assert!(map_for_process(&dir.join("none")).is_none());
        let _ = fs::remove_dir_all(&dir);
    }
}
