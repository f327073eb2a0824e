//! The crate's [`Error`]: a kernel that could not be made ready (ck-jit's
//! error: no nvcc, a compile error, ...), a launcher that ran and reported a
//! CUDA failure, or arguments that do not fit.

use std::fmt;

use crate::status::CudaStatus;

/// Why a kernel call did not produce a result.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// The kernel's blob could not be compiled, loaded or resolved; the
    /// message says what to do (for a missing nvcc: set `CK_JIT_NVCC`).
    Jit(ck_jit_rt::Error),
    /// The launcher ran and a CUDA call in it failed.
    Cuda {
        /// The blob whose launcher failed.
        blob: &'static str,
        /// The `cudaError_t` it returned.
        status: CudaStatus,
    },
    /// Slice lengths do not match the sizes given.
    Shape {
        /// What does not fit.
        why: String,
    },
    /// No declared sgemm kernel has this tile size.
    NoTile {
        /// The tile asked for.
        tile: u32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Jit(e) => fmt::Display::fmt(e, f),
            Error::Cuda { blob, status } => write!(f, "kernel '{blob}' failed: {status}"),
            Error::Shape { why } => write!(f, "bad shape: {why}"),
            Error::NoTile { tile } => write!(f, "no sgemm kernel with {tile} x {tile} tiles"),
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

/// `Ok` for cudaSuccess, else the status as an [`Error::Cuda`].
pub(crate) fn check(blob: &'static str, code: i32) -> Result<(), Error> {
    if code == 0 {
        Ok(())
    } else {
        Err(Error::Cuda {
            blob,
            status: CudaStatus::from_code(code),
        })
    }
}
