//! The one index of what CK's generator wrote: every generated file is
//! read and lexed once per build, and everything the preset derives from
//! the blobs (their roles and descriptions, the manifest, the stubs, the
//! dispatch rules, the call order and the `together` sets) is computed from
//! it. The index is kept in `OUT_DIR` under a key made of the generated
//! listing with each file's size and modification time, the version
//! headers', the requested targets and this crate's version; a build whose
//! key matches reads it back instead of a single blob.
//!
//! It must never read a blob twice in one build, and never trust a kept
//! index whose key differs in anything.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::calls::{self, CallCheck};
use super::decl::{self, Specialisation};
use super::error::{io_err, Error};
use super::generated::{describe_source, name_disagreement, GeneratedFile, Role};
use super::guard::Skeleton;
use super::vocab::{calls_template, BlobDecl, Vocabulary};

/// The file in `OUT_DIR` the index is kept in.
pub(crate) const INDEX_FILE: &str = "ck_jit_ck_index.json";

/// What one blob defines, as read once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IndexedBlob {
    /// Its file's position in the generated files.
    pub file: usize,
    /// Its name: the file's stem.
    pub name: String,
    /// Its `#include` lines, trimmed, each once, in order.
    pub includes: Vec<String>,
    /// The explicit specialisations it defines.
    pub specialisations: Vec<Specialisation>,
}

/// Every blob of a build, what the version's headers add to them, and
/// what the dispatchers call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Detail {
    /// Every blob, recorded or left out, in file order.
    pub blobs: Vec<IndexedBlob>,
    /// The definitions of the headers' templates that call blob templates
    /// (see [`Vocabulary::launcher_definitions`]): appended to a
    /// dispatcher's text when it is read.
    pub launchers: String,
    /// Every function template the version's FMHA headers declare.
    pub header_templates: Vec<String>,
    /// The dispatchers' calls checked against the recorded blobs, `groups`
    /// by blob name.
    pub calls: CallCheck,
}

impl Detail {
    /// The blobs `files` says are recorded.
    pub fn recorded<'a>(
        &'a self,
        files: &'a [GeneratedFile],
    ) -> impl Iterator<Item = &'a IndexedBlob> + 'a {
        self.blobs
            .iter()
            .filter(move |b| matches!(files[b.file].role, Role::Blob(_)))
    }

    /// Every specialisation the recorded blobs define, in
    /// [`calls::specialisation_key`] form, with the blob defining it.
    pub fn owners(&self, files: &[GeneratedFile]) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        for b in self.recorded(files) {
            for s in &b.specialisations {
                out.insert(
                    calls::specialisation_key(&s.template, &s.args),
                    b.name.clone(),
                );
            }
        }
        out
    }
}

/// The index of a build: the sets of blobs the dispatchers call together
/// (what the manifest records), and the [`Detail`] the stubs, rules and
/// checks are made from, read from where it was kept only when one of
/// them is asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlobIndex {
    /// The blobs each dispatcher call runs together, by name.
    pub together: Vec<Vec<String>>,
    detail: OnceLock<Arc<Detail>>,
    /// Where the detail was kept, and the token it was kept with.
    kept: Option<(PathBuf, String)>,
}

impl BlobIndex {
    /// The index of a build that read every file.
    pub fn new(detail: Detail) -> BlobIndex {
        BlobIndex {
            together: detail.calls.groups.clone(),
            detail: OnceLock::from(Arc::new(detail)),
            kept: None,
        }
    }

    /// The detail, read from where it was kept if this build read no file.
    pub fn detail(&self) -> Result<&Detail, Error> {
        if let Some(d) = self.detail.get() {
            return Ok(d);
        }
        let stale = |path: &Path| Error::SourceTree {
            path: path.to_path_buf(),
            why: "the kept index of the generated files is missing or stale: build again".into(),
        };
        let Some((path, token)) = &self.kept else {
            return Err(stale(Path::new(DETAIL_FILE)));
        };
        let bytes = fs::read(path).map_err(io_err(path))?;
        let kept: KeptDetail = serde_json::from_slice(&bytes).map_err(|_| stale(path))?;
        if &kept.token != token {
            return Err(stale(path));
        }
        let calls = kept.calls.into_check().ok_or_else(|| stale(path))?;
        Ok(self.detail.get_or_init(|| {
            Arc::new(Detail {
                blobs: kept.blobs,
                launchers: kept.launchers,
                header_templates: kept.header_templates,
                calls,
            })
        }))
    }

    /// Records where [`keep`] kept this index.
    pub fn kept_at(&mut self, kept: (PathBuf, String)) {
        self.kept = Some(kept);
    }
}

/// The file in `OUT_DIR` the detail of the index is kept in.
pub(crate) const DETAIL_FILE: &str = "ck_jit_ck_index_detail.json";

/// The form of the kept index and detail: an index of another form is
/// not this build's (its key differs), and the files are read again.
const KEPT_FORMAT: u32 = 4;

/// What an index is kept with: its key, the files' roles before the
/// targets decided which blobs are recorded, the sets called together, and
/// the token of the detail kept beside it.
/// Every text of the roles and sets (kinds, traits, metadata keys and
/// values, blob names) is written once, in `words`, and named by its
/// number: twelve thousand blobs repeat a few hundred of them.
#[derive(Serialize, Deserialize)]
struct Kept<W = String, G = Skeleton> {
    key: W,
    token: W,
    /// The size of the detail file written with it: a detail gone or
    /// changed is no index.
    detail_len: u64,
    words: Vec<W>,
    roles: Vec<KeptRole>,
    /// Each distinct skeleton once: thousands of blobs share a few.
    skeletons: Vec<G>,
    together: Vec<Vec<u32>>,
}

/// A [`Role`] as kept, its texts by number (see [`Kept`]).
#[derive(Serialize, Deserialize)]
enum KeptRole {
    Blob(KeptDecl),
    OtherArch(KeptDecl),
    Dispatcher,
    Host,
}

/// A [`BlobDecl`] as kept.
#[derive(Serialize, Deserialize)]
struct KeptDecl {
    entry: u32,
    templates: Vec<u32>,
    kind: u32,
    arch: Option<u32>,
    traits: Option<u32>,
    meta: Vec<(u32, u32)>,
    skeleton: Option<u32>,
}

/// Numbers texts in the order first seen.
#[derive(Default)]
struct Words<'a> {
    numbers: HashMap<&'a str, u32>,
    words: Vec<&'a str>,
    skeleton_numbers: HashMap<&'a Skeleton, u32>,
    skeletons: Vec<&'a Skeleton>,
}

impl<'a> Words<'a> {
    fn number(&mut self, w: &'a str) -> u32 {
        *self.numbers.entry(w).or_insert_with(|| {
            self.words.push(w);
            (self.words.len() - 1) as u32
        })
    }

    fn decl(&mut self, d: &'a BlobDecl) -> KeptDecl {
        KeptDecl {
            entry: self.number(&d.entry),
            templates: d.templates.iter().map(|t| self.number(t)).collect(),
            kind: self.number(&d.kind),
            arch: d.arch.as_deref().map(|a| self.number(a)),
            traits: d.traits.as_deref().map(|t| self.number(t)),
            meta: d
                .meta
                .iter()
                .map(|(k, v)| (self.number(k), self.number(v)))
                .collect(),
            skeleton: d.skeleton.as_ref().map(|k| {
                *self.skeleton_numbers.entry(k).or_insert_with(|| {
                    self.skeletons.push(k);
                    (self.skeletons.len() - 1) as u32
                })
            }),
        }
    }
}

impl KeptDecl {
    /// The declaration, or `None` when a number names no word.
    fn spelt(self, words: &[String], skeletons: &[Skeleton]) -> Option<BlobDecl> {
        let w = |n: u32| words.get(n as usize).cloned();
        Some(BlobDecl {
            entry: w(self.entry)?,
            templates: self.templates.into_iter().map(w).collect::<Option<_>>()?,
            kind: w(self.kind)?,
            arch: self.arch.map(w).map_or(Some(None), |a| a.map(Some))?,
            traits: self.traits.map(w).map_or(Some(None), |t| t.map(Some))?,
            meta: self
                .meta
                .into_iter()
                .map(|(k, v)| Some((w(k)?, w(v)?)))
                .collect::<Option<_>>()?,
            skeleton: match self.skeleton {
                Some(n) => Some(skeletons.get(n as usize)?.clone()),
                None => None,
            },
        })
    }
}

impl Kept {
    /// The roles and sets, or `None` when a number names no word.
    fn spelt(self) -> Option<(Vec<Role>, Vec<Vec<String>>)> {
        let words = self.words;
        let roles = self
            .roles
            .into_iter()
            .map(|r| {
                Some(match r {
                    KeptRole::Blob(d) => Role::Blob(Box::new(d.spelt(&words, &self.skeletons)?)),
                    KeptRole::OtherArch(d) => Role::OtherArch(Box::new(d.spelt(&words, &self.skeletons)?)),
                    KeptRole::Dispatcher => Role::Dispatcher,
                    KeptRole::Host => Role::Host,
                })
            })
            .collect::<Option<Vec<Role>>>()?;
        let together = self
            .together
            .into_iter()
            .map(|set| {
                set.into_iter()
                    .map(|n| words.get(n as usize).cloned())
                    .collect::<Option<Vec<String>>>()
            })
            .collect::<Option<Vec<_>>>()?;
        Some((roles, together))
    }
}

/// The detail as kept: written by [`keep`] field by field (the blobs may
/// have been serialised on another thread), read back whole.
#[derive(Deserialize)]
struct KeptDetail {
    token: String,
    blobs: Vec<IndexedBlob>,
    launchers: String,
    header_templates: Vec<String>,
    calls: KeptCalls,
}

/// [`CallCheck`] as kept: each specialisation written once, the groups
/// and runs as its numbers (CK's runs repeat each of a few thousand
/// specialisations many times: tens of MB of text otherwise, which a
/// build script in a debug build spends seconds writing).
#[derive(Serialize, Deserialize)]
struct KeptCalls<K = String> {
    calls: usize,
    unresolved: Vec<(PathBuf, usize, String)>,
    keys: Vec<K>,
    groups: Vec<Vec<u32>>,
    sequences: Vec<Vec<u32>>,
}

impl<'a> KeptCalls<&'a str> {
    fn of(c: &'a CallCheck) -> KeptCalls<&'a str> {
        let mut numbers: HashMap<&'a str, u32> = HashMap::new();
        let mut keys: Vec<&'a str> = Vec::new();
        let mut number = |k: &'a String| -> u32 {
            *numbers.entry(k.as_str()).or_insert_with(|| {
                keys.push(k.as_str());
                (keys.len() - 1) as u32
            })
        };
        let mut numbered = |sets: &'a [Vec<String>]| -> Vec<Vec<u32>> {
            sets.iter()
                .map(|set| set.iter().map(&mut number).collect())
                .collect()
        };
        let groups = numbered(&c.groups);
        let sequences = numbered(&c.sequences);
        KeptCalls {
            calls: c.calls,
            unresolved: c.unresolved.clone(),
            keys,
            groups,
            sequences,
        }
    }
}

impl KeptCalls {
    /// The calls, or `None` when a number names no key (a damaged file).
    fn into_check(self) -> Option<CallCheck> {
        let keys = self.keys;
        let spelt = |sets: Vec<Vec<u32>>| -> Option<Vec<Vec<String>>> {
            sets.into_iter()
                .map(|set| {
                    set.into_iter()
                        .map(|n| keys.get(n as usize).cloned())
                        .collect()
                })
                .collect()
        };
        Some(CallCheck {
            calls: self.calls,
            unresolved: self.unresolved,
            groups: spelt(self.groups)?,
            sequences: spelt(self.sequences)?,
        })
    }
}

/// [`Detail::blobs`] serialised (on another thread while the dispatchers
/// are checked), for [`keep`].
pub(crate) fn serialise_blobs(blobs: &[IndexedBlob]) -> Option<Vec<u8>> {
    serde_json::to_vec(blobs).ok()
}

/// The key of a build's index: this crate's version, the requested
/// targets, the version headers and symbol tables the blobs are described
/// with, and every generated file under `base`, each with its size and
/// modification time.
pub(crate) fn key(
    example: &Path,
    targets: &[String],
    base: &Path,
    files: &[GeneratedFile],
) -> Result<String, Error> {
    let mut k = format!(
        "ck-jit-ck {} (kept index format {KEPT_FORMAT})\ntargets {}\nbase {}\n",
        env!("CARGO_PKG_VERSION"),
        targets.join(","),
        base.to_string_lossy()
    );
    let mut headers: Vec<PathBuf> = fs::read_dir(example)
        .map_err(io_err(example))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "hpp"))
        .collect();
    headers.sort();
    headers.push(example.join("codegen").join("cpp_symbol_map.py"));
    let mut line = |name: &str, p: &Path| {
        let (len, mtime) = match fs::metadata(p) {
            Ok(m) => (m.len(), stamp(&m)),
            Err(_) => (0, "-".to_string()),
        };
        k.push_str(&format!("{name} {len} {mtime}\n"));
    };
    for h in &headers {
        line(&h.to_string_lossy(), h);
    }
    for f in files {
        line(&f.rel, &f.path);
    }
    Ok(k)
}

fn stamp(m: &fs::Metadata) -> String {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or_else(
            || "?".into(),
            |d| format!("{}.{:09}", d.as_secs(), d.subsec_nanos()),
        )
}

/// The index kept in `dir` under `key` for `files`: their roles (before
/// targets) and the index, its detail read when asked for.
pub(crate) fn load(
    dir: &Path,
    key: &str,
    files: &[GeneratedFile],
) -> Option<(Vec<Role>, BlobIndex)> {
    let bytes = fs::read(dir.join(INDEX_FILE)).ok()?;
    let kept: Kept = serde_json::from_slice(&bytes).ok()?;
    if kept.key != key || kept.roles.len() != files.len() {
        return None;
    }
    let detail = dir.join(DETAIL_FILE);
    if fs::metadata(&detail).ok()?.len() != kept.detail_len {
        return None;
    }
    let token = kept.token.clone();
    let (roles, together) = kept.spelt()?;
    let index = BlobIndex {
        together,
        detail: OnceLock::new(),
        kept: Some((dir.join(DETAIL_FILE), token)),
    };
    Some((roles, index))
}

/// Keeps `index` in `dir` under `key`, with `roles` (before targets);
/// where it was kept and its token (see [`BlobIndex::kept_at`]). A failure
/// only costs the next build a full read.
pub(crate) fn keep(
    dir: &Path,
    key: String,
    roles: Vec<Role>,
    index: &BlobIndex,
    blobs: Option<Vec<u8>>,
) -> Option<(PathBuf, String)> {
    let detail = index.detail.get()?;
    let token = format!(
        "{}.{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    );
    let blobs = blobs.or_else(|| serialise_blobs(&detail.blobs))?;
    fn json<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
        serde_json::to_vec(v).unwrap_or_else(|_| b"null".to_vec())
    }
    let mut bytes = Vec::with_capacity(blobs.len() + 4096);
    bytes.extend_from_slice(b"{\"token\":");
    bytes.extend(json(&token));
    bytes.extend_from_slice(b",\"blobs\":");
    bytes.extend(blobs);
    bytes.extend_from_slice(b",\"launchers\":");
    bytes.extend(json(&detail.launchers));
    bytes.extend_from_slice(b",\"header_templates\":");
    bytes.extend(json(&detail.header_templates));
    bytes.extend_from_slice(b",\"calls\":");
    bytes.extend(json(&KeptCalls::of(&detail.calls)));
    bytes.push(b'}');
    let detail_len = bytes.len() as u64;
    ck_jit_build::assemble::write_if_changed(&dir.join(DETAIL_FILE), bytes).ok()?;
    let mut words = Words::default();
    let kept_roles: Vec<KeptRole> = roles
        .iter()
        .map(|r| match r {
            Role::Blob(d) => KeptRole::Blob(words.decl(d)),
            Role::OtherArch(d) => KeptRole::OtherArch(words.decl(d)),
            Role::Dispatcher => KeptRole::Dispatcher,
            Role::Host => KeptRole::Host,
        })
        .collect();
    let together = index
        .together
        .iter()
        .map(|set| set.iter().map(|b| words.number(b)).collect())
        .collect();
    let kept = Kept {
        key: key.as_str(),
        token: token.as_str(),
        detail_len,
        words: words.words,
        roles: kept_roles,
        skeletons: words.skeletons,
        together,
    };
    let bytes = serde_json::to_vec(&kept).ok()?;
    ck_jit_build::assemble::write_if_changed(&dir.join(INDEX_FILE), bytes).ok()?;
    Some((dir.join(DETAIL_FILE), token))
}

/// Files read ahead (while the generator wrote the next direction), by
/// relative path.
pub(crate) type ReadAhead = HashMap<String, Result<Read, Error>>;

/// Reads `files` ahead of [`read`] on this thread.
pub(crate) fn read_ahead(vocab: &Vocabulary, files: &[GeneratedFile]) -> ReadAhead {
    files
        .iter()
        .map(|f| (f.rel.clone(), read_one(vocab, f)))
        .collect()
}

/// Reads the files CK's generator writes while it writes them: the
/// longest direction (bwd) computes for seconds and then writes thousands
/// of files, while the other directions are long done and a core is
/// free. What is read of a file is kept with its size and modification
/// time before the read; once the generator has exited
/// ([`close`](Self::close)) it is used only if the file still has both
/// (the generator writes each file once, by appending; a file read half
/// written has grown since), else the file is read again.
pub(crate) struct Watch {
    state: Mutex<WatchState>,
    stop: AtomicBool,
}

#[derive(Default)]
struct WatchState {
    dirs: Vec<WatchedDir>,
    /// The file being read (its directory and relative path).
    reading: Option<(usize, String)>,
    /// Files of closed directories that were being read when their
    /// directory was closed: what [`Watch::finish`] takes.
    awaited: Vec<GeneratedFile>,
    /// What was read of them.
    late: HashMap<String, EarlyRead>,
}

#[derive(Default)]
struct WatchedDir {
    closed: bool,
    /// Names listed so far.
    seen: HashSet<PathBuf>,
    /// By path relative to the generated directory.
    read: HashMap<String, EarlyRead>,
}

/// A file read while its generator ran.
pub(crate) struct EarlyRead {
    stat: FileStat,
    read: Result<Read, Error>,
}

/// A file's size and modification time.
type FileStat = (u64, Option<SystemTime>);

fn file_stat(path: &Path) -> Option<FileStat> {
    let m = fs::metadata(path).ok()?;
    Some((m.len(), m.modified().ok()))
}

/// How long the watch waits when a look found nothing new.
const WATCH_POLL: std::time::Duration = std::time::Duration::from_millis(50);

impl Watch {
    /// A watch over `n` directories, none closed.
    pub(crate) fn new(n: usize) -> Watch {
        Watch {
            state: Mutex::new(WatchState {
                dirs: (0..n).map(|_| WatchedDir::default()).collect(),
                ..WatchState::default()
            }),
            stop: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Until [`stop`](Self::stop): reads each new file (see
    /// [`read_ahead`]) of every directory `dirs[i]` whose generator has
    /// `started[i]` and that is not closed, by path relative to `base`.
    /// The vocabulary is read (by `vocab`) when the first generator starts.
    pub(crate) fn run(
        &self,
        vocab: &dyn Fn() -> Option<Arc<Vocabulary>>,
        dirs: &[PathBuf],
        base: &Path,
        started: &[AtomicBool],
    ) {
        let mut words = None;
        while !self.stop.load(Ordering::SeqCst) {
            let mut new = Vec::new();
            for (i, dir) in dirs.iter().enumerate() {
                if !started[i].load(Ordering::SeqCst) || self.lock().dirs[i].closed {
                    continue;
                }
                let Ok(entries) = fs::read_dir(dir) else {
                    continue;
                };
                let mut st = self.lock();
                for e in entries.flatten() {
                    let path = e.path();
                    // A file just created is not written yet: looked at
                    // again on the next pass.
                    let written = e.metadata().is_ok_and(|m| m.is_file() && m.len() > 0);
                    if written && !st.dirs[i].seen.contains(&path) {
                        st.dirs[i].seen.insert(path.clone());
                        new.push((i, path));
                    }
                }
            }
            if new.is_empty() {
                // Woken at once by the end of the watch.
                std::thread::park_timeout(WATCH_POLL);
                continue;
            }
            if words.is_none() {
                words = vocab();
            }
            let Some(v) = &words else { return };
            for (i, path) in new {
                if self.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Some(rel) = relative(&path, base) else {
                    continue;
                };
                if !is_source(&rel) {
                    continue;
                }
                {
                    let mut st = self.lock();
                    if st.dirs[i].closed {
                        continue;
                    }
                    st.reading = Some((i, rel.clone()));
                }
                let Some(stat) = file_stat(&path) else {
                    self.lock().reading = None;
                    continue;
                };
                let f = GeneratedFile {
                    path,
                    rel,
                    role: Role::Host,
                };
                let read = read_one(v, &f);
                let mut st = self.lock();
                st.reading = None;
                let early = EarlyRead { stat, read };
                if st.dirs[i].closed {
                    st.late.insert(f.rel, early);
                } else {
                    st.dirs[i].read.insert(f.rel, early);
                }
            }
        }
    }

    /// Ends the watch (its thread is to be unparked, so that it need not
    /// finish a wait).
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Closes directory `i` (its generator has exited): of `files` (what
    /// it holds now), those read while it ran and unchanged since, read;
    /// the one being read, left to [`finish`](Self::finish); the others
    /// to be read.
    pub(crate) fn close(
        &self,
        i: usize,
        files: Vec<GeneratedFile>,
    ) -> (ReadAhead, Vec<GeneratedFile>) {
        let mut st = self.lock();
        st.dirs[i].closed = true;
        let mut early = std::mem::take(&mut st.dirs[i].read);
        let reading = st.reading.clone().filter(|(d, _)| *d == i).map(|(_, rel)| rel);
        let mut ahead = ReadAhead::new();
        let mut rest = Vec::new();
        for f in files {
            match early.remove(&f.rel) {
                Some(e) if file_stat(&f.path) == Some(e.stat) => {
                    ahead.insert(f.rel, e.read);
                }
                _ if reading.as_deref() == Some(f.rel.as_str()) => st.awaited.push(f),
                _ => rest.push(f),
            }
        }
        (ahead, rest)
    }

    /// After the watch's thread has ended: the files that were being
    /// read when their directories were closed, read (then or now).
    pub(crate) fn finish(&self, vocab: Option<&Vocabulary>) -> ReadAhead {
        let mut st = self.lock();
        let mut ahead = ReadAhead::new();
        for f in std::mem::take(&mut st.awaited) {
            match st.late.remove(&f.rel) {
                Some(e) if file_stat(&f.path) == Some(e.stat) => {
                    ahead.insert(f.rel, e.read);
                }
                _ => {
                    if let Some(v) = vocab {
                        let read = read_one(v, &f);
                        ahead.insert(f.rel, read);
                    }
                }
            }
        }
        ahead
    }
}

/// `path` relative to `base`, `/`-separated, when it is UTF-8 under it.
pub(crate) fn relative(path: &Path, base: &Path) -> Option<String> {
    path.strip_prefix(base)
        .ok()
        .and_then(Path::to_str)
        .map(|s| s.replace('\\', "/"))
}

/// Whether a generated file is a C++ source or header (what is read).
pub(crate) fn is_source(name: &str) -> bool {
    name.ends_with(".cpp") || name.ends_with(".hpp") || name.ends_with(".h")
}

/// What reading one file gave.
pub(crate) enum Read {
    Blob(
        Box<super::vocab::BlobDecl>,
        Vec<String>,
        Vec<Specialisation>,
    ),
    /// Any other file: its text, and for one that calls a function
    /// template of the headers (a dispatcher), the calls it makes of them
    /// (see [`early_calls`]).
    Other(String, Option<calls::Extracted>),
}

/// A dispatcher: its path, its text, and the calls read from it before
/// the blobs were (see [`early_calls`]).
pub(crate) struct Dispatcher {
    pub(crate) path: PathBuf,
    pub(crate) text: String,
    early: Option<calls::Extracted>,
}

/// The calls `text` makes of the function templates the headers declare,
/// the headers' launch templates followed (see [`calls::extract`]), when
/// it makes any: read from the dispatcher alone, so while the generator
/// still writes other directions' blobs, and narrowed to the templates
/// blobs specialise once every blob is read ([`check_calls`]). `None`
/// for a file that calls none, or one that cannot be read so (the check
/// then reads it again, and reports what it finds).
fn early_calls(vocab: &Vocabulary, path: &Path, text: &str) -> Option<calls::Extracted> {
    let declared = vocab.function_templates();
    if !declared.iter().any(|t| calls_template(text, t)) {
        return None;
    }
    let with_launchers = format!(
        "{text}{}",
        vocab.definitions(&vocab.declared_launchers())
    );
    let declared: BTreeSet<&str> = declared.into_iter().collect();
    calls::extract(path, &with_launchers, &declared).ok()
}

fn read_one(vocab: &Vocabulary, f: &GeneratedFile) -> Result<Read, Error> {
    let text = fs::read_to_string(&f.path).map_err(io_err(&f.path))?;
    let source = decl::blob_source(&text).map_err(|e| e.in_file(&f.path))?;
    match describe_source(vocab, &source, &f.path)? {
        Some(d) => {
            let mut includes: Vec<String> = Vec::new();
            for line in text.lines() {
                let l = line.trim();
                if l.starts_with("#include") && !includes.iter().any(|i| i == l) {
                    includes.push(l.to_string());
                }
            }
            Ok(Read::Blob(Box::new(d), includes, source.specialisations))
        }
        None => {
            let early = early_calls(vocab, &f.path, &text);
            Ok(Read::Other(text, early))
        }
    }
}

/// Reads every generated file once (on as many threads as the machine
/// offers) and decides its role from what it declares: a blob specialises
/// a template for a traits type the headers declare; a dispatcher calls
/// one of the blobs' templates or of the headers' function templates
/// (those blobs specialise, and those that call them); anything else is a
/// host source. A blob whose name disagrees with its declarations is
/// noted in `disagreements`. Returns the index (without the headers'
/// launchers and the dispatchers' calls, which depend on which blobs are
/// recorded) and each dispatcher's text.
pub(crate) fn read(
    vocab: &Vocabulary,
    files: &mut [GeneratedFile],
    mut ahead: ReadAhead,
    disagreements: &mut Vec<String>,
) -> Result<(Detail, Vec<Dispatcher>), Error> {
    let mut read: Vec<Option<Result<Read, Error>>> =
        files.iter().map(|f| ahead.remove(&f.rel)).collect();
    let rest: Vec<usize> = (0..files.len()).filter(|&i| read[i].is_none()).collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 8)
        .min(rest.len().max(1));
    let chunk = rest.len().div_ceil(workers).max(1);
    let shared: &[GeneratedFile] = files;
    let done: Vec<(usize, Result<Read, Error>)> = std::thread::scope(|s| {
        let handles: Vec<_> = rest
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|&i| (i, read_one(vocab, &shared[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    for (i, r) in done {
        read[i] = Some(r);
    }
    let read: Vec<Result<Read, Error>> = read.into_iter().flatten().collect();
    if read.len() != files.len() {
        return Err(Error::SourceTree {
            path: files.first().map(|f| f.path.clone()).unwrap_or_default(),
            why: "a thread reading the generated files failed".into(),
        });
    }
    let mut index = Detail::default();
    let mut others = Vec::new();
    let mut templates: BTreeSet<String> = BTreeSet::new();
    for (i, (f, r)) in files.iter_mut().zip(read).enumerate() {
        match r? {
            Read::Blob(d, includes, specialisations) => {
                let name = f.rel.rsplit('/').next().unwrap_or(&f.rel);
                let name = name.rsplit_once('.').map_or(name, |(s, _)| s).to_string();
                if let Some(why) = name_disagreement(&name, &d) {
                    disagreements.push(format!("{name}: {why}"));
                }
                templates.extend(d.templates.iter().cloned());
                f.role = Role::Blob(d);
                index.blobs.push(IndexedBlob {
                    file: i,
                    name,
                    includes,
                    specialisations,
                });
            }
            Read::Other(text, early) => others.push((i, text, early)),
        }
    }
    index.header_templates = vocab
        .function_templates()
        .into_iter()
        .map(String::from)
        .collect();
    // A dispatcher calls a blob template or a function template of the
    // headers: one that calls blobs (newer CK launches bwd's kernels from
    // `fmha_bwd.hpp`), or one that blobs specialise, which the headers
    // declare whether or not a blob of its kind is in the output. A
    // dispatcher whose every blob is missing is still one, so that it is
    // compiled and its objects checked (`CkFmhaFiles::check_objects`).
    let mut called = templates;
    called.extend(index.header_templates.iter().cloned());
    let mut dispatchers = Vec::new();
    for (i, text, early) in others {
        let f = &mut files[i];
        if called.iter().any(|t| calls_template(&text, t)) {
            f.role = Role::Dispatcher;
            dispatchers.push(Dispatcher {
                path: f.path.clone(),
                text,
                early,
            });
        } else {
            f.role = Role::Host;
        }
    }
    Ok((index, dispatchers))
}

/// Checks the calls of `dispatchers` (path, text with launchers) against
/// the specialisations the recorded blobs of `index` define; `groups` by
/// blob name (see [`CkFmhaFiles::check_dispatchers`](super::CkFmhaFiles::check_dispatchers)).
pub(crate) fn check_calls(
    vocab: &Vocabulary,
    index: &Detail,
    files: &[GeneratedFile],
    dispatchers: &[Dispatcher],
) -> Result<CallCheck, Error> {
    let owner = index.owners(files);
    let defined: BTreeSet<String> = owner.keys().cloned().collect();
    let templates = calls::templates_of(&defined);
    // The calls read early were read for every function template the
    // headers declare, through every template of theirs that calls
    // another: they hold those of the blobs' templates when the headers
    // declare each of them, and define none of them as such a template.
    let declared = vocab.function_templates();
    let launchers = vocab.declared_launchers();
    let early: Option<Vec<&calls::Extracted>> = templates
        .iter()
        .all(|t| declared.binary_search(t).is_ok() && launchers.binary_search_by(|l| l.as_str().cmp(t)).is_err())
        .then(|| {
            dispatchers
                .iter()
                .map(|d| d.early.as_ref())
                .collect::<Option<Vec<_>>>()
        })
        .flatten();
    if let Some(early) = early {
        let check = calls::resolve(&early, &templates, &defined);
        return Ok(by_blob(check, &owner));
    }
    // One thread a dispatcher: each is checked alone, and the results are
    // what one pass over all of them gives.
    let defined = &defined;
    let each: Vec<Result<CallCheck, Error>> = std::thread::scope(|s| {
        let handles: Vec<_> = dispatchers
            .iter()
            .map(|d| {
                let one = [(d.path.clone(), d.text.clone())];
                s.spawn(move || calls::check_calls(&one, defined))
            })
            .collect();
        handles
            .into_iter()
            .zip(dispatchers)
            .map(|(h, d)| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::SourceTree {
                        path: d.path.clone(),
                        why: "the thread checking this dispatcher's calls failed".into(),
                    })
                })
            })
            .collect()
    });
    let mut check = CallCheck::default();
    for c in each {
        let c = c?;
        check.calls += c.calls;
        check.unresolved.extend(c.unresolved);
        check.groups.extend(c.groups);
        check.sequences.extend(c.sequences);
    }
    check.sequences.sort();
    check.sequences.dedup();
    Ok(by_blob(check, &owner))
}

/// `check` with its groups of specialisations turned into the blobs
/// defining them (what runs together), empty groups left out.
fn by_blob(mut check: CallCheck, owner: &BTreeMap<String, String>) -> CallCheck {
    let mut groups: Vec<Vec<String>> = check
        .groups
        .iter()
        .map(|g| {
            let mut names: Vec<String> = g.iter().filter_map(|k| owner.get(k).cloned()).collect();
            names.sort();
            names.dedup();
            names
        })
        .filter(|g| !g.is_empty())
        .collect();
    groups.sort();
    groups.dedup();
    check.groups = groups;
    check
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_read_while_its_generator_wrote_it_is_read_again_if_it_grew_since() {
        let base = std::env::temp_dir().join(format!("ck-jit-watch-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let dir = base.join("fwd");
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("whole.cpp"), "int whole;\n").unwrap();
        fs::write(dir.join("half.cpp"), "int ha").unwrap();
        // A directory whose generator has not started is not looked at.
        let idle = base.join("bwd");
        fs::create_dir_all(&idle).unwrap();
        fs::write(idle.join("old.cpp"), "int old;\n").unwrap();
        let watch = Watch::new(2);
        let started = [AtomicBool::new(true), AtomicBool::new(false)];
        let dirs = [dir.clone(), idle.clone()];
        let vocab = || Some(Arc::new(Vocabulary::new()));
        std::thread::scope(|s| {
            let h = s.spawn(|| watch.run(&vocab, &dirs, &base, &started));
            let t0 = std::time::Instant::now();
            while watch.lock().dirs[0].read.len() < 2 {
                assert!(t0.elapsed().as_secs() < 60, "the watch read nothing");
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            watch.stop();
            h.thread().unpark();
        });
        assert!(watch.lock().dirs[1].read.is_empty());
        // The generator finishes the file it was writing.
        fs::OpenOptions::new()
            .append(true)
            .open(dir.join("half.cpp"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"lf;\n"))
            .unwrap();
        let file = |name: &str| GeneratedFile {
            path: dir.join(name),
            rel: format!("fwd/{name}"),
            role: Role::Host,
        };
        let (ahead, rest) = watch.close(0, vec![file("whole.cpp"), file("half.cpp")]);
        assert!(matches!(ahead.get("fwd/whole.cpp"), Some(Ok(Read::Other(t, None))) if t == "int whole;\n"));
        assert_eq!(ahead.len(), 1);
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].rel, "fwd/half.cpp");
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn kept_calls_write_each_specialisation_once_and_read_back_the_same() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let check = CallCheck {
            calls: 7,
            unresolved: vec![("api.cpp".into(), 3, "f_<z>".into())],
            groups: vec![s(&["f_<a>", "g_<b>"]), s(&["f_<a>"])],
            sequences: vec![s(&["f_<a>", "g_<b>", "f_<a>"]), s(&["g_<b>"])],
        };
        let text = serde_json::to_string(&KeptCalls::of(&check)).unwrap();
        assert_eq!(text.matches("f_<a>").count(), 1, "{text}");
        let kept: KeptCalls = serde_json::from_str(&text).unwrap();
        assert_eq!(kept.into_check(), Some(check));
        // A number that names no specialisation is a damaged file.
        let damaged = text.replace("[0,1,0]", "[0,1,9]");
        assert_ne!(damaged, text);
        let kept: KeptCalls = serde_json::from_str(&damaged).unwrap();
        assert_eq!(kept.into_check(), None);
    }
}
