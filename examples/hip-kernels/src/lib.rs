//! ck-jit example: a family of HIP kernels, each a blob that `hipcc`
//! compiles on its first call.
//!
//! Two operations (`scale_add`: `y = alpha * x + y`, and `sum`) in two
//! element types (`f32`, [`F16`]) and two block sizes ([`Block`]), one
//! blob per combination under `kernels/`, plus a blob shaped like a
//! ComposableKernel instance ([`ck`]). The build records them and compiles
//! none; `HIP_KERNELS_ARCHS` (read at build time, default `gfx90a`) sets
//! the GPU architectures they are built for.
//!
//! Each blob exports a host launcher that allocates device memory, copies,
//! launches, copies back and returns its `hipError_t`. A failure reaches the
//! caller as [`Error::Hip`] carrying a [`HipStatus`] (code, name, meaning);
//! on a machine without an AMD GPU every call compiles, loads, runs and
//! returns `hipErrorInvalidDevice` (101).
//!
//! ```no_run
//! use hip_kernels::{scale_add, Block, Error};
//!
//! let x = vec![1.0f32; 1000];
//! let mut y = vec![2.0f32; 1000];
//! match scale_add(Block::B256, 3.0, &x, &mut y) {
//!     Ok(()) => assert_eq!(y[0], 5.0),
//!     Err(Error::Hip { status, .. }) if status.is_no_device() => eprintln!("no GPU: {status}"),
//!     Err(e) => panic!("{e}"),
//! }
//! ```
#![deny(missing_docs)]

pub mod ck;
mod error;
mod f16;
pub mod kernels;
mod ops;
mod status;

pub use error::Error;
pub use f16::F16;
pub use ops::{scale_add, sum, variants, Block, Element, Variant};
pub use status::HipStatus;

ck_jit_rt::embed_manifest!();

/// The GPU architectures the blobs are built for (`HIP_KERNELS_ARCHS` at
/// build time, comma-separated).
pub const ARCHS: &str = env!("HIP_KERNELS_ARCHS_USED");

/// The ck-jit runtime over this crate's blobs (for `warmup`, the manifest,
/// the cache directory).
///
/// # Errors
///
/// When the embedded manifest cannot be read.
pub fn runtime() -> Result<&'static ck_jit_rt::Runtime, ck_jit_rt::Error> {
    ck_jit_runtime()
}
