//! The crate's one error type.

use std::fmt;

/// Why an FMHA operation could not run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// A blob the dispatch rules name is not one of the family's (the
    /// manifest and the rules were not written from the same tree).
    NoBlob(ck_jit_rt::Error),
    /// CK's dispatcher calls no blob for this operation (the C++ returns
    /// -1): no kernel of this build supports it.
    NoKernel {
        /// The dispatcher function.
        dispatcher: String,
        /// The operation's traits.
        operation: String,
    },
    /// The dispatch rules could not be read or evaluated (a condition
    /// needing a value this crate does not give, a malformed rules file).
    Rules(String),
    /// The runtime could not compile, load or resolve the chosen blob (or
    /// read the manifest).
    Runtime(ck_jit_rt::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoBlob(e) => e.fmt(f),
            Error::NoKernel {
                dispatcher,
                operation,
            } => write!(
                f,
                "CK's {dispatcher} calls no kernel for {operation} (this build's blobs \
                 do not support it)"
            ),
            Error::Rules(why) => write!(f, "dispatch rules: {why}"),
            Error::Runtime(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::NoBlob(e) => Some(e),
            Error::NoKernel { .. } | Error::Rules(_) => None,
            Error::Runtime(e) => Some(e),
        }
    }
}

impl From<ck_jit_rt::Error> for Error {
    fn from(e: ck_jit_rt::Error) -> Error {
        Error::Runtime(e)
    }
}
