//! The content-addressed disk cache: where entries live, how they are
//! published, found, verified and moved aside, and who may use the
//! directory.
//!
//! Layout under the cache root (created 0700, checked on open):
//!
//! ```text
//! v1/<blob>/<prekey>/<key>.so     the compiled object (never rewritten)
//! v1/<blob>/<prekey>/<key>.json   its record: size, checksum, object identity,
//!                                 the digest of the headers it read
//! v1/<blob>/<prekey>.lock         flock held while compiling
//! deps/<digest>.json              a list of headers with their hashes, stored
//!                                 once for every record that read that set
//! tmp/                            private temp files of running compiles
//! bad/                            entries that failed verification
//! logs/                           full compiler output
//! memory.json                     what one compile of each group takes, learnt
//!                                 from the peak resident size of its compiles
//! ```
//!
//! `prekey` hashes what is known before compiling (source bytes, argv,
//! compiler identity, launcher, format); `key` adds the bytes of every header
//! the compiler read. A lookup checks each record's headers against the
//! tree, so an edited header is a miss and a touched one a hit.
//!
//! The directory is still named `v1`; [`CACHE_FORMAT`] is part of every
//! prekey and record, so entries of an older format (format 1 kept the
//! header list inside each record) are never found by a lookup, while the
//! `ck-jit` tool still lists, verifies and evicts them.
//!
//! # Header sets
//!
//! A record names its header list by digest (`deps/<digest>.json`, the
//! BLAKE3 of the file's bytes, checked when it is read), so kernels that
//! read the same few hundred headers (a HIP or CUDA toolkit, libstdc++)
//! share one file and a record stays small. Sets are written before the
//! record that names them and never rewritten; `ck-jit gc` and `clean`
//! remove the sets no record names once they are an hour old (a publish
//! that reuses a set refreshes its modification time first), and a record
//! whose set is missing is simply a miss.
//!
//! # Checks reused within a process
//!
//! A header found unchanged (same identity, or same contents) is trusted
//! by later lookups in the same process for [`CHECK_REUSE`] (one second)
//! after it was checked, and so is a whole header set: the 2nd..Kth kernels
//! of a process that share a toolkit's headers read only their own small
//! records. An edit made within that second after a check may therefore go
//! unseen by lookups inside the second (as an edit made just after a lookup
//! always could); any lookup after it checks the header again, so an edited
//! header is a miss.
//!
//! # Verifying objects
//!
//! Every load checks the object's size against its record. In a private
//! cache (0700, owned by this user) an object whose identity (size, mtime,
//! ctime, inode) is the one recorded at publish is trusted without reading
//! it: truncation, an in-place write or a replacement all change that
//! identity (ctime moves on every change and cannot be set back), and the
//! object is then hashed in full; a mismatch moves it aside. A shared cache
//! (`CK_JIT_SHARED_CACHE=1`), `CK_JIT_VERIFY=full`, or a record without an
//! identity hash the whole object on every load.
//!
//! # Last use
//!
//! Least-recently-used eviction reads a record's modification time. A hit
//! refreshes it only when it is older than [`TOUCH_EVERY`] (an hour), read
//! from the record file the lookup already opened, or, for a hit the memo
//! of hits serves, from the memo (which is refreshed with it); so most hits
//! write nothing.
//!
//! This module must never expose a half-written file under a final name,
//! never rewrite an entry in place (a mapped object that changes crashes its
//! process), and never follow a symlink out of the cache root.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::error::Error;
pub use crate::object::bytes::ObjectBytes;
use crate::object::bytes::{map, read_len, Bytes, LOOK_MAP_ABOVE};
use crate::path_bytes::PathBytes;

pub use super::file_stat::{file_hash, stat_string};
use super::file_stat::{parse_stat, stat_key};
pub(crate) use super::headers::HeaderSet;
pub use super::headers::{dep_name, forget_checks, short_hash, Dep, Roots, CHECK_REUSE};
use super::headers::{deps_verified, DEPSETS, DEPSET_MEMO};
use super::hits::{identity, Hit};
pub(crate) use super::keys::hit_context;
pub use super::keys::{InputsKey, Key, Prekey, CACHE_FORMAT};
use super::memo_file::all_hex;
pub use super::record::Record;
use super::record_text::plain_record;

const ENTRIES: &str = "v1";
/// In each prekey directory, a hard link to the record published last: a
/// hit reads it instead of listing the directory.
const HEAD: &str = "head";
/// Every directory of a cache, made by [`Cache::open`] with its modes:
/// entries, header sets, temps, objects moved aside, compile logs, and
/// what processes keep for later ones (compiler versions, devices).
const SUBDIRS: [&str; 7] = [
    ENTRIES,
    DEPSETS,
    "tmp",
    "bad",
    "logs",
    "compilers",
    "devices",
];

/// A hit refreshes its record's modification time (last use, for
/// eviction) only when it is older than this.
pub const TOUCH_EVERY: Duration = Duration::from_secs(3600);

/// How old an unreferenced header set must be before maintenance removes
/// it (so a set written by a publish in progress, before its record, stays).
pub const DEPSET_GRACE: Duration = Duration::from_secs(3600);

/// An opened, checked cache root.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    shared: bool,
    /// A tier of `CK_JIT_CACHE_PATH`: looked in, never written or locked,
    /// every object hashed before it is loaded.
    read_only: bool,
}

/// A published entry found by a lookup.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The object.
    pub object: PathBuf,
    /// Its record file.
    pub record_path: PathBuf,
    /// The record.
    pub record: Record,
    /// The record file's modification time when it was read (last use).
    pub(crate) used: Option<SystemTime>,
    /// The root of the read-only cache (`CK_JIT_CACHE_PATH`) it was found
    /// in; `None` for the writable cache.
    pub(crate) tier: Option<PathBuf>,
}

impl Entry {
    /// This entry with [`Record::deps`] listing its headers, as a lookup
    /// read them (a lookup keeps them in the form it checks them in).
    pub fn with_deps(mut self) -> Entry {
        if self.record.deps.is_empty() {
            if let Some(set) = &self.record.headers {
                self.record.deps = Arc::new(set.deps());
            }
        }
        self
    }

    /// The read-only cache (a tier of `CK_JIT_CACHE_PATH`) this entry was
    /// found in, or `None` when it is in the writable cache.
    pub fn tier(&self) -> Option<&Path> {
        self.tier.as_deref()
    }
}

/// A held compile lock; released on drop (and by the kernel if the process
/// dies).
#[derive(Debug)]
pub struct LockGuard {
    _file: Option<File>,
}

/// Who holds (or last held) a compile lock, as its holder wrote it into
/// the lock file: `pid=P since_ms=T`, and `timeout_s=N` once its compile
/// was killed at the compile timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Holder {
    pub(crate) pid: u32,
    /// Milliseconds since the epoch when it took the lock.
    pub(crate) since_ms: u64,
    /// The limit its compile was killed at, if it was.
    pub(crate) timed_out: Option<u64>,
}

impl Holder {
    fn parse(text: &str) -> Option<Holder> {
        let mut h = Holder {
            pid: 0,
            since_ms: 0,
            timed_out: None,
        };
        for word in text.split_whitespace() {
            match word.split_once('=')? {
                ("pid", v) => h.pid = v.parse().ok()?,
                ("since_ms", v) => h.since_ms = v.parse().ok()?,
                ("timeout_s", v) => h.timed_out = Some(v.parse().ok()?),
                _ => {}
            }
        }
        (h.pid != 0).then_some(h)
    }

    /// How long ago it took the lock.
    fn age(&self) -> Duration {
        Duration::from_millis(now_ms().saturating_sub(self.since_ms))
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl LockGuard {
    /// Writes this process into the lock file, for a process that waits
    /// to say who it waits for; with `timed_out`, that its compile was
    /// killed at that limit (its waiters are then released).
    pub(crate) fn say_holder(&self, timed_out: Option<u64>) {
        use std::os::unix::fs::FileExt;
        let Some(file) = &self._file else { return };
        let mut text = format!("pid={} since_ms={}", std::process::id(), now_ms());
        if let Some(s) = timed_out {
            text.push_str(&format!(" timeout_s={s}"));
        }
        text.push('\n');
        let _ = file.set_len(0);
        let _ = file.write_all_at(text.as_bytes(), 0);
    }
}

/// How much longer than the compile timeout a waiter gives a holder's
/// compile (killing it and releasing the lock take a moment).
const HOLDER_GRACE: Duration = Duration::from_secs(10);

/// A file found under an object's final name at publish time.
enum Existing {
    /// It holds the bytes being published (a concurrent identical
    /// compile): keep it, describe it with the new record.
    Same(File),
    /// Its writer's record describes it (a concurrent compile whose output
    /// differs in bytes, not in meaning): keep both, drop ours.
    Vouched(Box<(Entry, ObjectBytes)>),
    /// Nothing vouches for it.
    Unvouched,
}

/// Maps any blob name to one safe path component: `[A-Za-z0-9_.-]`, no
/// leading `.`/`-`, at most 100 bytes (a hash suffix keeps distinct names
/// distinct when something had to change).
pub fn safe_component(name: &str) -> String {
    safe_name(name).into_owned()
}

/// [`safe_component`], borrowing a name that is one already (most are).
fn safe_name(name: &str) -> std::borrow::Cow<'_, str> {
    // Every byte looked at, without a branch a byte (names are checked on
    // every hit).
    let plain = |b: u8| {
        let lower = (b | 0x20).wrapping_sub(b'a') < 26;
        let digit = b.wrapping_sub(b'0') < 10;
        lower | digit | (b == b'_') | (b == b'-') | (b == b'.')
    };
    if matches!(name.as_bytes(), [first, ..] if *first != b'.' && *first != b'-')
        && name.len() <= 100
        && name.bytes().fold(true, |ok, b| ok & plain(b))
    {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with('.') || s.starts_with('-') {
        s.replace_range(0..1, "_");
    }
    if s != name || s.len() > 100 || s.is_empty() {
        s.truncate(80);
        if s.is_empty() {
            s.push('_');
        }
        s.push('-');
        s.push_str(&short_hash(&blake3::hash(name.as_bytes()))[..16]);
    }
    std::borrow::Cow::Owned(s)
}

/// The default cache root for a cache `name`: `$XDG_CACHE_HOME/<name>`, else
/// `<home>/.cache/<name>` where home is `$HOME` or, without it, the home
/// directory of the real user id (the `home` crate reads the password
/// database). Never a shared temp directory.
pub fn default_dir(name: &str) -> Result<PathBuf, Error> {
    let name = safe_component(name);
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").filter(|v| !v.is_empty()) {
        let x = PathBuf::from(x);
        if x.is_absolute() {
            return Ok(x.join(name));
        }
    }
    // `HOME` first, as before; `home_dir` alone would also take an empty
    // one on older toolchains.
    let home = std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(home::home_dir)
        .filter(|h| !h.as_os_str().is_empty())
        .ok_or_else(|| Error::Cache {
            dir: PathBuf::from("~/.cache"),
            why: "no HOME and no home directory for this user id; set CK_JIT_CACHE_DIR".into(),
        })?;
    Ok(home.join(".cache").join(name))
}

fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Refuses an existing cache root `dir` (`md`: its own metadata, a link
/// not followed) that is a link, not a directory, or writable by others,
/// as [`Cache::open`] describes.
fn check_root(dir: &Path, md: &fs::Metadata, shared: bool) -> Result<(), Error> {
    let refuse = |why: String| Error::Cache {
        dir: dir.to_path_buf(),
        why,
    };
    let cannot = |what: &str, e: io::Error| {
        refuse(format!(
            "{what}: {e}; set CK_JIT_CACHE_DIR to a directory you can write"
        ))
    };
    if md.file_type().is_symlink() && !shared {
        return Err(refuse(format!(
            "is a symlink (to {}); a link can be redirected by whoever controls it. \
             Point CK_JIT_CACHE_DIR at the real directory, or set CK_JIT_SHARED_CACHE=1 \
             if this is a deliberate team cache",
            fs::read_link(dir)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| "?".into())
        )));
    }
    let md = fs::metadata(dir).map_err(|e| cannot("cannot be inspected", e))?;
    if !md.is_dir() {
        return Err(refuse("exists and is not a directory".into()));
    }
    let mode = md.mode() & 0o7777;
    if mode & 0o002 != 0 {
        return Err(refuse(format!(
            "is writable by every user (mode {mode:o}); anyone could plant code in it. \
             Use a directory of your own (chmod 700 it), e.g. the default under ~/.cache"
        )));
    }
    if !shared {
        if md.uid() != euid() {
            return Err(refuse(format!(
                "is owned by user id {}, not by you ({}); another user could plant code in it. \
                 Use a directory you own, or set CK_JIT_SHARED_CACHE=1 for a deliberate team cache",
                md.uid(),
                euid()
            )));
        }
        if mode & 0o020 != 0 {
            return Err(refuse(format!(
                "is writable by its group (mode {mode:o}); run `chmod 700 {}`, \
                 or set CK_JIT_SHARED_CACHE=1 for a deliberate team cache",
                dir.display()
            )));
        }
    }
    Ok(())
}

/// Whether files may be made in `dir`, judged with the effective ids as
/// creating one would be (a read-only file system is EROFS).
fn access_for_writing(dir: &Path) -> io::Result<()> {
    std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
        .map_err(io::Error::other)
        .and_then(|c| {
            // SAFETY: a NUL-terminated path; faccessat only reads it.
            let rc = unsafe {
                libc::faccessat(
                    libc::AT_FDCWD,
                    c.as_ptr(),
                    libc::W_OK | libc::X_OK,
                    libc::AT_EACCESS,
                )
            };
            if rc == 0 {
                Ok(())
            } else {
                Err(io::Error::last_os_error())
            }
        })
}

impl Cache {
    /// Opens (creating if needed) the cache root `dir`.
    ///
    /// Refuses a root that is a symlink, not owned by this user, or writable
    /// by group or others, unless `shared` (`CK_JIT_SHARED_CACHE=1`), which
    /// accepts those but still refuses a world-writable root without the
    /// sticky bit... or with it: `/tmp` itself is never a cache.
    pub fn open(dir: &Path, shared: bool) -> Result<Cache, Error> {
        let dir = if dir.is_absolute() {
            dir.to_path_buf()
        } else {
            std::env::current_dir()
                .map_err(|e| Error::io("reading the current directory for", dir, e))?
                .join(dir)
        };
        let refuse = |why: String| Error::Cache {
            dir: dir.clone(),
            why,
        };
        // A directory the system will not let us inspect or make (a HOME
        // that is unusable, an unreadable parent): say where else to go.
        let cannot = |what: &str, e: io::Error| {
            refuse(format!(
                "{what}: {e}; set CK_JIT_CACHE_DIR to a directory you can write"
            ))
        };
        match fs::symlink_metadata(&dir) {
            Ok(md) => check_root(&dir, &md, shared)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                if let Some(parent) = dir.parent() {
                    fs::create_dir_all(parent)
                        .map_err(|e| cannot("cannot create its parent", e))?;
                }
                match fs::DirBuilder::new().mode(0o700).create(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        return Cache::open(&dir, shared)
                    }
                    Err(e) => return Err(cannot("cannot be created", e)),
                }
                let mode = if shared { 0o2770 } else { 0o700 };
                fs::set_permissions(&dir, fs::Permissions::from_mode(mode))
                    .map_err(|e| refuse(format!("cannot set its mode: {e}")))?;
            }
            Err(e) => return Err(cannot("cannot be inspected", e)),
        }
        let cache = Cache {
            root: dir,
            shared,
            read_only: false,
        };
        for sub in SUBDIRS {
            // One stat for a directory that is there (every open but the
            // first); else create it, refusing whatever else is there.
            let path = cache.root.join(sub);
            if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                cache.mkdir(&path)?;
            }
        }
        // Check writability now so the error names the directory instead of
        // surfacing later as a confusing compile failure (with the
        // effective ids, as creating a file there would be judged; a
        // read-only file system is EROFS).
        let tmp = cache.root.join("tmp");
        let writable = access_for_writing(&tmp);
        if let Err(e) = writable {
            return Err(Error::Cache {
                dir: cache.root.clone(),
                why: format!("is not writable: {e}; set CK_JIT_CACHE_DIR to a writable directory"),
            });
        }
        Ok(cache)
    }

    /// Opens the read-only cache `dir` (a tier of `CK_JIT_CACHE_PATH`: an
    /// unpacked pack in an image, a team's share): it must exist and be a
    /// directory that not every user can write (anyone could plant code in
    /// it). Nothing is created, written or locked in it, whoever owns it;
    /// every object found there is hashed in full before it is loaded, as a
    /// shared cache's are.
    pub fn open_read_only(dir: &Path) -> Result<Cache, Error> {
        let refuse = |why: String| Error::Cache {
            dir: dir.to_path_buf(),
            why,
        };
        if !dir.is_absolute() {
            return Err(refuse(
                "is not an absolute path (CK_JIT_CACHE_PATH takes absolute paths)".into(),
            ));
        }
        let md = fs::metadata(dir).map_err(|e| refuse(format!("cannot be read: {e}")))?;
        if !md.is_dir() {
            return Err(refuse("is not a directory".into()));
        }
        let mode = md.mode() & 0o7777;
        if mode & 0o002 != 0 {
            return Err(refuse(format!(
                "is writable by every user (mode {mode:o}); anyone could plant code in it"
            )));
        }
        Ok(Cache {
            root: dir.to_path_buf(),
            shared: true,
            read_only: true,
        })
    }

    /// Whether this is a read-only tier (`CK_JIT_CACHE_PATH`).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The tier an entry found here comes from (`None`: writable cache).
    fn tier(&self) -> Option<PathBuf> {
        self.read_only.then(|| self.root.clone())
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether this is an opted-in shared cache.
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    fn mkdir(&self, dir: &Path) -> Result<(), Error> {
        if self.read_only {
            return Err(self.not_written());
        }
        let mode = if self.shared { 0o2770 } else { 0o700 };
        match fs::DirBuilder::new().mode(mode).create(dir) {
            Ok(()) => {
                if self.shared {
                    // The umask may have removed group bits; set explicitly.
                    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(mode));
                }
                Ok(())
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                let md = fs::symlink_metadata(dir).map_err(|e| Error::io("inspecting", dir, e))?;
                if md.is_dir() {
                    Ok(())
                } else {
                    Err(Error::Cache {
                        dir: dir.to_path_buf(),
                        why: "exists and is not a directory (or is a symlink); remove it".into(),
                    })
                }
            }
            Err(e) => Err(Error::Cache {
                dir: dir.to_path_buf(),
                why: format!(
                    "cannot be created: {e}; set CK_JIT_CACHE_DIR to a writable directory"
                ),
            }),
        }
    }

    /// The error for a write asked of a read-only tier (a bug: callers
    /// write only to the writable cache).
    fn not_written(&self) -> Error {
        Error::Cache {
            dir: self.root.clone(),
            why: "is a read-only cache (CK_JIT_CACHE_PATH); nothing is written in it".into(),
        }
    }

    fn file_mode(&self) -> u32 {
        if self.shared {
            0o660
        } else {
            0o600
        }
    }

    /// Every path the cache derives from a blob name and a prekey (the
    /// blob's directory, the prekey's, the lock, the log, a temp file), for
    /// tests that check hostile names stay inside the cache.
    #[doc(hidden)]
    pub fn derived_paths(&self, blob: &str, prekey: &str) -> [PathBuf; 5] {
        [
            self.blob_dir(blob),
            self.prekey_dir(blob, prekey),
            self.lock_path(blob, prekey),
            self.log_path(blob, prekey),
            self.temp_pattern(blob),
        ]
    }

    /// Directory of all entries of a blob.
    pub(crate) fn blob_dir(&self, blob: &str) -> PathBuf {
        joined(&self.root, &[ENTRIES, &safe_name(blob)], "")
    }

    /// Directory of the entries of one prekey.
    pub(crate) fn prekey_dir(&self, blob: &str, prekey: &str) -> PathBuf {
        joined(&self.root, &[ENTRIES, &safe_name(blob), prekey], "")
    }

    /// The compile lock file of a prekey.
    pub(crate) fn lock_path(&self, blob: &str, prekey: &str) -> PathBuf {
        self.blob_dir(blob).join(format!("{prekey}.lock"))
    }

    /// Opens (creating it if needed) the compile lock file of a prekey,
    /// unlocked, for `lock` and `try_lock`. Returns its path with it.
    fn open_lock(&self, blob: &str, prekey: &str) -> Result<(PathBuf, File), Error> {
        self.mkdir(&self.blob_dir(blob))?;
        let path = self.lock_path(blob, prekey);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(self.file_mode())
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| Error::io("opening the lock", &path, e))?;
        Ok((path, file))
    }

    /// The log file for a compile.
    pub(crate) fn log_path(&self, blob: &str, prekey: &str) -> PathBuf {
        self.root.join("logs").join(format!(
            "{}-{}.log",
            safe_component(blob),
            &prekey[..prekey.len().min(16)]
        ))
    }

    /// A fresh private directory in `tmp/` for one compile's files, removed
    /// (with whatever the compiler left in it) when dropped. It is on the
    /// cache's file system, so its object can be linked into place.
    pub(crate) fn work_dir(&self, blob: &str) -> Result<tempfile::TempDir, Error> {
        if self.read_only {
            return Err(self.not_written());
        }
        let (prefix, suffix) = temp_affixes(blob, "");
        let tmp = self.root.join("tmp");
        tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(&suffix)
            .tempdir_in(&tmp)
            .map_err(|e| Error::io("creating a temp directory in", &tmp, e))
    }

    /// What a temp file or directory of `blob` is named like, with the
    /// random part shown as `XXXXXX` (for tests of hostile names).
    fn temp_pattern(&self, blob: &str) -> PathBuf {
        let (prefix, suffix) = temp_affixes(blob, "so");
        self.root
            .join("tmp")
            .join(format!("{prefix}XXXXXX{suffix}"))
    }

    /// Takes the compile lock of a prekey, waiting up to `timeout`.
    ///
    /// `flock` is released by the kernel when the holder dies, so a killed
    /// compile never blocks the next one. On a shared cache a file system
    /// without working locks is tolerated (duplicate compiles are then
    /// possible, torn entries still are not).
    ///
    /// A wait says once (in the log; on stderr with `verbose`) which
    /// process holds the lock and since when. It ends with an error after
    /// `timeout`, or once the holder's compile has run past
    /// `compile_timeout` (the holder is stuck); and a waiter whose holder's
    /// compile was killed at the compile timeout gets
    /// [`Error::WaitedForTimeout`] instead of compiling again itself.
    pub(crate) fn lock(
        &self,
        blob: &str,
        prekey: &str,
        timeout: Duration,
        compile_timeout: Duration,
        verbose: bool,
    ) -> Result<LockGuard, Error> {
        let (path, file) = self.open_lock(blob, prekey)?;
        let start = Instant::now();
        let mut nap = Duration::from_micros(200);
        let mut waited: Option<Option<Holder>> = None;
        loop {
            match file.try_lock() {
                Ok(()) => {
                    let guard = LockGuard { _file: Some(file) };
                    let last = fs::read_to_string(&path)
                        .ok()
                        .and_then(|t| Holder::parse(&t));
                    if let (Some(_), Some(h)) = (&waited, last) {
                        if let (Some(seconds), true) = (h.timed_out, h.pid != std::process::id()) {
                            return Err(Error::WaitedForTimeout {
                                blob: blob.to_string(),
                                pid: h.pid,
                                seconds,
                                log: self.log_path(blob, prekey),
                            });
                        }
                    }
                    guard.say_holder(None);
                    return Ok(guard);
                }
                Err(fs::TryLockError::WouldBlock) => {
                    if waited.is_none() {
                        let h = fs::read_to_string(&path)
                            .ok()
                            .and_then(|t| Holder::parse(&t));
                        let who = match h {
                            Some(h) => format!(
                                "process {} (for {:.1} s so far)",
                                h.pid,
                                h.age().as_secs_f64()
                            ),
                            None => "another process".to_string(),
                        };
                        let line = format!(
                            "ck-jit: blob '{blob}' is being compiled by {who}; waiting for it \
                             (at most CK_JIT_LOCK_TIMEOUT={} s)",
                            timeout.as_secs()
                        );
                        log::info!("{line}");
                        if verbose {
                            eprintln!("{line}");
                        }
                        waited = Some(h);
                    }
                    // A holder whose compile should have been killed by now
                    // is stuck: its waiters do not wait for it.
                    if let Some(Some(h)) = waited {
                        if h.age() > compile_timeout + HOLDER_GRACE {
                            return Err(Error::LockTimeout {
                                blob: blob.to_string(),
                                lock: path,
                                seconds: start.elapsed().as_secs(),
                            });
                        }
                    }
                }
                Err(fs::TryLockError::Error(e)) => {
                    if self.shared {
                        log::warn!(
                            "ck-jit: no lock on {} ({e}); compiling without",
                            path.display()
                        );
                        return Ok(LockGuard { _file: None });
                    }
                    return Err(Error::io("locking", &path, e));
                }
            }
            if start.elapsed() >= timeout {
                return Err(Error::LockTimeout {
                    blob: blob.to_string(),
                    lock: path,
                    seconds: timeout.as_secs(),
                });
            }
            std::thread::sleep(nap);
            nap = (nap * 2).min(Duration::from_millis(5));
        }
    }

    /// Finds a published entry of `prekey` whose recorded headers all still
    /// have the recorded contents. Records that cannot be read are skipped
    /// (a torn record is never trusted); newest first.
    pub(crate) fn lookup(
        &self,
        blob: &str,
        prekey: &str,
        roots: Roots<'_>,
    ) -> Result<Option<Entry>, Error> {
        let dir = self.prekey_dir(blob, prekey);
        if let Some(entry) = self.lookup_head(&dir, prekey, roots) {
            return Ok(Some(entry));
        }
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io("listing", &dir, e)),
        };
        let mut records = Vec::new();
        for ent in rd.flatten() {
            let p = ent.path();
            if p.extension().is_some_and(|x| x == "json") {
                if let Some((rec, used)) = self.read_record(&p, true) {
                    if rec.prekey == prekey && rec.format == CACHE_FORMAT {
                        records.push((p, rec, used));
                    }
                }
            }
        }
        records.sort_by(|a, b| b.1.created.cmp(&a.1.created).then(a.1.key.cmp(&b.1.key)));
        for (record_path, record, used) in records {
            if headers_unchanged(&record, roots, self.here_dir()) {
                let object = dir.join(format!("{}.so", record.key));
                return Ok(Some(Entry {
                    object,
                    record_path,
                    record,
                    used,
                    tier: self.tier(),
                }));
            }
        }
        Ok(None)
    }

    /// The entry the prekey directory's [`HEAD`] names, when that is still
    /// a record of this directory (the head is a hard link to the newest
    /// record published there: the same file, so one whose record was
    /// removed or replaced since is not it) and its headers are unchanged.
    /// Anything else is `None`, and the lookup lists the directory.
    fn lookup_head(&self, dir: &Path, prekey: &str, roots: Roots<'_>) -> Option<Entry> {
        let (record, md) = self.read_record_file(&joined(dir, &[HEAD], ""), true)?;
        if record.prekey != prekey || record.format != CACHE_FORMAT || !is_hex_key(&record.key) {
            return None;
        }
        let record_path = joined(dir, &[&record.key], ".json");
        let same = fs::symlink_metadata(&record_path)
            .is_ok_and(|m| m.ino() == md.ino() && m.dev() == md.dev());
        if !same || !headers_unchanged(&record, roots, self.here_dir()) {
            return None;
        }
        Some(Entry {
            object: joined(dir, &[&record.key], ".so"),
            record_path,
            record,
            used: md.modified().ok(),
            tier: self.tier(),
        })
    }

    /// The object of the entry the memo of hits names for `blob` (`hit`),
    /// its path and its bytes unread, when it is still the entry it was:
    /// its object has the identity the memo keeps (the very file
    /// published, so its ELF header was checked then) and its headers, if
    /// any, have their recorded contents, checked as any hit checks them.
    /// `None` for anything else, and in a shared or read-only cache (which
    /// keep no such memo): the lookup then runs as without it. The record
    /// is neither read nor looked at.
    pub(crate) fn remembered_object(
        &self,
        blob: &str,
        hit: &Hit<'_>,
        roots: Roots<'_>,
    ) -> Option<(Arc<Path>, ObjectBytes)> {
        if self.shared || self.read_only || !is_hex_key(hit.key) || !is_hex_key(hit.prekey) {
            return None;
        }
        let object = self.entry_file(blob, hit, ".so");
        let md = fs::symlink_metadata(object.path()).ok()?;
        if !md.file_type().is_file() || identity(&md) != hit.object {
            return None;
        }
        if !hit.depset.is_empty() {
            let set = self.read_depset(hit.depset)?;
            if !deps_verified(hit.depset, &set, roots, self.here_dir()) {
                return None;
            }
        }
        let object: Arc<Path> = Arc::from(object.path());
        Some((object.clone(), ObjectBytes::unread_at(object, md.len())))
    }

    /// Marks the record of the entry the memo names for `blob` (`hit`)
    /// used at `now`, as [`Cache::touch`] does; whether it was.
    pub(crate) fn touch_remembered(&self, blob: &str, hit: &Hit<'_>, now: SystemTime) -> bool {
        !self.read_only && touch_file(self.entry_file(blob, hit, ".json").path(), now)
    }

    /// The file of the entry `hit` names for `blob` with `suffix` (its
    /// object, its record): `<prekey_dir>/<key><suffix>`, as
    /// [`Cache::prekey_dir`] lays it out, built on the stack.
    fn entry_file(&self, blob: &str, hit: &Hit<'_>, suffix: &str) -> PathBytes {
        let mut path = PathBytes::of(self.root.as_os_str().as_encoded_bytes());
        for part in [ENTRIES, &safe_name(blob), hit.prekey, hit.key] {
            path.push_name(part.as_bytes());
        }
        path.push(suffix.as_bytes());
        path
    }

    /// What the memo of hits keeps of `entry`, whose object's bytes a load
    /// checked as `bytes`: when it is an entry of this cache, writable and
    /// private, whose object still has the identity its record gives it,
    /// or is still the very file whose bytes were just hashed against the
    /// record (another tool's hard link changes an object's ctime, and
    /// with it its identity; its bytes are then checked in full once, not
    /// on every load).
    pub(crate) fn hit_of<'e>(&self, entry: &'e Entry, bytes: &ObjectBytes) -> Option<Hit<'e>> {
        let r = &entry.record;
        if self.shared || self.read_only || entry.tier.is_some() || r.format != CACHE_FORMAT {
            return None;
        }
        let md = fs::symlink_metadata(&entry.object).ok()?;
        let published = parse_stat(&r.object_stat) == Some(stat_key(&md));
        let hashed = bytes.was_hashed()
            && bytes
                .file()
                .and_then(|f| f.metadata().ok())
                .is_some_and(|f| stat_key(&f) == stat_key(&md) && f.dev() == md.dev());
        if !md.file_type().is_file() || !(published || hashed) {
            return None;
        }
        // The record's last use as the load leaves it: refreshed now when
        // it is older than `TOUCH_EVERY` (or unknown), as `touch` does.
        let now = SystemTime::now();
        let used = entry
            .used
            .filter(|t| used_lately(Some(*t), now))
            .unwrap_or(now);
        Some(Hit::of(r, identity(&md), used))
    }

    /// Makes the prekey directory's [`HEAD`] the record just published
    /// (a hard link put in place by rename). Best effort: without it a
    /// lookup lists the directory.
    fn link_head(&self, dir: &Path, record_path: &Path) {
        let tmp = dir.join(format!("{HEAD}.{}.tmp", std::process::id()));
        let _ = fs::remove_file(&tmp);
        if fs::hard_link(record_path, &tmp).is_ok() && fs::rename(&tmp, dir.join(HEAD)).is_err() {
            let _ = fs::remove_file(&tmp);
        }
    }

    /// Checks an entry's object against its record (size, then checksum)
    /// and returns its bytes.
    pub fn verify(&self, entry: &Entry) -> Result<Vec<u8>, String> {
        let (mut f, md) = open_object(entry)?;
        hash_check(entry, &mut f, md.len())
    }

    /// Checks an entry's object before loading it: its size, then either
    /// its identity (a private cache without `full`: the object is the very
    /// file that was published, so its bytes are mapped, not read, and only
    /// its ELF header is looked at) or, when that differs or `full` is set,
    /// its whole checksum.
    pub fn verify_for_load(&self, entry: &Entry, full: bool) -> Result<ObjectBytes, String> {
        let trusted =
            !full && !self.shared && !self.read_only && !entry.record.object_stat.is_empty();
        if trusted {
            // The very file this cache published (its ELF header was
            // checked then): one `lstat`, nothing read. A symbolic link
            // never has the recorded identity.
            if let Ok(md) = fs::symlink_metadata(&entry.object) {
                if md.len() == entry.record.size
                    && parse_stat(&entry.record.object_stat) == Some(stat_key(&md))
                {
                    return Ok(ObjectBytes::unread(&entry.object, md.len()));
                }
            }
        }
        let (mut f, md) = open_object(entry)?;
        let cheap = trusted && stat_string(&md) == entry.record.object_stat;
        if cheap {
            if let Some(bytes) = ObjectBytes::unhashed(&mut f, md.len()) {
                if bytes.len() as u64 != md.len() {
                    return Err(format!("read {} bytes of {}", bytes.len(), md.len()));
                }
                crate::object::symbol::check_header(&bytes, None).map_err(|e| e.to_string())?;
                return Ok(bytes.with_file(f));
            }
        }
        let bytes = hash_check(entry, &mut f, md.len())?;
        Ok(ObjectBytes::hashed(bytes).with_file(f))
    }

    /// Moves an entry that failed verification into `bad/` (never deleted
    /// in place: a process may still have the old object mapped, and a
    /// person may want to look at it).
    pub fn quarantine(&self, entry: &Entry) {
        if self.read_only {
            return;
        }
        for p in [&entry.record_path, &entry.object] {
            self.move_aside(p);
        }
    }

    /// Moves one file into `bad/` (removes it if that fails).
    fn move_aside(&self, p: &Path) {
        let stamp = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        if let Some(name) = p.file_name() {
            let to = self
                .root
                .join("bad")
                .join(format!("{stamp}-{}", name.to_string_lossy()));
            if fs::rename(p, &to).is_err() {
                let _ = fs::remove_file(p);
            }
        }
    }

    /// Publishes a compiled object (`bytes`, the contents of `tmp_object`,
    /// which `record` describes): fsync the temp file, link it under its
    /// final name (never replacing an existing object, which some process
    /// may have mapped), then write the record the same way. Returns the
    /// published entry with its bytes and the open file they are in.
    ///
    /// A file already under the final name is kept only when it is vouched
    /// for: it holds these very bytes, or the record its writer published
    /// describes it. Anything else (an orphan, a planted file) is moved to
    /// `bad/` and this compile's object takes its place: a record never
    /// describes a file its writer did not check.
    pub(crate) fn publish(
        &self,
        tmp_object: &Path,
        mut record: Record,
        bytes: Vec<u8>,
    ) -> Result<(Entry, ObjectBytes), Error> {
        // The header set first: a record is never visible before it.
        record.depset = self.write_depset(&record.deps)?;
        let dir = self.prekey_dir(&record.blob, &record.prekey);
        self.mkdir(&self.blob_dir(&record.blob))?;
        self.mkdir(&dir)?;
        let object = dir.join(format!("{}.so", record.key));
        let record_path = dir.join(format!("{}.json", record.key));
        let ours = File::open(tmp_object).map_err(|e| Error::io("opening", tmp_object, e))?;
        ours.sync_all()
            .map_err(|e| Error::io("syncing", tmp_object, e))?;
        let _ = fs::set_permissions(
            tmp_object,
            fs::Permissions::from_mode(self.file_mode() | 0o100),
        );
        let mut file = ours;
        let mut tries = 0;
        loop {
            match fs::hard_link(tmp_object, &object) {
                Ok(()) => break,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && tries < 3 => {
                    tries += 1;
                    match self.existing_object(&object, &record, &record_path) {
                        Existing::Same(f) => {
                            file = f;
                            break;
                        }
                        Existing::Vouched(theirs) => {
                            let _ = fs::remove_file(tmp_object);
                            return Ok(*theirs);
                        }
                        Existing::Unvouched => {
                            log::warn!(
                                "ck-jit: {} was in the cache with no record describing it; \
                                 moved to bad/",
                                object.display()
                            );
                            self.move_aside(&object);
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Err(Error::io("publishing", &object, e))
                }
                Err(_) => {
                    // File systems without hard links: rename is still atomic.
                    fs::rename(tmp_object, &object)
                        .map_err(|e| Error::io("publishing", &object, e))?;
                    break;
                }
            }
        }
        let _ = fs::remove_file(tmp_object);
        // The identity as loads will see it: after the last link count
        // change (which moves ctime).
        record.object_stat = fs::symlink_metadata(&object)
            .map(|m| stat_string(&m))
            .unwrap_or_default();
        let text = serde_json::to_vec(&record).map_err(|e| Error::Io {
            op: "encoding the record for",
            path: record_path.clone(),
            error: std::sync::Arc::new(io::Error::other(e)),
        })?;
        // A rename: readers see the old record or the whole new one.
        self.write_renamed(&record.blob, &text, &record_path)?;
        self.link_head(&dir, &record_path);
        if let Ok(d) = File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok((
            Entry {
                object,
                record_path,
                record,
                used: Some(SystemTime::now()),
                tier: None,
            },
            ObjectBytes::hashed(bytes).with_file(file),
        ))
    }

    /// What the file already under an object's final name is, for
    /// [`Cache::publish`] of `record`.
    fn existing_object(&self, object: &Path, record: &Record, record_path: &Path) -> Existing {
        let Ok(mut f) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(object)
        else {
            return Existing::Unvouched;
        };
        let mut theirs = Vec::new();
        if f.read_to_end(&mut theirs).is_err() {
            return Existing::Unvouched;
        }
        let sum = blake3::hash(&theirs).to_hex().to_string();
        if sum == record.checksum {
            return Existing::Same(f);
        }
        match self.read_record(record_path, true) {
            Some((rec, used))
                if rec.checksum == sum
                    && rec.prekey == record.prekey
                    && rec.key == record.key
                    && rec.size == theirs.len() as u64 =>
            {
                Existing::Vouched(Box::new((
                    Entry {
                        object: object.to_path_buf(),
                        record_path: record_path.to_path_buf(),
                        record: rec,
                        used,
                        tier: None,
                    },
                    ObjectBytes::hashed(theirs).with_file(f),
                )))
            }
            _ => Existing::Unvouched,
        }
    }

    /// Marks an entry as used now (for least-recently-used eviction), unless
    /// its last use as read by the lookup is more recent than
    /// [`TOUCH_EVERY`]. Returns whether it wrote.
    pub(crate) fn touch(&self, entry: &Entry) -> bool {
        if self.read_only || entry.tier.is_some() {
            return false;
        }
        let now = SystemTime::now();
        if used_lately(entry.used, now) {
            return false;
        }
        touch_file(&entry.record_path, now)
    }

    /// Writes a header set unless it is there (then refreshes its
    /// modification time, so maintenance does not take it from under the
    /// record about to name it); returns its digest, empty for no header.
    fn write_depset(&self, deps: &[Dep]) -> Result<String, Error> {
        if deps.is_empty() {
            return Ok(String::new());
        }
        let dir = self.root.join(DEPSETS);
        let text = serde_json::to_vec(deps).map_err(|e| Error::Io {
            op: "encoding the header set for",
            path: dir.clone(),
            error: std::sync::Arc::new(io::Error::other(e)),
        })?;
        let digest = short_hash(&blake3::hash(&text));
        self.mkdir(&dir)?;
        let path = dir.join(format!("{digest}.json"));
        if let Ok(f) = File::options()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
        {
            if f.set_modified(SystemTime::now()).is_ok() {
                return Ok(digest);
            }
        }
        // Same digest, same bytes: replacing a concurrent writer's copy
        // changes nothing a reader can see.
        self.write_renamed("deps", &text, &path)?;
        Ok(digest)
    }

    /// Writes `bytes` to a synced private temp file (named for `owner`)
    /// and renames it to `path`: a reader sees the old file or the whole
    /// new one.
    fn write_renamed(&self, owner: &str, bytes: &[u8], path: &Path) -> Result<(), Error> {
        if self.read_only {
            return Err(self.not_written());
        }
        let tmp = self.root.join("tmp");
        let (prefix, suffix) = temp_affixes(owner, "json");
        let mut f = tempfile::Builder::new()
            .prefix(&prefix)
            .suffix(&suffix)
            .permissions(fs::Permissions::from_mode(self.file_mode()))
            .tempfile_in(&tmp)
            .map_err(|e| Error::io("creating a temp file in", &tmp, e))?;
        f.write_all(bytes)
            .map_err(|e| Error::io("writing", f.path(), e))?;
        f.as_file()
            .sync_all()
            .map_err(|e| Error::io("syncing", f.path(), e))?;
        f.persist(path)
            .map_err(|e| Error::io("publishing", path, e.error))?;
        Ok(())
    }

    /// Where this cache keeps the identities its host's headers have
    /// ([`HereStats`](super::headers)); none for a read-only tier.
    fn here_dir(&self) -> Option<&Path> {
        (!self.read_only).then_some(self.root.as_path())
    }

    /// Reads a header set by digest, checking the bytes against it; parsed
    /// sets are kept for the process (a digest names one content).
    fn read_depset(&self, digest: &str) -> Option<Arc<HeaderSet>> {
        if let Some(d) = DEPSET_MEMO.lock().ok()?.get(digest) {
            return Some(d.clone());
        }
        if !is_hex_key(digest) {
            return None;
        }
        let path = self.root.join(DEPSETS).join(format!("{digest}.json"));
        let text = read_set(&path)?;
        if short_hash(&blake3::hash(text.as_slice())) != digest {
            return None;
        }
        let deps = Arc::new(HeaderSet::parse(text)?);
        if let Ok(mut m) = DEPSET_MEMO.lock() {
            m.insert(digest.to_string(), deps.clone());
        }
        Some(deps)
    }

    /// Reads a record and, for the current format, its header set; with
    /// the record file's modification time. `None` for anything torn or
    /// unparsable, and, when `need_deps` (a lookup), for a record naming a
    /// set that is missing or damaged; maintenance still sees that one
    /// (with no headers), so it can be evicted. A lookup's record has the
    /// set in [`Record::headers`] only, maintenance's in [`Record::deps`].
    fn read_record(&self, path: &Path, need_deps: bool) -> Option<(Record, Option<SystemTime>)> {
        self.read_record_file(path, need_deps)
            .map(|(record, md)| (record, md.modified().ok()))
    }

    /// [`Cache::read_record`], with the record file's metadata.
    fn read_record_file(&self, path: &Path, need_deps: bool) -> Option<(Record, fs::Metadata)> {
        let mut f = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .ok()?;
        let md = f.metadata().ok()?;
        let text = read_capped(&mut f, md.len())?;
        let mut record: Record = match plain_record(&text) {
            Some(r) => r,
            None => serde_json::from_slice(&text).ok()?,
        };
        if !record.depset.is_empty() {
            match self.read_depset(&record.depset) {
                Some(set) if need_deps => record.headers = Some(set),
                Some(set) => record.deps = Arc::new(set.deps()),
                None if need_deps => return None,
                None => {}
            }
        }
        if need_deps && record.headers.is_none() && !record.deps.is_empty() {
            // Headers in the record itself (no writer of this format puts
            // them there, but they are checked all the same).
            record.headers = Some(Arc::new(HeaderSet::from_deps(&record.deps)));
        }
        Some((record, md))
    }

    /// Removes header sets no record names that are older than `min_age`;
    /// returns how many. Records are listed after the sets, so a set named
    /// by a record published meanwhile is either listed as named or young.
    pub fn sweep_depsets(&self, min_age: Duration) -> usize {
        if self.read_only {
            return 0;
        }
        let dir = self.root.join(DEPSETS);
        let Ok(rd) = fs::read_dir(&dir) else {
            return 0;
        };
        let candidates: Vec<_> = rd
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .filter(|e| {
                e.metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age >= min_age)
            })
            .map(|e| e.path())
            .collect();
        if candidates.is_empty() {
            return 0;
        }
        let named: std::collections::HashSet<String> = self
            .entries()
            .into_iter()
            .map(|e| e.record.depset)
            .collect();
        let mut removed = 0;
        for p in candidates {
            let stem = p.file_stem().map(|s| s.to_string_lossy().into_owned());
            if stem.is_some_and(|s| !named.contains(&s)) && fs::remove_file(&p).is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// When an entry was last used: its record's modification time, set at
    /// publish and refreshed on a cache hit when older than
    /// [`TOUCH_EVERY`].
    pub fn last_used(&self, entry: &Entry) -> Option<SystemTime> {
        fs::symlink_metadata(&entry.record_path)
            .and_then(|m| m.modified())
            .ok()
    }

    /// Takes the compile lock of a prekey only if nobody holds it now:
    /// `None` while a compile of it runs (in any process). For maintenance
    /// (eviction, verification) that must not touch an entry being built.
    pub fn try_lock(&self, blob: &str, prekey: &str) -> Result<Option<LockGuard>, Error> {
        let (path, file) = self.open_lock(blob, prekey)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(LockGuard { _file: Some(file) })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            // Same tolerance as `lock`: a shared cache on a file system
            // without locks works unlocked.
            Err(fs::TryLockError::Error(_)) if self.shared => Ok(Some(LockGuard { _file: None })),
            Err(fs::TryLockError::Error(e)) => Err(Error::io("locking", &path, e)),
        }
    }

    /// Removes an entry: the record first, so no lookup finds it any more,
    /// then the object. Unlinking is safe for processes that have the object
    /// mapped (it is never truncated or rewritten). Returns whether this call
    /// removed the record (`false` when it was already gone).
    pub fn remove(&self, entry: &Entry) -> Result<bool, Error> {
        if self.read_only {
            return Err(self.not_written());
        }
        let removed = match fs::remove_file(&entry.record_path) {
            Ok(()) => true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => false,
            Err(e) => return Err(Error::io("removing", &entry.record_path, e)),
        };
        match fs::remove_file(&entry.object) {
            Ok(()) => Ok(removed),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(removed),
            Err(e) => Err(Error::io("removing", &entry.object, e)),
        }
    }

    /// Removes temp files and compile directories left by compiles that
    /// died: ones of processes that no longer exist (local cache), or older
    /// than `max_age`. Their names start with the creating process's id and
    /// end in `.tmp` (`temp_affixes`).
    pub fn sweep_temps(&self, max_age: Duration) -> usize {
        if self.read_only {
            return 0;
        }
        let dir = self.root.join("tmp");
        let Ok(rd) = fs::read_dir(&dir) else {
            return 0;
        };
        let mut removed = 0;
        for ent in rd.flatten() {
            let name = ent.file_name();
            let name = name.to_string_lossy();
            if !name.ends_with(".tmp") {
                continue;
            }
            let old = ent
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > max_age);
            let dead = !self.shared
                && name
                    .split('-')
                    .next()
                    .and_then(|p| p.parse::<i32>().ok())
                    .is_some_and(|pid| pid > 0 && !process_alive(pid));
            if !(old || dead) {
                continue;
            }
            // A compile's work directory, or a record being written. The
            // file type is the entry's own: a symlink is removed, never
            // followed.
            let is_dir = ent.file_type().is_ok_and(|t| t.is_dir());
            let gone = if is_dir {
                fs::remove_dir_all(ent.path())
            } else {
                fs::remove_file(ent.path())
            };
            if gone.is_ok() {
                removed += 1;
            }
        }
        removed
    }

    /// Every published entry (for the CLI's list, stat, gc and verify).
    pub fn entries(&self) -> Vec<Entry> {
        let mut out = Vec::new();
        let Ok(blobs) = fs::read_dir(self.root.join(ENTRIES)) else {
            return out;
        };
        for b in blobs.flatten() {
            self.entries_under(&b.path(), &mut out);
        }
        out.sort_by(|a, b| a.record_path.cmp(&b.record_path));
        out
    }

    /// The published entries of one blob, whatever their compiler: reads
    /// that blob's directory only, so the cost does not grow with the
    /// number of other blobs in the cache.
    pub fn entries_of(&self, blob: &str) -> Vec<Entry> {
        let mut out = Vec::new();
        self.entries_under(&self.blob_dir(blob), &mut out);
        out.sort_by(|a, b| a.record_path.cmp(&b.record_path));
        out
    }
}

impl Cache {
    /// Appends the entries under one blob directory (`v1/<blob>/`).
    fn entries_under(&self, blob_dir: &Path, out: &mut Vec<Entry>) {
        let Ok(prekeys) = fs::read_dir(blob_dir) else {
            return;
        };
        for p in prekeys.flatten() {
            if !p.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let Ok(files) = fs::read_dir(p.path()) else {
                continue;
            };
            for f in files.flatten() {
                let path = f.path();
                if path.extension().is_some_and(|x| x == "json") {
                    if let Some((record, used)) = self.read_record(&path, false) {
                        out.push(Entry {
                            object: path.with_extension("so"),
                            record_path: path,
                            record,
                            used,
                            tier: self.tier(),
                        });
                    }
                }
            }
        }
    }
}

/// Sets the modification time of the record `path` (a link not followed)
/// to `now`; whether it was.
fn touch_file(path: &Path, now: SystemTime) -> bool {
    File::options()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .is_ok_and(|f| f.set_modified(now).is_ok())
}

/// `base` with each of `parts` after a `/` (one is not doubled), then
/// `suffix` added to the last: the path allocated once, byte by byte (a
/// hit builds several per kernel). The parts are names this cache made
/// (never absolute; a leading `/` would stay under `base`, where
/// [`Path::join`] would start again from the root).
pub(crate) fn joined(base: &Path, parts: &[&str], suffix: &str) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let base = base.as_os_str().as_encoded_bytes();
    let len = base.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>() + suffix.len();
    let mut path = Vec::with_capacity(len);
    path.extend_from_slice(base);
    for part in parts {
        if !path.is_empty() && path.last() != Some(&b'/') {
            path.push(b'/');
        }
        path.extend_from_slice(part.as_bytes());
    }
    path.extend_from_slice(suffix.as_bytes());
    PathBuf::from(std::ffi::OsString::from_vec(path))
}

/// Whether a last use `used` is less than [`TOUCH_EVERY`] before `now`
/// (a time ahead of `now` counts as recent): [`Cache::touch`] then writes
/// nothing.
pub(crate) fn used_lately(used: Option<SystemTime>, now: SystemTime) -> bool {
    used.is_some_and(|t| now.duration_since(t).map_or(true, |age| age < TOUCH_EVERY))
}

/// Whether `key` has the form of a key (a file stem this cache writes):
/// what a record names is joined to a path only then.
fn is_hex_key(key: &str) -> bool {
    key.len() == 32 && all_hex(key.as_bytes())
}

fn open_object(entry: &Entry) -> Result<(File, fs::Metadata), String> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&entry.object)
        .map_err(|e| format!("cannot open: {e}"))?;
    let md = f.metadata().map_err(|e| e.to_string())?;
    if md.len() != entry.record.size {
        return Err(format!("size {}, recorded {}", md.len(), entry.record.size));
    }
    Ok((f, md))
}

fn hash_check(entry: &Entry, f: &mut File, len: u64) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::with_capacity(len as usize + 1);
    f.read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    let sum = blake3::hash(&bytes).to_hex().to_string();
    if sum != entry.record.checksum {
        return Err("checksum mismatch".into());
    }
    Ok(bytes)
}

/// The fixed parts of a temp name: `<pid>-` before the random part (the
/// sweeper reads the pid back), `-<blob>.<ext>.tmp` after it.
fn temp_affixes(blob: &str, ext: &str) -> (String, String) {
    let mut name = safe_component(blob);
    name.truncate(60);
    let ext = if ext.is_empty() {
        String::new()
    } else {
        format!(".{ext}")
    };
    (
        format!("{}-", std::process::id()),
        format!("-{name}{ext}.tmp"),
    )
}

fn process_alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// A header set's file: mapped when large (a CK blob's is 130 KB, which
/// read into a fresh buffer cost a page fault per page; a mapping of
/// the cached file faults a few times), else read. Sets are replaced by
/// rename, never rewritten in place, so a mapping stays what was read.
fn read_set(path: &Path) -> Option<Bytes> {
    let mut f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    let len = f.metadata().ok()?.len();
    if len > LOOK_MAP_ABOVE && len <= 16 << 20 {
        if let Some(m) = map(&f, len as usize) {
            return Some(m);
        }
    }
    read_capped(&mut f, len).map(Bytes::Owned)
}

/// Reads a file of the cache that is never rewritten in place (records and
/// header sets are replaced by rename), `len` bytes long by `fstat`, up to
/// 16 MiB: one `read`.
fn read_capped(f: &mut File, len: u64) -> Option<Vec<u8>> {
    if len > 16 << 20 {
        return None;
    }
    read_len(f, len).ok()
}

/// Whether the headers a lookup read with `record` (none: nothing to
/// check) all have their recorded contents.
pub(super) fn headers_unchanged(record: &Record, roots: Roots<'_>, here: Option<&Path>) -> bool {
    record
        .headers
        .as_ref()
        .is_none_or(|h| deps_verified(&record.depset, h, roots, here))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::bytes::MAP_ABOVE;

    #[test]
    fn a_joined_path_is_the_joined_path() {
        for base in ["/a/b", "/a/b/", "c", "", "/"] {
            for parts in [
                &["v1", "blob", "0f"][..],
                &["v1"][..],
                &[][..],
                &["", "x"][..],
            ] {
                let mut want = PathBuf::from(base);
                for p in parts {
                    want.push(p);
                }
                want.as_mut_os_string().push(".so");
                assert_eq!(
                    joined(Path::new(base), parts, ".so"),
                    want,
                    "{base:?} {parts:?}"
                );
            }
        }
        // A leading `/` stays under the base.
        assert_eq!(joined(Path::new("/c"), &["/x"], ""), Path::new("/c//x"));
        assert_eq!(safe_name("plain_name"), safe_component("plain_name"));
        assert_eq!(safe_name("../x"), safe_component("../x"));
    }

    #[test]
    fn safe_component_keeps_plain_names_and_maps_hostile_ones() {
        assert_eq!(safe_component("fmha_fwd_d128"), "fmha_fwd_d128");
        for bad in [
            "../x", "/abs", "a/b", "a\0b", "a\nb", "$(x)", ".hidden", "-rf", "",
        ] {
            let s = safe_component(bad);
            assert!(
                !s.contains('/') && !s.starts_with('.') && !s.starts_with('-'),
                "{s}"
            );
            assert!(!s.is_empty());
        }
        let long = "x".repeat(4096);
        assert!(safe_component(&long).len() <= 100);
        assert_ne!(safe_component("a/b"), safe_component("a_b"));
    }

    #[test]
    fn open_makes_its_directories_once_and_refuses_a_file_in_their_place() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("c");
        Cache::open(&root, false).unwrap();
        for sub in SUBDIRS {
            assert!(root.join(sub).is_dir(), "{sub}");
        }
        Cache::open(&root, false).unwrap();
        fs::remove_dir(root.join("logs")).unwrap();
        fs::write(root.join("logs"), b"").unwrap();
        let err = Cache::open(&root, false).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
        fs::remove_file(root.join("logs")).unwrap();
        std::os::unix::fs::symlink(base.path(), root.join("logs")).unwrap();
        assert!(Cache::open(&root, false).is_err());
    }

    /// What processes keep for later ones (a compiler's version text, a
    /// device) lives in the cache's own directories, made with its modes:
    /// nothing is made before the cache is, where the umask would decide.
    #[test]
    fn kept_texts_live_in_directories_the_cache_made_with_its_modes() {
        let base = tempfile::tempdir().unwrap();
        let root = base.path().join("c");
        crate::object::text::keep_text(&root.join("compilers").join("k"), "clang 20\n");
        assert!(!root.exists(), "a kept text made the cache directory");
        Cache::open(&root, false).unwrap();
        for sub in ["", "compilers", "devices"] {
            let mode = fs::metadata(root.join(sub)).unwrap().permissions().mode();
            assert_eq!(mode & 0o7777, 0o700, "{sub}: {mode:o}");
        }
        crate::object::text::keep_text(&root.join("compilers").join("k"), "clang 20\n");
        assert_eq!(
            fs::read_to_string(root.join("compilers").join("k")).unwrap(),
            "clang 20\n"
        );
        let team = base.path().join("team");
        Cache::open(&team, true).unwrap();
        for sub in ["", "compilers", "devices"] {
            let mode = fs::metadata(team.join(sub)).unwrap().permissions().mode();
            assert_eq!(mode & 0o7777, 0o2770, "{sub}: {mode:o}");
        }
    }

    #[test]
    fn compile_temps_live_in_tmp_and_stale_ones_are_swept() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::open(&base.path().join("c"), false).unwrap();
        let tmp = cache.root().join("tmp");
        let work = cache.work_dir("../a blob").unwrap();
        assert_eq!(work.path().parent(), Some(tmp.as_path()));
        fs::write(work.path().join("out.so"), b"x").unwrap();
        // A live process's temps stay; a dead one's go, directories included.
        assert_eq!(cache.sweep_temps(Duration::from_secs(3600)), 0);
        let dead = tmp.join("2147483646-abcdef-k.tmp");
        fs::create_dir(&dead).unwrap();
        fs::write(dead.join("out.so"), b"x").unwrap();
        fs::write(tmp.join("2147483646-abcdef-k.json.tmp"), b"{}").unwrap();
        assert_eq!(cache.sweep_temps(Duration::from_secs(3600)), 2);
        assert!(!dead.exists() && work.path().exists());
        let path = work.path().to_path_buf();
        drop(work);
        assert!(!path.exists());
    }

    /// Publishes a small fake object of `blob` that read `deps`.
    fn publish_fake(cache: &Cache, blob: &str, deps: Vec<Dep>) -> Entry {
        publish_bytes(cache, blob, deps, b"\x7fELF fake object")
    }

    fn publish_bytes(cache: &Cache, blob: &str, deps: Vec<Dep>, bytes: &[u8]) -> Entry {
        let tmp = cache.root().join("tmp").join(format!("{blob}.so"));
        fs::write(&tmp, bytes).unwrap();
        let prekey = Prekey(short_hash(&blake3::hash(blob.as_bytes())));
        let record = Record {
            format: CACHE_FORMAT,
            blob: blob.into(),
            inputs: "i".into(),
            prekey: prekey.to_string(),
            key: prekey.key(&deps).to_string(),
            size: bytes.len() as u64,
            checksum: blake3::hash(bytes).to_hex().to_string(),
            object_stat: String::new(),
            depset: String::new(),
            deps: Arc::new(deps),
            headers: None,
            command: vec![],
            created: 0,
        };
        cache.publish(&tmp, record, bytes.to_vec()).unwrap().0
    }

    fn age(path: &Path, secs: u64) {
        File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(secs))
            .unwrap();
    }

    /// Two compiles of one key whose bytes differ (a compiler that embeds
    /// a path): the second keeps the first's object and record. An object
    /// no record describes is replaced, never described.
    #[test]
    fn publish_keeps_a_vouched_object_and_replaces_an_unvouched_one() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::open(&base.path().join("c"), false).unwrap();
        let a = publish_bytes(&cache, "t", vec![], b"first object");
        let b = publish_bytes(&cache, "t", vec![], b"second object!");
        assert_eq!(b.object, a.object);
        assert_eq!(b.record.checksum, a.record.checksum);
        assert_eq!(fs::read(&b.object).unwrap(), b"first object");
        assert_eq!(cache.verify(&b).unwrap(), b"first object");

        fs::remove_file(&a.record_path).unwrap();
        let c = publish_bytes(&cache, "t", vec![], b"third object");
        assert_eq!(fs::read(&c.object).unwrap(), b"third object");
        assert_eq!(cache.verify(&c).unwrap(), b"third object");
        let bad = fs::read_dir(cache.root().join("bad")).unwrap().count();
        assert_eq!(bad, 1);
    }

    #[test]
    fn a_hit_writes_last_use_only_when_it_is_an_hour_old() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::open(&base.path().join("c"), false).unwrap();
        let e = publish_fake(&cache, "t", vec![]);
        assert!(!e.record.object_stat.is_empty());
        let found = || cache.entries_of("t").pop().unwrap();
        // Used moments ago (at publish): nothing written.
        let before = cache.last_used(&e).unwrap();
        assert!(!cache.touch(&found()));
        assert_eq!(cache.last_used(&e).unwrap(), before);
        // Used 59 minutes ago: still nothing.
        age(&e.record_path, TOUCH_EVERY.as_secs() - 60);
        let before = cache.last_used(&e).unwrap();
        assert!(!cache.touch(&found()));
        assert_eq!(cache.last_used(&e).unwrap(), before);
        // Over an hour: refreshed to now.
        age(&e.record_path, TOUCH_EVERY.as_secs() + 60);
        assert!(cache.touch(&found()));
        let age = cache.last_used(&e).unwrap().elapsed().unwrap_or_default();
        assert!(age < Duration::from_secs(60), "{age:?}");
    }

    #[test]
    fn an_unchanged_object_is_trusted_by_identity_and_a_changed_one_hashed() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::open(&base.path().join("c"), false).unwrap();
        // A shared object of a few MB: this test executable (PIE).
        let exe = fs::read(std::env::current_exe().unwrap()).unwrap();
        assert!(exe.len() as u64 > MAP_ABOVE);
        let e = publish_bytes(&cache, "big", vec![], &exe);
        let got = cache.verify_for_load(&e, false).unwrap();
        assert!(!got.was_hashed());
        // Vouched for by one lstat: nothing read until the bytes are asked
        // for, and then mapped, being large.
        assert!(format!("{got:?}").contains("read: false"), "{got:?}");
        assert!(*got == *exe);
        assert!(format!("{got:?}").contains("read: true"), "{got:?}");
        assert!(format!("{got:?}").contains("mapped: true"), "{got:?}");
        drop(got);
        assert!(cache.verify_for_load(&e, true).unwrap().was_hashed());
        // Same size and bytes, but rewritten: its identity moved, so it is
        // hashed (and passes).
        fs::write(&e.object, &exe).unwrap();
        let got = cache.verify_for_load(&e, false).unwrap();
        assert!(got.was_hashed());
        // One byte changed in place, size and mtime put back: hashed, caught.
        let mtime = fs::metadata(&e.object).unwrap().modified().unwrap();
        let mut bad = exe.clone();
        bad[exe.len() / 2] ^= 1;
        fs::write(&e.object, &bad).unwrap();
        File::options()
            .write(true)
            .open(&e.object)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert_eq!(
            cache.verify_for_load(&e, false).unwrap_err(),
            "checksum mismatch"
        );
        // Truncated: caught by its size before anything is read.
        fs::write(&e.object, &exe[..exe.len() / 2]).unwrap();
        assert!(cache
            .verify_for_load(&e, false)
            .unwrap_err()
            .starts_with("size"));
    }

    #[test]
    fn a_lookup_trusts_the_head_only_while_it_is_the_record_it_names() {
        use std::os::unix::fs::MetadataExt;
        let base = tempfile::tempdir().unwrap();
        let root = base.path();
        let cache = Cache::open(&root.join("c"), false).unwrap();
        let e = publish_fake(&cache, "h", vec![]);
        let dir = e.record_path.parent().unwrap().to_path_buf();
        let head = dir.join(HEAD);
        // Published: the head is the record file itself.
        let ino = |p: &Path| fs::symlink_metadata(p).unwrap().ino();
        assert_eq!(ino(&head), ino(&e.record_path));
        let found = cache
            .lookup("h", &e.record.prekey, Roots::tree(root))
            .unwrap()
            .unwrap();
        assert_eq!(found.record_path, e.record_path);
        assert_eq!(found.object, e.object);
        // A head naming a key that is no key: a record planted beside the
        // key directories, the head linked to it, naming the key
        // "../planted". It is that record (same file), and the path it
        // names is there; only the key's form refuses it, and the listing
        // finds the real entry.
        let mut planted = e.record.clone();
        planted.key = "../planted".into();
        let blob_dir = dir.parent().unwrap();
        fs::write(
            blob_dir.join("planted.json"),
            serde_json::to_vec(&planted).unwrap(),
        )
        .unwrap();
        fs::copy(&e.object, blob_dir.join("planted.so")).unwrap();
        fs::remove_file(&head).unwrap();
        fs::hard_link(blob_dir.join("planted.json"), &head).unwrap();
        let found = cache
            .lookup("h", &e.record.prekey, Roots::tree(root))
            .unwrap()
            .unwrap();
        assert_eq!(found.record_path, e.record_path);
        assert_eq!(found.object, e.object);
        // The entry removed (evicted): the head still holds its record's
        // bytes, but it is no longer the record, so nothing is found.
        fs::remove_file(&head).unwrap();
        fs::hard_link(&e.record_path, &head).unwrap();
        assert!(cache.remove(&e).unwrap());
        assert!(head.exists());
        assert!(cache
            .lookup("h", &e.record.prekey, Roots::tree(root))
            .unwrap()
            .is_none());
    }

    #[test]
    fn header_sets_are_shared_and_swept_only_when_unnamed_and_old() {
        let base = tempfile::tempdir().unwrap();
        let cache = Cache::open(&base.path().join("c"), false).unwrap();
        let dep = |p: &str| Dep {
            path: p.into(),
            hash: "00".into(),
            stat: String::new(),
        };
        let a = publish_fake(&cache, "a", vec![dep("/x.h"), dep("/y.h")]);
        let b = publish_fake(&cache, "b", vec![dep("/x.h"), dep("/y.h")]);
        let c = publish_fake(&cache, "c", vec![dep("/z.h")]);
        assert_eq!(a.record.depset, b.record.depset);
        assert_ne!(a.record.depset, c.record.depset);
        let sets = cache.root().join(DEPSETS);
        let set = |d: &str| sets.join(format!("{d}.json"));
        assert_eq!(fs::read_dir(&sets).unwrap().count(), 2);
        // Records stay small: the list is not in them.
        let text = fs::read_to_string(&a.record_path).unwrap();
        assert!(!text.contains("/x.h"), "{text}");
        // c goes; its set is then named by nobody, but young: kept.
        cache.remove(&c).unwrap();
        assert_eq!(cache.sweep_depsets(DEPSET_GRACE), 0);
        // Old and unnamed: removed. Old and named by a and b: kept.
        age(&set(&c.record.depset), DEPSET_GRACE.as_secs() + 60);
        age(&set(&a.record.depset), DEPSET_GRACE.as_secs() + 60);
        assert_eq!(cache.sweep_depsets(DEPSET_GRACE), 1);
        assert!(set(&a.record.depset).exists() && !set(&c.record.depset).exists());
        // Republishing a set refreshes it, so a sweep racing the record
        // that is about to name it finds it young.
        cache.remove(&a).unwrap();
        cache.remove(&b).unwrap();
        let again = publish_fake(&cache, "a2", vec![dep("/x.h"), dep("/y.h")]);
        assert_eq!(again.record.depset, a.record.depset);
        assert_eq!(cache.sweep_depsets(DEPSET_GRACE), 0);
        assert_eq!(cache.entries_of("a2")[0].record.deps.len(), 2);
    }
}
