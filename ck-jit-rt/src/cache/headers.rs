//! How a hit checks the headers a compile read. A record names its header
//! set (`deps/<digest>.json`, read once per process and kept parsed); on a
//! process's first use of a set each recorded header is stat-checked
//! against the tree (its recorded identity, or the one this host kept),
//! and hashed only when its identity differs. A header or a whole set
//! found unchanged is then trusted by later lookups of the process for
//! [`CHECK_REUSE`].

use std::collections::HashMap;
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use once_cell::sync::Lazy;

use serde::{Deserialize, Serialize};

use super::file_stat::{file_hash, parse_stat, StatKey};
use crate::object::bytes::Bytes;

/// Where a cache keeps its header sets (`deps/<digest>.json`).
pub(crate) const DEPSETS: &str = "deps";

/// How long a header (or a whole header set) found unchanged is trusted by
/// later lookups in the same process without being checked again.
pub const CHECK_REUSE: Duration = Duration::from_secs(1);

/// Hex BLAKE3, truncated to 128 bits (enough for a cache key).
pub fn short_hash(h: &blake3::Hash) -> String {
    h.to_hex()[..32].to_string()
}

/// One header a compile read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dep {
    /// Path; `{root}/...` when under the tree root, so a relocated tree
    /// still matches.
    pub path: String,
    /// BLAKE3 of its contents.
    pub hash: String,
    /// The file's identity when it was hashed (`size:mtime:ctime:inode`,
    /// nanoseconds). While all of it is unchanged the contents are too
    /// (ctime moves on every write and cannot be set back), so a lookup
    /// need not re-read the header; anything else re-hashes it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stat: String,
}

/// A header set as lookups read it: its text kept whole (what
/// [`Cache::write_depset`](super::Cache::write_depset) wrote, read back after its digest matched),
/// each header's fields found in it. Sets are read on a first hit of
/// every process, 600 headers and 130 KB for a CK blob: nothing is
/// allocated per header, and each identity is parsed once.
pub(crate) struct HeaderSet {
    /// UTF-8 (checked when the set was made); mapped when large.
    text: Bytes,
    items: Vec<Header>,
}

// SAFETY: as `ObjectBytes`: a mapping is read-only, private to this
// value, and unmapped only on drop.
unsafe impl Send for HeaderSet {}
// SAFETY: as above; shared access only reads.
unsafe impl Sync for HeaderSet {}

impl PartialEq for HeaderSet {
    fn eq(&self, other: &HeaderSet) -> bool {
        self.text() == other.text() && self.items == other.items
    }
}

impl Eq for HeaderSet {}

impl fmt::Debug for HeaderSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HeaderSet")
            .field("headers", &self.items.len())
            .field("mapped", &self.text.is_mapped())
            .finish()
    }
}

/// Where one header's fields are in [`HeaderSet::text`], and its
/// identity read back ([`parse_stat`]).
#[derive(Debug, PartialEq, Eq)]
struct Header {
    path: (u32, u32),
    hash: (u32, u32),
    stat: (u32, u32),
    identity: Option<StatKey>,
}

impl HeaderSet {
    /// Reads a set's JSON: the form `serde_json` writes, strings without
    /// escapes, by hand; anything else (an escaped character in a path,
    /// another order) through `serde_json`, which reads such text to the
    /// same headers.
    pub(super) fn parse(text: Bytes) -> Option<HeaderSet> {
        let s = std::str::from_utf8(text.as_slice()).ok()?;
        match plain_items(s.as_bytes()) {
            Some(items) => Some(HeaderSet { text, items }),
            None => Some(HeaderSet::from_deps(
                &serde_json::from_str::<Vec<Dep>>(s).ok()?,
            )),
        }
    }

    fn text(&self) -> &str {
        // SAFETY: checked to be UTF-8 when the set was made.
        unsafe { std::str::from_utf8_unchecked(self.text.as_slice()) }
    }

    /// The set of `deps`, its text made of their fields.
    pub(super) fn from_deps(deps: &[Dep]) -> HeaderSet {
        let mut text = String::new();
        let mut put = |s: &str| {
            let at = text.len() as u32;
            text.push_str(s);
            (at, s.len() as u32)
        };
        let items = deps
            .iter()
            .map(|d| Header {
                path: put(&d.path),
                hash: put(&d.hash),
                stat: put(&d.stat),
                identity: parse_stat(&d.stat),
            })
            .collect();
        HeaderSet {
            text: Bytes::Owned(text.into_bytes()),
            items,
        }
    }

    fn field(&self, (at, len): (u32, u32)) -> &str {
        &self.text()[at as usize..(at + len) as usize]
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn path(&self, i: usize) -> &str {
        self.field(self.items[i].path)
    }

    fn hash(&self, i: usize) -> &str {
        self.field(self.items[i].hash)
    }

    /// The headers as records list them.
    pub(super) fn deps(&self) -> Vec<Dep> {
        self.items
            .iter()
            .map(|h| Dep {
                path: self.field(h.path).to_string(),
                hash: self.field(h.hash).to_string(),
                stat: self.field(h.stat).to_string(),
            })
            .collect()
    }
}

/// [`HeaderSet::parse`]'s fast reading: `None` for anything but
/// `[{"path":"..","hash":"..","stat":".."},...]` (`stat` optional) whose
/// strings are plain. `text` is UTF-8, so a field between two quotes is.
fn plain_items(text: &[u8]) -> Option<Vec<Header>> {
    // The first `c` in `b` (the C library's memchr: a set is 130 KB, and
    // a byte-by-byte search cost more than serde_json's whole parse).
    fn find(b: &[u8], c: u8) -> Option<usize> {
        // SAFETY: searches exactly the `b.len()` bytes of `b`.
        let p = unsafe { libc::memchr(b.as_ptr().cast(), c.into(), b.len()) };
        (!p.is_null()).then(|| p as usize - b.as_ptr() as usize)
    }
    // A string at the start of `b`: its place in `text` (at `base`),
    // and what follows.
    fn string(b: &[u8], base: usize) -> Option<((u32, u32), &[u8])> {
        let b = b.strip_prefix(b"\"")?;
        let end = find(b, b'"')?;
        let s = &b[..end];
        let at = u32::try_from(s.as_ptr() as usize - base).ok()?;
        Some(((at, u32::try_from(end).ok()?), &b[end + 1..]))
    }
    // An escape anywhere: serde_json's to read. (Raw control characters,
    // which JSON forbids, cannot be there: the text matched its digest,
    // and serde_json escapes them when it writes a set.)
    if find(text, b'\\').is_some() {
        return None;
    }
    let base = text.as_ptr() as usize;
    let mut b = text.strip_prefix(b"[")?;
    let mut out = Vec::with_capacity(text.len() / 200 + 1);
    if b == b"]" {
        return Some(out);
    }
    loop {
        let (path, rest) = string(b.strip_prefix(b"{\"path\":")?, base)?;
        let (hash, rest) = string(rest.strip_prefix(b",\"hash\":")?, base)?;
        let (stat, rest) = match rest.strip_prefix(b",\"stat\":") {
            Some(r) => string(r, base)?,
            None => ((0, 0), rest),
        };
        let (at, len) = (stat.0 as usize, stat.1 as usize);
        let identity = std::str::from_utf8(&text[at..at + len])
            .ok()
            .and_then(parse_stat);
        out.push(Header {
            path,
            hash,
            stat,
            identity,
        });
        b = rest.strip_prefix(b"}")?;
        match b.split_first()? {
            (b',', rest) => b = rest,
            (b']', []) => return Some(out),
            _ => return None,
        }
    }
}

/// Parsed header sets of this process, by digest.
pub(super) static DEPSET_MEMO: Lazy<
    Mutex<HashMap<String, Arc<HeaderSet>, crate::fixed_hash::FixedState>>,
> = Lazy::new(|| Mutex::new(HashMap::default()));

/// Header sets found unchanged in this process: (tree root, compiler
/// prefix, set digest) → the set and when its oldest header check was made
/// ([`CHECK_REUSE`]). A header of a set found so is trusted by another
/// set that lists it with the same contents, within the same window.
#[derive(Default)]
struct Checked {
    /// Per roots (a process has one or two), the sets by digest: a
    /// lookup compares the roots in place and hashes only the digest.
    roots: Vec<(RootsKey, CheckedSets)>,
}

/// Sets found unchanged under one roots: digest → the set, and when.
type CheckedSets = HashMap<String, (Arc<HeaderSet>, Instant), crate::fixed_hash::FixedState>;

impl Checked {
    fn position(&self, roots: Roots<'_>) -> Option<usize> {
        self.roots
            .iter()
            .position(|((t, c), _)| t == roots.tree && c.as_slice() == roots.compiler)
    }
}

/// The roots a set was checked under, owned.
type RootsKey = (PathBuf, Vec<PathBuf>);

static CHECKED: Lazy<Mutex<Checked>> = Lazy::new(|| Mutex::new(Checked::default()));

fn fresh(t: Instant, now: Instant) -> bool {
    now.saturating_duration_since(t) < CHECK_REUSE
}

/// Forgets every header check and parsed header set of this process, as
/// a new process would start (for tests that edit a header, or remove a
/// set, and look again within [`CHECK_REUSE`]).
pub fn forget_checks() {
    if let Ok(mut c) = CHECKED.lock() {
        *c = Checked::default();
    }
    if let Ok(mut m) = DEPSET_MEMO.lock() {
        m.clear();
    }
}

/// Whether every header of a set still has its recorded contents: trusted
/// without a look when the set, or the header (as listed by another set
/// found unchanged), was found so less than [`CHECK_REUSE`] ago in this
/// process.
pub(super) fn deps_verified(
    depset: &str,
    deps: &Arc<HeaderSet>,
    roots: Roots<'_>,
    cache: Option<&Path>,
) -> bool {
    let now = Instant::now();
    // The sets this process found unchanged lately, under these roots.
    let recent: Vec<(Arc<HeaderSet>, Instant)> = match CHECKED.lock() {
        Ok(c) => {
            let sets = c.position(roots).map(|i| &c.roots[i].1);
            let this = sets
                .filter(|_| !depset.is_empty())
                .and_then(|s| s.get(depset));
            if this.is_some_and(|(_, t)| fresh(*t, now)) {
                return true;
            }
            sets.into_iter()
                .flatten()
                .filter(|(_, (_, t))| fresh(*t, now))
                .map(|(_, (d, t))| (d.clone(), *t))
                .collect()
        }
        Err(_) => Vec::new(),
    };
    let mut known: Vec<Option<Instant>> = Vec::new();
    for (set, t) in &recent {
        mark_known(deps, set, *t, &mut known);
    }
    let here = HereStats::open(cache, depset, roots, deps.len());
    let mut seen = Vec::new();
    let Some(oldest) = check_headers(deps, &known, roots, here.as_ref(), &mut seen) else {
        return false;
    };
    if let Some(h) = &here {
        h.keep(&seen);
    }
    if !depset.is_empty() {
        if let Ok(mut c) = CHECKED.lock() {
            for (_, sets) in &mut c.roots {
                sets.retain(|_, (_, t)| fresh(*t, now));
            }
            c.roots.retain(|(_, sets)| !sets.is_empty());
            let i = c.position(roots).unwrap_or_else(|| {
                let key = (roots.tree.to_path_buf(), roots.compiler.to_vec());
                c.roots.push((key, HashMap::default()));
                c.roots.len() - 1
            });
            c.roots[i]
                .1
                .insert(depset.to_string(), (deps.clone(), oldest.min(now)));
        }
    }
    true
}

/// Marks in `known` (one slot per header of `deps`, grown as needed) the
/// headers `seen`, a set found unchanged at `at`, lists with the same
/// contents. Sets list their headers sorted by path, so this is one merge;
/// a set that is not sorted marks nothing (its headers are looked at).
fn mark_known(deps: &HeaderSet, seen: &HeaderSet, at: Instant, known: &mut Vec<Option<Instant>>) {
    let sorted = |d: &HeaderSet| (1..d.len()).all(|i| d.path(i - 1) < d.path(i));
    if !sorted(deps) || !sorted(seen) {
        return;
    }
    known.resize(deps.len(), None);
    let (mut i, mut j) = (0, 0);
    while i < deps.len() && j < seen.len() {
        match deps.path(i).cmp(seen.path(j)) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                if deps.hash(i) == seen.hash(j) {
                    let k = &mut known[i];
                    *k = Some(k.map_or(at, |t| t.max(at)));
                }
                i += 1;
                j += 1;
            }
        }
    }
}

/// Looks at every header of `deps` not `known`; `Some(when the oldest
/// check trusted was made)` when all are unchanged. (Looking with several
/// threads at once was measured slower: they contend for the same
/// directories, and a first call on a busy machine waited for them.)
fn check_headers(
    deps: &HeaderSet,
    known: &[Option<Instant>],
    roots: Roots<'_>,
    here: Option<&HereStats>,
    seen: &mut Vec<(usize, StatKey)>,
) -> Option<Instant> {
    let started = Instant::now();
    let oldest_known = known.iter().flatten().min().copied();
    let mut dirs = Dirs::new(roots);
    (0..deps.len())
        .all(|i| {
            known.get(i).is_some_and(Option::is_some)
                || dep_matches(deps, i, &mut dirs, roots, here, seen)
        })
        .then(|| oldest_known.map_or(started, |t| t.min(started)))
}

/// The identities this host's copies of a header set's headers have,
/// where they differ from those recorded (a pack made on another host, a
/// toolchain installed at another time): a file `deps/<set>.here-<roots>`
/// of the cache, one line per header, empty where the recorded identity
/// holds. A header whose identity is neither is hashed, as always; one
/// found unchanged that way has its identity kept here, so the next
/// process `stat`s it instead of hashing it again. Like a recorded
/// identity it only vouches for contents while size, times and inode are
/// all the same (a change time cannot be set back).
struct HereStats {
    path: PathBuf,
    stats: Vec<Option<StatKey>>,
}

impl HereStats {
    /// Those of `depset` under `roots` in the cache at `cache` (none known
    /// when none were kept, or what was kept is not for a set of `len`
    /// headers); `None` without a writable cache or a set digest.
    fn open(cache: Option<&Path>, depset: &str, roots: Roots<'_>, len: usize) -> Option<HereStats> {
        let cache = cache?;
        if depset.is_empty() {
            return None;
        }
        let mut h = blake3::Hasher::new();
        h.update(roots.tree.as_os_str().as_encoded_bytes());
        for c in roots.compiler {
            h.update(b"\0");
            h.update(c.as_os_str().as_encoded_bytes());
        }
        let path = cache
            .join(DEPSETS)
            .join(format!("{depset}.here-{}", short_hash(&h.finalize())));
        let stats = fs::read_to_string(&path)
            .ok()
            .map(|t| t.lines().map(parse_stat).collect::<Vec<_>>())
            .filter(|v| v.len() == len)
            .unwrap_or_else(|| vec![None; len]);
        Some(HereStats { path, stats })
    }

    fn get(&self, i: usize) -> Option<StatKey> {
        self.stats.get(i).copied().flatten()
    }

    /// Keeps what `seen` adds (header, identity now, found unchanged by
    /// its hash) to what was kept; nothing when it adds nothing. Written
    /// whole or not at all; a failure only costs a later process hashing.
    fn keep(&self, seen: &[(usize, StatKey)]) {
        if seen.is_empty() {
            return;
        }
        let mut stats = self.stats.clone();
        for (i, st) in seen {
            if let Some(slot) = stats.get_mut(*i) {
                *slot = Some(*st);
            }
        }
        let mut text = String::new();
        for st in &stats {
            if let Some((size, m, mn, c, cn, ino)) = st {
                text.push_str(&format!("{size}:{m}.{mn:09}:{c}.{cn:09}:{ino}"));
            }
            text.push('\n');
        }
        crate::object::text::keep_text(&self.path, &text);
    }
}

/// What recorded header paths are relative to: the tree's root
/// (`{root}/...`, so a relocated tree still matches) and the installation
/// prefix of the compiler that read them (`{compiler}/...`, so the same
/// toolchain at another path reads its own copies of its headers).
#[derive(Debug, Clone, Copy)]
pub struct Roots<'a> {
    /// The tree root (the manifest's).
    pub tree: &'a Path,
    /// The compiler's installation prefix, as the spellings of one
    /// directory, the one `{compiler}/...` is read from first; empty when
    /// it has none of its own ([`CompilerId::prefix`](crate::compile::CompilerId::prefix)).
    pub compiler: &'a [PathBuf],
}

impl<'a> Roots<'a> {
    /// The tree root alone.
    pub fn tree(tree: &'a Path) -> Roots<'a> {
        Roots {
            tree,
            compiler: &[],
        }
    }
}

/// Expands a recorded dependency path; `None` for a `{compiler}/` path
/// when no compiler prefix is known (it names nothing then).
pub fn dep_path(path: &str, roots: Roots<'_>) -> Option<PathBuf> {
    if let Some(rel) = path.strip_prefix("{root}/") {
        return Some(roots.tree.join(rel));
    }
    if let Some(rel) = path.strip_prefix("{compiler}/") {
        return roots.compiler.first().map(|c| c.join(rel));
    }
    Some(PathBuf::from(path))
}

/// Records a dependency path relative to the root it is under (the more
/// specific one when it is under both), else as it is.
pub fn dep_name(path: &Path, roots: Roots<'_>) -> String {
    let under = |root: &Path, name: &str| {
        path.strip_prefix(root).ok().map(|rel| {
            (
                root.as_os_str().len(),
                format!("{{{name}}}/{}", rel.display()),
            )
        })
    };
    std::iter::once(under(roots.tree, "root"))
        .chain(roots.compiler.iter().map(|c| under(c, "compiler")))
        .flatten()
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| path.display().to_string(), |(_, name)| name)
}

/// Whether header `i` of `set` has its recorded contents: the recorded
/// identity or the one this host kept ([`HereStats`]), or else the same
/// hash; then its identity now goes in `seen`, to be kept.
fn dep_matches(
    set: &HeaderSet,
    i: usize,
    dirs: &mut Dirs<'_>,
    roots: Roots<'_>,
    here: Option<&HereStats>,
    seen: &mut Vec<(usize, StatKey)>,
) -> bool {
    let path = set.path(i);
    let recorded = set.items[i].identity;
    let kept = here.and_then(|h| h.get(i));
    let now = if recorded.is_some() || here.is_some() {
        dirs.stat(path)
    } else {
        None
    };
    if now.is_some() && (now == recorded || now == kept) {
        return true;
    }
    let same = dep_path(path, roots)
        .and_then(|p| file_hash(&p).ok())
        .is_some_and(|h| h == set.hash(i));
    if same && here.is_some() {
        // Its identity after the hash: a file that changed meanwhile has
        // another one, and is hashed again next time.
        if let Some(st) = now.filter(|n| dirs.stat(path) == Some(*n)) {
            seen.push((i, st));
        }
    }
    same
}

/// Header identities looked at relative to their directory: walking each
/// header's whole path (15 components under a CK tree) was most of a
/// lookup's time. A directory is opened once per set, relative to the
/// nearest one already open above it (a set lists its headers sorted, so
/// `/usr/include` comes back after each of its subdirectories). The same
/// file as `stat` on the expanded path finds, symbolic links followed;
/// nothing is allocated per header.
struct Dirs<'a> {
    roots: Roots<'a>,
    /// Directories opened, as the recorded paths spell them (`None`: it
    /// could not be opened), at most [`Dirs::KEPT`].
    open: Vec<(String, Option<File>)>,
    /// Which of them the last header was in.
    last: usize,
}

impl<'a> Dirs<'a> {
    /// Directories kept open at once.
    const KEPT: usize = 64;

    fn new(roots: Roots<'a>) -> Dirs<'a> {
        Dirs {
            roots,
            open: Vec::new(),
            last: 0,
        }
    }

    /// The open directory the recorded spelling `dir` names.
    fn dir(&mut self, dir: &str) -> Option<&File> {
        let found = match self.open.get(self.last) {
            Some((d, _)) if d == dir => Some(self.last),
            _ => self.open.iter().rposition(|(d, _)| d == dir),
        };
        let at = match found {
            Some(i) => i,
            None => {
                if self.open.len() >= Self::KEPT {
                    self.open.clear();
                }
                let opened = self.open_dir(dir);
                self.open.push((dir.to_string(), opened));
                self.open.len() - 1
            }
        };
        self.last = at;
        self.open[at].1.as_ref()
    }

    fn open_dir(&self, dir: &str) -> Option<File> {
        use std::os::fd::{AsRawFd, FromRawFd};
        // The nearest open directory above it: the rest is opened from
        // there, as a walk of the whole path would go on from it.
        let above = self
            .open
            .iter()
            .filter(|(d, f)| {
                f.is_some()
                    && dir.len() > d.len() + 1
                    && dir.starts_with(d.as_str())
                    && dir.as_bytes()[d.len()] == b'/'
            })
            .max_by_key(|(d, _)| d.len());
        if let Some((d, Some(f))) = above {
            let rest = std::ffi::CString::new(&dir[d.len() + 1..]).ok()?;
            // SAFETY: an open directory and a NUL-terminated path.
            let fd = unsafe {
                libc::openat(
                    f.as_raw_fd(),
                    rest.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            // SAFETY: a descriptor just opened, owned from here on.
            return (fd >= 0).then(|| unsafe { File::from_raw_fd(fd) });
        }
        let full = match dir {
            "" => PathBuf::from("/"),
            "{root}" => self.roots.tree.to_path_buf(),
            "{compiler}" => self.roots.compiler.first()?.clone(),
            d if d.starts_with("{root}/") || d.starts_with("{compiler}/") || d.starts_with('/') => {
                dep_path(d, self.roots)?
            }
            // A relative path: looked at as `stat` would, not here.
            _ => return None,
        };
        OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(full)
            .ok()
    }

    /// The identity of the recorded path `path` (`{root}/...` or
    /// absolute); `None` when it cannot be had this way.
    fn stat(&mut self, path: &str) -> Option<StatKey> {
        use std::os::fd::AsRawFd;
        let cut = path.rfind('/')?;
        let (dir, name) = (&path[..cut], &path.as_bytes()[cut + 1..]);
        let fd = self.dir(dir)?;
        // The name NUL-terminated on the stack (a file name is at most 255
        // bytes), not in an allocation per header.
        let mut buf = [0u8; 256];
        if name.is_empty() || name.len() >= buf.len() || name.contains(&0) {
            return None;
        }
        buf[..name.len()].copy_from_slice(name);
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: an open directory, a NUL-terminated name and a buffer of
        // the size the call writes.
        let r = unsafe {
            libc::fstatat(
                fd.as_raw_fd(),
                buf.as_ptr().cast::<libc::c_char>(),
                st.as_mut_ptr(),
                0,
            )
        };
        if r != 0 {
            return None;
        }
        // SAFETY: filled by the successful call.
        let st = unsafe { st.assume_init() };
        #[allow(clippy::unnecessary_cast)]
        Some((
            st.st_size as u64,
            st.st_mtime as i64,
            st.st_mtime_nsec as i64,
            st.st_ctime as i64,
            st.st_ctime_nsec as i64,
            st.st_ino as u64,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::file_stat::{stat_key, stat_string};

    #[test]
    fn a_header_identity_reads_back_as_written_and_nothing_else_does() {
        let dir = std::env::temp_dir().join(format!("ck-jit-stat-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let f = dir.join("h.hpp");
        fs::write(&f, "#pragma once\n").unwrap();
        let md = fs::metadata(&f).unwrap();
        assert_eq!(parse_stat(&stat_string(&md)), Some(stat_key(&md)));
        // Looked at relative to its directory, through a link and a `..`:
        // the same identity.
        let mut dirs = Dirs::new(Roots::tree(&dir));
        let text = |p: PathBuf| p.to_str().unwrap().to_string();
        assert_eq!(dirs.stat(&text(f.clone())), Some(stat_key(&md)));
        fs::create_dir_all(dir.join("sub")).unwrap();
        let _ = fs::remove_file(dir.join("sub/link.hpp"));
        std::os::unix::fs::symlink(&f, dir.join("sub/link.hpp")).unwrap();
        assert_eq!(
            dirs.stat(&text(dir.join("sub/link.hpp"))),
            Some(stat_key(&md))
        );
        assert_eq!(
            dirs.stat(&text(dir.join("sub/../h.hpp"))),
            Some(stat_key(&md))
        );
        assert_eq!(dirs.stat(&text(dir.join("sub/none.hpp"))), None);
        assert_eq!(dirs.stat(&text(dir.join("none/h.hpp"))), None);
        // Opened from a directory already open above it, through a link
        // and back out of it: what a walk of the whole path finds.
        fs::create_dir_all(dir.join("sub/deeper")).unwrap();
        fs::write(dir.join("sub/deeper/d.hpp"), "d").unwrap();
        let _ = fs::remove_file(dir.join("lnk"));
        std::os::unix::fs::symlink(dir.join("sub/deeper"), dir.join("lnk")).unwrap();
        for p in [
            "sub/deeper/d.hpp",
            "lnk/d.hpp",
            "lnk/../deeper/d.hpp",
            "lnk/../../h.hpp",
        ] {
            let md = fs::metadata(dir.join(p)).unwrap();
            assert_eq!(dirs.stat(&text(dir.join(p))), Some(stat_key(&md)), "{p}");
        }
        // As records spell them: under the root, and the root itself.
        assert_eq!(dirs.stat("{root}/sub/link.hpp"), Some(stat_key(&md)));
        assert_eq!(dirs.stat("{root}/h.hpp"), Some(stat_key(&md)));
        // Nothing that is not a path to a file: left to `stat`.
        for odd in ["h.hpp", "sub/link.hpp", "{root}/sub/", ""] {
            assert_eq!(Dirs::new(Roots::tree(&dir)).stat(odd), None, "{odd:?}");
        }
        let (size, m, mn, c, cn, ino) = stat_key(&md);
        assert_eq!(
            parse_stat(&format!("{size}:{m}.{mn:09}:{c}.{cn:09}:{}", ino + 1)),
            Some((size, m, mn, c, cn, ino + 1))
        );
        assert_eq!(
            parse_stat("12:-5.000000001:7.100000000:3"),
            Some((12, -5, 1, 7, 100_000_000, 3))
        );
        assert_eq!(
            parse_stat("0:0.000000000:0.000000000:18446744073709551615"),
            Some((0, 0, 0, 0, 0, u64::MAX))
        );
        for bad in [
            "",
            "12",
            "12:5.1:7.100000000:3",
            "12:5:7.100000000:3",
            "12:5.000000000:7.100000000",
            "12:5.000000000:7.100000000:3:4",
            "x:5.000000000:7.100000000:3",
            "12:5.000000000:7.100000000:18446744073709551616",
            "12:5.000000000:7.100000000:-3",
            "12:--5.000000000:7.100000000:3",
            "12:5.000000000:7.1000000000:3",
        ] {
            assert_eq!(parse_stat(bad), None, "{bad:?}");
        }
        let _ = fs::remove_dir_all(&dir);
    }

    /// A header another set found unchanged just now is trusted when a
    /// second set lists it with the same contents (no look, so an edit
    /// in the window goes unseen, as the module says); one the other set
    /// did not list, or listed with other contents, is looked at.
    #[test]
    fn a_header_found_unchanged_by_one_set_is_trusted_by_the_next() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path();
        let dep = |name: &str| {
            let p = root.join(name);
            Dep {
                path: format!("{{root}}/{name}"),
                hash: file_hash(&p).unwrap(),
                stat: stat_string(&fs::metadata(&p).unwrap()),
            }
        };
        for (name, text) in [("a.h", "a"), ("b.h", "b"), ("c.h", "c")] {
            fs::write(root.join(name), text).unwrap();
        }
        let one = Arc::new(HeaderSet::from_deps(&[dep("a.h"), dep("b.h")]));
        let two = Arc::new(HeaderSet::from_deps(&[dep("a.h"), dep("c.h")]));
        let digest = |n: &str| format!("{n:0>32}");
        forget_checks();
        assert!(deps_verified(&digest("1"), &one, Roots::tree(root), None));
        // a.h edited: set two trusts the look set one just made...
        fs::write(root.join("a.h"), "edited").unwrap();
        let t = Instant::now();
        let trusted = deps_verified(&digest("2"), &two, Roots::tree(root), None);
        if t.elapsed() < CHECK_REUSE / 2 {
            assert!(trusted, "a header checked just now by another set");
        }
        // ...but looks at what only it lists (a.h back as it was: its
        // contents match again).
        forget_checks();
        fs::write(root.join("a.h"), "a").unwrap();
        assert!(deps_verified(&digest("2a"), &two, Roots::tree(root), None));
        forget_checks();
        assert!(deps_verified(
            &digest("1b"),
            &Arc::new(HeaderSet::from_deps(&[dep("b.h")])),
            Roots::tree(root),
            None
        ));
        fs::write(root.join("c.h"), "edited").unwrap();
        assert!(!deps_verified(&digest("2b"), &two, Roots::tree(root), None));
        // A set out of order trusts nothing another set found.
        forget_checks();
        let sorted = Arc::new(HeaderSet::from_deps(&[dep("a.h"), dep("b.h")]));
        assert!(deps_verified(
            &digest("3"),
            &sorted,
            Roots::tree(root),
            None
        ));
        let unsorted = Arc::new(HeaderSet::from_deps(&[dep("b.h"), dep("a.h")]));
        fs::write(root.join("b.h"), "edited too").unwrap();
        assert!(!deps_verified(
            &digest("4"),
            &unsorted,
            Roots::tree(root),
            None
        ));
        forget_checks();
    }

    /// A header set recorded on another host (its identities are those
    /// of other copies of the same headers) is checked by hash once; the
    /// identities this host's copies have are kept in the cache, and the
    /// next check trusts them as it trusts recorded ones, without a hash.
    /// An edit is still seen, and what was kept for another set or other
    /// roots, or cannot be read, is not used.
    #[test]
    fn a_hosts_own_header_identities_are_kept_after_one_hash() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("tree");
        let cache = base.path().join("cache");
        fs::create_dir_all(&root).unwrap();
        fs::create_dir_all(cache.join(DEPSETS)).unwrap();
        for (name, text) in [("a.h", "a"), ("b.h", "b")] {
            fs::write(root.join(name), text).unwrap();
        }
        let dep = |name: &str, hash: Option<&str>| {
            let p = root.join(name);
            Dep {
                path: format!("{{root}}/{name}"),
                hash: hash.map_or_else(|| file_hash(&p).unwrap(), str::to_string),
                stat: stat_string(&fs::metadata(&p).unwrap()),
            }
        };
        let set = Arc::new(HeaderSet::from_deps(&[dep("a.h", None), dep("b.h", None)]));
        let recorded_a = dep("a.h", None).stat;
        // This host's a.h: the same bytes in a new file.
        fs::write(root.join("a.h.new"), "a").unwrap();
        fs::rename(root.join("a.h.new"), root.join("a.h")).unwrap();
        let roots = Roots::tree(&root);
        let digest = format!("{:0>32}", "5");
        forget_checks();
        assert!(deps_verified(&digest, &set, roots, Some(&cache)));
        let kept: Vec<_> = fs::read_dir(cache.join(DEPSETS))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(kept.len(), 1, "{kept:?}");
        let now = stat_string(&fs::metadata(root.join("a.h")).unwrap());
        assert_eq!(fs::read_to_string(&kept[0]).unwrap(), format!("{now}\n\n"));
        // A set whose a.h hash is wrong: only the kept identity, trusted
        // without a hash, lets it pass.
        let bogus = Arc::new(HeaderSet::from_deps(&[
            Dep {
                stat: recorded_a.clone(),
                ..dep("a.h", Some(&"0".repeat(64)))
            },
            dep("b.h", None),
        ]));
        forget_checks();
        assert!(deps_verified(&digest, &bogus, roots, Some(&cache)));
        forget_checks();
        assert!(!deps_verified(&digest, &bogus, roots, None), "not kept");
        let other = format!("{:0>32}", "6");
        assert!(
            !deps_verified(&other, &bogus, roots, Some(&cache)),
            "another set"
        );
        let elsewhere = base.path().join("tree2");
        assert!(!deps_verified(
            &digest,
            &bogus,
            Roots::tree(&elsewhere),
            Some(&cache)
        ));
        // An edit changes the identity: hashed, and seen.
        forget_checks();
        fs::write(root.join("a.h"), "edited").unwrap();
        assert!(!deps_verified(&digest, &set, roots, Some(&cache)));
        // What was kept, damaged: ignored (the header is hashed).
        fs::write(&kept[0], "1:2\n").unwrap();
        fs::write(root.join("a.h"), "a").unwrap();
        forget_checks();
        assert!(deps_verified(&digest, &set, roots, Some(&cache)));
        forget_checks();
    }

    #[test]
    fn header_sets_read_by_hand_read_as_serde_json_reads_them() {
        let dep = |path: &str, stat: &str| Dep {
            path: path.into(),
            hash: "ab".repeat(32),
            stat: stat.into(),
        };
        let sets = [
            vec![],
            vec![dep("{root}/include/a.h", "1:2.000000003:4.000000005:6")],
            vec![
                dep("/usr/include/b.h", ""),
                dep("/opt/ü/c.hpp", "7:8.000000009:1.000000002:3"),
            ],
            // Escaped characters: read by serde_json.
            vec![dep("/tmp/quote\"d/tab\t.h", "1:2.000000003:4.000000005:6")],
        ];
        let parse = |t: &[u8]| HeaderSet::parse(Bytes::Owned(t.to_vec())).map(|s| s.deps());
        for deps in sets {
            let text = serde_json::to_vec(&deps).unwrap();
            assert_eq!(parse(&text), Some(deps.clone()));
            let set = HeaderSet::parse(Bytes::Owned(text.clone())).unwrap();
            for (i, d) in deps.iter().enumerate() {
                assert_eq!(set.items[i].identity, parse_stat(&d.stat), "{}", d.path);
            }
            let by_hand = plain_items(&text);
            let escaped = deps.iter().any(|d| d.path.contains(['"', '\t']));
            assert_eq!(
                by_hand.is_none(),
                escaped,
                "{}",
                String::from_utf8_lossy(&text)
            );
        }
        // Text serde_json reads but not in the written form: still read.
        let spaced = br#"[ {"hash":"x","path":"/a.h"} ]"#;
        assert_eq!(plain_items(spaced), None);
        assert_eq!(parse(spaced).unwrap()[0].path, "/a.h");
        // Torn or trailing text, or not UTF-8: neither reads it.
        for bad in [
            &br#"[{"path":"/a.h","hash":"x"}"#[..],
            br#"[{"path":"/a.h","hash":"x"}]x"#,
            b"[{\"path\":\"/\xff.h\",\"hash\":\"x\"}]",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }
}
