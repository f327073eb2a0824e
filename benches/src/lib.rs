//! Shared pieces of the ck-jit benchmarks: the kernel the warm-dispatch
//! bench calls through `#[lazy_kernel]`, the name-keyed dispatcher it is
//! compared with, generated blob trees, the probe processes, statistics
//! and the printed report.
//!
//! Every benchmark prints its figure next to a baseline measured in the
//! same run, as a ratio; `BENCHMARKS.md` at the workspace root lists the
//! commands and the latest figures. Nothing here asserts a timing.
#![deny(missing_docs)]

use ck_jit_macros::lazy_kernel;

pub mod argv;
pub mod blobs;
pub mod criterion_estimates;
pub mod fmha;
pub mod named;
pub mod probe;
pub mod report;
pub mod stats;
pub mod workdir;

ck_jit_rt::embed_manifest!();

#[lazy_kernel]
extern "C" {
    /// `x + 1`, from `kernels/add1.c`: small enough that a call measures
    /// the dispatch and nothing else.
    pub fn add1(x: i32) -> i32;
}

/// The runtime over this crate's embedded manifest (the one `add1` uses).
pub fn runtime() -> Result<&'static ck_jit_rt::Runtime, ck_jit_rt::Error> {
    ck_jit_runtime()
}
