//! The dispatcher design of the C++ runtime ck-jit replaces, kept here as
//! the warm-dispatch bench's comparison: every call looks its kernel up by
//! name in a hash map behind a reader-writer lock, passes a once-check
//! (`std::call_once` there, [`OnceLock`] here), then calls through the
//! pointer it finds.
//!
//! It mirrors that design and adds nothing to it: the map's values are
//! stable references (node-based `std::unordered_map` entries there, leaked
//! boxes here) so the lock is held only for the lookup. It is a bench
//! fixture, never a way to call kernels.

use std::collections::HashMap;
use std::sync::{OnceLock, RwLock};

/// What is loaded for one kernel name: its address, once.
#[derive(Debug, Default)]
struct KernelState {
    entry: OnceLock<usize>,
}

/// A name-keyed dispatcher: `get(name)` costs a string hash, a read lock
/// and a once-check on every call.
pub struct NamedDispatcher {
    states: RwLock<HashMap<String, &'static KernelState>>,
    load: Box<dyn Fn(&str) -> *const () + Send + Sync>,
}

impl std::fmt::Debug for NamedDispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NamedDispatcher").finish_non_exhaustive()
    }
}

impl NamedDispatcher {
    /// A dispatcher that loads a kernel with `load(name)` on its first use.
    pub fn new(load: impl Fn(&str) -> *const () + Send + Sync + 'static) -> NamedDispatcher {
        NamedDispatcher {
            states: RwLock::new(HashMap::new()),
            load: Box::new(load),
        }
    }

    /// The entry point of `name`: lookup under the read lock (inserting
    /// under the write lock the first time), then the once-check.
    #[inline]
    pub fn get(&self, name: &str) -> *const () {
        let found = {
            let map = self.states.read().unwrap_or_else(|e| e.into_inner());
            map.get(name).copied()
        };
        let state = match found {
            Some(s) => s,
            None => self.insert(name),
        };
        *state.entry.get_or_init(|| (self.load)(name) as usize) as *const ()
    }

    #[cold]
    fn insert(&self, name: &str) -> &'static KernelState {
        let mut map = self.states.write().unwrap_or_else(|e| e.into_inner());
        map.entry(name.to_string())
            .or_insert_with(|| Box::leak(Box::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" fn twice(x: i32) -> i32 {
        2 * x
    }

    #[test]
    fn loads_each_name_once_and_returns_its_entry() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static LOADS: AtomicUsize = AtomicUsize::new(0);
        let d = NamedDispatcher::new(|name| {
            assert_eq!(name, "twice");
            LOADS.fetch_add(1, Ordering::SeqCst);
            twice as *const ()
        });
        for x in 0..3 {
            // SAFETY: the entry is `twice`, an `extern "C" fn(i32) -> i32`.
            let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(d.get("twice")) };
            assert_eq!(f(x), 2 * x);
        }
        assert_eq!(LOADS.load(Ordering::SeqCst), 1);
    }
}
