//! Hits, misses, compiles and failures kept per cache across processes
//! (`<cache>/counters.json`), as ccache keeps its statistics: what
//! `ck-jit stat` shows. A process adds to its counts in memory and writes
//! them into the file (under a lock, added to what other processes wrote)
//! after a compile, at most every [`FLUSH_EVERY`] otherwise, and when it
//! exits normally; a process killed before that loses what it had not
//! written. A hit costs no system call.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The file, in the cache root.
pub const COUNTERS_FILE: &str = "counters.json";

/// How long counts may wait in memory while nothing is compiled.
pub const FLUSH_EVERY: Duration = Duration::from_secs(30);

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
}

/// One event counted for a cache.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Event<'a> {
    Hit,
    Miss,
    Compile,
    Failure,
    /// A hit the read-only tier at this path served.
    TierHit(&'a Path),
}

struct Pending {
    counts: CacheCounters,
    shared: bool,
    flushed: Instant,
}

static PENDING: Mutex<BTreeMap<PathBuf, Pending>> = Mutex::new(BTreeMap::new());
static AT_EXIT: Once = Once::new();

/// The hits of the first cache a process counts a hit for, counted with
/// no lock (a process almost always has one cache); moved into
/// [`PENDING`] when counts are written.
struct FastHits {
    root: PathBuf,
    shared: bool,
    hits: AtomicU64,
    /// Milliseconds since [`FastHits::start`] at the last write.
    flushed_ms: AtomicU64,
    start: Instant,
}

static FAST: OnceLock<FastHits> = OnceLock::new();

impl FastHits {
    /// Counts one hit; whether the counts are due to be written.
    fn hit(&self) -> bool {
        self.hits.fetch_add(1, Ordering::Relaxed);
        let now = self.start.elapsed().as_millis() as u64;
        now.saturating_sub(self.flushed_ms.load(Ordering::Relaxed))
            >= FLUSH_EVERY.as_millis() as u64
    }
}

/// Counts `event` for the cache at `root` (`shared`: its files are made
/// group-readable and writable).
pub(crate) fn note(root: &Path, shared: bool, event: Event<'_>) {
    AT_EXIT.call_once(|| {
        // SAFETY: registers a function with no arguments that never unwinds
        // (see `flush_at_exit`).
        unsafe {
            libc::atexit(flush_at_exit);
        }
    });
    if let Event::Hit = event {
        let fast = FAST.get_or_init(|| FastHits {
            root: root.to_path_buf(),
            shared,
            hits: AtomicU64::new(0),
            flushed_ms: AtomicU64::new(0),
            start: Instant::now(),
        });
        if fast.root == root {
            if fast.hit() {
                flush();
            }
            return;
        }
    }
    let due = {
        let Ok(mut pending) = PENDING.lock() else {
            return;
        };
        let p = pending
            .entry(root.to_path_buf())
            .or_insert_with(|| Pending {
                counts: CacheCounters::default(),
                shared,
                flushed: Instant::now(),
            });
        match event {
            Event::Hit => p.counts.hits += 1,
            Event::Miss => p.counts.misses += 1,
            Event::Compile => p.counts.compiles += 1,
            Event::Failure => p.counts.failures += 1,
            Event::TierHit(tier) => {
                p.counts.hits += 1;
                *p.counts
                    .tier_hits
                    .entry(tier.display().to_string())
                    .or_default() += 1;
            }
        }
        matches!(event, Event::Compile) || p.flushed.elapsed() >= FLUSH_EVERY
    };
    if due {
        flush();
    }
}

/// Counts a hit the read-only tier `tier` served, for the writable cache
/// at `root`.
pub(crate) fn note_tier_hit(root: &Path, shared: bool, tier: &Path) {
    note(root, shared, Event::TierHit(tier));
}

/// Writes every cache's pending counts into its file.
pub fn flush() {
    let taken: Vec<(PathBuf, CacheCounters, bool)> = match PENDING.try_lock() {
        Ok(mut pending) => {
            if let Some(fast) = FAST.get() {
                let hits = fast.hits.swap(0, Ordering::Relaxed);
                fast.flushed_ms
                    .store(fast.start.elapsed().as_millis() as u64, Ordering::Relaxed);
                if hits > 0 {
                    let p = pending.entry(fast.root.clone()).or_insert_with(|| Pending {
                        counts: CacheCounters::default(),
                        shared: fast.shared,
                        flushed: Instant::now(),
                    });
                    p.counts.hits += hits;
                }
            }
            pending
                .iter_mut()
                .filter(|(_, p)| !p.counts.is_empty())
                .map(|(root, p)| {
                    p.flushed = Instant::now();
                    (root.clone(), std::mem::take(&mut p.counts), p.shared)
                })
                .collect()
        }
        // Another thread is counting or flushing: its counts go later.
        Err(_) => return,
    };
    for (root, counts, shared) in taken {
        if add_to_file(&root, &counts, shared).is_err() {
            // Not written (a read-only or removed cache): kept for the next
            // flush rather than lost silently twice.
            if let Ok(mut pending) = PENDING.lock() {
                if let Some(p) = pending.get_mut(&root) {
                    p.counts.add(&counts);
                }
            }
        }
    }
}

extern "C" fn flush_at_exit() {
    let _ = std::panic::catch_unwind(flush);
}

fn add_to_file(root: &Path, counts: &CacheCounters, shared: bool) -> std::io::Result<()> {
    let path = root.join(COUNTERS_FILE);
    let mut file = OpenOptions::new()
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
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    // A file cut short by a crash starts the count again.
    let mut total: CacheCounters = serde_json::from_str(&text).unwrap_or_default();
    if total.since == 0 {
        total.since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
    }
    total.add(counts);
    let mut bytes = serde_json::to_vec(&total).map_err(std::io::Error::other)?;
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
        let dir = std::env::temp_dir().join(format!("ck-jit-tally-{}", std::process::id()));
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
}
