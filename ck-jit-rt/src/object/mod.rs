//! Compiled objects and files read in place: the bytes of an object
//! (read, or mapped when large; [`bytes`]), its ELF symbol table
//! ([`symbol`]), `dlopen` and entry-point resolution ([`load`]), and files
//! mapped for the life of the process ([`mapped`]).
//!
//! Owns: every `mmap` and `dlopen` of the crate.
//!
//! May use: [`error`](crate::error) only. It sits below the cache and the
//! compiler, which both check objects through it.

pub(crate) mod bytes;
pub(crate) mod load;
pub(crate) mod mapped;
pub(crate) mod symbol;
