//! The runtime: from a blob name to a loaded entry point ([`resolve`]:
//! plan, cache lookup, single-flight compile, publish, load, remembered
//! failures), over a manifest held in one of its forms ([`store`], the
//! embedded one in [`embed`], a manifest file in [`manifest_file`]), with
//! the entry-point slot every declared kernel fills once ([`slot`]) and
//! the list of loaded blobs `CK_JIT_RECORD` asks for ([`blob_list`]).
//!
//! Owns: the process's runtimes, their plans and loaded objects, and the
//! warm path (one acquire load in [`slot`]).
//!
//! May use every room below it: [`config`](crate::config),
//! [`error`](crate::error), [`gpu`](crate::gpu),
//! [`compile`](crate::compile), [`object`](crate::object),
//! [`cache`](crate::cache). Families, declared kernels and packs sit
//! above it and call into it.

pub(crate) mod blob_list;
pub(crate) mod embed;
pub(crate) mod manifest_file;
mod resolve;
pub(crate) mod slot;
pub(crate) mod store;

pub use resolve::*;
