//! The crate's one error type.

use std::fmt;

use ck_jit_rt::SelectError;

/// Why an FMHA operation could not run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// No blob of the family supports what the operation needs: the
    /// runtime's explanation of which constraint let how many blobs
    /// through, and the values it saw instead.
    NoBlob(SelectError),
    /// Blobs support the operation's traits, but none of the smallest head
    /// dimension that covers it handles its shape: each needs an aligned
    /// length or head dimension this call does not have, and no padded
    /// variant exists.
    Shape {
        /// The family searched.
        family: &'static str,
        /// What was asked for.
        query: String,
        /// How many blobs of that head dimension support the traits.
        matched: usize,
        /// Why the best of them does not handle the shape.
        why: String,
    },
    /// The runtime could not compile, load or resolve the chosen blob (or
    /// read the manifest).
    Runtime(ck_jit_rt::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoBlob(e) => e.fmt(f),
            Error::Shape {
                family,
                query,
                matched,
                why,
            } => write!(
                f,
                "ck-fmha: {matched} {family} blobs of the smallest head dimension match {query}, \
                 but none handles this shape: {why}"
            ),
            Error::Runtime(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NoBlob(e) => Some(e),
            Error::Shape { .. } => None,
            Error::Runtime(e) => Some(e),
        }
    }
}

impl From<SelectError> for Error {
    fn from(e: SelectError) -> Error {
        Error::NoBlob(e)
    }
}

impl From<ck_jit_rt::Error> for Error {
    fn from(e: ck_jit_rt::Error) -> Error {
        Error::Runtime(e)
    }
}
