//! Removing cache entries safely, shared by `clean` and `gc`: never an
//! entry whose compile lock is held (a compile of that prekey is running
//! and may be about to publish or load it), record before object, unlink
//! only (a process that has the object mapped keeps a valid mapping).

use ck_jit_rt::maintenance::{Cache, Entry};
use serde::Serialize;

use crate::error::CliError;

pub use ck_jit_rt::maintenance::{entry_bytes, Removal};

/// Removes `entry` unless a compile of its prekey is running now.
pub fn remove_unless_busy(cache: &Cache, entry: &Entry) -> Result<Removal, CliError> {
    Ok(cache.remove_unless_busy(entry)?)
}

/// One entry in a JSON report.
#[derive(Debug, Serialize)]
pub struct EntryDoc {
    /// The blob.
    pub blob: String,
    /// The object's path.
    pub object: String,
    /// Bytes on disk (object and record).
    pub bytes: u64,
}

impl EntryDoc {
    /// The report of `entry`.
    pub fn new(entry: &Entry, bytes: u64) -> EntryDoc {
        EntryDoc {
            blob: entry.record.blob.clone(),
            object: entry.object.display().to_string(),
            bytes,
        }
    }
}
