//! CK/aiter support: the fused-attention (FMHA) preset, the dispatcher
//! rewrite for C++ consumers, and the interception of foreign builds.
//!
//! - [`CkFmha`] runs CK's FMHA code generator (or takes its output),
//!   classifies every generated file ([`classify`]), parses the traits each
//!   blob's name encodes ([`BlobTraits`]) and records one manifest group per
//!   blob [`Kind`] with CK's compile command and the entry symbol prefix.
//! - [`rewrite_dispatcher`] turns CK's `*_api.cpp` dispatchers into ones
//!   that resolve each blob through ck-jit's C ABI (`ck_jit.h`) on first
//!   call, for C++ consumers that keep calling `fmha_fwd(...)`.
//! - [`intercept`] runs a build whose compile commands only it knows (aiter's
//!   `compile.py`, CK's CMake) with a fake `hipcc` that records blob
//!   compiles instead of running them, and turns the records into a
//!   manifest.
//!
//! # CK facts this module relies on
//!
//! - The generator is `example/ck_tile/01_fmha/generate.py`, taking
//!   `--direction` (`fwd`, `fwd_splitkv`, `fwd_appendkv`, `bwd`),
//!   `--receipt`, `--filter` (fnmatch on kernel names) and `--output_dir`.
//! - A blob specialises one entry template per kind ([`Kind::entry_function`])
//!   for the type its `using trait_0 = <kind>_traits_<...>;` names; the
//!   dispatcher's `using trait_ = ...;` before each call names the same type.
//! - CK's CMake compiles the FMHA sources with
//!   `-Wno-undefined-func-template -fgpu-flush-denormals-to-zero`, plus
//!   `-DCK_TILE_FMHA_FWD_FAST_EXP2=1` for the forward ones, and
//!   `-Wno-float-equal`.
//!
//! Nothing here compiles a blob. The only programs started are CK's
//! generator (by [`CkFmha`]) and, in [`intercept`], the foreign build and,
//! from the fake compiler, the real compiler for host sources.

pub mod calls;
mod cmake;
mod codegen;
mod cpp;
pub mod decl;
mod error;
pub mod intercept;
mod kind;
mod lazy;
mod name;
mod preset;
mod rewrite;
pub mod vocab;

pub use error::Error;
pub use intercept::Intercept;
pub use kind::{classify, mangled_template_prefix, Direction, FileClass, Kind};
pub use lazy::{stub_source, write_stubs, Stubs, BLOBS_PER_STUB_FILE};
pub use name::{Bias, BlobTraits, Mask, Mode, NameError, Pad, Rope, VLayout};
pub use preset::{
    CkFmha, CkFmhaFiles, GeneratedFile, Role, AITER_CK_DIR, DEFAULT_ARCH, FMHA_EXAMPLE_DIR,
    GENERATED_SUBDIR,
};
pub use rewrite::{rewrite_dispatcher, BlobIndex, Rewritten, RewrittenCall};
pub use vocab::{BlobDecl, Vocabulary};
