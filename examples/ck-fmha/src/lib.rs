//! ck-jit example: ComposableKernel's fused attention (FMHA), the blobs
//! CK's own code generator writes, recorded by the build and compiled none
//! at build time; each is compiled on its first call.
//!
//! The build script runs ck-jit's CK preset over a CK tree (`CK_FMHA_CK`,
//! else the CK of 2025-11 beside the workspace: the four classic
//! directions, receipt 1, `gfx942`) and writes, from that version's own
//! sources, the manifest, the decision of each of CK's dispatchers
//! ([`dispatch`]), the argument and traits structs ([`args`]) and lazy
//! stubs for C++ consumers ([`stubs_dir`]). Nothing in this crate knows a
//! CK version: another CK gives other blobs, rules and structs.
//!
//! - [`kernels`]: one kernel family per blob kind, each with CK's entry
//!   signature.
//! - [`args`]: CK's structs, generated field for field.
//! - [`dispatch`]: CK's `fmha_fwd(traits, args, stream)` and the others, in
//!   Rust, deciding by the rules read from CK's dispatchers.
//!
//! ```no_run
//! use ck_fmha::{fmha_fwd, Device, FmhaFwdArgs, FmhaFwdTraits, StreamConfig};
//!
//! let t = FmhaFwdTraits {
//!     hdim_q: 128,
//!     hdim_v: 128,
//!     data_type: "fp16".into(),
//!     is_v_rowmajor: true,
//!     mask_type: "mask_enum::no_mask".into(),
//!     bias_type: "bias_enum::no_bias".into(),
//!     ..Default::default()
//! };
//! let a = FmhaFwdArgs { seqlen_q: 512, seqlen_k: 512, hdim_q: 128, hdim_v: 128, ..Default::default() };
//! // Which blob: evaluates CK's dispatcher, compiles nothing.
//! let kernel = ck_fmha::select_fwd(&t, &a, &Device::mi300x())?;
//! println!("{}", kernel.name());
//! // SAFETY: a real call needs the device pointers of Q, K, V and O in `a`.
//! let ms = unsafe { fmha_fwd(&t, a, &StreamConfig::default(), &Device::mi300x())? };
//! # Ok::<(), ck_fmha::Error>(())
//! ```
#![deny(missing_docs)]

pub mod args;
pub mod dispatch;
mod error;
pub mod kernels;

use std::path::Path;

pub use args::{
    CkStruct, DropSeedOffset, FmhaBwdArgs, FmhaBwdTraits, FmhaFwdAppendkvArgs,
    FmhaFwdAppendkvTraits, FmhaFwdArgs, FmhaFwdSplitkvArgs, FmhaFwdSplitkvTraits, FmhaFwdTraits,
    StreamConfig,
};
pub use dispatch::{
    fmha_bwd, fmha_fwd, fmha_fwd_appendkv, fmha_fwd_splitkv, select_bwd, select_fwd,
    select_fwd_appendkv, select_fwd_splitkv, BwdKernels, Device, SplitkvKernels,
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

/// The CK tree the build read, or `None` when it found none (then the
/// crate has no blobs).
pub fn ck_tree() -> Option<&'static Path> {
    let tree = env!("CK_FMHA_CK_TREE");
    (!tree.is_empty()).then(|| Path::new(tree))
}

/// The lazy stubs for C++ consumers (`OUT_DIR/stubs`): a definition of
/// every specialisation the blobs define, each compiling and loading its
/// blob through ck-jit's C ABI (`ck_jit.h`) on first call. Compile them
/// with CK's own, unchanged `fmha_*_api.cpp` (as CK compiles those, with
/// `ck-jit-capi/include` on the include path) and link `ck-jit-capi`.
pub fn stubs_dir() -> &'static Path {
    Path::new(concat!(env!("OUT_DIR"), "/stubs"))
}

/// The dispatch rules the build read from CK's dispatchers
/// (`OUT_DIR/rules`).
pub fn rules_dir() -> &'static Path {
    Path::new(concat!(env!("OUT_DIR"), "/rules"))
}
