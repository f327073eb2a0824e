//! Every counter of the runtime, in one place: what this process did
//! ([`Stats`], read through `ck_jit_rt::stats()`), and what all the
//! processes of one cache did ([`CacheCounters`], kept in
//! `<cache>/counters.json` as ccache keeps its statistics: what `ck-jit
//! stat` shows).
//!
//! An event is counted once, with [`count`], and lands in both: the
//! process's counter and the counts of the cache it happened in. Every
//! counter is a relaxed atomic; a hit costs two atomic adds and no lock or
//! system call, and nothing here is touched on the warm path.
//!
//! A cache's counts wait in memory and are added to its file (under a
//! lock, to what other processes wrote) after a compile, at most every
//! [`FLUSH_EVERY`] otherwise, and when the process exits normally; a
//! process killed before that loses what it had not written.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The file of a cache's counts, in the cache root.
pub const COUNTERS_FILE: &str = "counters.json";

/// How long counts may wait in memory while nothing is compiled.
pub const FLUSH_EVERY: Duration = Duration::from_secs(30);

/// One of the process's counters.
pub(crate) struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }
    pub(crate) fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

pub(crate) static COMPILES: Counter = Counter::new();
pub(crate) static HITS: Counter = Counter::new();
pub(crate) static LOADS: Counter = Counter::new();
pub(crate) static FAILURES: Counter = Counter::new();
pub(crate) static CORRUPT: Counter = Counter::new();
pub(crate) static LOCK_WAITS: Counter = Counter::new();
pub(crate) static COMPILE_NS: Counter = Counter::new();
pub(crate) static LOAD_NS: Counter = Counter::new();
pub(crate) static SOURCES_READ: Counter = Counter::new();

/// A snapshot of the process's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Compiler runs.
    pub compiles: u64,
    /// Requests served by a verified cache entry.
    pub cache_hits: u64,
    /// Objects loaded (`dlopen`).
    pub loads: u64,
    /// Failed requests (each remembered failure counts once).
    pub failures: u64,
    /// Cache entries that failed verification and were moved aside.
    pub corrupt_entries: u64,
    /// Times the compile lock was taken (after a miss).
    pub lock_acquisitions: u64,
    /// Wall time spent in the compiler.
    pub compile_time: Duration,
    /// Wall time from request to loaded object (compiles included).
    pub load_time: Duration,
    /// Blob sources read and hashed for a key; a source the cache's memo
    /// knows unchanged is not read.
    pub sources_read: u64,
}

pub(crate) fn snapshot() -> Stats {
    Stats {
        compiles: COMPILES.get(),
        cache_hits: HITS.get(),
        loads: LOADS.get(),
        failures: FAILURES.get(),
        corrupt_entries: CORRUPT.get(),
        lock_acquisitions: LOCK_WAITS.get(),
        compile_time: Duration::from_nanos(COMPILE_NS.get()),
        load_time: Duration::from_nanos(LOAD_NS.get()),
        sources_read: SOURCES_READ.get(),
    }
}

/// What a cache's processes counted, since `since`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CacheCounters {
    /// Requests a verified cache entry served (this cache's or a
    /// read-only tier's).
    pub hits: u64,
    /// Of `hits`, those a read-only tier (`CK_JIT_CACHE_PATH`) served, by
    /// the tier's directory: a tier is never written, so its hits are
    /// counted here.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tier_hits: BTreeMap<String, u64>,
    /// Requests no entry served: each compiled, or waited for another
    /// process's compile.
    pub misses: u64,
    /// Compiler runs.
    pub compiles: u64,
    /// Failed requests.
    pub failures: u64,
    /// Seconds since the epoch when counting started (the file was made).
    pub since: u64,
}

impl CacheCounters {
    fn add(&mut self, o: &CacheCounters) {
        self.hits += o.hits;
        for (tier, n) in &o.tier_hits {
            *self.tier_hits.entry(tier.clone()).or_default() += n;
        }
        self.misses += o.misses;
        self.compiles += o.compiles;
        self.failures += o.failures;
    }

    fn is_empty(&self) -> bool {
        self.hits + self.misses + self.compiles + self.failures == 0
    }

    /// The counts of `text`, when it is the file's usual text (what
    /// [`plain_text`](Self::plain_text) writes, then blanks): read without
    /// the JSON library, whose code a process's exit would otherwise load
    /// for this alone. `None` for any other text, JSON or not.
    fn from_plain_text(text: &str) -> Option<CacheCounters> {
        let mut rest = text.trim_end_matches([' ', '\n']).as_bytes();
        let mut field = |name: &[u8]| -> Option<u64> {
            rest = rest.strip_prefix(name)?;
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            let (number, after) = rest.split_at(digits);
            rest = after;
            // No leading zero, as JSON has none: such a text is not ours.
            if number.is_empty() || (number.len() > 1 && number[0] == b'0') {
                return None;
            }
            std::str::from_utf8(number).ok()?.parse().ok()
        };
        let counts = CacheCounters {
            hits: field(b"{\"hits\":")?,
            tier_hits: BTreeMap::new(),
            misses: field(b",\"misses\":")?,
            compiles: field(b",\"compiles\":")?,
            failures: field(b",\"failures\":")?,
            since: field(b",\"since\":")?,
        };
        (rest == b"}").then_some(counts)
    }

    /// The JSON text of these counts, as `serde_json` writes it, when there
    /// are no tier hits (the usual counts): written without the JSON
    /// library. `None` with tier hits.
    fn plain_text(&self) -> Option<Vec<u8>> {
        self.tier_hits.is_empty().then(|| {
            format!(
                "{{\"hits\":{},\"misses\":{},\"compiles\":{},\"failures\":{},\"since\":{}}}",
                self.hits, self.misses, self.compiles, self.failures, self.since
            )
            .into_bytes()
        })
    }
}

/// An event counted for the process and for the cache it happened in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event<'a> {
    /// A request a verified entry served; `tier`: the read-only tier
    /// (`CK_JIT_CACHE_PATH`) it came from, if it was one.
    Hit { tier: Option<&'a Path> },
    /// A request no entry served: the compile lock was taken.
    Miss,
    /// A compiler run, and how long it took.
    Compile(Duration),
    /// A failed request.
    Failure,
}

/// The counts of one cache waiting to be written, each an atomic.
pub(crate) struct CacheCounts {
    root: PathBuf,
    shared: bool,
    hits: AtomicU64,
    misses: AtomicU64,
    compiles: AtomicU64,
    failures: AtomicU64,
    /// Hits by read-only tier; rare, so under a lock.
    tier_hits: Mutex<BTreeMap<String, u64>>,
    /// Milliseconds since [`start`] at the last write.
    flushed_ms: AtomicU64,
}

/// Every cache this process has counted for.
static CACHES: Mutex<Vec<Arc<CacheCounts>>> = Mutex::new(Vec::new());
/// Held while counts are written: one writer at a time.
static WRITING: Mutex<()> = Mutex::new(());
static AT_EXIT: Once = Once::new();

fn start() -> Instant {
    static START: OnceLock<Instant> = OnceLock::new();
    *START.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    start().elapsed().as_millis() as u64
}

/// The counts of the cache at `root` (`shared`: its files are made group
/// readable and writable), the same for every caller in the process.
pub(crate) fn for_cache(root: &Path, shared: bool) -> Arc<CacheCounts> {
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function with no arguments that never unwinds
        // (see `flush_at_exit`).
        unsafe {
            libc::atexit(flush_at_exit);
        }
    });
    let mut caches = CACHES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = caches.iter().find(|c| c.root == root) {
        return c.clone();
    }
    let c = Arc::new(CacheCounts {
        root: root.to_path_buf(),
        shared,
        hits: AtomicU64::new(0),
        misses: AtomicU64::new(0),
        compiles: AtomicU64::new(0),
        failures: AtomicU64::new(0),
        tier_hits: Mutex::new(BTreeMap::new()),
        flushed_ms: AtomicU64::new(now_ms()),
    });
    caches.push(c.clone());
    c
}

/// Counts `event` for the process, and for `cache` when it happened in
/// one; writes the cache's counts when they are due.
pub(crate) fn count(cache: Option<&CacheCounts>, event: Event<'_>) {
    match event {
        Event::Hit { .. } => HITS.add(1),
        Event::Miss => LOCK_WAITS.add(1),
        Event::Compile(took) => {
            COMPILES.add(1);
            COMPILE_NS.add(took.as_nanos() as u64);
        }
        Event::Failure => FAILURES.add(1),
    }
    let Some(c) = cache else {
        return;
    };
    let counter = match event {
        Event::Hit { tier } => {
            if let Some(tier) = tier {
                let mut t = c.tier_hits.lock().unwrap_or_else(|e| e.into_inner());
                *t.entry(tier.display().to_string()).or_default() += 1;
            }
            &c.hits
        }
        Event::Miss => &c.misses,
        Event::Compile(_) => &c.compiles,
        Event::Failure => &c.failures,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let due = now_ms().saturating_sub(c.flushed_ms.load(Ordering::Relaxed))
        >= FLUSH_EVERY.as_millis() as u64;
    if matches!(event, Event::Compile(_)) || due {
        flush();
    }
}

impl CacheCounts {
    /// The counts so far, taken (left at zero).
    fn take(&self) -> CacheCounters {
        let tier_hits =
            std::mem::take(&mut *self.tier_hits.lock().unwrap_or_else(|e| e.into_inner()));
        CacheCounters {
            hits: self.hits.swap(0, Ordering::Relaxed),
            tier_hits,
            misses: self.misses.swap(0, Ordering::Relaxed),
            compiles: self.compiles.swap(0, Ordering::Relaxed),
            failures: self.failures.swap(0, Ordering::Relaxed),
            since: 0,
        }
    }

    /// Counts taken but not written, put back for the next write.
    fn put_back(&self, c: &CacheCounters) {
        self.hits.fetch_add(c.hits, Ordering::Relaxed);
        self.misses.fetch_add(c.misses, Ordering::Relaxed);
        self.compiles.fetch_add(c.compiles, Ordering::Relaxed);
        self.failures.fetch_add(c.failures, Ordering::Relaxed);
        let mut t = self.tier_hits.lock().unwrap_or_else(|e| e.into_inner());
        for (tier, n) in &c.tier_hits {
            *t.entry(tier.clone()).or_default() += n;
        }
    }
}

/// Writes every cache's counts into its file.
pub fn flush() {
    // Another thread is writing: its write takes these counts or the next
    // one does.
    let Ok(_writing) = WRITING.try_lock() else {
        return;
    };
    let caches: Vec<Arc<CacheCounts>> = CACHES.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for c in caches {
        c.flushed_ms.store(now_ms(), Ordering::Relaxed);
        let counts = c.take();
        if counts.is_empty() {
            continue;
        }
        if add_to_file(&c.root, &counts, c.shared).is_err() {
            // Not written (a read-only or removed cache): kept for the next
            // write rather than lost silently twice.
            c.put_back(&counts);
        }
    }
}

extern "C" fn flush_at_exit() {
    let _ = std::panic::catch_unwind(flush);
}

fn add_to_file(root: &Path, counts: &CacheCounters, shared: bool) -> std::io::Result<()> {
    let path = root.join(COUNTERS_FILE);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .mode(if shared { 0o660 } else { 0o600 })
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)?;
    if shared {
        // Made by this user under a umask that took the group's write bit:
        // the other users of the team cache add to it too.
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        // SAFETY: geteuid has no preconditions and cannot fail.
        let me = unsafe { libc::geteuid() };
        if file
            .metadata()
            .is_ok_and(|m| m.uid() == me && m.mode() & 0o060 != 0o060)
        {
            let _ = file.set_permissions(fs::Permissions::from_mode(0o660));
        }
    }
    file.lock()?;
    // Read to its end without `File::read_to_string`'s `stat` and seek
    // for a size hint (two system calls of every process's exit), into
    // room for the usual file, so one read takes it all.
    let mut text = String::with_capacity(512);
    std::io::Read::take(&file, u64::MAX).read_to_string(&mut text)?;
    // A file cut short by a crash starts the count again.
    let mut total = CacheCounters::from_plain_text(&text)
        .unwrap_or_else(|| serde_json::from_str(&text).unwrap_or_default());
    if total.since == 0 {
        total.since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
    }
    total.add(counts);
    let mut bytes = match total.plain_text() {
        Some(b) => b,
        None => serde_json::to_vec(&total).map_err(std::io::Error::other)?,
    };
    // Written over the old text, never truncated: a shorter text is padded
    // with spaces (still one JSON value). Truncating cost a process's exit
    // 0.3 ms and more (the file system then writes the file out on close).
    let width = text.len().saturating_sub(1);
    if bytes.len() < width {
        bytes.resize(width, b' ');
    }
    bytes.push(b'\n');
    file.write_all_at(&bytes, 0)
}

/// What the processes of the cache at `root` counted, if any wrote.
pub fn read(root: &Path) -> Option<CacheCounters> {
    let text = fs::read_to_string(root.join(COUNTERS_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_across_writers_and_a_torn_file_starts_again() {
        let dir = std::env::temp_dir().join(format!("ck-jit-counters-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let one = CacheCounters {
            hits: 2,
            tier_hits: [("/opt/t".to_string(), 1)].into_iter().collect(),
            misses: 1,
            compiles: 1,
            failures: 0,
            since: 0,
        };
        add_to_file(&dir, &one, false).unwrap();
        add_to_file(&dir, &one, false).unwrap();
        let got = read(&dir).unwrap();
        assert_eq!((got.hits, got.misses, got.compiles), (4, 2, 2));
        assert_eq!(got.tier_hits["/opt/t"], 2);
        assert!(got.since > 0);
        fs::write(dir.join(COUNTERS_FILE), "{\"hits\": 9").unwrap();
        add_to_file(&dir, &one, false).unwrap();
        assert_eq!(read(&dir).unwrap().hits, 2);
        // A longer torn text is written over, not truncated: what is left
        // is blanks after the counts.
        let torn = format!("{{\"hits\": 9{}", "x".repeat(300));
        fs::write(dir.join(COUNTERS_FILE), &torn).unwrap();
        add_to_file(&dir, &one, false).unwrap();
        assert_eq!(read(&dir).unwrap().hits, 2);
        let text = fs::read_to_string(dir.join(COUNTERS_FILE)).unwrap();
        assert_eq!(text.len(), torn.len());
        assert!(text.trim_end().ends_with('}'), "{text}");
        add_to_file(&dir, &one, false).unwrap();
        assert_eq!(read(&dir).unwrap().hits, 4);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_usual_text_is_read_and_written_as_the_json_library_does() {
        let counts = |hits, misses, compiles, failures, since| CacheCounters {
            hits,
            tier_hits: BTreeMap::new(),
            misses,
            compiles,
            failures,
            since,
        };
        for c in [
            counts(0, 0, 0, 0, 0),
            counts(22657, 32, 1, 0, 1_795_937_318),
            counts(u64::MAX, 10, 9, 100, u64::MAX),
        ] {
            let text = c.plain_text().unwrap();
            assert_eq!(text, serde_json::to_vec(&c).unwrap());
            let text = String::from_utf8(text).unwrap();
            assert_eq!(CacheCounters::from_plain_text(&text), Some(c.clone()));
            let padded = format!("{text}     \n");
            assert_eq!(CacheCounters::from_plain_text(&padded), Some(c.clone()));
        }
        let mut tiered = counts(1, 0, 0, 0, 5);
        tiered.tier_hits.insert("/opt/t".to_string(), 1);
        assert_eq!(tiered.plain_text(), None);
        // Any other text is left to the JSON library, which reads it or
        // refuses it as before.
        let tiered_text = serde_json::to_string(&tiered).unwrap();
        for other in [
            tiered_text.as_str(),
            "{\"hits\": 1,\"misses\":0,\"compiles\":0,\"failures\":0,\"since\":5}",
            "{\"hits\":01,\"misses\":0,\"compiles\":0,\"failures\":0,\"since\":5}",
            "{\"hits\":1,\"misses\":0,\"compiles\":0,\"failures\":0,\"since\":5}x",
            "{\"hits\":1,\"misses\":0,\"compiles\":0,\"failures\":0}",
            "{\"hits\":18446744073709551616,\"misses\":0,\"compiles\":0,\"failures\":0,\"since\":5}",
            "{\"hits\":-1,\"misses\":0,\"compiles\":0,\"failures\":0,\"since\":5}",
            "{\"hits\": 9",
            "",
        ] {
            assert_eq!(CacheCounters::from_plain_text(other), None, "{other}");
        }
    }

    /// The counts in `dir`'s file once `done` holds of them, flushing
    /// until it does.
    fn written(dir: &Path, done: impl Fn(&CacheCounters) -> bool) -> CacheCounters {
        for _ in 0..500 {
            match read(dir) {
                Some(c) if done(&c) => return c,
                _ => {
                    flush();
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
        panic!("{} was never written: {:?}", dir.display(), read(dir));
    }

    #[test]
    fn an_event_counts_for_the_process_and_its_cache_and_unwritten_counts_are_kept() {
        let dir = std::env::temp_dir().join(format!("ck-jit-counted-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let c = for_cache(&dir, false);
        assert!(Arc::ptr_eq(&c, &for_cache(&dir, false)));
        let before = snapshot();
        count(Some(&c), Event::Hit { tier: None });
        count(
            Some(&c),
            Event::Hit {
                tier: Some(Path::new("/opt/t")),
            },
        );
        count(Some(&c), Event::Miss);
        count(None, Event::Failure);
        let after = snapshot();
        assert!(after.cache_hits >= before.cache_hits + 2);
        assert!(after.lock_acquisitions > before.lock_acquisitions);
        assert!(after.failures > before.failures);
        // A compile writes what is pending (unless another thread of the
        // test process is writing just then: a later flush writes it).
        count(Some(&c), Event::Compile(Duration::from_millis(5)));
        let got = written(&dir, |g| g.compiles == 1);
        assert_eq!(
            (got.hits, got.misses, got.compiles, got.failures),
            (2, 1, 1, 0)
        );
        assert_eq!(got.tier_hits["/opt/t"], 1);
        // A cache whose file cannot be written keeps its counts for later.
        let gone = dir.join("gone");
        let g = for_cache(&gone, false);
        count(Some(&g), Event::Miss);
        flush();
        assert!(read(&gone).is_none());
        fs::create_dir_all(&gone).unwrap();
        assert_eq!(written(&gone, |g| g.misses > 0).misses, 1);
        fs::remove_dir_all(&dir).unwrap();
    }
}
