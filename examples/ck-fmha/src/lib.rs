//! ck-jit example: ComposableKernel's fused attention (FMHA) as 10,554
//! blobs that the build records and compiles none of, chosen at run time
//! by what an operation needs, each compiled on its first call.
//!
//! The build script runs ck-jit's CK preset over a CK-shaped generated
//! tree (every file one run of CK's FMHA code generator writes, receipt 1,
//! all four directions) and rewrites CK's four dispatchers for C++
//! consumers. This crate is the Rust consumer:
//!
//! - [`kernels`]: one kernel family per blob kind (`fwd`, `fwd_splitkv`,
//!   `fwd_splitkv_combine`, `fwd_appendkv`, `bwd_dot_do_o`, `bwd_dq_dk_dv`,
//!   `bwd_convert_dq`), each with CK's entry signature, to select blobs by
//!   metadata and call them.
//! - [`args`]: CK's argument structs, field for field.
//! - [`dispatch`]: what CK's `*_api.cpp` dispatchers do, in Rust: from
//!   CK's public traits ([`FwdTraits`], [`SplitkvTraits`],
//!   [`AppendkvTraits`], [`BwdTraits`]) and the arguments to the blobs.
//!
//! ```no_run
//! use ck_fmha::{fmha_fwd, DType, FmhaFwdArgs, FwdTraits, Mask, StreamConfig};
//!
//! let traits = FwdTraits { mask: Mask::TopLeft, lse: true, ..FwdTraits::new(DType::Bf16, 128) };
//! let args = FmhaFwdArgs { seqlen_q: 512, seqlen_k: 512, hdim_q: 128, hdim_v: 128, ..Default::default() };
//! // Which blob: compares metadata, compiles nothing.
//! let kernel = traits.select(&args)?;
//! println!("{}", kernel.name()); // fmha_fwd_d128_bf16_batch_..._mask_lse
//! // SAFETY: a real call needs the device pointers of Q, K, V, O and LSE in `args`.
//! let ms = unsafe { fmha_fwd(&traits, args, &StreamConfig::default())? };
//! # Ok::<(), ck_fmha::Error>(())
//! ```
//!
//! The blobs are compiled with `hipcc` (`CK_JIT_HIPCC` names another), for
//! `gfx90a`. Their sources here include the stand-in CK headers under
//! `ck-standin/`, whose kernels record which kernel ran instead of
//! computing attention, so that the example runs without ROCm.
#![deny(missing_docs)]

pub mod args;
pub mod dispatch;
mod error;
pub mod kernels;

use std::path::Path;

pub use args::{
    DropSeedOffset, FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs, FmhaFwdSplitkvArgs, StreamConfig,
};
pub use dispatch::{
    fmha_bwd, fmha_fwd, fmha_fwd_appendkv, AppendkvTraits, Bias, BwdKernels, BwdTraits, DType,
    FwdTraits, Mask, Mode, Rope, SplitkvKernels, SplitkvTraits, VLayout,
};
pub use error::Error;

ck_jit_rt::embed_manifest!();

/// The ck-jit runtime over this crate's blobs (the manifest, the cache
/// directory, `warmup`).
///
/// # Errors
///
/// When the embedded manifest cannot be read.
pub fn runtime() -> Result<&'static ck_jit_rt::Runtime, ck_jit_rt::Error> {
    ck_jit_runtime()
}

/// The generated tree the manifest records (`OUT_DIR/ck_fmha` of the
/// build): the blob sources and CK's four `*_api.cpp` dispatchers.
pub fn generated_dir() -> &'static Path {
    Path::new(concat!(env!("OUT_DIR"), "/ck_fmha"))
}

/// The dispatchers rewritten for C++ consumers (`OUT_DIR/dispatchers`):
/// CK's `fmha_fwd(...)` and the others, each call resolving its blob
/// through ck-jit's C ABI (`ck_jit.h`). Compile them as CK compiles its
/// dispatchers, with `ck-jit-capi/include` on the include path, and link
/// `ck-jit-capi`.
pub fn dispatchers_dir() -> &'static Path {
    Path::new(concat!(env!("OUT_DIR"), "/dispatchers"))
}
