//! The disk cache: entries ([`entries`], the layout and every rule of
//! publish, lookup and verification), the keys an entry is named by
//! ([`keys`]), the header sets and how a hit checks them ([`headers`]),
//! the fast reader of a record's text ([`record_text`]), the headers a
//! compile read ([`depfile`]), eviction ([`evict`]), the memo of source
//! digests ([`sources`]) and the memo of hits ([`hits`]), both files of
//! one form (`memo_file.rs`), the counters kept per process and per cache
//! ([`counters`]), and the view of a maintenance tool ([`maintenance`]).
//!
//! Owns: everything under a cache root (`v1/`, `deps/`, `sources/`,
//! `hits/`, `compilers/`, `tmp/`, `bad/`, `logs/`, the counters and memory files),
//! how an entry's keys are derived (`keys.rs`), what its record holds
//! (`record.rs`), how the headers a record names are checked and those
//! checks reused (`headers.rs`), a file's identity and content digest
//! (`file_stat.rs`), and how a record's text is read on a hit
//! (`record_text.rs`). Inside the room, each of these uses only the ones
//! before it in the order file_stat, headers, keys, record, record_text,
//! and `entries.rs` uses them all; the memos use only `memo_file.rs`, each
//! other (hits uses sources' rule of when a file has settled) and
//! file_stat, and `entries.rs` uses the memo of hits' entry.
//!
//! May use: [`config`](crate::config), [`error`](crate::error),
//! [`object`](crate::object) (object bytes, ELF checks and the text-file
//! helper) and [`compile`](crate::compile) (the compiler identity a key
//! holds). It never runs a compile or loads an object: the runtime does,
//! and asks the cache before and after.

pub(crate) mod counters;
pub(crate) mod depfile;
mod entries;
pub(crate) mod evict;
mod file_stat;
mod headers;
pub(crate) mod hits;
mod keys;
pub mod maintenance;
mod memo_file;
mod record;
mod record_text;
pub(crate) mod sources;

pub use entries::*;
