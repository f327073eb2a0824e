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
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use super::memo_file::{hex_key, tree_file, MemoFile, KEY};
#[cfg(test)]
use super::memo_file::{HEADER, TAIL_LIMIT};

/// The first bytes of a memo: another format is no memo.
const MAGIC: &[u8] = b"ck-jit source digests 1 sorted ";
/// The identity: size, mtime, ctime and inode, fixed width.
const IDENTITY: usize = 20 + 1 + 30 + 1 + 30 + 1 + 20;
/// A record's fields after the path key: the identity, the digest.
const FIELDS: &[usize] = &[IDENTITY, 64];
/// How old a file's last change must be for its digest to be remembered.
pub(crate) const SETTLE: Duration = Duration::from_secs(2);

/// One tree's memo, as this process read it.
pub(crate) struct SourceMemo {
    file: MemoFile,
}

impl SourceMemo {
    /// The memo of the tree whose real path is `tree` in the cache at
    /// `cache_root` (empty when there is none yet, or it is not one).
    pub(crate) fn open(cache_root: &Path, tree: &Path) -> SourceMemo {
        let path = tree_file(&cache_root.join("sources"), tree);
        SourceMemo {
            file: MemoFile::open(path, MAGIC, FIELDS),
        }
    }

    /// The digest remembered for the source at `path` (its real path),
    /// if `md` (its `lstat`) is the identity it was hashed with.
    pub(crate) fn digest(&self, path: &Path, md: &fs::Metadata) -> Option<blake3::Hash> {
        let found = self.file.find(&path_key(path))?;
        if self.file.field(found, 0) != identity(md) {
            return None;
        }
        let hex = self.file.field(found, 1);
        blake3::Hash::from_hex(hex).ok()
    }

    /// Remembers `digest` for the source at `path` (its real path),
    /// hashed while `md` was its identity: appended to the memo, unless
    /// the file changed less than [`SETTLE`] before `now`. Best effort.
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
        let hex = digest.to_hex();
        self.file
            .append(&path_key(path), &[&identity(md), hex.as_bytes()]);
    }
}

/// The first [`KEY`] hex digits of the BLAKE3 of `path`.
fn path_key(path: &Path) -> [u8; KEY] {
    hex_key(path.as_os_str().as_encoded_bytes())
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
pub(crate) fn settled(md: &fs::Metadata, now: SystemTime) -> bool {
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
    use std::path::PathBuf;

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
        assert_eq!(reread.file.sorted, files.len());
        assert_eq!(reread.file.tail_len(), 0);
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
        let file = memo.file.path.clone();
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
