//! Compiled objects and files read in place: the bytes of an object
//! (read, or mapped when large; [`bytes`]), its ELF symbol table
//! ([`symbol`]), `dlopen` and entry-point resolution ([`load`]), files
//! mapped for the life of the process ([`mapped`]), and small text files
//! written whole or not at all ([`text`]).
//!
//! Owns: every `mmap` and `dlopen` of the crate, and the writing of the
//! cache root's small text files (compiler versions, device memos).
//!
//! May use: [`error`](crate::error) only. It sits below the cache and the
//! compiler, which both check objects through it, and below the GPU
//! targets, which keep their device memo through it.

pub(crate) mod bytes;
pub(crate) mod load;
pub(crate) mod mapped;
pub(crate) mod symbol;
pub(crate) mod text;
