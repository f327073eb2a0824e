//! Removing cache entries safely, shared by `clean` and `gc`: never an
//! entry whose compile lock is held (a compile of that prekey is running
//! and may be about to publish or load it), record before object, unlink
//! only (a process that has the object mapped keeps a valid mapping).

use std::fs;

use ck_jit_rt::maintenance::{Cache, Entry};
use serde::Serialize;

use crate::error::CliError;

/// What happened to one entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// Removed by this call.
    Removed,
    /// Its compile lock is held; left alone.
    Busy,
    /// Already gone (another process removed it).
    Gone,
}

/// Removes `entry` unless a compile of its prekey is running now.
pub fn remove_unless_busy(cache: &Cache, entry: &Entry) -> Result<Removal, CliError> {
    let Some(_lock) = cache.try_lock(&entry.record.blob, &entry.record.prekey)? else {
        return Ok(Removal::Busy);
    };
    Ok(if cache.remove(entry)? {
        Removal::Removed
    } else {
        Removal::Gone
    })
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
