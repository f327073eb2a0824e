//! A file's identity (`size:mtime:ctime:inode`, as a record and a header
//! set write it) and the digest of its contents, remembered per process
//! while that identity holds. It uses no other file of the cache.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use once_cell::sync::Lazy;

/// A file's identity as [`stat_string`] writes it, unformatted.
pub(crate) fn stat_key(md: &fs::Metadata) -> StatKey {
    (
        md.len(),
        md.mtime(),
        md.mtime_nsec(),
        md.ctime(),
        md.ctime_nsec(),
        md.ino(),
    )
}

/// Reads back what [`stat_string`] wrote: comparing the numbers costs a
/// lookup far less than formatting each header's identity to compare
/// text. `None` for anything else (the header is then hashed).
pub(crate) fn parse_stat(s: &str) -> Option<StatKey> {
    // By hand, byte by byte: a lookup reads one of these per header (600
    // for a CK blob), and `str::parse` on split parts cost ten times this.
    // Digits up to (and past) `end`, or to the end of the text for `None`:
    // at least one, `exact` many if given, a value that fits a u64.
    fn number(b: &mut &[u8], end: Option<u8>, exact: Option<usize>) -> Option<u64> {
        let mut v = 0u64;
        let mut n = 0;
        loop {
            match b.split_first() {
                Some((&c, rest)) if Some(c) == end => {
                    *b = rest;
                    break;
                }
                Some((&c, rest)) if c.is_ascii_digit() => {
                    v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                    n += 1;
                    *b = rest;
                }
                None if end.is_none() => break,
                _ => return None,
            }
        }
        (n > 0 && exact.is_none_or(|e| e == n)).then_some(v)
    }
    // Seconds may be negative (a time before 1970).
    fn seconds(b: &mut &[u8]) -> Option<i64> {
        let negative = b.first() == Some(&b'-');
        if negative {
            *b = &b[1..];
        }
        let v = i64::try_from(number(b, Some(b'.'), None)?).ok()?;
        Some(if negative { -v } else { v })
    }
    let b = &mut s.as_bytes();
    let size = number(b, Some(b':'), None)?;
    let m = seconds(b)?;
    let mn = number(b, Some(b':'), Some(9))? as i64;
    let c = seconds(b)?;
    let cn = number(b, Some(b':'), Some(9))? as i64;
    let ino = number(b, None, None)?;
    Some((size, m, mn, c, cn, ino))
}

/// A file's identity for [`Dep::stat`](super::headers::Dep::stat).
pub fn stat_string(md: &fs::Metadata) -> String {
    format!(
        "{}:{}.{:09}:{}.{:09}:{}",
        md.len(),
        md.mtime(),
        md.mtime_nsec(),
        md.ctime(),
        md.ctime_nsec(),
        md.ino()
    )
}

/// Files hashed this process: path → its stat then, and the hash.
type Hashes = HashMap<PathBuf, (StatKey, String), crate::fixed_hash::FixedState>;

pub(crate) type StatKey = (u64, i64, i64, i64, i64, u64);
static HASHES: Lazy<Mutex<Hashes>> = Lazy::new(|| Mutex::new(HashMap::default()));

/// BLAKE3 of a file's contents, remembered per process while its size,
/// mtime, ctime and inode are unchanged (headers are shared by many blobs; a
/// touched file is re-read and, if its bytes are the same, still matches).
pub fn file_hash(path: &Path) -> io::Result<String> {
    let md = fs::metadata(path)?;
    let stat = stat_key(&md);
    if let Ok(map) = HASHES.lock() {
        if let Some((s, h)) = map.get(path) {
            if *s == stat {
                return Ok(h.clone());
            }
        }
    }
    let bytes = fs::read(path)?;
    let h = blake3::hash(&bytes).to_hex().to_string();
    if let Ok(mut map) = HASHES.lock() {
        map.insert(path.to_path_buf(), (stat, h.clone()));
    }
    Ok(h)
}
