//! ck-jit's CK/aiter half, used from a build script: the fused-attention
//! (FMHA) preset, lazy dispatchers for C++ consumers, and the interception
//! of foreign builds. It writes manifests through `ck-jit-build`'s
//! [`assemble`](ck_jit_build::assemble) module.
//!
//! ```toml
//! [build-dependencies]
//! ck-jit-ck = "0.1"
//! ```
//!
//! A program links one part of it at most: [`rules`], the format of the
//! dispatch rules the build reads out of CK's dispatchers and their
//! evaluator, which needs serde alone, and the crate's one error type,
//! [`Error`]. Everything else sits behind the default `build` feature, so a program that decides by the rules
//! depends on the crate without it and links none of the build machinery:
//!
//! ```toml
//! [dependencies]
//! ck-jit-ck = { version = "0.1", default-features = false }
//! ```
//!
//! What a CK version is made of is read from the version itself, never
//! from a grammar kept here:
//!
//! - `decl` reads the template declarations of the version's headers
//!   (each traits struct's parameter names), the explicit specialisations
//!   each blob defines, and the generator's symbol tables
//!   (`codegen/cpp_symbol_map.py`), and the preprocessor guard around each
//!   blob's specialisations; `vocab` describes each blob from them
//!   (kind, entry, architecture, traits by parameter name), and `guard`
//!   decides which compiles keep a blob's specialisations by the C++
//!   preprocessor's rules ([`cond`] evaluates a condition, [`macros`]
//!   holds what each target's compile has defined);
//! - [`CkFmha`] runs CK's generator for the directions it offers (its
//!   `codegen/ops` modules), with `--targets` where it takes it, reads every
//!   generated file once into one index (kept in `OUT_DIR` for the next
//!   build), and records each blob for the requested targets its
//!   guard admits, one manifest group per kind and set of targets, with the
//!   compile options of the version's CMake (`cmake`);
//! - [`write_stubs`] makes CK's own dispatchers lazy: it defines every
//!   specialisation the blobs define, each resolving its blob through
//!   `ck_jit.h` on first call, after `calls` has checked that every
//!   dispatcher call has a blob;
//! - [`intercept`] runs a build whose compile commands only it knows (aiter's
//!   `compile.py`, CK's CMake) with a fake `hipcc` that records blob
//!   compiles instead of running them, and turns those compiles into a
//!   manifest.
//!
//! Nothing here compiles a blob. The only programs started are CK's
//! generator (by [`CkFmha`]) and, in [`intercept`], the foreign build and,
//! from the fake compiler, the real compiler for host sources.
//!
//! # Environment
//!
//! Every variable read is announced with `cargo:rerun-if-env-changed`
//! (through [`ck_jit_build::CargoOutput::var`]).
//!
//! | variable | used for |
//! |---|---|
//! | `OUT_DIR` | where the generator writes and the manifest goes, unless [`CkFmha::out_dir`] or [`Intercept::out_dir`] is set (set by cargo) |
//! | `CK_JIT_NAME` | cache name, unless set with `name()` |
//! | `PATH`, `ROCM_PATH`, `HIP_PATH`, `ROCM_HOME`, `CXX` | [`intercept`]: where the real `hipcc` is, and what the fake ROCm home mirrors |
//! | `CK_JIT_REAL_HIPCC` | [`intercept`]: the real compiler for host sources, unless set with [`Intercept::real_compiler`] |
//! | `CK_JIT_SHIM_*` | [`intercept`]: set by the interceptor for its fake compiler, read in shim mode only |
#![deny(missing_docs)]
// These docs describe the build side; without it their links have no target.
#![cfg_attr(not(feature = "build"), allow(rustdoc::broken_intra_doc_links))]

mod error;
pub mod rules;

pub use error::Error;

/// Items of the build side (the `build` feature, on by default): what
/// reads CK's tree and drives its generator and compilers.
macro_rules! build_side {
    ($($item:item)*) => { $( #[cfg(feature = "build")] $item )* };
}

build_side! {
    mod admit;
    mod calls;
    mod cmake;
    mod codegen;
    pub mod cond;
    mod config_block;
    mod cpp;
    mod decl;
    mod derived;
    pub mod ffi;
    mod generated;
    mod guard;
    mod index;
    pub mod intercept;
    mod lazy;
    pub mod macros;
    mod objects;
    mod preset;
    mod symbol;
    mod vocab;

    pub use intercept::Intercept;
    pub use lazy::{
        stub_source, write_stubs, CallOrder, Stubs, BLOBS_PER_STUB_FILE,
    };
    pub use generated::{GeneratedFile, Role};
    pub use preset::{
        CkFmha, CkFmhaFiles, AITER_CK_DIR, DEFAULT_ARCH, FMHA_EXAMPLE_DIR, GENERATED_SUBDIR,
    };
    pub use symbol::mangled_template_prefix;
    pub use vocab::{BlobDecl, Vocabulary};

    /// Not public API: internals the workspace's own tests drive directly
    /// (reading a blob's specialisations, checking a dispatcher's calls,
    /// ordering the stubs by those calls, reading what compiled objects
    /// leave undefined), exempt from semver.
    #[doc(hidden)]
    pub mod __private {
        pub use crate::calls::{check_calls, specialisation_key, CallCheck};
        pub use crate::decl::{blob_source, specialisations};
        pub use crate::lazy::stub_source_ordered;
        pub use crate::objects::missing_specialisations;

        /// The [`CallOrder`](crate::CallOrder) of a dispatcher check's
        /// `sequences` ([`CallCheck::sequences`]), with `returns_void(template)`
        /// saying whether a template's specialisations return `void`.
        pub fn call_order(
            sequences: &[Vec<String>],
            returns_void: impl Fn(&str) -> bool,
        ) -> crate::CallOrder {
            crate::CallOrder::new(sequences, returns_void)
        }
    }
}
