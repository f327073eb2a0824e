//! The cold path: from a blob name to a loaded entry point. Sequences the
//! steps the other modules own: plan the blob (its group, compiler and
//! keys, from `cache`), find a verified cache entry or compile one (single
//! flight across threads and processes; commands from `compile`, headers
//! from `depfile`, publishing in `cache`), load it (`load`), and remember
//! the result (or the failure) for the process.
//!
//! Nothing here runs on the warm path: a filled dispatcher slot never
//! reaches this module.

use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use ck_jit_manifest::{Group, Manifest, SymbolSpec};
use once_cell::sync::{Lazy, OnceCell};

use crate::cache::counters::{self, CacheCounts, Event, Stats};
use crate::cache::depfile;
use crate::cache::hits::{hit_key, Hit, HitMemo};
use crate::cache::{
    self, hit_context, Cache, Entry, InputsKey, ObjectBytes, Prekey, Record, Roots, CACHE_FORMAT,
};
use crate::compile::memory::{self, Estimates};
use crate::compile::{self, Budget, CompilerId, Jobs, Memory};
use crate::config::{config, Config};
use crate::error::Error;
use crate::object::load::Loaded;
use crate::object::mapped::map_for_process;
use crate::path_bytes::PathBytes;
use crate::runtime::store::{BlobInfo, Store};

static FROZEN: AtomicBool = AtomicBool::new(false);
static JOBS: Lazy<Jobs> = Lazy::new(|| Jobs::new(config().jobs()));
static FALLBACK: OnceCell<Runtime> = OnceCell::new();

thread_local! {
    /// Set on the threads that compile a blob's companions: they do not
    /// start companions of their own.
    static PREFETCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The blobs in every one of `sets` (none when there are no sets).
fn common_to<'a>(sets: &[&'a Vec<String>]) -> Vec<&'a String> {
    let Some((first, rest)) = sets.split_first() else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|b| rest.iter().all(|s| s.contains(b)))
        .collect()
}

/// After this, any cache miss is an error instead of a compile (for code
/// that must not stall: graph capture, latency-critical serving).
/// `CK_JIT_OFFLINE=1` does the same from the environment.
pub fn freeze() {
    FROZEN.store(true, Ordering::SeqCst);
}

/// Sets the most compiles this process runs at once (default
/// `CK_JIT_JOBS`, else the number of available cores). Under `make -jN`
/// or in a cargo build script the jobserver's slots bound them too, and
/// the memory available always does (`CK_JIT_JOB_MEMORY`,
/// `CK_JIT_MEMORY_BUDGET`).
pub fn set_jobs(n: usize) {
    JOBS.set_limit(n);
}

/// The most compiles this process runs at once.
pub fn jobs() -> usize {
    JOBS.limit()
}

/// Undoes [`freeze`] (the environment's `CK_JIT_OFFLINE` still applies).
pub fn unfreeze() {
    FROZEN.store(false, Ordering::SeqCst);
}

/// Whether misses are errors now, and why.
pub fn frozen_reason() -> Option<&'static str> {
    if FROZEN.load(Ordering::SeqCst) {
        Some("ck_jit_rt::freeze() was called")
    } else if config().offline {
        Some("CK_JIT_OFFLINE=1")
    } else {
        None
    }
}

/// The runtime for `CK_JIT_MANIFEST`, if set (shared by every embedded
/// manifest as the place to look for blobs they do not know). A manifest
/// that cannot be read is not remembered: the next call reads it again.
pub fn fallback() -> Option<Result<&'static Runtime, Error>> {
    let path = config().manifest.as_ref()?;
    Some(
        FALLBACK
            .get_or_try_init(|| Runtime::from_file_for_process(path).map(|r| r.into_fallback())),
    )
}

/// Forgets what this process keeps between calls about the machine:
/// compiler identities and recent header checks.
fn forget_process_state() {
    compile::forget_identities();
    cache::forget_checks();
}

/// Whether a request found the cache entry or had to compile it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A verified entry was already in the cache.
    Cached,
    /// This call ran the compiler.
    Compiled,
}

/// Everything known about a blob before compiling it: where its source
/// is, how its group compiles it, which compiler that is, and the keys its
/// cache entries are filed under.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The blob's name.
    pub blob: String,
    /// Absolute source path.
    pub source: PathBuf,
    /// The blob's group: compiler program, argument template, headers
    /// (shared with every plan of the group unless adapted for this one).
    pub group: Arc<Group>,
    /// Key of the inputs without the compiler's identity (lets a
    /// deployment without the compiler find entries).
    pub inputs_key: InputsKey,
    /// The compiler and the key including its identity, when the compiler
    /// was found (else the error saying why not).
    compiler: Result<(Arc<CompilerId>, Prekey), Error>,
    /// Working directory of the compile.
    pub cwd: PathBuf,
    /// Entry symbol spec.
    pub symbol: SymbolSpec,
    /// The device `group`'s arguments were narrowed to, when the blob is
    /// recorded for several GPU architectures and one device was chosen
    /// (`CK_JIT_ARCH`, or detected); the narrowed arguments are what the
    /// keys hold and the compiler gets.
    pub device: Option<crate::gpu::arch::Device>,
    source_hash: blake3::Hash,
    /// The source's real path and the `lstat` its digest is known for
    /// (what the memo of hits keys an entry by), when there is one.
    source_id: Option<(PathBuf, fs::Metadata)>,
}

impl Plan {
    /// The compiler and the prekey to compile under, or why there is no
    /// compiler.
    pub fn compilable(&self) -> Result<(&CompilerId, &Prekey), Error> {
        match &self.compiler {
            Ok((id, prekey)) => Ok((id, prekey)),
            Err(e) => Err(e.clone()),
        }
    }

    /// The key including the compiler's identity, when the compiler was
    /// found.
    pub fn prekey(&self) -> Option<&Prekey> {
        self.compiler.as_ref().ok().map(|(_, prekey)| prekey)
    }

    /// What the recorded header paths of its entries are relative to: the
    /// tree `root`, and the compiler's installation prefix when it was
    /// found.
    pub fn roots<'a>(&'a self, root: &'a Path) -> Roots<'a> {
        Roots {
            tree: root,
            compiler: self
                .compiler
                .as_ref()
                .map_or(&[], |(id, _)| id.prefix.as_slice()),
        }
    }

    /// Whether the source still holds the bytes this plan was made from.
    fn source_unchanged(&self) -> bool {
        fs::read(&self.source).map(|b| blake3::hash(&b)).ok() == Some(self.source_hash)
    }
}

#[derive(Default)]
struct BlobState {
    init: Mutex<()>,
    loaded: OnceCell<Arc<Loaded>>,
    /// An object of the blob loaded after `loaded`, built from inputs
    /// changed since (a source fixed to export a symbol it lacked); the
    /// first stays loaded, as pointers into it may be in use.
    newer: Mutex<Option<Arc<Loaded>>>,
    /// Whether `newer` was ever set: a load reads this, not the lock,
    /// while there is none (almost always).
    has_newer: std::sync::atomic::AtomicBool,
    failure: Mutex<Option<Remembered>>,
}

/// Whether `seq` occurs in `args` as consecutive words.
fn contains_sequence(args: &[String], seq: &[String]) -> bool {
    !seq.is_empty() && args.windows(seq.len()).any(|w| w == seq)
}

/// Takes every occurrence of `seq` (consecutive words) out of `args`.
fn drop_sequence(args: &mut Vec<String>, seq: &[String]) {
    if seq.is_empty() {
        return;
    }
    let mut i = 0;
    while i + seq.len() <= args.len() {
        if args[i..i + seq.len()] == *seq {
            args.drain(i..i + seq.len());
        } else {
            i += 1;
        }
    }
}

/// A failure that retrying cannot fix, with the key of the inputs it
/// happened on: a call made after the source, the flags or the compiler
/// changed (a new prekey) tries again.
#[derive(Clone)]
struct Remembered {
    error: Error,
    prekey: Option<String>,
}

/// A failure of the cold path, with the prekey it was planned under when
/// planning got that far.
struct Failure {
    error: Box<Error>,
    prekey: Option<String>,
}

impl Failure {
    fn at(error: Error, prekey: String) -> Failure {
        Failure {
            error: Box::new(error),
            prekey: Some(prekey),
        }
    }
}

impl From<Error> for Failure {
    fn from(error: Error) -> Failure {
        Failure {
            error: Box::new(error),
            prekey: None,
        }
    }
}

/// A group's compiler, its [`hit_context`], and the count of forgotten
/// compiler identities they were found under.
type GroupContext = (Arc<CompilerId>, blake3::Hash, u64);

/// A runtime over one manifest: resolves its blobs to loaded entry points.
pub struct Runtime {
    store: Arc<Store>,
    origin: String,
    root: PathBuf,
    /// `root` with symlinks resolved, once (sources must stay under it).
    canon_root: OnceCell<PathBuf>,
    /// Source directories with symlinks resolved, by their path as
    /// joined from the root (most blobs share a few).
    /// (Keyed by the path's bytes: hashing a `Path` walks its
    /// components.)
    canon_dirs: Mutex<HashMap<std::ffi::OsString, PathBuf, crate::fixed_hash::FixedState>>,
    /// The writable cache's memo of this tree's source digests (none for a
    /// shared cache or without a writable one), read on the first plan.
    sources: OnceCell<Option<crate::cache::sources::SourceMemo>>,
    /// The writable cache's memo of this tree's hits (none for a shared
    /// cache, without a writable one, or with tiers to look in first),
    /// read on the first load.
    hits: OnceCell<Option<HitMemo>>,
    /// The compiler of each group and the context of its plans (see
    /// [`hit_context`]), by the group's index, with the count of forgotten
    /// compiler identities it was found under (see `group_context`).
    contexts: OnceCell<Vec<OnceCell<GroupContext>>>,
    /// The compiler variables of the key ([`config::key_env`](crate::config::key_env)), read at
    /// the first plan: like the rest of the configuration, once per
    /// runtime, not once per blob.
    key_env: OnceCell<String>,
    cache_dir: Option<PathBuf>,
    config: Config,
    cache: OnceCell<Cache>,
    /// The counts of `cache`, taken once it is open.
    counts: OnceCell<Arc<CacheCounts>>,
    /// The read-only tiers of `CK_JIT_CACHE_PATH` that could be opened,
    /// in order (opened on first use).
    tiers: OnceCell<Vec<Cache>>,
    states: Mutex<HashMap<String, Arc<BlobState>, crate::fixed_hash::FixedState>>,
    /// The manifest's groups as plans share them, by index (made on a
    /// group's first plan).
    groups: OnceCell<Vec<OnceCell<Arc<Group>>>>,
    /// Where the writable cache keeps compiler identities, once it is
    /// open.
    compilers_dir: OnceCell<PathBuf>,
    /// Set once the writable cache's stale temps were swept.
    temps_swept: OnceCell<()>,
    is_fallback: bool,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("origin", &self.origin)
            .field("root", &self.root)
            .field("blobs", &self.store.len())
            .finish()
    }
}

impl Runtime {
    /// A runtime over a parsed manifest; `origin` says where it came from
    /// (used in messages).
    pub fn new(manifest: Manifest, origin: impl Into<String>) -> Runtime {
        Runtime::over(Store::Json(manifest), origin.into())
    }

    /// A runtime over a store (a parsed manifest or embedded compact
    /// bytes).
    pub(crate) fn over(store: Store, origin: String) -> Runtime {
        let config = config().clone();
        let root = config
            .root_for(store.name())
            .unwrap_or_else(|| PathBuf::from(store.root()));
        Runtime {
            store: Arc::new(store),
            origin,
            root,
            canon_root: OnceCell::new(),
            sources: OnceCell::new(),
            hits: OnceCell::new(),
            contexts: OnceCell::new(),
            key_env: OnceCell::new(),
            canon_dirs: Mutex::new(HashMap::default()),
            cache_dir: None,
            config,
            cache: OnceCell::new(),
            counts: OnceCell::new(),
            tiers: OnceCell::new(),
            states: Mutex::new(HashMap::default()),
            groups: OnceCell::new(),
            compilers_dir: OnceCell::new(),
            temps_swept: OnceCell::new(),
            is_fallback: false,
        }
    }

    /// A runtime over compact manifest bytes ([`Manifest::to_compact`]),
    /// read in place as an embedded manifest is.
    ///
    /// # Errors
    ///
    /// When the bytes are not a compact manifest this version reads.
    pub fn from_compact(bytes: &'static [u8]) -> Result<Runtime, Error> {
        let store = Store::compact(bytes).map_err(|error| Error::Manifest {
            origin: "compact bytes".into(),
            error,
        })?;
        Ok(Runtime::over(store, "compact bytes".into()))
    }

    /// A runtime over a manifest file.
    pub fn from_file(path: &Path) -> Result<Runtime, Error> {
        let origin = path.display().to_string();
        let text = fs::read_to_string(path).map_err(|e| Error::Manifest {
            origin: origin.clone(),
            error: ck_jit_manifest::ManifestError::Parse(format!("cannot read: {e}")),
        })?;
        let manifest = Manifest::from_json(&text).map_err(|error| Error::Manifest {
            origin: origin.clone(),
            error,
        })?;
        Ok(Runtime::new(manifest, origin))
    }

    /// A runtime over a manifest file, for one kept for the life of the
    /// process (a library's own manifest, `CK_JIT_MANIFEST`): when the
    /// compact form the build writes beside a JSON manifest
    /// (`ck_jit_manifest.ckm`) is there and at least as new, or the file
    /// is that form itself, it is read in place instead of the JSON being
    /// parsed, as a program reads its embedded one: mapped, for the
    /// process, so only the pages a lookup touches are read. Replace such
    /// a file by renaming a new one over it, as builds write it, not by
    /// rewriting it in place under running processes (as with a shared
    /// library). Otherwise (or when the compact file cannot be read) as
    /// [`Runtime::from_file`].
    pub fn from_file_for_process(path: &Path) -> Result<Runtime, Error> {
        use ck_jit_manifest::compact::COMPACT_FILE;
        let compact = if path.extension().is_some_and(|e| e == "ckm") {
            Some(path.to_path_buf())
        } else if path
            .file_name()
            .is_some_and(|n| n == ck_jit_manifest::MANIFEST_FILE)
        {
            let beside = path.with_file_name(COMPACT_FILE);
            let modified = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
            match (modified(&beside), modified(path)) {
                (Some(c), Some(j)) if c >= j => Some(beside),
                _ => None,
            }
        } else {
            None
        };
        if let Some(c) = compact {
            if let Some(bytes) = map_for_process(&c) {
                if let Ok(store) = Store::compact(bytes) {
                    return Ok(Runtime::over(store, path.display().to_string()));
                }
            }
        }
        Runtime::from_file(path)
    }

    fn into_fallback(mut self) -> Runtime {
        self.is_fallback = true;
        self
    }

    /// Uses `dir` as the cache root instead of the environment's.
    pub fn with_cache_dir(mut self, dir: impl Into<PathBuf>) -> Runtime {
        self.cache_dir = Some(dir.into());
        self.cache = OnceCell::new();
        self.compilers_dir = OnceCell::new();
        self.temps_swept = OnceCell::new();
        self.hits = OnceCell::new();
        self.sources = OnceCell::new();
        self
    }

    /// Uses `root` as the tree root instead of the recorded one.
    pub fn with_root(mut self, root: impl Into<PathBuf>) -> Runtime {
        self.root = root.into();
        self.canon_root = OnceCell::new();
        self.hits = OnceCell::new();
        self.sources = OnceCell::new();
        self
    }

    /// Uses these settings instead of the environment's.
    pub fn with_config(mut self, config: Config) -> Runtime {
        if let Some(r) = config.root_for(self.store.name()) {
            self.root = r;
            self.canon_root = OnceCell::new();
        }
        self.config = config;
        self.cache = OnceCell::new();
        self.compilers_dir = OnceCell::new();
        self.temps_swept = OnceCell::new();
        self.tiers = OnceCell::new();
        self.hits = OnceCell::new();
        self.sources = OnceCell::new();
        self.contexts = OnceCell::new();
        self
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        self.store.manifest()
    }

    /// The settings this runtime uses.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The effective tree root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The cache directory this runtime uses (not opened).
    pub fn cache_dir(&self) -> Result<PathBuf, Error> {
        match self
            .cache_dir
            .clone()
            .or_else(|| self.config.cache_dir.clone())
        {
            Some(d) => Ok(d),
            None => cache::default_dir(self.store.name()),
        }
    }

    /// The opened cache (created and checked on first use; a cache that
    /// cannot be opened is tried again on the next call, so a full disk or
    /// a permission fixed meanwhile does not last until exit).
    pub fn cache(&self) -> Result<&Cache, Error> {
        self.cache.get_or_try_init(|| {
            let dir = self.cache_dir()?;
            Cache::open(&dir, self.config.shared_cache)
        })
    }

    /// Removes the temp files of compiles that died (older than twice the
    /// compile timeout), once per runtime, before its first compile: only
    /// compiles leave temps, so a process that only hits never lists
    /// `tmp/`.
    fn sweep_temps_once(&self, cache: &Cache) {
        self.temps_swept.get_or_init(|| {
            let swept = cache.sweep_temps(self.config.compile_timeout * 2);
            if swept > 0 {
                log::info!(
                    "ck-jit: removed {swept} stale temp files from {}",
                    cache.root().display()
                );
            }
        });
    }

    /// The read-only caches of `CK_JIT_CACHE_PATH` this runtime looks in
    /// before its own, in order. One that cannot be opened (missing, not
    /// a directory, writable by every user) is left out, said once on
    /// stderr: a deployment whose image lacks its pack compiles (or, offline,
    /// fails naming the blob) rather than failing to start.
    pub fn tiers(&self) -> &[Cache] {
        self.tiers.get_or_init(|| {
            let mut out = Vec::new();
            for dir in &self.config.cache_path {
                match Cache::open_read_only(dir) {
                    Ok(c) => out.push(c),
                    Err(e) => {
                        log::warn!("ck-jit: CK_JIT_CACHE_PATH: {e}; not looked in");
                        eprintln!("ck-jit: CK_JIT_CACHE_PATH: {e}; not looked in");
                    }
                }
            }
            out
        })
    }

    fn state(&self, blob: &str) -> Arc<BlobState> {
        let mut m = self.states.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = m.get(blob) {
            return s.clone();
        }
        m.entry(blob.to_string()).or_default().clone()
    }

    fn find(&self, blob: &str) -> Result<Option<BlobInfo<'_>>, Error> {
        self.store.find(blob).map_err(|error| Error::Manifest {
            origin: self.origin.clone(),
            error,
        })
    }

    fn unknown(&self, blob: &str) -> Error {
        Error::UnknownBlob {
            blob: blob.to_string(),
            suggestions: self.store.closest_names(blob, 3),
        }
    }

    /// The runtime that knows `blob`: this one, else the fallback manifest.
    pub(crate) fn owner(&self, blob: &str) -> Result<&Runtime, Error> {
        if self.contains(blob)? {
            return Ok(self);
        }
        if !self.is_fallback {
            if let Some(fb) = fallback() {
                let fb = fb?;
                if fb.contains(blob)? {
                    return Ok(fb);
                }
            }
        }
        Err(self.unknown(blob))
    }

    /// Whether this runtime's manifest records `blob` (the fallback
    /// manifest is not asked). Reads one record of an embedded manifest.
    ///
    /// # Errors
    ///
    /// If the manifest is damaged where the lookup reads it.
    pub fn contains(&self, blob: &str) -> Result<bool, Error> {
        self.store.contains(blob).map_err(|error| Error::Manifest {
            origin: self.origin.clone(),
            error,
        })
    }

    /// The store behind this runtime (crate-internal: families read their
    /// tables from it).
    pub(crate) fn store(&self) -> &Store {
        &self.store
    }

    /// Counts `event` for the process and for this runtime's cache
    /// (opened if it is not yet).
    fn count(&self, event: Event<'_>) {
        counters::count(self.counts(true), event);
    }

    /// The counts of this runtime's writable cache; `None` without one, or
    /// when it is not open and `open` is false.
    fn counts(&self, open: bool) -> Option<&CacheCounts> {
        let cache = if open {
            self.cache().ok()?
        } else {
            self.cache.get()?
        };
        Some(
            self.counts
                .get_or_init(|| counters::for_cache(cache.root(), cache.is_shared())),
        )
    }

    /// Why a miss may not compile, if it may not: [`freeze`], or offline
    /// mode, named with the value `CK_JIT_OFFLINE` has.
    fn offline_reason(&self) -> Option<String> {
        if FROZEN.load(Ordering::SeqCst) {
            return Some("ck_jit_rt::freeze() was called".to_string());
        }
        if !(self.config.offline || config().offline) {
            return None;
        }
        Some(match std::env::var_os("CK_JIT_OFFLINE") {
            Some(v) => format!("CK_JIT_OFFLINE={}", v.to_string_lossy()),
            None => "offline mode (Config::offline)".to_string(),
        })
    }

    /// Where the manifest came from, as errors name it.
    pub(crate) fn origin(&self) -> &str {
        &self.origin
    }

    /// Resolves a blob's entry point, compiling and loading it if needed.
    /// `symbol` overrides the manifest's symbol spec.
    pub fn resolve(&self, blob: &str, symbol: Option<&SymbolSpec>) -> Result<*const (), Error> {
        // The owner and, unless given, the symbol, from one question to
        // the manifest: its load need not ask the manifests again.
        let (owner, info) = match self.find(blob)?.map(|info| (self, info)) {
            Some(f) => f,
            None => {
                let owner = self.owner(blob)?;
                let info = owner.find(blob)?.ok_or_else(|| owner.unknown(blob))?;
                (owner, info)
            }
        };
        let loaded = owner.load_owned(blob, Some(&info))?;
        let spec = match symbol {
            Some(s) => s.for_blob(blob),
            None => info.symbol,
        };
        match loaded.resolve(&spec) {
            // The object lacks the symbol: if the blob's inputs changed
            // since it was built (the source fixed), the object they make
            // now is compiled or found, loaded, and asked.
            Err(e @ Error::SymbolNotFound { .. }) => match owner.reload_if_stale(blob, &loaded)? {
                Some(newer) => newer.resolve(&spec),
                None => Err(e),
            },
            r => r,
        }
    }

    /// Loads `blob` again when `loaded` was built from inputs other than
    /// its current ones; `None` when they are the same.
    fn reload_if_stale(&self, blob: &str, loaded: &Loaded) -> Result<Option<Arc<Loaded>>, Error> {
        let Some(built) = loaded.prekey() else {
            return Ok(None);
        };
        let plan = self.plan(blob)?;
        if plan.prekey().is_none_or(|p| p.as_str() == built) {
            return Ok(None);
        }
        let state = self.state(blob);
        let _init = state.init.lock().unwrap_or_else(|e| e.into_inner());
        let newer = Arc::new(self.load_uncached(blob, None).map_err(|f| *f.error)?);
        *state.newer.lock().unwrap_or_else(|e| e.into_inner()) = Some(newer.clone());
        state
            .has_newer
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(Some(newer))
    }

    /// Compiles (if needed) and loads a blob. A loaded blob stays loaded
    /// for the process. A failure that retrying cannot fix (the compiler
    /// failed or wrote an unusable object) is remembered with the key of
    /// the inputs it happened on, so a loop calling a broken blob does not
    /// run the compiler in a loop; any other failure (a missing compiler, a
    /// cache that cannot be written, a lock timeout, offline mode) is tried
    /// again on the next call. A remembered failure is forgotten when the
    /// source, flags or compiler change, and by [`Runtime::reset`].
    pub fn load(&self, blob: &str) -> Result<Arc<Loaded>, Error> {
        self.owner(blob)?.load_owned(blob, None)
    }

    /// [`Runtime::load`] on the runtime whose manifest records `blob`
    /// ([`Runtime::owner`]'s answer), which it does not ask again; `info`
    /// is what it says of the blob, when the caller asked already.
    fn load_owned(&self, blob: &str, info: Option<&BlobInfo<'_>>) -> Result<Arc<Loaded>, Error> {
        let state = self.state(blob);
        if let Some(l) = state.loaded.get() {
            if !state.has_newer.load(std::sync::atomic::Ordering::Acquire) {
                return Ok(l.clone());
            }
            if let Some(newer) = &*state.newer.lock().unwrap_or_else(|e| e.into_inner()) {
                return Ok(newer.clone());
            }
            return Ok(l.clone());
        }
        let _init = state.init.lock().unwrap_or_else(|e| e.into_inner());
        self.load_locked(blob, info, &state)
    }

    /// [`Runtime::load`] once `state.init` is held.
    fn load_locked(
        &self,
        blob: &str,
        info: Option<&BlobInfo<'_>>,
        state: &BlobState,
    ) -> Result<Arc<Loaded>, Error> {
        if let Some(l) = state.loaded.get() {
            return Ok(l.clone());
        }
        let remembered = state
            .failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(r) = remembered {
            // Still the inputs it failed on? Then the answer is the same.
            let plan = self.plan(blob)?;
            if plan.prekey().map(|p| p.to_string()) == r.prekey {
                return Err(r.error);
            }
            *state.failure.lock().unwrap_or_else(|e| e.into_inner()) = None;
        }
        match self.load_uncached(blob, info) {
            Ok(l) => {
                let l = Arc::new(l);
                let _ = state.loaded.set(l.clone());
                if let Some(file) = &self.config.record {
                    crate::runtime::blob_list::note(file, blob);
                }
                Ok(l)
            }
            Err(Failure { error, prekey }) => {
                let error = *error;
                counters::count(self.counts(false), Event::Failure);
                log::warn!("{error}");
                if self.config.verbose {
                    eprintln!("{error}");
                }
                if error.is_sticky() && prekey.is_some() {
                    *state.failure.lock().unwrap_or_else(|e| e.into_inner()) = Some(Remembered {
                        error: error.clone(),
                        prekey,
                    });
                }
                Err(error)
            }
        }
    }

    /// Compiles and loads `blob` for a companion whose compile needs it
    /// next, unless this process has it loaded or is loading it already
    /// (then whoever is will finish it; waiting here could wait on the
    /// very compile that started this one). Failures are remembered and
    /// reported as any load's, to the call that needs the blob.
    fn prefetch(&self, blob: &str) {
        let state = self.state(blob);
        if state.loaded.get().is_some() {
            return;
        }
        let _init = match state.init.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return,
        };
        let _ = self.load_locked(blob, None, &state);
    }

    /// The blobs certain to be called in the same operation as `blob`,
    /// given the `sets` that hold it: those in every set, where a set
    /// another of whose blobs this process has loaded already counts as
    /// evidence. A dispatcher runs an operation's blobs in order, so when
    /// `blob` is in several sets, the set whose earlier blob was just
    /// loaded is the one under way (CK's bwd: a `dq_dk_dv` kernel of two
    /// sets, reached after its set's `dot_do_o`); with evidence for several,
    /// the blobs common to those; for none, those common to all.
    fn certain_companions(&self, blob: &str, sets: &[Vec<String>]) -> Vec<String> {
        let loaded = |b: &String| b != blob && self.state(b).loaded.get().is_some();
        let with_evidence: Vec<&Vec<String>> =
            sets.iter().filter(|s| s.iter().any(loaded)).collect();
        let chosen: Vec<&Vec<String>> = if with_evidence.is_empty() {
            sets.iter().collect()
        } else {
            with_evidence
        };
        common_to(&chosen)
            .into_iter()
            .filter(|b| b.as_str() != blob)
            .cloned()
            .collect()
    }

    /// Compiles `plan`'s blob; when the manifest says other blobs are
    /// certain to be called in the same operation ([`Manifest::companions`]:
    /// CK's bwd kernels, a splitkv pair), starts their compiles alongside
    /// and returns when all are done, so the operation's first call costs
    /// about its slowest blob, not the sum (at most `CK_JIT_JOBS` compiles
    /// at once, as always).
    fn compile_with_companions(
        &self,
        cache: &Cache,
        plan: &Plan,
    ) -> Result<Option<(Entry, ObjectBytes)>, Error> {
        let companions = if PREFETCHING.with(|p| p.get()) {
            Vec::new()
        } else {
            let sets = self.store.sets_of(&plan.blob).unwrap_or_else(|e| {
                log::warn!("ck-jit: the manifest's 'together' sets cannot be read: {e}");
                Vec::new()
            });
            self.certain_companions(&plan.blob, &sets)
        };
        let cold: Vec<&String> = companions
            .iter()
            .filter(|c| self.state(c).loaded.get().is_none())
            .collect();
        if cold.is_empty() {
            return self.compile(cache, plan);
        }
        log::info!(
            "ck-jit: compiling blob '{}' with {} blobs called together with it",
            plan.blob,
            cold.len()
        );
        std::thread::scope(|s| {
            for c in cold {
                s.spawn(move || {
                    PREFETCHING.with(|p| p.set(true));
                    self.prefetch(c);
                });
            }
            self.compile(cache, plan)
        })
    }

    /// Forgets a remembered failure of `blob`, and the compiler identities
    /// and header checks this process keeps, so the next call retries from
    /// scratch.
    pub fn reset(&self, blob: &str) {
        let state = self.state(blob);
        *state.failure.lock().unwrap_or_else(|e| e.into_inner()) = None;
        forget_process_state();
    }

    /// Runs `f` on each of `blobs` on as many threads as compiles may run
    /// at once ([`jobs`]: `CK_JIT_JOBS`, or what [`set_jobs`] set since),
    /// returning each result in input order.
    pub(crate) fn in_parallel(
        &self,
        blobs: &[&str],
        f: impl Fn(&str) -> Result<(), Error> + Sync,
    ) -> Vec<(String, Result<(), Error>)> {
        let threads = jobs().min(blobs.len()).max(1);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let results: Mutex<Vec<Option<Result<(), Error>>>> =
            Mutex::new((0..blobs.len()).map(|_| None).collect());
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(b) = blobs.get(i) else { break };
                    let r = f(b);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(r);
                });
            }
        });
        let results = results.into_inner().unwrap_or_else(|e| e.into_inner());
        blobs
            .iter()
            .zip(results)
            .map(|(b, r)| (b.to_string(), r.unwrap_or(Ok(()))))
            .collect()
    }

    /// Compiles and loads the blobs one operation calls (CK's bwd kernels,
    /// a splitkv pair) together, so its first call costs about its slowest
    /// blob's compile, not the sum; at most `CK_JIT_JOBS` at once. Loads
    /// only: no symbol is looked up (the callers name theirs). Returns the
    /// first failure, naming its blob.
    ///
    /// # Errors
    ///
    /// The first blob's error, in `blobs` order, among those that failed.
    pub fn prepare_together(&self, blobs: &[&str]) -> Result<(), Error> {
        let cold: Vec<&str> = blobs
            .iter()
            .copied()
            .filter(|b| self.state(b).loaded.get().is_none())
            .collect();
        match cold.len() {
            0 => Ok(()),
            1 => self.load(cold[0]).map(|_| ()),
            _ => self
                .in_parallel(&cold, |b| self.load(b).map(|_| ()))
                .into_iter()
                .try_for_each(|(_, r)| r),
        }
    }

    /// Whether a dispatcher's call of `blob` should wait until the next
    /// blob of the same operation is named (then [`Runtime::prepare_after`]
    /// compiles both together, with whatever is certain to follow), rather
    /// than compile `blob` now: it is not loaded, would have to be compiled
    /// (no cache entry; compiling is allowed), and it belongs to `together`
    /// sets that disagree on its companions, so compiling it now would
    /// compile it alone and its companions after it (CK's bwd: a
    /// `dot_do_o` kernel shared by many `dq_dk_dv` kernels, reached first).
    ///
    /// Only a caller that knows another blob's call always follows this
    /// one in the same operation may wait (the stubs of
    /// [`ck_jit_build`'s lazy dispatchers](https://docs.rs/ck-jit-build)
    /// know it from the dispatcher's source); anything unexpected here
    /// answers `false`.
    pub fn may_defer(&self, blob: &str) -> bool {
        let Ok(owner) = self.owner(blob) else {
            return false;
        };
        if !std::ptr::eq(owner, self) {
            return owner.may_defer(blob);
        }
        if self.state(blob).loaded.get().is_some() || self.offline_reason().is_some() {
            return false;
        }
        let Ok(sets) = self.store.sets_of(blob) else {
            return false;
        };
        let certain = self.certain_companions(blob, &sets);
        let uncertain = sets
            .iter()
            .flatten()
            .any(|b| b != blob && !certain.contains(b) && self.state(b).loaded.get().is_none());
        uncertain && matches!(self.cached(blob), Ok(None))
    }

    /// Compiles and loads, together, `earlier` (blobs whose calls waited:
    /// [`Runtime::may_defer`]), `blob` (the call that followed them) and
    /// every blob in all the `together` sets that hold them all, so the
    /// operation's first call costs about its slowest blob. At most
    /// `CK_JIT_JOBS` compiles at once.
    ///
    /// # Errors
    ///
    /// As [`Runtime::prepare_together`]: the first failure, naming its
    /// blob.
    pub fn prepare_after(&self, earlier: &[&str], blob: &str) -> Result<(), Error> {
        let owner = self.owner(blob)?;
        if !std::ptr::eq(owner, self) {
            return owner.prepare_after(earlier, blob);
        }
        let sets = self.store.sets_of(blob).unwrap_or_else(|e| {
            log::warn!("ck-jit: the manifest's 'together' sets cannot be read: {e}");
            Vec::new()
        });
        let holding: Vec<&Vec<String>> = sets
            .iter()
            .filter(|s| earlier.iter().all(|e| s.iter().any(|b| b == e)))
            .collect();
        let mut names: Vec<&str> = earlier.to_vec();
        if !names.contains(&blob) {
            names.push(blob);
        }
        for b in common_to(&holding) {
            if !names.contains(&b.as_str()) {
                names.push(b);
            }
        }
        self.prepare_together(&names)
    }

    /// The device of `platform` this runtime compiles for, as `plan`
    /// finds it (`CK_JIT_ARCH`, else detected once per process); `None`
    /// for `CK_JIT_ARCH=all` or when none is found. Family selection keeps
    /// the members that run on it.
    pub(crate) fn device_for(
        &self,
        platform: crate::gpu::arch::Platform,
    ) -> Option<crate::gpu::arch::Device> {
        crate::gpu::arch::device_for(&self.config.arch, platform, |p| {
            let devices = self.cache().ok().map(|c| c.root().join("devices"));
            crate::gpu::device::detect(p, devices.as_deref()).map(|(d, _)| d)
        })
    }

    /// The group a plan of `blob` compiles with: the manifest's, shared
    /// by every plan of it, unless its arguments are narrowed to the
    /// device in use or adapted to the compiler at hand (dropped and
    /// extra flags), which makes it the plan's own; and the device.
    fn group_for(
        &self,
        blob: &str,
        info: &crate::runtime::store::BlobInfo<'_>,
    ) -> Result<(Arc<Group>, Option<crate::gpu::arch::Device>), Error> {
        let narrowed =
            crate::gpu::arch::for_device(blob, &info.group.args, &self.config.arch, |p| {
                // Only a blob recorded for several devices looks for one.
                let devices = self.cache().ok().map(|c| c.root().join("devices"));
                crate::gpu::device::detect(p, devices.as_deref()).map(|(d, _)| d)
            })?;
        let shared = || {
            let cells = self.groups.get_or_init(|| {
                (0..self.store.group_count())
                    .map(|_| OnceCell::new())
                    .collect()
            });
            match cells.get(info.group_index) {
                Some(cell) => cell.get_or_init(|| Arc::new(info.group.clone())).clone(),
                None => Arc::new(info.group.clone()),
            }
        };
        let (mut group, device) = match narrowed {
            Some(n) => {
                let mut g = info.group.clone();
                g.args = n.args;
                (Arc::new(g), Some(n.device))
            }
            None => (shared(), None),
        };
        if self
            .config
            .drop_flags
            .iter()
            .any(|seq| contains_sequence(&group.args, seq))
        {
            // A recorded command adapted to the compiler at hand: in the
            // group's arguments, so the key is that of what runs.
            let args = &mut Arc::make_mut(&mut group).args;
            for seq in &self.config.drop_flags {
                drop_sequence(args, seq);
            }
        }
        if !self.config.extra_flags.is_empty() {
            // Before the source, as a user adds flags to a command; in the
            // group's arguments, so they are in the key as any flag is.
            let args = &mut Arc::make_mut(&mut group).args;
            let at = args
                .iter()
                .position(|a| a.contains("{src}"))
                .unwrap_or(args.len());
            args.splice(at..at, self.config.extra_flags.iter().cloned());
        }
        Ok((group, device))
    }

    /// Computes a blob's keys and command inputs without compiling.
    pub fn plan(&self, blob: &str) -> Result<Plan, Error> {
        self.plan_of(blob, None)
    }

    /// [`Runtime::plan`], with what the manifest says of the blob when the
    /// caller asked already.
    fn plan_of(&self, blob: &str, info: Option<&BlobInfo<'_>>) -> Result<Plan, Error> {
        let found;
        let info = match info {
            Some(i) => i,
            None => {
                found = self.find(blob)?.ok_or_else(|| self.unknown(blob))?;
                &found
            }
        };
        let (group, device) = self.group_for(blob, info)?;
        let g = &*group;
        let source = self.root.join(&*info.source);
        let canon_root = self.canon_root();
        let (source_hash, source_id) = self.source_digest(blob, &source, canon_root)?;
        let inputs_key = InputsKey::new(blob, &source_hash, g, &self.config.launcher);
        let compiler = self.identify(g, blob).map(|id| {
            let prekey = inputs_key.prekey(&id, self.key_env());
            (id, prekey)
        });
        let cwd = match &g.cwd {
            Some(c) => PathBuf::from(compile::expand(c, &self.root, &source, Path::new(""), blob)),
            None => self.root.clone(),
        };
        Ok(Plan {
            blob: blob.to_string(),
            source,
            group,
            inputs_key,
            compiler,
            cwd,
            symbol: info.symbol.clone(),
            device,
            source_hash,
            source_id,
        })
    }

    /// The compiler `group` names, identified (kept for the process; its
    /// identity kept in the cache, opened first, once found: a cache that
    /// cannot be opened is tried again).
    fn identify(&self, group: &Group, blob: &str) -> Result<Arc<CompilerId>, Error> {
        let store = match self.compilers_dir.get() {
            Some(dir) => Some(dir.as_path()),
            None => self.cache().ok().map(|c| {
                self.compilers_dir
                    .get_or_init(|| cache::joined(c.root(), &["compilers"], ""))
                    .as_path()
            }),
        };
        compile::identify(&group.compiler, blob, &self.config.compiler_check, store)
    }

    /// The compiler variables of the key, read once.
    fn key_env(&self) -> &str {
        self.key_env
            .get_or_init(|| crate::config::key_env(&self.config.key_env))
    }

    /// The root with symlinks resolved, once.
    fn canon_root(&self) -> &Path {
        self.canon_root
            .get_or_init(|| compile::real_path(&self.root).unwrap_or_else(|_| self.root.clone()))
    }

    /// The verified cache entry for `blob`, if there is one: what a lazy
    /// call would load without compiling.
    pub fn cached(&self, blob: &str) -> Result<Option<Entry>, Error> {
        let owner = self.owner(blob)?;
        let plan = owner.plan(blob)?;
        Ok(owner.cached_entry(&plan)?.map(|(entry, _)| entry))
    }

    /// The verified cache entry for a plan, if there is one. An entry that
    /// fails verification is moved aside (and so counts as a miss). How
    /// the object is checked: see [`Cache::verify_for_load`]
    /// (`CK_JIT_VERIFY=full` always hashes it).
    pub fn cached_entry(&self, plan: &Plan) -> Result<Option<(Entry, ObjectBytes)>, Error> {
        Ok(self
            .entry_to_load(plan)?
            .map(|(e, bytes)| (e.with_deps(), bytes)))
    }

    /// [`Runtime::cached_entry`] as a lazy call wants it: the record's
    /// headers left as the lookup read them ([`Entry::with_deps`] lists
    /// them).
    fn entry_to_load(&self, plan: &Plan) -> Result<Option<(Entry, ObjectBytes)>, Error> {
        // The read-only tiers first, in order; they are looked in even
        // when the writable cache cannot be opened (a read-only image).
        for tier in self.tiers() {
            match self.cached_in(tier, plan) {
                Ok(Some(found)) => return Ok(Some(found)),
                Ok(None) => {}
                Err(e) => log::warn!("ck-jit: blob '{}': {e}; tier skipped", plan.blob),
            }
        }
        self.cached_in(self.cache()?, plan)
    }

    /// The verified entry for a plan in one cache (a tier or the writable
    /// one).
    fn cached_in(&self, cache: &Cache, plan: &Plan) -> Result<Option<(Entry, ObjectBytes)>, Error> {
        let entry = match plan.prekey() {
            Some(pk) => cache.lookup(&plan.blob, pk.as_str(), plan.roots(&self.root))?,
            // The compiler named is missing. Offline (a deployment that
            // ships the cache), any entry built from the same inputs by any
            // compiler identity will do, and the log names the compiler
            // that built it; otherwise another compiler's object is not
            // served in its place: the compile that follows reports the
            // missing one.
            None if self.offline_reason().is_some() => {
                let found = self.lookup_any_compiler(cache, plan)?;
                if let Some(e) = &found {
                    self.say_who_built(plan, e);
                }
                found
            }
            None => None,
        };
        let Some(entry) = entry else { return Ok(None) };
        match cache.verify_for_load(&entry, self.config.verify_full) {
            Ok(bytes) => Ok(Some((entry, bytes))),
            Err(why) if cache.is_read_only() => {
                // Never moved: a tier is not written. A miss here; the
                // writable cache, or a compile, serves the blob.
                log::warn!(
                    "ck-jit: blob '{}': entry {} of the read-only cache {} failed verification \
                     ({why}); not loaded",
                    plan.blob,
                    entry.object.display(),
                    cache.root().display()
                );
                counters::CORRUPT.add(1);
                Ok(None)
            }
            Err(why) => {
                log::warn!(
                    "ck-jit: blob '{}': cache entry {} failed verification ({why}); moved aside, rebuilding",
                    plan.blob,
                    entry.object.display()
                );
                counters::CORRUPT.add(1);
                cache.quarantine(&entry);
                Ok(None)
            }
        }
    }

    /// Logs (and, verbose, prints) which compiler built `entry`, served
    /// offline for `plan` although its own compiler is missing.
    fn say_who_built(&self, plan: &Plan, entry: &Entry) {
        let built_by = entry
            .record
            .command
            .first()
            .map_or("an unrecorded compiler", String::as_str);
        let missing = plan
            .compiler
            .as_ref()
            .err()
            .map_or_else(String::new, |e| format!(" ({e})"));
        let line = format!(
            "ck-jit: blob '{}': its compiler '{}' is missing{missing}; offline, loading the object {built_by} built from the same inputs ({})",
            plan.blob,
            plan.group.compiler,
            entry.object.display()
        );
        log::info!("{line}");
        if self.config.verbose {
            eprintln!("{line}");
        }
    }

    fn lookup_any_compiler(&self, cache: &Cache, plan: &Plan) -> Result<Option<Entry>, Error> {
        let inputs = plan.inputs_key.to_string();
        let mut prekeys: Vec<(u64, String)> = cache
            .entries_of(&plan.blob)
            .into_iter()
            .filter(|e| e.record.blob == plan.blob && e.record.inputs == inputs)
            .map(|e| (e.record.created, e.record.prekey))
            .collect();
        prekeys.sort_by(|a, b| b.cmp(a));
        prekeys.dedup_by(|a, b| a.1 == b.1);
        for (_, pk) in prekeys {
            if let Some(found) = cache.lookup(&plan.blob, &pk, Roots::tree(&self.root))? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The memo of hits of this runtime's tree in its writable cache:
    /// none for a shared or read-only cache, or when read-only tiers are
    /// looked in first (a hit there is theirs to serve).
    fn hit_memo(&self) -> Option<&HitMemo> {
        self.hits
            .get_or_init(|| {
                let cache = self.cache().ok()?;
                let private = !cache.is_shared() && !cache.is_read_only();
                (private && self.tiers().is_empty())
                    .then(|| HitMemo::open(cache.root(), self.canon_root()))
            })
            .as_ref()
    }

    /// The memo's key of `blob` now: its name, its source's identity and
    /// the context of its plan (group, launcher, compiler, environment),
    /// with the compiler; `None` when the source has no identity a memo
    /// keeps, or the compiler is missing.
    fn hit_key_now(
        &self,
        blob: &str,
        info: &BlobInfo<'_>,
    ) -> Option<([u8; 32], fs::Metadata, Arc<CompilerId>)> {
        let (id, context) = self.group_context(blob, info)?;
        // `root.join(source)`, on the stack.
        let mut source = PathBytes::new();
        if !info.source.starts_with('/') {
            source.push(self.root.as_os_str().as_encoded_bytes());
        }
        source.push_name(info.source.as_bytes());
        let (path, md) = self.source_identity_bytes(source.path(), self.canon_root())?;
        Some((hit_key(blob, path.path(), &md, &context), md, id))
    }

    /// The compiler of `info`'s group and its [`hit_context`]. Kept per
    /// group for the runtime, once found for the manifest's own group (not
    /// one narrowed to a device or adapted by `drop_flags`), while the
    /// process's compiler identities stand
    /// ([`identities_forgotten`](compile::identities_forgotten)): a hit
    /// then neither asks for the group nor reads the compiler's variable
    /// again, as the rest of the configuration is read once per runtime.
    fn group_context(
        &self,
        blob: &str,
        info: &BlobInfo<'_>,
    ) -> Option<(Arc<CompilerId>, blake3::Hash)> {
        let now = compile::identities_forgotten();
        let cells = self.contexts.get_or_init(|| {
            (0..self.store.group_count())
                .map(|_| OnceCell::new())
                .collect()
        });
        let cell = cells.get(info.group_index);
        if let Some((id, context, _)) = cell.and_then(OnceCell::get).filter(|k| k.2 == now) {
            return Some((id.clone(), *context));
        }
        let (group, _) = self.group_for(blob, info).ok()?;
        let id = self.identify(&group, blob).ok()?;
        let context = hit_context(&group, &self.config.launcher, &id, self.key_env());
        let shared = self
            .groups
            .get()
            .and_then(|cells| cells.get(info.group_index))
            .and_then(OnceCell::get)
            .is_some_and(|g| Arc::ptr_eq(g, &group));
        if let Some(cell) = cell.filter(|_| shared) {
            let _ = cell.set((id.clone(), context, now));
        }
        Some((id, context))
    }

    /// The object the cache's memo of hits remembers for `blob`, unread,
    /// and the prekey of its entry, when the memo knows the blob's source
    /// as it is now and the object and headers check out; the entry's
    /// record is marked used when the memo's last use of it is old (and
    /// the memo with it). No source is read, no key but the memo's
    /// computed, no record read. `None` sends the load the usual way
    /// (always with `CK_JIT_VERIFY=full`, which hashes every object it
    /// loads).
    fn remembered_hit(
        &self,
        blob: &str,
        info: Option<&BlobInfo<'_>>,
    ) -> Option<(Arc<Path>, ObjectBytes, String)> {
        if self.config.verify_full {
            return None;
        }
        let memo = self.hit_memo()?;
        let found;
        let info = match info {
            Some(i) => i,
            None => {
                found = self.find(blob).ok()??;
                &found
            }
        };
        let (key, md, id) = self.hit_key_now(blob, info)?;
        let hit = memo.find(&key)?;
        let roots = Roots {
            tree: &self.root,
            compiler: &id.prefix,
        };
        let cache = self.cache().ok()?;
        let (object, bytes) = cache.remembered_object(blob, &hit, roots)?;
        let now = SystemTime::now();
        if !cache::used_lately(Some(hit.used), now) {
            // The use the memo knows is old: the record is marked used now,
            // as a hit without the memo marks it, and the memo with it. A
            // record that cannot be (gone) sends the load the usual way.
            if !cache.touch_remembered(blob, &hit, now) {
                return None;
            }
            memo.remember(&key, &md, &Hit { used: now, ..hit }, now);
        }
        Some((object, bytes, hit.prekey.to_string()))
    }

    /// Remembers in the memo of hits the entry `plan` found or compiled,
    /// when the source still has the identity its digest was known for
    /// and the key it is found by now is the plan's. Best effort.
    fn remember_hit(&self, plan: &Plan, entry: &Entry, bytes: &ObjectBytes) {
        let (Some(memo), Some((path, md))) = (self.hit_memo(), &plan.source_id) else {
            return;
        };
        let Ok((id, prekey)) = plan.compilable() else {
            return;
        };
        if entry.record.prekey != prekey.as_str() {
            return;
        }
        let Ok(Some(info)) = self.find(&plan.blob) else {
            return;
        };
        let Some((key, now_md, now_id)) = self.hit_key_now(&plan.blob, &info) else {
            return;
        };
        let same_source = crate::cache::sources::same_identity(md, &now_md);
        let context = hit_context(&plan.group, &self.config.launcher, id, self.key_env());
        if !same_source || *id != *now_id || key != hit_key(&plan.blob, path, md, &context) {
            return;
        }
        let Some(hit) = self.cache().ok().and_then(|c| c.hit_of(entry, bytes)) else {
            return;
        };
        memo.remember(&key, md, &hit, SystemTime::now());
    }

    fn load_uncached(&self, blob: &str, info: Option<&BlobInfo<'_>>) -> Result<Loaded, Failure> {
        let t0 = Instant::now();
        if let Some((object, bytes, prekey)) = self.remembered_hit(blob, info) {
            self.count(Event::Hit { tier: None });
            match Loaded::open_verified(blob, &object, &bytes, None) {
                Ok(l) => {
                    self.note_load(blob, t0, Outcome::Cached, &object);
                    return Ok(l.built_from(prekey));
                }
                // Evicted between the check and the dlopen: looked up the
                // usual way.
                Err(Error::DlOpen { .. }) if !object.exists() => {}
                Err(error) => return Err(Failure::at(error, prekey)),
            }
        }
        let (plan, mut entry, mut bytes, mut outcome) = self.ensure_with_plan(blob, false, info)?;
        self.remember_hit(&plan, &entry, &bytes);
        let mut retries = 0;
        let loaded = loop {
            let through = if self.config.shared_cache || entry.tier().is_some() {
                bytes.file()
            } else {
                None
            };
            match Loaded::open_verified(blob, &entry.object, &bytes, through) {
                Ok(l) => break l,
                // Evicted (`ck-jit gc`/`clean` in another process) between
                // the check and the dlopen: look again.
                Err(Error::DlOpen { .. }) if !entry.object.exists() && retries < 3 => {
                    retries += 1;
                    (entry, bytes, outcome) = self.ensure_owned(blob, false)?;
                }
                Err(error) => return Err(Failure::at(error, entry.record.prekey.clone())),
            }
        };
        self.note_load(blob, t0, outcome, &entry.object);
        if outcome == Outcome::Cached && entry.tier().is_none() {
            self.cache()?.touch(&entry);
        }
        // The entry is done with: its key moves to the loaded object.
        Ok(loaded.built_from(std::mem::take(&mut entry.record.prekey)))
    }

    /// Counts a load of `blob` from `object` begun at `t0`, and logs it.
    fn note_load(&self, blob: &str, t0: Instant, outcome: Outcome, object: &Path) {
        let dt = t0.elapsed();
        counters::LOADS.add(1);
        counters::LOAD_NS.add(dt.as_nanos() as u64);
        let how = if outcome == Outcome::Cached {
            "cache hit"
        } else {
            "compiled"
        };
        log::info!(
            "ck-jit: loaded blob '{blob}' ({how}) in {:.2} ms from {}",
            dt.as_secs_f64() * 1e3,
            object.display()
        );
        if self.config.verbose {
            eprintln!(
                "ck-jit: loaded {blob} in {:.2} ms ({how}) from {}",
                dt.as_secs_f64() * 1e3,
                object.display()
            );
        }
    }

    /// Makes sure a verified entry for `blob` is in the cache, compiling it
    /// if needed (or always, with `force`), and returns it with its bytes.
    /// This is the exact path a lazy call takes, minus the `dlopen`.
    pub fn ensure(&self, blob: &str, force: bool) -> Result<(Entry, ObjectBytes, Outcome), Error> {
        self.ensure_planned(blob, force)
            .map(|(e, bytes, o)| (e.with_deps(), bytes, o))
            .map_err(|f| *f.error)
    }

    /// [`Runtime::ensure`], saying which prekey a failure happened under.
    fn ensure_planned(
        &self,
        blob: &str,
        force: bool,
    ) -> Result<(Entry, ObjectBytes, Outcome), Failure> {
        self.owner(blob)?.ensure_owned(blob, force)
    }

    /// [`Runtime::ensure_planned`] on the runtime whose manifest records
    /// `blob`, which it does not ask again.
    fn ensure_owned(
        &self,
        blob: &str,
        force: bool,
    ) -> Result<(Entry, ObjectBytes, Outcome), Failure> {
        self.ensure_with_plan(blob, force, None)
            .map(|(_, entry, bytes, outcome)| (entry, bytes, outcome))
    }

    /// [`Runtime::ensure_owned`], with the plan the entry was found or
    /// compiled under; `info` is what the manifest says of the blob, when
    /// the caller asked already.
    fn ensure_with_plan(
        &self,
        blob: &str,
        force: bool,
        info: Option<&BlobInfo<'_>>,
    ) -> Result<(Plan, Entry, ObjectBytes, Outcome), Failure> {
        // A source that changes under the compiler is planned again, so the
        // result is stored under the key of what was compiled; a source
        // that never holds still is an error after a few rounds.
        let mut last_source = PathBuf::new();
        for _ in 0..3 {
            let plan = self.plan_of(blob, info)?;
            last_source = plan.source.clone();
            if !force {
                if let Some((e, bytes)) = self.entry_to_load(&plan)? {
                    self.count(Event::Hit { tier: e.tier() });
                    return Ok((plan, e, bytes, Outcome::Cached));
                }
            }
            if let Some(reason) = self.offline_reason() {
                return Err(Error::Offline {
                    blob: blob.to_string(),
                    reason,
                    cache: self.cache_dir().ok(),
                }
                .into());
            }
            let (id, prekey) = plan.compilable()?;
            // A compiler upgraded in place since this process identified
            // it: planned again under what is there now (perhaps a hit).
            if compile::identity_changed(id, &self.config.compiler_check) {
                log::info!(
                    "ck-jit: the compiler {} changed since it was identified; identifying it again",
                    id.path.display()
                );
                continue;
            }
            let cache = self.cache()?;
            self.count(Event::Miss);
            let lock = cache.lock(
                blob,
                prekey.as_str(),
                self.config.lock_timeout,
                self.config.compile_timeout,
                self.config.verbose,
            )?;
            if force {
                if let Some(e) = cache.lookup(blob, prekey.as_str(), plan.roots(&self.root))? {
                    // Unlinking is safe for processes that have it mapped.
                    let _ = fs::remove_file(&e.record_path);
                    let _ = fs::remove_file(&e.object);
                }
            } else if let Some((e, bytes)) = self.entry_to_load(&plan)? {
                // Another thread or process compiled it while we waited
                // (counted for the cache as the miss it was).
                counters::HITS.add(1);
                return Ok((plan, e, bytes, Outcome::Cached));
            }
            match self.compile_with_companions(cache, &plan) {
                Ok(Some((e, bytes))) => return Ok((plan, e, bytes, Outcome::Compiled)),
                Ok(None) => {}
                Err(error) => {
                    if let Error::CompileTimeout { seconds, .. } = &error {
                        // Those waiting for this compile are released.
                        lock.say_holder(Some(*seconds));
                    }
                    return Err(Failure::at(error, prekey.to_string()));
                }
            }
        }
        Err(Error::SourceChanged {
            blob: blob.to_string(),
            path: last_source,
        }
        .into())
    }

    /// Runs the compiler and publishes the result. `None` when the source
    /// changed during the compile (nothing is published then).
    fn compile(&self, cache: &Cache, plan: &Plan) -> Result<Option<(Entry, ObjectBytes)>, Error> {
        self.sweep_temps_once(cache);
        let blob = plan.blob.as_str();
        let (id, prekey) = plan.compilable()?;
        // Everything the compiler writes goes in here, removed on return
        // whatever happens; the object leaves it by being linked into place.
        let work = cache.work_dir(blob)?;
        let files = compile::Files::in_dir(work.path());
        let log = cache.log_path(blob, prekey.as_str());
        let jobs = compile::jobs(
            &compile::Request {
                blob,
                group: &plan.group,
                compiler: id,
                launcher: &self.config.launcher,
                root: &self.root,
                source: &plan.source,
                cwd: &plan.cwd,
                log: &log,
                timeout: self.config.compile_timeout,
            },
            &files,
        );
        let t0 = Instant::now();
        let ran = self.run_admitted(cache, plan, &jobs);
        let dt = t0.elapsed();
        self.count(Event::Compile(dt));
        ran?;
        if self.config.verbose {
            eprintln!(
                "ck-jit: compiled {blob} in {:.1} ms ({})",
                dt.as_secs_f64() * 1e3,
                id.path.display()
            );
        }
        let bytes = compile::read_output(blob, &files.out)?;
        let deps = if plan.group.depfile {
            depfile::headers(&files.dep, &plan.cwd, &plan.source, plan.roots(&self.root))
        } else {
            Vec::new()
        };
        // The source must still be what was planned, or the object would be
        // stored under a key that does not describe it.
        if !plan.source_unchanged() {
            return Ok(None);
        }
        let record = Record {
            inputs: plan.inputs_key.to_string(),
            format: CACHE_FORMAT,
            blob: blob.to_string(),
            prekey: prekey.to_string(),
            key: prekey.key(&deps).to_string(),
            size: bytes.len() as u64,
            checksum: blake3::hash(&bytes).to_hex().to_string(),
            object_stat: String::new(),
            depset: String::new(),
            deps: Arc::new(deps),
            headers: None,
            command: jobs.iter().map(|j| j.argv.join(" ")).collect(),
            created: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        };
        let published = cache.publish(&files.out, record, bytes)?;
        if self.config.cache_limits.any() {
            // Bounded caches stay bounded without a cron job; a failure to
            // evict costs space, not this call.
            match cache.evict(
                &self.config.cache_limits,
                Some(&published.0.record_path),
                false,
            ) {
                Ok(ev) if !ev.removed.is_empty() => log::info!(
                    "ck-jit: evicted {} least recently used entries ({} bytes) from {}",
                    ev.removed.len(),
                    ev.bytes_before - ev.bytes_after,
                    cache.root().display()
                ),
                Ok(_) => {}
                Err(e) => log::warn!("ck-jit: evicting from {}: {e}", cache.root().display()),
            }
        }
        Ok(Some(published))
    }
}

impl Runtime {
    /// Runs a blob's compile once [`Jobs`] admits it, counted at its
    /// group's memory estimate, and learns from the peak resident size
    /// measured. A compile killed by a signal (the out-of-memory killer's
    /// SIGKILL, most often) is tried once more, alone: once this process's
    /// other compiles are done and with none started beside it, so it has
    /// all the memory there is; that it was killed is said either way.
    fn run_admitted(&self, cache: &Cache, plan: &Plan, jobs: &[compile::Job]) -> Result<(), Error> {
        let key = memory::group_key(self.store.name(), &plan.group.name);
        let memory = self.memory_for(cache, &key);
        let budget = match self.config.memory_budget {
            Some(b) => Budget::Fixed(b),
            None => Budget::Detect,
        };
        let (first, admitted) = {
            let permit = JOBS.acquire_with(memory, budget);
            (compile::run(jobs), permit.admitted())
        };
        let killed = match first {
            Ok(ran) => {
                self.learn(cache, &key, ran.peak_rss, false);
                return Ok(());
            }
            Err(e @ Error::CompileKilled { .. }) => e,
            Err(e) => return Err(e),
        };
        let first_peak = killed_peak(&killed);
        self.learn(cache, &key, first_peak, true);
        let killed = with_figures(
            killed,
            first_peak,
            admitted.estimate,
            admitted.budget,
            false,
        );
        let said = killed.to_string();
        let first_line = said.lines().next().unwrap_or_default();
        let msg = format!("ck-jit: {first_line}; compiling it again, alone");
        log::warn!("{msg}");
        eprintln!("{msg}");
        let (again, alone) = {
            let permit = JOBS.acquire_with(Memory::Alone, budget);
            (compile::run(jobs), permit.admitted())
        };
        match again {
            Ok(ran) => {
                self.learn(cache, &key, ran.peak_rss, false);
                let msg = format!(
                    "ck-jit: blob '{}' compiled when retried alone, after its compile was killed",
                    plan.blob
                );
                log::warn!("{msg}");
                eprintln!("{msg}");
                Ok(())
            }
            Err(e @ Error::CompileKilled { .. }) => {
                let peak = killed_peak(&e).max(first_peak);
                self.learn(cache, &key, killed_peak(&e), true);
                Err(with_figures(e, peak, admitted.estimate, alone.budget, true))
            }
            Err(e) => Err(e),
        }
    }

    /// The memory a compile of group `key` is counted at:
    /// `CK_JIT_JOB_MEMORY` (`0`: not counted), else the estimate kept in
    /// the cache.
    fn memory_for(&self, cache: &Cache, key: &str) -> Memory {
        match self.config.job_memory {
            Some(0) => Memory::Unbounded,
            Some(bytes) => Memory::Estimate(bytes),
            None => {
                let (bytes, source) = Estimates::load(cache.root()).estimate(key);
                log::debug!(
                    "ck-jit: a compile of group '{key}' is counted at {} ({source:?})",
                    memory::human(bytes)
                );
                Memory::Estimate(bytes)
            }
        }
    }

    /// Keeps what a compile of group `key` peaked at, when it was measured.
    fn learn(&self, cache: &Cache, key: &str, peak: Option<u64>, killed: bool) {
        if let Some(peak) = peak {
            memory::learn(cache.root(), cache.is_shared(), key, peak, killed);
        }
    }

    /// The BLAKE3 of a blob's source: the digest the cache's memo holds
    /// for it while the file (not a symlink, under the tree) has the
    /// identity it was hashed with, else read and hashed
    /// ([`read_source`](Self::read_source)) and remembered.
    ///
    /// With the digest, the source's real path and the `lstat` the digest
    /// is known for, when there is one (a memo's answer, or a read
    /// during which the file held still).
    #[allow(clippy::type_complexity)]
    fn source_digest(
        &self,
        blob: &str,
        source: &Path,
        canon_root: &Path,
    ) -> Result<(blake3::Hash, Option<(PathBuf, fs::Metadata)>), Error> {
        let memo = self.sources.get_or_init(|| {
            let cache = self.cache().ok()?;
            (!cache.is_shared() && !cache.is_read_only())
                .then(|| crate::cache::sources::SourceMemo::open(cache.root(), canon_root))
        });
        if let Some(memo) = memo {
            if let Some((path, md)) = self.source_identity(source, canon_root) {
                if let Some(d) = memo.digest(&path, &md) {
                    return Ok((d, Some((path, md))));
                }
            }
        }
        let (canon, bytes, md) = self.read_source(blob, source, canon_root)?;
        let digest = blake3::hash(&bytes);
        counters::SOURCES_READ.add(1);
        if let (Some(memo), Some(md)) = (memo, &md) {
            memo.remember(&canon, md, &digest, std::time::SystemTime::now());
        }
        Ok((digest, md.map(|md| (canon, md))))
    }

    /// A source's real path (its directory's symlinks resolved) and its
    /// `lstat`, when it is a file (not a symlink) under the tree: what the
    /// memos know a source by.
    fn source_identity(&self, source: &Path, canon_root: &Path) -> Option<(PathBuf, fs::Metadata)> {
        self.source_identity_bytes(source, canon_root)
            .map(|(path, md)| (path.to_path_buf(), md))
    }

    /// [`source_identity`](Self::source_identity), its path on the stack
    /// (a hit's key hashes it and drops it).
    fn source_identity_bytes(
        &self,
        source: &Path,
        canon_root: &Path,
    ) -> Option<(PathBytes, fs::Metadata)> {
        let (dir, name) = source_parts(source)?;
        let path = self.canon_dir_with(dir, name).ok()?;
        let md = fs::symlink_metadata(path.path()).ok()?;
        (md.file_type().is_file() && under(path.path(), canon_root)).then_some((path, md))
    }

    /// [`canon_dir`](Self::canon_dir) joined with `name`, on the stack.
    fn canon_dir_with(&self, dir: &Path, name: &std::ffi::OsStr) -> std::io::Result<PathBytes> {
        let join = |d: &Path| {
            let mut path = PathBytes::of(d.as_os_str().as_encoded_bytes());
            if !path.bytes().ends_with(b"/") {
                path.push(b"/");
            }
            path.push(name.as_encoded_bytes());
            path
        };
        if let Ok(m) = self.canon_dirs.lock() {
            if let Some(d) = m.get(dir.as_os_str()) {
                return Ok(join(d));
            }
        }
        self.canon_dir(dir).map(|d| join(&d))
    }

    /// `dir` with symlinks resolved, once per runtime.
    fn canon_dir(&self, dir: &Path) -> std::io::Result<PathBuf> {
        let known = self
            .canon_dirs
            .lock()
            .ok()
            .and_then(|m| m.get(dir.as_os_str()).cloned());
        if let Some(d) = known {
            return Ok(d);
        }
        let d = match self.plain_dir_in_root(dir) {
            Some(d) => d,
            None => compile::real_path(dir)?,
        };
        if let Ok(mut m) = self.canon_dirs.lock() {
            m.insert(dir.as_os_str().to_os_string(), d.clone());
        }
        Ok(d)
    }

    /// The real path of `dir` from the root's, when `dir` is the root or a
    /// directory right in it that is no symlink (one `lstat`, where the
    /// system would open it and read its name back): most trees keep
    /// their sources there. `None` for any other directory.
    fn plain_dir_in_root(&self, dir: &Path) -> Option<PathBuf> {
        let root = self.root.as_os_str().as_encoded_bytes();
        let root = root.strip_suffix(b"/").unwrap_or(root);
        let rest = dir.as_os_str().as_encoded_bytes().strip_prefix(root)?;
        if rest.is_empty() {
            return Some(self.canon_root().to_path_buf());
        }
        let name = rest.strip_prefix(b"/")?;
        if matches!(name, b"" | b"." | b"..") || name.contains(&b'/') {
            return None;
        }
        let md = fs::symlink_metadata(dir).ok()?;
        // SAFETY: split from an `OsStr` after an ASCII `/`.
        let name = unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(name) };
        md.file_type()
            .is_dir()
            .then(|| self.canon_root().join(name))
    }

    /// Reads a blob's source, refusing one that resolves outside the tree
    /// (`canon_root`: the root with symlinks resolved). The source's
    /// directory is resolved once per runtime; the file itself is opened
    /// without following a symlink, and a source that is one is resolved
    /// in full. Returns its real path, its bytes, and its identity when it
    /// is the same before and after the read (what a memo may keep).
    fn read_source(
        &self,
        blob: &str,
        source: &Path,
        canon_root: &Path,
    ) -> Result<(PathBuf, Vec<u8>, Option<fs::Metadata>), Error> {
        let err = |e: std::io::Error| Error::Source {
            blob: blob.to_string(),
            path: source.to_path_buf(),
            error: Arc::new(e),
        };
        let opened = match source_parts(source) {
            Some((dir, name)) => {
                let canon_dir = self.canon_dir(dir).map_err(err)?;
                match fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(canon_dir.join(name))
                {
                    Ok(f) => Some((canon_dir.join(name), f)),
                    // A symlink: resolved below.
                    Err(e) if e.raw_os_error() == Some(libc::ELOOP) => None,
                    Err(e) => return Err(err(e)),
                }
            }
            None => None,
        };
        let (canon, file) = match opened {
            Some(o) => o,
            None => {
                let canon = compile::real_path(source).map_err(err)?;
                let f = fs::File::open(&canon).map_err(err)?;
                (canon, f)
            }
        };
        if !canon.starts_with(canon_root) {
            return Err(Error::SourceOutsideRoot {
                blob: blob.to_string(),
                path: canon,
                root: canon_root.to_path_buf(),
            });
        }
        // Sized by fstat, read to its end whatever it has become (without
        // `File::read_to_end`'s extra stat and seek).
        let before = file.metadata().ok();
        let len = before.as_ref().map_or(0, |m| m.len());
        let mut bytes = Vec::with_capacity(len as usize + 1);
        std::io::Read::read_to_end(&mut std::io::Read::take(&file, u64::MAX), &mut bytes)
            .map_err(err)?;
        // The identity a memo may keep: the same after the read as before
        // (a file written meanwhile is hashed again next time).
        let kept = before.filter(|b| {
            file.metadata().is_ok_and(|a| {
                crate::cache::sources::same_identity(&a, b) && a.len() == bytes.len() as u64
            })
        });
        Ok((canon, bytes, kept))
    }
}

/// Whether `path`, a real path (no `.`, `..` or doubled `/`), is `root`
/// or under it: `Path::starts_with` by bytes. A root spelt otherwise
/// (`/./`, `//`) is not matched, so the answer is never more lenient.
fn under(path: &Path, root: &Path) -> bool {
    let p = path.as_os_str().as_encoded_bytes();
    let r = root.as_os_str().as_encoded_bytes();
    let r = r.strip_suffix(b"/").unwrap_or(r);
    p.starts_with(r) && p.get(r.len()).is_none_or(|&b| b == b'/')
}

/// A source path's directory and file name, unless it ends in `..`.
fn source_parts(source: &Path) -> Option<(&Path, &std::ffi::OsStr)> {
    // A plain last name after the last slash (most sources): split there
    // without parsing the path's components, which is the same answer.
    let bytes = source.as_os_str().as_encoded_bytes();
    if let Some(at) = bytes.iter().rposition(|&b| b == b'/') {
        let (dir, name) = (&bytes[..at], &bytes[at + 1..]);
        let plain = !matches!(name, b"" | b"." | b"..");
        if plain && !dir.is_empty() && !dir.ends_with(b"/") && !dir.ends_with(b"/.") {
            // SAFETY: both are split from an `OsStr` at an ASCII byte.
            let (dir, name) = unsafe {
                (
                    std::ffi::OsStr::from_encoded_bytes_unchecked(dir),
                    std::ffi::OsStr::from_encoded_bytes_unchecked(name),
                )
            };
            return Some((Path::new(dir), name));
        }
    }
    source
        .parent()
        .zip(source.file_name())
        .filter(|(_, name)| Path::new(name) != Path::new(".."))
}

/// The peak resident size a killed compile's error carries.
fn killed_peak(e: &Error) -> Option<u64> {
    match e {
        Error::CompileKilled { kill, .. } => kill.peak_rss,
        _ => None,
    }
}

/// A killed compile's error with the memory figures the runtime knows (the
/// compiler's run knows only the peak).
fn with_figures(
    mut e: Error,
    peak: Option<u64>,
    estimate: Option<u64>,
    budget: Option<u64>,
    retried: bool,
) -> Error {
    if let Error::CompileKilled { kill, .. } = &mut e {
        kill.peak_rss = peak;
        kill.estimate = estimate;
        kill.budget = budget;
        kill.retried = retried;
    }
    e
}

/// Counters of this process (compiles, hits, loads, failures, time).
pub fn stats() -> Stats {
    counters::snapshot()
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Runtime>();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_path_splits_as_its_components_do() {
        fn by_components(p: &Path) -> Option<(&Path, &std::ffi::OsStr)> {
            p.parent()
                .zip(p.file_name())
                .filter(|(_, name)| Path::new(name) != Path::new(".."))
        }
        for p in [
            "/t/kernels/a.c",
            "/t/kernels//a.c",
            "/t/kernels/./a.c",
            "/t/kernels/a.c/",
            "/t/kernels/a.c/.",
            "/t/kernels/..",
            "/t/kernels/../a.c",
            "/a.c",
            "a.c",
            "k/a.c",
            "/",
            "",
            "/t/k\u{e9}rnels/\u{e9}.c",
        ] {
            let p = Path::new(p);
            let got = source_parts(p);
            let want = by_components(p);
            // The directory may be spelled differently (a trailing `.` or
            // separator), never another directory.
            assert_eq!(
                got.map(|(d, n)| (d.components().collect::<Vec<_>>(), n)),
                want.map(|(d, n)| (d.components().collect::<Vec<_>>(), n)),
                "{p:?}"
            );
        }
    }

    /// `under` is `Path::starts_with` for a real path, and never says yes
    /// where it says no.
    #[test]
    fn a_real_path_is_under_a_root_as_its_components_say() {
        let roots = [
            "/t", "/t/", "/", "/t/k", "/tt", "/t/./k", "//t", "/t/../t", "",
        ];
        let paths = ["/t/k/a.c", "/t", "/tt/a.c", "/t/kk/a.c", "/a.c", "/t/k"];
        for r in roots {
            for p in paths {
                let (r, p) = (Path::new(r), Path::new(p));
                let by_components = p.starts_with(r);
                let got = under(p, r);
                assert!(!got || by_components, "{p:?} under {r:?}");
                if !r
                    .as_os_str()
                    .as_encoded_bytes()
                    .windows(2)
                    .any(|w| w == b"//" || w == b"/.")
                {
                    assert_eq!(got, by_components, "{p:?} under {r:?}");
                }
            }
        }
    }
}
