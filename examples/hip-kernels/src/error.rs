//! The crate's [`Error`]: a kernel that could not be made ready (ck-jit's
//! error), or a launcher that ran and reported a HIP failure.

use std::fmt;

use crate::status::HipStatus;

/// Why a kernel call did not produce a result.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The kernel's blob could not be compiled, loaded or resolved (hipcc
    /// missing, a compile error, ...); the message says what to do.
    Jit(ck_jit_rt::Error),
    /// The launcher ran and a HIP call in it failed.
    Hip {
        /// The blob whose launcher failed.
        blob: &'static str,
        /// The `hipError_t` it returned.
        status: HipStatus,
    },
    /// Input and output slices differ in length.
    LengthMismatch {
        /// Elements of the input.
        x: usize,
        /// Elements of the output.
        y: usize,
    },
}

impl Error {
    /// The HIP status, when the launcher ran and failed.
    pub fn hip_status(&self) -> Option<HipStatus> {
        match self {
            Error::Hip { status, .. } => Some(*status),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Jit(e) => fmt::Display::fmt(e, f),
            Error::Hip { blob, status } => write!(f, "kernel '{blob}' failed: {status}"),
            Error::LengthMismatch { x, y } => {
                write!(f, "input has {x} elements but output has {y}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Jit(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ck_jit_rt::Error> for Error {
    fn from(e: ck_jit_rt::Error) -> Error {
        Error::Jit(e)
    }
}

/// `Ok` for hipSuccess, else the status as an [`Error::Hip`].
pub(crate) fn check(blob: &'static str, code: i32) -> Result<(), Error> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Hip {
            blob,
            status: HipStatus::from_code(code),
        })
    }
}
