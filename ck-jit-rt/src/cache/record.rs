//! The record written beside each object: what an entry is, as a lookup
//! reads it and `ck-jit list` shows it.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::headers::{Dep, HeaderSet};
#[allow(unused_imports)] // named by the documentation
use super::keys::CACHE_FORMAT;

/// The record written beside each object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// [`CACHE_FORMAT`].
    pub format: u32,
    /// Blob name.
    pub blob: String,
    /// Key of the inputs without the compiler's identity.
    pub inputs: String,
    /// Key of the inputs known before compiling.
    pub prekey: String,
    /// Full key (prekey and headers); the object's file stem.
    pub key: String,
    /// Object size in bytes.
    pub size: u64,
    /// BLAKE3 of the object.
    pub checksum: String,
    /// The object's identity once published (`size:mtime:ctime:inode`, as
    /// `stat_string`); while it is unchanged a private cache need not
    /// re-hash the object. Empty: always hash.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub object_stat: String,
    /// Digest of the header set (`deps/<digest>.json`); empty when the
    /// compile read no header (or the record is of format 1).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub depset: String,
    /// Headers the compiler read, with the BLAKE3 of their contents. Not
    /// written into the record (format 2 keeps them in the set named by
    /// [`Record::depset`]); filled in when a record is read.
    #[serde(default, skip_serializing)]
    pub deps: Arc<Vec<Dep>>,
    /// The set [`Record::depset`] names, as a lookup reads it (then
    /// [`Record::deps`] is left empty).
    #[serde(skip)]
    pub(crate) headers: Option<Arc<HeaderSet>>,
    /// The command that produced the object (for `ck-jit list`, logs).
    pub command: Vec<String>,
    /// Seconds since the epoch at publish.
    pub created: u64,
}
