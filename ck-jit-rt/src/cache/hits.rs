//! The cache's memo of hits: for a blob whose source has the identity it
//! had when its entry was last found (path, size, mtime, ctime, inode),
//! compiled in the same context (group command, launcher, compiler
//! identity, compiler variables: [`hit_context`](super::keys::hit_context)),
//! the entry that served it: its prekey, key, header set, the identity
//! of its object, and when its record was last marked used. A lazy load
//! that finds it there checks the object's `lstat` and the headers, as any
//! hit does, and reads no source, computes no key and reads no record: the
//! record is refreshed (and the memo with it) only when the time the memo
//! gives is older than [`TOUCH_EVERY`](super::entries::TOUCH_EVERY), as a
//! hit without the memo refreshes it. Anything else is looked up as
//! without the memo, and remembered.
//!
//! One file per tree (`hits/<digest of the tree's real path>` in the
//! writable, private cache), in the form of [`memo_file`](super::memo_file).
//! A source's identity is trusted as the memo of source digests trusts it:
//! only a file that had not changed for
//! [`SETTLE`](super::sources::SETTLE) when its entry was found
//! is remembered. Owns the memo files; reads no source, no record and
//! nothing of the runtime above it.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::file_stat::stat_key;
use super::memo_file::{hex_key, hex_text, tree_file, MemoFile, KEY};
use super::record::Record;
use super::sources::settled;

/// The first bytes of a memo: another format is no memo.
const MAGIC: &[u8] = b"ck-jit hits 2 sorted ";
/// A digest in a record: the short hex form of a cache key.
const DIGEST: usize = 32;
/// A file's identity in a record: size, mtime (seconds, nanoseconds),
/// ctime (the same) and inode, each 16 hex digits of its 64 bits.
pub(crate) const IDENTITY: usize = 6 * 16;
/// When a record was last marked used: Unix seconds, 16 hex digits.
const USED: usize = 16;
/// A record's fields after the hit key: prekey, key, header set (`-`s for
/// none), the object's identity, the entry's last use.
const FIELDS: &[usize] = &[DIGEST, DIGEST, DIGEST, IDENTITY, USED];

/// An entry as the memo names it, its names borrowed (from the memo, or
/// from the record it was made of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hit<'a> {
    /// The entry's prekey (its directory).
    pub prekey: &'a str,
    /// Its key (the object's and the record's file stem).
    pub key: &'a str,
    /// Its header set's digest, empty for none.
    pub depset: &'a str,
    /// The object's identity as published ([`identity`]).
    pub object: [u8; IDENTITY],
    /// When the entry's record was last marked used (its modification
    /// time, to the second, as far as this memo knows).
    pub used: SystemTime,
}

impl<'a> Hit<'a> {
    /// The memo's word on the entry `record` describes: its object has the
    /// identity `object`, and it was last used at `used`.
    pub(crate) fn of(record: &'a Record, object: [u8; IDENTITY], used: SystemTime) -> Hit<'a> {
        Hit {
            prekey: &record.prekey,
            key: &record.key,
            depset: &record.depset,
            object,
            used,
        }
    }

    /// Whether `other` names the same entry, whenever each was used.
    fn same_entry(&self, other: &Hit<'_>) -> bool {
        (self.prekey, self.key, self.depset, &self.object)
            == (other.prekey, other.key, other.depset, &other.object)
    }
}

/// One tree's memo of hits, as this process read it.
pub(crate) struct HitMemo {
    file: MemoFile,
}

impl HitMemo {
    /// The memo of the tree whose real path is `tree` in the cache at
    /// `cache_root` (empty when there is none yet, or it is not one).
    pub(crate) fn open(cache_root: &Path, tree: &Path) -> HitMemo {
        let path = tree_file(&cache_root.join("hits"), tree);
        HitMemo {
            file: MemoFile::open(path, MAGIC, FIELDS),
        }
    }

    /// The entry remembered under `key` ([`hit_key`]).
    pub(crate) fn find(&self, key: &[u8; KEY]) -> Option<Hit<'_>> {
        let r = self.file.find(key)?;
        let digest = |i| hex_text(self.file.field(r, i));
        let depset = match self.file.field(r, 2) {
            t if t.iter().all(|&b| b == b'-') => "",
            _ => digest(2)?,
        };
        let used = hex_u64(digest(4)?.as_bytes());
        Some(Hit {
            prekey: digest(0)?,
            key: digest(1)?,
            depset,
            object: self.file.field(r, 3).try_into().ok()?,
            // A time past what the clock can hold is no memo's.
            used: UNIX_EPOCH.checked_add(Duration::from_secs(used))?,
        })
    }

    /// Remembers `hit` under `key`, found for a source whose identity is
    /// `source`: unless the source changed less than
    /// [`SETTLE`](super::sources::SETTLE) before
    /// `now`, or the memo already names the entry with as late a use.
    /// Best effort.
    pub(crate) fn remember(
        &self,
        key: &[u8; KEY],
        source: &fs::Metadata,
        hit: &Hit<'_>,
        now: SystemTime,
    ) {
        let known = self.find(key);
        if !settled(source, now) || known.is_some_and(|k| k.same_entry(hit) && k.used >= hit.used) {
            return;
        }
        let none = [b'-'; DIGEST];
        let depset = match hit.depset.as_bytes() {
            [] => &none[..],
            d => d,
        };
        let secs = hit
            .used
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let used = format!("{secs:016x}");
        let fields: [&[u8]; 5] = [
            hit.prekey.as_bytes(),
            hit.key.as_bytes(),
            depset,
            &hit.object,
            used.as_bytes(),
        ];
        if fields[..3].iter().all(|f| f.len() == DIGEST) {
            self.file.append(key, &fields);
        }
    }
}

/// The memo's key of a blob: its name, its source's real path and
/// identity (`source`, its `lstat`), and the context it compiles in.
pub(crate) fn hit_key(
    blob: &str,
    path: &Path,
    source: &fs::Metadata,
    context: &blake3::Hash,
) -> [u8; KEY] {
    const TAG: &[u8] = b"ck-jit hit\0";
    let path = path.as_os_str().as_encoded_bytes();
    let len = TAG.len() + blob.len() + 1 + path.len() + 1 + 6 * 8 + blake3::OUT_LEN;
    // The hashed bytes on the stack (the usual key is some 200 bytes; a
    // longer one goes to the heap).
    let mut stack = [0u8; 512];
    let mut heap = Vec::new();
    let buf = match stack.get_mut(..len) {
        Some(b) => b,
        None => {
            heap.resize(len, 0);
            &mut heap[..]
        }
    };
    let mut at = 0;
    let mut put = |bytes: &[u8]| {
        buf[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    };
    put(TAG);
    put(blob.as_bytes());
    put(&[0]);
    put(path);
    put(&[0]);
    // The identity's fields as bytes (what `identity` writes in hex).
    for v in identity_words(source) {
        put(&v.to_le_bytes());
    }
    put(context.as_bytes());
    hex_key(buf)
}

/// A file's size, mtime (seconds, nanoseconds), ctime (the same) and
/// inode, as 64-bit words.
fn identity_words(md: &fs::Metadata) -> [u64; 6] {
    let (size, mtime, mtime_ns, ctime, ctime_ns, ino) = stat_key(md);
    [
        size,
        mtime as u64,
        mtime_ns as u64,
        ctime as u64,
        ctime_ns as u64,
        ino,
    ]
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The value of up to 16 hex digits (checked as such already: any other
/// byte gives a wrong value, not a failure). No branch a digit.
fn hex_u64(digits: &[u8]) -> u64 {
    digits.iter().fold(0, |v, &b| {
        // `0`-`9` are 0x30-0x39, `a`-`f` and `A`-`F` 0x61-0x66 and
        // 0x41-0x46: the low nibble, plus 9 for a letter (bit 6 set).
        (v << 4) | u64::from((b & 0xf) + 9 * (b >> 6))
    })
}

/// A file's identity as the memo keeps it: its size, mtime, ctime and
/// inode, in hex (a load makes two; digits by shifts, not divisions).
pub(crate) fn identity(md: &fs::Metadata) -> [u8; IDENTITY] {
    let mut out = [0; IDENTITY];
    for (chunk, v) in out.chunks_exact_mut(16).zip(identity_words(md)) {
        // Two digits a byte, most significant first.
        for (pair, b) in chunk.chunks_exact_mut(2).zip(v.to_be_bytes()) {
            pair[0] = HEX[usize::from(b >> 4)];
            pair[1] = HEX[usize::from(b & 0xf)];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::sources::SETTLE;
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// A scratch directory with a source `a.c`, its `lstat`, its key in
    /// some context, and the directory's (empty) memo of `/tree`.
    fn scratch() -> (tempfile::TempDir, fs::Metadata, [u8; KEY], HitMemo) {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a.c");
        fs::write(&src, "int a;").unwrap();
        let md = fs::symlink_metadata(&src).unwrap();
        let key = hit_key("a", &src, &md, &blake3::hash(b"c"));
        let memo = HitMemo::open(dir.path(), Path::new("/tree"));
        (dir, md, key, memo)
    }

    fn hit(depset: &str) -> Hit<'_> {
        Hit {
            prekey: "00000000000000000000000000000000",
            key: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            depset,
            object: [b'7'; IDENTITY],
            used: UNIX_EPOCH + Duration::from_secs(1_800_000_000),
        }
    }

    #[test]
    fn a_remembered_hit_is_found_by_its_key_alone() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("a.c");
        fs::write(&src, "int a;").unwrap();
        let md = fs::symlink_metadata(&src).unwrap();
        let later = SystemTime::now() + SETTLE * 2;
        let ctx = blake3::hash(b"context");
        let key = hit_key("a", &src, &md, &ctx);
        let memo = HitMemo::open(dir.path(), Path::new("/tree"));
        assert_eq!(memo.find(&key), None);
        memo.remember(&key, &md, &hit(""), later);
        let set = "b".repeat(32);
        let with_set = hit(&set);
        let other = hit_key("b", &src, &md, &ctx);
        memo.remember(&other, &md, &with_set, later);
        let again = HitMemo::open(dir.path(), Path::new("/tree"));
        assert_eq!(again.find(&key), Some(hit("")));
        assert_eq!(again.find(&other), Some(with_set));
        // Another tree, context, source identity or name: another key.
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/other")).find(&key),
            None
        );
        assert_ne!(hit_key("a", &src, &md, &blake3::hash(b"other")), key);
        assert_ne!(hit_key("a", &dir.path().join("b.c"), &md, &ctx), key);
        fs::write(&src, "int bb;").unwrap();
        let changed = fs::symlink_metadata(&src).unwrap();
        assert_ne!(hit_key("a", &src, &changed, &ctx), key);
    }

    #[test]
    fn a_later_use_of_the_same_entry_is_remembered_and_an_earlier_one_is_not() {
        let (dir, md, key, memo) = scratch();
        let later = SystemTime::now() + SETTLE * 2;
        let first = hit("");
        memo.remember(&key, &md, &first, later);
        let earlier = Hit {
            used: first.used - Duration::from_secs(7200),
            ..hit("")
        };
        // (A memo reads its file as it was when opened.)
        let reopened = HitMemo::open(dir.path(), Path::new("/tree"));
        reopened.remember(&key, &md, &earlier, later);
        let reopened = HitMemo::open(dir.path(), Path::new("/tree"));
        assert_eq!(reopened.find(&key), Some(first));
        assert_eq!(reopened.file.tail_len(), 1, "an earlier use adds no record");
        let refreshed = Hit {
            used: first.used + Duration::from_secs(3600),
            ..hit("")
        };
        reopened.remember(&key, &md, &refreshed, later);
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/tree")).find(&key),
            Some(refreshed)
        );
    }

    #[test]
    fn a_key_hashes_its_fields_in_order_whatever_the_path_length() {
        let (_dir, md, _, _) = scratch();
        let ctx = blake3::hash(b"c");
        for path in ["/t/a.c".to_string(), format!("/{}/a.c", "d".repeat(700))] {
            let mut want = b"ck-jit hit\0a\0".to_vec();
            want.extend_from_slice(path.as_bytes());
            want.push(0);
            for v in identity_words(&md) {
                want.extend_from_slice(&v.to_le_bytes());
            }
            want.extend_from_slice(ctx.as_bytes());
            assert_eq!(hit_key("a", Path::new(&path), &md, &ctx), hex_key(&want));
        }
    }

    #[test]
    fn a_last_use_past_what_the_clock_holds_is_no_hit() {
        let (dir, md, key, memo) = scratch();
        memo.remember(&key, &md, &hit(""), SystemTime::now() + SETTLE * 2);
        let file = memo.file.path.clone();
        let mut bytes = fs::read(&file).unwrap();
        let end = bytes.len() - 1;
        bytes[end - USED..end].copy_from_slice(b"ffffffffffffffff");
        fs::write(&file, &bytes).unwrap();
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/tree")).find(&key),
            None
        );
    }

    #[test]
    fn hex_digits_are_read_as_from_str_radix_reads_them() {
        for v in [0, 1, 9, 10, 15, 0xdead_beef, 1_800_000_000, u64::MAX] {
            for text in [format!("{v:016x}"), format!("{v:016X}"), format!("{v:x}")] {
                assert_eq!(hex_u64(text.as_bytes()), v, "{text}");
            }
        }
    }

    #[test]
    fn the_identity_is_the_stat_in_hex() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a");
        fs::write(&f, "x").unwrap();
        let md = fs::symlink_metadata(&f).unwrap();
        let want = format!(
            "{:016x}{:016x}{:016x}{:016x}{:016x}{:016x}",
            md.size(),
            md.mtime(),
            md.mtime_nsec(),
            md.ctime(),
            md.ctime_nsec(),
            md.ino()
        );
        assert_eq!(std::str::from_utf8(&identity(&md)).unwrap(), want);
    }

    #[test]
    fn a_source_changed_just_now_is_not_remembered() {
        let (dir, md, key, memo) = scratch();
        memo.remember(&key, &md, &hit(""), SystemTime::now());
        memo.remember(
            &key,
            &md,
            &hit(""),
            SystemTime::now() + Duration::from_millis(10),
        );
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/tree")).find(&key),
            None
        );
    }

    #[test]
    fn a_record_that_is_not_hex_where_keys_are_is_no_hit() {
        let (dir, md, key, memo) = scratch();
        let later = SystemTime::now() + SETTLE * 2;
        memo.remember(&key, &md, &hit(""), later);
        let file = memo.file.path.clone();
        let mut bytes = fs::read(&file).unwrap();
        // The key (32 hex digits) is the second field: a slash in it.
        let at = bytes.len() - 1 - USED - 1 - IDENTITY - 1 - DIGEST - 1 - DIGEST + 3;
        bytes[at] = b'/';
        fs::write(&file, &bytes).unwrap();
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/tree")).find(&key),
            None
        );
        // Nor is a record of the wrong width, or a memo of another kind.
        fs::write(&file, &bytes[..bytes.len() - 5]).unwrap();
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/tree")).find(&key),
            None
        );
        fs::write(&file, b"ck-jit source digests 1 sorted 0000000000").unwrap();
        let foreign = HitMemo::open(dir.path(), Path::new("/tree"));
        assert_eq!(foreign.find(&key), None);
        // The next hit remembered replaces such a file with a memo.
        foreign.remember(&key, &md, &hit(""), later);
        assert_eq!(
            HitMemo::open(dir.path(), Path::new("/tree")).find(&key),
            Some(hit(""))
        );
    }
}
