//! Keeping the cache within a size or entry limit: least recently used
//! entries go first. `ck-jit gc` runs it on demand; the runtime runs it
//! after each publish when `CK_JIT_CACHE_MAX_SIZE` or
//! `CK_JIT_CACHE_MAX_ENTRIES` is set, so a cache stays bounded without a
//! cron job.
//!
//! Last use is the record's modification time (refreshed on a cache hit
//! at most hourly). Safe under concurrent use: an entry whose compile lock
//! is held is skipped; removal unlinks the record and then the object,
//! never truncating, so a process that has the object loaded keeps a valid
//! mapping and the entry point it took from it.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

use crate::cache::{Cache, Entry};
use crate::config::Limits;
use crate::error::Error;

/// What an eviction found and did.
#[derive(Debug, Default)]
pub struct Eviction {
    /// Entries before.
    pub entries_before: u64,
    /// Bytes before.
    pub bytes_before: u64,
    /// Entries after.
    pub entries_after: u64,
    /// Bytes after.
    pub bytes_after: u64,
    /// The entries removed (or that would be, in a dry run), with their
    /// bytes, least recently used first.
    pub removed: Vec<(Entry, u64)>,
    /// Entries that would have gone but a compile of them was running.
    pub busy: usize,
}

impl Eviction {
    /// Whether the cache is within `limits` now.
    pub fn within(&self, limits: &Limits) -> bool {
        !limits.exceeded(self.entries_after, self.bytes_after)
    }
}

/// Bytes an entry takes on disk: its object and its record.
pub fn entry_bytes(entry: &Entry) -> u64 {
    let object = fs::symlink_metadata(&entry.object)
        .map(|m| m.len())
        .unwrap_or(entry.record.size);
    let record = fs::symlink_metadata(&entry.record_path)
        .map(|m| m.len())
        .unwrap_or(0);
    object + record
}

/// What happened to one entry a removal was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Removed by this call.
    Removed,
    /// Its compile lock is held; left alone.
    Busy,
    /// Already gone (another process removed it).
    Gone,
}

impl Cache {
    /// Removes `entry` unless a compile of its prekey is running now.
    pub fn remove_unless_busy(&self, entry: &Entry) -> Result<Removal, Error> {
        let Some(_lock) = self.try_lock(&entry.record.blob, &entry.record.prekey)? else {
            return Ok(Removal::Busy);
        };
        Ok(if self.remove(entry)? {
            Removal::Removed
        } else {
            Removal::Gone
        })
    }

    /// Removes least recently used entries until the cache is within
    /// `limits` (or only busy entries and `spare` are left). `spare`, a
    /// record path, is never removed (the entry a publish just made).
    /// With `dry_run`, reports what would go and removes nothing.
    pub fn evict(
        &self,
        limits: &Limits,
        spare: Option<&Path>,
        dry_run: bool,
    ) -> Result<Eviction, Error> {
        let mut entries: Vec<(SystemTime, u64, Entry)> = self
            .entries()
            .into_iter()
            .map(|e| {
                let used = self.last_used(&e).unwrap_or(SystemTime::UNIX_EPOCH);
                (used, entry_bytes(&e), e)
            })
            .collect();
        // Least recently used first; ties broken by path so runs repeat.
        entries.sort_by(|a, b| {
            a.0.cmp(&b.0)
                .then_with(|| a.2.record_path.cmp(&b.2.record_path))
        });
        let mut ev = Eviction {
            entries_before: entries.len() as u64,
            bytes_before: entries.iter().map(|e| e.1).sum(),
            ..Eviction::default()
        };
        ev.entries_after = ev.entries_before;
        ev.bytes_after = ev.bytes_before;
        for (_, size, e) in entries {
            if !limits.exceeded(ev.entries_after, ev.bytes_after) {
                break;
            }
            if spare == Some(e.record_path.as_path()) {
                continue;
            }
            let outcome = if dry_run {
                Removal::Removed
            } else {
                self.remove_unless_busy(&e)?
            };
            match outcome {
                Removal::Removed => ev.removed.push((e, size)),
                Removal::Busy => {
                    ev.busy += 1;
                    continue;
                }
                // Someone else removed it: it no longer counts either way.
                Removal::Gone => {}
            }
            ev.entries_after -= 1;
            ev.bytes_after -= size;
        }
        if !dry_run && !ev.removed.is_empty() {
            // Header sets no remaining record names (old enough that no
            // publish in progress is about to name one).
            self.sweep_depsets(crate::cache::DEPSET_GRACE);
        }
        Ok(ev)
    }
}
