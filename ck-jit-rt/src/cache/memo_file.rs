//! A memo file of the cache: fixed-width text records, each a key of
//! [`KEY`] hex digits and fields of fixed widths, one separator byte after
//! each and a line break last. A sorted part is found by bisection, and a
//! tail of records appended since (one `write` each, newest last) is
//! searched newest first. A process that opens a memo whose tail has grown
//! rewrites it sorted, by rename. Read in place for the process. A file at
//! a memo's path that is not one (another format, written over) is
//! replaced, by rename, before the first record is appended to it.
//!
//! The memo of source digests ([`sources`](super::sources)) and the memo
//! of hits ([`hits`](super::hits)) are such files. It uses nothing of the
//! crate but the mapping of a file.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The header: the memo's magic, the number of sorted records in ten
/// digits, padding, a line break.
pub(super) const HEADER: usize = 48;
/// A record's key: hex digits.
pub(super) const KEY: usize = 32;
/// A tail longer than this (and than a quarter of the sorted part) is
/// sorted in by the next process that opens the memo: a find then bisects
/// rather than reading every record of the tail.
pub(super) const TAIL_LIMIT: usize = 16;

/// One memo file, as this process read it.
pub(super) struct MemoFile {
    pub(super) path: PathBuf,
    magic: &'static [u8],
    /// The widths of the fields after the key.
    fields: &'static [usize],
    bytes: &'static [u8],
    pub(super) sorted: usize,
    appender: Mutex<Option<fs::File>>,
}

impl MemoFile {
    /// The memo at `path` whose header starts with `magic` and whose
    /// records have fields of the widths `fields`: empty when there is
    /// none, or it is not one. A long tail is sorted in first.
    pub(super) fn open(path: PathBuf, magic: &'static [u8], fields: &'static [usize]) -> MemoFile {
        debug_assert!(magic.len() + 10 < HEADER);
        let mut memo = MemoFile {
            path,
            magic,
            fields,
            bytes: &[],
            sorted: 0,
            appender: Mutex::new(None),
        };
        if let Some((bytes, sorted)) = memo.read() {
            memo.bytes = bytes;
            memo.sorted = sorted;
        }
        if memo.tail_len() > TAIL_LIMIT.max(memo.sorted / 4) {
            memo.sort_in();
        }
        memo
    }

    /// The length of a record.
    pub(super) fn record_len(&self) -> usize {
        KEY + 1 + self.fields.iter().map(|w| w + 1).sum::<usize>()
    }

    /// The newest whole record of `key`, if any.
    pub(super) fn find(&self, key: &[u8; KEY]) -> Option<&[u8]> {
        self.tail()
            .rev()
            .find(|r| r[..KEY] == key[..])
            .or_else(|| self.find_sorted(key))
            .filter(|r| self.valid(r))
    }

    /// The field `i` of a record [`find`](Self::find) returned.
    pub(super) fn field<'r>(&self, record: &'r [u8], i: usize) -> &'r [u8] {
        let at = KEY + 1 + self.fields[..i].iter().map(|w| w + 1).sum::<usize>();
        &record[at..at + self.fields[i]]
    }

    /// Appends a record of `key` with `fields` (each of its width), in
    /// one `write`: concurrent appends interleave by record, never within
    /// one. Best effort.
    pub(super) fn append(&self, key: &[u8; KEY], fields: &[&[u8]]) {
        let mut record = Vec::with_capacity(self.record_len());
        record.extend_from_slice(key);
        record.push(b' ');
        for (f, w) in fields.iter().zip(self.fields) {
            if f.len() != *w {
                debug_assert!(false, "a memo field of {} bytes, not {w}", f.len());
                return;
            }
            record.extend_from_slice(f);
            record.push(b' ');
        }
        if fields.len() != self.fields.len() {
            return;
        }
        if let Some(last) = record.last_mut() {
            *last = b'\n';
        }
        let Ok(mut appender) = self.appender.lock() else {
            return;
        };
        if appender.is_none() {
            *appender = self.open_for_append();
        }
        if let Some(f) = appender.as_mut() {
            let _ = f.write_all(&record);
        }
    }

    fn open_for_append(&self) -> Option<fs::File> {
        let dir = self.path.parent()?;
        fs::create_dir_all(dir).ok()?;
        // Readable too: `is_ours` reads the header through it (a
        // write-only descriptor cannot, and a memo taken for another
        // format would be emptied of every record other processes kept).
        let open = || {
            fs::OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&self.path)
                .ok()
        };
        let f = open()?;
        if f.metadata().ok()?.len() == 0 {
            let mut f = &f;
            f.write_all(&self.header(0)).ok()?;
        } else if !self.is_ours(&f) {
            // Another format, or written over: replaced by an empty memo
            // (by rename: a process that mapped the old file keeps it), so
            // what is appended can be read.
            drop(f);
            self.replace_with(&self.header(0)).ok()?;
            return open();
        }
        Some(f)
    }

    /// Whether the file `f` starts with this memo's header.
    fn is_ours(&self, f: &fs::File) -> bool {
        use std::os::unix::fs::FileExt;
        let mut head = [0; HEADER];
        f.read_exact_at(&mut head, 0).is_ok()
            && head.starts_with(self.magic)
            && head[HEADER - 1] == b'\n'
    }

    /// Puts `text` at the memo's path, by rename.
    fn replace_with(&self, text: &[u8]) -> std::io::Result<()> {
        let tmp = self
            .path
            .with_extension(format!("{}.tmp", std::process::id()));
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(text))
            .and_then(|()| fs::rename(&tmp, &self.path));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    fn records(&self) -> &[u8] {
        self.bytes.get(HEADER..).unwrap_or(&[])
    }

    fn tail(&self) -> std::slice::ChunksExact<'_, u8> {
        let records = self.records();
        let len = self.record_len();
        records[(self.sorted * len).min(records.len())..].chunks_exact(len)
    }

    pub(super) fn tail_len(&self) -> usize {
        self.tail().len()
    }

    /// The sorted record of `key`, by bisection.
    fn find_sorted(&self, key: &[u8]) -> Option<&[u8]> {
        let records = self.records();
        let len = self.record_len();
        let (mut lo, mut hi) = (0, self.sorted);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let r = records.get(mid * len..(mid + 1) * len)?;
            match r[..KEY].cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(r),
            }
        }
        None
    }

    /// Rewrites the memo with every key's newest record, sorted (by
    /// rename: a process reading the old one keeps it). Best effort.
    fn sort_in(&self) {
        let mut newest: std::collections::BTreeMap<&[u8], &[u8]> = Default::default();
        for r in self.records().chunks_exact(self.record_len()) {
            if self.valid(r) {
                newest.insert(&r[..KEY], r);
            }
        }
        let mut text = self.header(newest.len());
        for r in newest.values() {
            text.extend_from_slice(r);
        }
        let _ = self.replace_with(&text);
    }

    /// The memo's bytes, mapped for the process, and its sorted count.
    fn read(&self) -> Option<(&'static [u8], usize)> {
        let bytes = crate::object::mapped::map_for_process(&self.path)?;
        let head = bytes.get(..HEADER)?;
        if !head.starts_with(self.magic) || head[HEADER - 1] != b'\n' {
            return None;
        }
        let count = std::str::from_utf8(&head[self.magic.len()..self.magic.len() + 10]).ok()?;
        let sorted: usize = count.parse().ok()?;
        // A record torn by a crash leaves the tail short: whole records only.
        if (bytes.len() - HEADER) / self.record_len() < sorted {
            return None;
        }
        Some((bytes, sorted))
    }

    fn header(&self, sorted: usize) -> Vec<u8> {
        let mut h = self.magic.to_vec();
        h.extend_from_slice(format!("{sorted:010}").as_bytes());
        h.resize(HEADER - 1, b' ');
        h.push(b'\n');
        h
    }

    /// Whether `r` has a record's shape (a torn or foreign one is dropped
    /// when the memo is sorted).
    fn valid(&self, r: &[u8]) -> bool {
        let mut at = KEY;
        for w in self.fields {
            if r.get(at) != Some(&b' ') {
                return false;
            }
            at += 1 + w;
        }
        r.len() == self.record_len() && r[at] == b'\n' && all_hex(&r[..KEY])
    }
}

/// Whether every byte of `bytes` is a hex digit (either case). Looks at
/// all of them, without stopping at the first that is not: a check of
/// every lookup's keys, written to run without a branch a byte.
pub(super) fn all_hex(bytes: &[u8]) -> bool {
    bytes.iter().fold(true, |ok, &b| {
        let digit = b.wrapping_sub(b'0') < 10;
        let letter = (b | 0x20).wrapping_sub(b'a') < 6;
        ok & (digit | letter)
    })
}

/// `bytes` as text, when they are all hex digits ([`all_hex`]).
pub(super) fn hex_text(bytes: &[u8]) -> Option<&str> {
    if !all_hex(bytes) {
        return None;
    }
    // SAFETY: hex digits are ASCII, hence UTF-8.
    Some(unsafe { std::str::from_utf8_unchecked(bytes) })
}

/// The first [`KEY`] hex digits of the BLAKE3 of `bytes`.
pub(super) fn hex_key(bytes: &[u8]) -> [u8; KEY] {
    let hex = blake3::hash(bytes).to_hex();
    let mut key = [0; KEY];
    key.copy_from_slice(&hex.as_bytes()[..KEY]);
    key
}

/// The memo file of the tree whose real path is `tree` in `dir`.
pub(super) fn tree_file(dir: &Path, tree: &Path) -> PathBuf {
    let key = hex_key(tree.as_os_str().as_encoded_bytes());
    dir.join(std::str::from_utf8(&key).unwrap_or("memo"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[usize] = &[4];

    fn key(c: u8) -> [u8; KEY] {
        [c; KEY]
    }

    #[test]
    fn a_process_appending_keeps_what_others_appended() {
        let dir = std::env::temp_dir().join(format!("ck-jit-memo-file-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("memo");
        let open = || MemoFile::open(path.clone(), b"test memo 1 sorted ", FIELDS);
        // Each `open` stands for a process: it reads the file as it is
        // and appends through its own descriptor.
        open().append(&key(b'a'), &[b"1111"]);
        open().append(&key(b'b'), &[b"2222"]);
        open().append(&key(b'c'), &[b"3333"]);
        let memo = open();
        for (k, v) in [(b'a', b"1111"), (b'b', b"2222"), (b'c', b"3333")] {
            let r = memo
                .find(&key(k))
                .unwrap_or_else(|| panic!("{} lost", k as char));
            assert_eq!(memo.field(r, 0), v);
        }
        // A file of another format at the path is replaced, then kept.
        fs::write(&path, "not a memo\n").unwrap();
        open().append(&key(b'd'), &[b"4444"]);
        open().append(&key(b'e'), &[b"5555"]);
        let memo = open();
        assert!(memo.find(&key(b'd')).is_some() && memo.find(&key(b'e')).is_some());
        assert!(memo.find(&key(b'a')).is_none());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn all_hex_says_what_is_ascii_hexdigit_says_of_every_byte() {
        for b in 0..=u8::MAX {
            assert_eq!(all_hex(&[b]), b.is_ascii_hexdigit(), "{b:#04x}");
            assert_eq!(all_hex(&[b'a', b, b'0']), b.is_ascii_hexdigit(), "{b:#04x}");
        }
        assert!(all_hex(b""));
        assert_eq!(hex_text(b"09afAF"), Some("09afAF"));
        assert_eq!(hex_text(b"09ag"), None);
    }
}
