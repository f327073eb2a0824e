//! The cache as a maintenance tool sees it: what is in it, whether each
//! entry is intact, and how to remove one without disturbing a compile in
//! progress. The `ck-jit` command-line tool is built on this module and
//! [`Runtime::ensure`](crate::Runtime::ensure) alone.
//!
//! Nothing here computes a key or writes an entry: entries are made only by
//! the runtime's own cold path (and installed from a pack by `pack`, which
//! publishes them the same way), so an entry pre-built by a tool is
//! exactly the one a lazy call loads.

pub use crate::cache::counters::{
    flush as flush_counters, read as read_counters, CacheCounters, COUNTERS_FILE,
};
pub use crate::cache::evict::{entry_bytes, Eviction, Removal};
pub use crate::cache::{
    default_dir, Cache, Dep, Entry, InputsKey, Key, LockGuard, ObjectBytes, Prekey, Record,
    CACHE_FORMAT, CHECK_REUSE, DEPSET_GRACE, TOUCH_EVERY,
};
pub use crate::compile::memory::{
    Estimates as MemoryEstimates, Learnt as LearntMemory, MEMORY_FILE,
};
#[doc(inline)]
pub use crate::config::{parse_size, Limits};

/// The memory estimates learnt per group in the cache at `root`
/// (`memory.json`); none when it is missing or cannot be read.
pub fn read_memory_estimates(root: &std::path::Path) -> MemoryEstimates {
    MemoryEstimates::load(root)
}
