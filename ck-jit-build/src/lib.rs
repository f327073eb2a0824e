//! Build-script helper for ck-jit.
#![deny(missing_docs)]

pub mod manifest;
