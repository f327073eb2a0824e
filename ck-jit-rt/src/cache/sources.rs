//! The cache's memo of source digests: a blob whose source file has the
//! identity it had when it was last hashed (its path, size, mtime, ctime
//! and inode) is keyed by the digest recorded then, and its source is not
//! read. Anything else is read and hashed, as without a memo.
//!
//! One file per tree (`sources/<digest of the tree's real path>` in the
//! writable, private cache), read in place for the process: a fixed-width
//! record per source, a sorted part found by bisection and a tail of
//! records appended since (one `write` each, newest last). A process that
//! opens a memo whose tail has grown rewrites it sorted, by rename.
//!
//! A file changed within [`SETTLE`] of being hashed is not remembered: its
//! times may not yet tell a later change from this one. Owns the memo
//! files; reads no source and uses nothing of the runtime above it.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// The first bytes of a memo: another format is no memo.
const MAGIC: &[u8] = b"ck-jit source digests 1 sorted ";
/// The header: [`MAGIC`], the number of sorted records in ten digits,
/// padding, a line break.
const HEADER: usize = 48;
/// A path key in hex.
const KEY: usize = 32;
/// A record: the path key, the identity, the digest, each followed by one
/// separator byte.
const RECORD: usize = KEY + 1 + IDENTITY + 1 + 64 + 1;
/// The identity: size, mtime, ctime and inode, fixed width.
const IDENTITY: usize = 20 + 1 + 30 + 1 + 30 + 1 + 20;
/// How old a file's last change must be for its digest to be remembered.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);
/// A tail longer than this (and than a quarter of the sorted part) is
/// sorted in by the next process that opens the memo.
const TAIL_LIMIT: usize = 64;

/// One tree's memo, as this process read it.
pub(crate) struct SourceMemo {
    path: PathBuf,
    bytes: &'static [u8],
    sorted: usize,
    appender: Mutex<Option<fs::File>>,
}

impl SourceMemo {
    /// The memo of the tree whose real path is `tree` in the cache at
    /// `cache_root` (empty when there is none yet, or it is not one).
    pub(crate) fn open(cache_root: &Path, tree: &Path) -> SourceMemo {
        let name = blake3::hash(tree.as_os_str().as_encoded_bytes()).to_hex();
        let path = cache_root.join("sources").join(&name[..KEY]);
        let (bytes, sorted) = read(&path).unwrap_or((&[], 0));
        let memo = SourceMemo {
            path,
            bytes,
            sorted,
            appender: Mutex::new(None),
        };
        if memo.tail_len() > TAIL_LIMIT.max(sorted / 4) {
            memo.sort_in();
        }
        memo
    }

    /// The digest remembered for the source at `path` (its real path),
    /// if `md` (its `lstat`) is the identity it was hashed with.
    pub(crate) fn digest(&self, path: &Path, md: &fs::Metadata) -> Option<blake3::Hash> {
        let key = path_key(path);
        let want = identity(md);
        let found = self
            .tail()
            .rev()
            .find(|r| r[..KEY] == key)
            .or_else(|| self.find_sorted(&key))
            .filter(|r| valid(r))?;
        if found[KEY + 1..KEY + 1 + IDENTITY] != want {
            return None;
        }
        let hex = &found[KEY + 1 + IDENTITY + 1..RECORD - 1];
        blake3::Hash::from_hex(hex).ok()
    }

    /// Remembers `digest` for the source at `path` (its real path), hashed
    /// while `md` was its identity: appended to the memo, unless the file
    /// changed less than [`SETTLE`] before `now`. Best effort.
    pub(crate) fn remember(
        &self,
        path: &Path,
        md: &fs::Metadata,
        digest: &blake3::Hash,
        now: SystemTime,
    ) {
        if !settled(md, now) {
            return;
        }
        let mut record = Vec::with_capacity(RECORD);
        record.extend_from_slice(&path_key(path));
        record.push(b' ');
        record.extend_from_slice(&identity(md));
        record.push(b' ');
        record.extend_from_slice(digest.to_hex().as_bytes());
        record.push(b'\n');
        debug_assert_eq!(record.len(), RECORD);
        let Ok(mut appender) = self.appender.lock() else {
            return;
        };
        if appender.is_none() {
            *appender = self.open_for_append();
        }
        if let Some(f) = appender.as_mut() {
            // One write of a whole record: concurrent appends interleave
            // by record, never within one.
            let _ = f.write_all(&record);
        }
    }

    fn open_for_append(&self) -> Option<fs::File> {
        let dir = self.path.parent()?;
        fs::create_dir_all(dir).ok()?;
        let f = fs::OpenOptions::new()
            .append(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&self.path)
            .ok()?;
        if f.metadata().ok()?.len() == 0 {
            let mut f = &f;
            f.write_all(&header(0)).ok()?;
        }
        Some(f)
    }

    fn records(&self) -> &[u8] {
        self.bytes.get(HEADER..).unwrap_or(&[])
    }

    fn tail(&self) -> std::slice::ChunksExact<'_, u8> {
        let records = self.records();
        records[(self.sorted * RECORD).min(records.len())..].chunks_exact(RECORD)
    }

    fn tail_len(&self) -> usize {
        self.tail().len()
    }

    /// The sorted record of `key`, by bisection.
    fn find_sorted(&self, key: &[u8]) -> Option<&[u8]> {
        let records = self.records();
        let (mut lo, mut hi) = (0, self.sorted);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let r = records.get(mid * RECORD..(mid + 1) * RECORD)?;
            match r[..KEY].cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(r),
            }
        }
        None
    }

    /// Rewrites the memo with every path's newest record, sorted (by
    /// rename: a process reading the old one keeps it). Best effort.
    fn sort_in(&self) {
        let mut newest: std::collections::BTreeMap<&[u8], &[u8]> = Default::default();
        for r in self.records().chunks_exact(RECORD) {
            if valid(r) {
                newest.insert(&r[..KEY], r);
            }
        }
        let mut text = header(newest.len());
        for r in newest.values() {
            text.extend_from_slice(r);
        }
        let tmp = self
            .path
            .with_extension(format!("{}.tmp", std::process::id()));
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut f| f.write_all(&text));
        if written.is_err() || fs::rename(&tmp, &self.path).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }
}

/// The memo at `path`, mapped for the process, and its sorted count.
fn read(path: &Path) -> Option<(&'static [u8], usize)> {
    let bytes = crate::object::mapped::map_for_process(path)?;
    let head = bytes.get(..HEADER)?;
    if !head.starts_with(MAGIC) || head[HEADER - 1] != b'\n' {
        return None;
    }
    let count = std::str::from_utf8(&head[MAGIC.len()..MAGIC.len() + 10]).ok()?;
    let sorted: usize = count.parse().ok()?;
    // A record torn by a crash leaves the tail short: whole records only.
    if (bytes.len() - HEADER) / RECORD < sorted {
        return None;
    }
    Some((bytes, sorted))
}

fn header(sorted: usize) -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(format!("{sorted:010}").as_bytes());
    h.resize(HEADER - 1, b' ');
    h.push(b'\n');
    h
}

/// Whether `r` has a record's shape (a torn or foreign one is dropped
/// when the memo is sorted).
fn valid(r: &[u8]) -> bool {
    r.len() == RECORD
        && r[KEY] == b' '
        && r[KEY + 1 + IDENTITY] == b' '
        && r[RECORD - 1] == b'\n'
        && r[..KEY].iter().all(u8::is_ascii_hexdigit)
}

/// The first [`KEY`] hex digits of the BLAKE3 of `path`.
fn path_key(path: &Path) -> [u8; KEY] {
    let hex = blake3::hash(path.as_os_str().as_encoded_bytes()).to_hex();
    let mut key = [0; KEY];
    key.copy_from_slice(&hex.as_bytes()[..KEY]);
    key
}

/// A file's identity in the memo's fixed-width form: size, mtime, ctime
/// and inode, as `{:020} {:+020}.{:09} {:+020}.{:09} {:020}` would write
/// them (by hand: a lookup makes one per kernel).
fn identity(md: &fs::Metadata) -> [u8; IDENTITY] {
    let mut out = [b' '; IDENTITY];
    let mut at = 0;
    let mut put = |digits: usize, sign: Option<bool>, mut v: u64, then: u8| {
        let start = at;
        let width = digits + usize::from(sign.is_some());
        for i in (start + usize::from(sign.is_some())..start + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
        if let Some(negative) = sign {
            out[start] = if negative { b'-' } else { b'+' };
        }
        at = start + width;
        if at < IDENTITY {
            out[at] = then;
            at += 1;
        }
    };
    let signed = |t: i64| (Some(t < 0), t.unsigned_abs());
    put(20, None, md.size(), b' ');
    let (sign, v) = signed(md.mtime());
    put(19, sign, v, b'.');
    put(9, None, md.mtime_nsec() as u64, b' ');
    let (sign, v) = signed(md.ctime());
    put(19, sign, v, b'.');
    put(9, None, md.ctime_nsec() as u64, b' ');
    put(20, None, md.ino(), b' ');
    out
}

/// Whether two `stat`s of a file show the same identity (what the memo
/// compares).
pub(crate) fn same_identity(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    identity(a) == identity(b)
}

/// Whether the file's last change (mtime and ctime) is [`SETTLE`] or more
/// before `now`.
fn settled(md: &fs::Metadata, now: SystemTime) -> bool {
    let Some(limit) = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()
        .and_then(|d| d.checked_sub(SETTLE))
    else {
        return false;
    };
    let before = |secs: i64, nsec: i64| {
        u64::try_from(secs)
            .ok()
            .and_then(|s| u32::try_from(nsec).ok().map(|n| Duration::new(s, n)))
            .is_some_and(|t| t < limit)
    };
    before(md.mtime(), md.mtime_nsec()) && before(md.ctime(), md.ctime_nsec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ck-jit-sources-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn later() -> SystemTime {
        SystemTime::now() + SETTLE * 2
    }

    #[test]
    fn a_remembered_digest_serves_the_same_identity_only() {
        let dir = scratch("same");
        let src = dir.join("a.c");
        fs::write(&src, "int a;").unwrap();
        let md = fs::symlink_metadata(&src).unwrap();
        let d = blake3::hash(b"int a;");
        let memo = SourceMemo::open(&dir, Path::new("/tree"));
        assert_eq!(memo.digest(&src, &md), None);
        memo.remember(&src, &md, &d, later());
        let again = SourceMemo::open(&dir, Path::new("/tree"));
        assert_eq!(again.digest(&src, &md), Some(d));
        // Another tree has another memo.
        assert_eq!(
            SourceMemo::open(&dir, Path::new("/other")).digest(&src, &md),
            None
        );
        // The file rewritten: its identity differs (ctime at least).
        fs::write(&src, "int bb;").unwrap();
        let changed = fs::symlink_metadata(&src).unwrap();
        assert_eq!(again.digest(&src, &changed), None);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_identity_is_what_the_format_string_would_write() {
        let dir = scratch("identity");
        let f = dir.join("a");
        fs::write(&f, "x").unwrap();
        let md = fs::symlink_metadata(&f).unwrap();
        let want = format!(
            "{:020} {:+020}.{:09} {:+020}.{:09} {:020}",
            md.size(),
            md.mtime(),
            md.mtime_nsec(),
            md.ctime(),
            md.ctime_nsec(),
            md.ino()
        );
        assert_eq!(std::str::from_utf8(&identity(&md)).unwrap(), want);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_changed_just_now_is_not_remembered() {
        let dir = scratch("fresh");
        let src = dir.join("a.c");
        fs::write(&src, "int a;").unwrap();
        let md = fs::symlink_metadata(&src).unwrap();
        let memo = SourceMemo::open(&dir, Path::new("/tree"));
        memo.remember(&src, &md, &blake3::hash(b"int a;"), SystemTime::now());
        assert_eq!(
            SourceMemo::open(&dir, Path::new("/tree")).digest(&src, &md),
            None
        );
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_long_tail_is_sorted_in_and_the_newest_record_wins() {
        let dir = scratch("sort");
        let memo = SourceMemo::open(&dir, Path::new("/tree"));
        let mut files = Vec::new();
        for i in 0..(TAIL_LIMIT + 10) {
            let src = dir.join(format!("s{i}.c"));
            fs::write(&src, format!("int s{i};")).unwrap();
            let md = fs::symlink_metadata(&src).unwrap();
            memo.remember(&src, &md, &blake3::hash(b"old"), later());
            memo.remember(&src, &md, &blake3::hash(i.to_string().as_bytes()), later());
            files.push((src, md));
        }
        let sorted = SourceMemo::open(&dir, Path::new("/tree"));
        let reread = SourceMemo::open(&dir, Path::new("/tree"));
        assert_eq!(reread.sorted, files.len());
        assert_eq!(reread.tail_len(), 0);
        for (i, (src, md)) in files.iter().enumerate() {
            let want = blake3::hash(i.to_string().as_bytes());
            assert_eq!(sorted.digest(src, md), Some(want));
            assert_eq!(reread.digest(src, md), Some(want));
        }
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_torn_or_foreign_memo_is_no_memo() {
        let dir = scratch("torn");
        let src = dir.join("a.c");
        fs::write(&src, "int a;").unwrap();
        let md = fs::symlink_metadata(&src).unwrap();
        let memo = SourceMemo::open(&dir, Path::new("/tree"));
        memo.remember(&src, &md, &blake3::hash(b"int a;"), later());
        let file = memo.path.clone();
        let whole = fs::read(&file).unwrap();
        // A record cut short by a crash: the whole records before it count.
        fs::write(&file, &whole[..whole.len() - 10]).unwrap();
        assert_eq!(
            SourceMemo::open(&dir, Path::new("/tree")).digest(&src, &md),
            None
        );
        for junk in [&b""[..], b"not a memo", &whole[..HEADER - 1]] {
            fs::write(&file, junk).unwrap();
            assert_eq!(
                SourceMemo::open(&dir, Path::new("/tree")).digest(&src, &md),
                None
            );
        }
        let mut bad_count = whole.clone();
        bad_count[MAGIC.len()..MAGIC.len() + 10].copy_from_slice(b"0000000009");
        fs::write(&file, &bad_count).unwrap();
        assert_eq!(
            SourceMemo::open(&dir, Path::new("/tree")).digest(&src, &md),
            None
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
