//! Process-wide counters: compiles, cache hits, loads, failures and the
//! time spent compiling and loading. Relaxed atomics, read on demand; never
//! touched on the warm path.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

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
