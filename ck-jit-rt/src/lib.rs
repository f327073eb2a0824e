//! The ck-jit runtime: compiles a kernel blob the first time it is called,
//! caches the object on disk, loads it, and from then on costs one pointer
//! load per call.
//!
//! A crate using ck-jit records its blobs in `build.rs` with
//! [`ck-jit-build`](https://docs.rs/ck-jit-build), embeds the manifest with
//! [`embed_manifest!`], and declares kernels with `#[lazy_kernel]`:
//!
//! ```ignore
//! ck_jit_rt::embed_manifest!();
//!
//! #[ck_jit_macros::lazy_kernel]
//! extern "C" {
//!     pub fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);
//! }
//!
//! // First call: compile (or load from the disk cache), then call.
//! unsafe { vadd_f32(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), n) };
//! // Fallible form, and ahead-of-time preparation:
//! vadd_f32::prepare()?;
//! // Or many blobs at once, by name, on the runtime the kernels use:
//! ck_jit_rt::runtime()?.warmup(&["vadd_f32"]);
//! ```
//!
//! # Layout
//!
//! The crate is in rooms by concept. Each room is a folder whose module
//! doc says what it owns and what it may use; a room uses only rooms
//! listed below it here, never one above (the `structure` test checks
//! this), so a reader can start at the bottom:
//!
//! - `error` — [`Error`], every message the runtime gives;
//! - [`config`] — every environment variable, read once, and the values
//!   they parse into (the architecture names `CK_JIT_ARCH` takes);
//! - `object` — compiled objects: their bytes (read, or mapped), their
//!   ELF symbols, `dlopen`, files mapped for the life of the process, and
//!   the small text files kept beside a cache (written whole or not at all);
//! - `compile` — finding, identifying and running compilers (launchers
//!   included), as many at once as cores and memory allow;
//! - `gpu` — the GPU targets of a compile command ([`arch`]), narrowed
//!   to the device in use (found once per process);
//! - `cache` — entries, header sets, the source memo, eviction, the
//!   counters per process and per cache, and the view of a maintenance
//!   tool ([`maintenance`]);
//! - `runtime` — [`Runtime`]: from a blob name to a loaded entry point
//!   (single flight, remembered failures, [`warmup`], [`freeze`],
//!   [`stats`]), over a manifest embedded or read from a file, and the
//!   entry-point slot every declared kernel fills once;
//! - [`family`] — kernel families selected by attributes ([`Query`]);
//! - `declared` — the kernels the program declares, listed when it
//!   starts: warming a blob up by name ([`Runtime::warmup`], written
//!   there) resolves the symbols they name, and [`runtime()`] finds the
//!   manifest they use;
//! - `pack` (feature `pack`) — the entries of a selection as one archive
//!   to ship (`ck-jit pack`), checked and installed into another cache
//!   (`ck-jit unpack`).
//!
//! [`manifest`] is the `ck-jit-manifest` crate, shared with the build
//! helper and the macro.
//!
//! The C ABI (`ck_jit.h`) for C++ consumers is the `ck-jit-capi` crate;
//! nothing of it is compiled into a program that only links this one.
//!
//! # Environment
//!
//! See [`config`] for every variable: `CK_JIT_CACHE_DIR`, `CK_JIT_CACHE_PATH`, `CK_JIT_ROOT`,
//! `CK_JIT_MANIFEST`, `CK_JIT_VERBOSE`, `CK_JIT_OFFLINE`, `CK_JIT_JOBS`,
//! `CK_JIT_JOB_MEMORY`, `CK_JIT_MEMORY_BUDGET`, `CK_JIT_SHARED_CACHE`, `CK_JIT_LAUNCHER`, `CK_JIT_COMPILE_TIMEOUT`,
//! `CK_JIT_LOCK_TIMEOUT`, `CK_JIT_CACHE_MAX_SIZE`, `CK_JIT_ARCH`,
//! `CK_JIT_<PROGRAM>`; and make's or cargo's jobserver (`MAKEFLAGS`,
//! `CARGO_MAKEFLAGS`), whose slots compiles take as well.
#![deny(missing_docs)]

// Objects are ELF and loaded with dlopen, the cache is locked with flock,
// and a shared cache's objects are loaded through /proc/self/fd.
#[cfg(not(target_os = "linux"))]
compile_error!("ck-jit-rt supports Linux only (ELF objects, flock, /proc/self/fd)");

mod cache;
mod compile;
pub mod config;
mod declared;
mod error;
pub mod family;
mod fixed_hash;
mod gpu;
mod object;
#[cfg(feature = "pack")]
pub mod pack;
mod path_bytes;
mod runtime;

pub use cache::maintenance;
pub use gpu::arch;

pub use cache::counters::Stats;
pub use ck_jit_manifest as manifest;
#[doc(inline)]
pub use config::CompilerCheck;
pub use declared::runtime;
pub use error::{shell_quote, Conflict, Error, Kill};
pub use family::{Kernel, Member, Members, NoMatch, Query, Selector, Step};
pub use object::bytes::ObjectBytes;
pub use object::load::Loaded;
pub use runtime::{
    fallback, freeze, frozen_reason, jobs, set_jobs, stats, unfreeze, Outcome, Plan, Runtime,
};

/// Internals that the workspace's tests, benchmarks and fuzz targets
/// exercise directly; not part of the API, may change at any time.
#[doc(hidden)]
pub mod __internals {
    pub use crate::cache::depfile::parse as parse_depfile;
    pub use crate::cache::{forget_checks, safe_component};
    pub use crate::compile::{
        expand, find_program, forget_identities, identify, normalise_args, split_for_launcher,
        wrapped_files, CompilerId, TAIL_BYTES,
    };
    pub use crate::gpu::device::{amd as amd_device, detect as detect_device, gfx_name, KFD_NODES};
    pub use crate::object::symbol::{
        candidate_names, check_header, dynamic_symbols, find_prefix, function_names, pick_prefix,
        DynSym, ElfError, HOST_MACHINE,
    };
}

/// Items used by code that `#[lazy_kernel]` and [`embed_manifest!`]
/// generate; not a stable API.
#[doc(hidden)]
pub mod __private {
    pub use crate::declared::{Declaration, Declared};
    pub use crate::error::Error;
    pub use crate::family::FamilySlots;
    pub use crate::runtime::embed::Embedded;
    pub use crate::runtime::slot::{Slot, SymbolOverride};
}

/// Embeds the manifest that `ck-jit-build` wrote into `OUT_DIR`, as the
/// static `__CK_JIT_MANIFEST` that `#[lazy_kernel]` uses, and defines
/// `ck_jit_runtime()` returning the runtime over it (for `warmup`, `plan`,
/// ...). Call it once at the crate root. Outside the crate, [`runtime()`]
/// returns the same runtime when the program embeds this one manifest.
#[macro_export]
macro_rules! embed_manifest {
    () => {
        #[doc(hidden)]
        pub(crate) static __CK_JIT_MANIFEST: $crate::__private::Embedded =
            $crate::__private::Embedded::from_compact(::core::include_bytes!(::core::concat!(
                ::core::env!("OUT_DIR"),
                "/ck_jit_manifest.ckm"
            )));

        $crate::__declare!(&__CK_JIT_MANIFEST);

        /// The ck-jit runtime over this crate's embedded manifest.
        #[allow(dead_code)]
        pub(crate) fn ck_jit_runtime(
        ) -> ::core::result::Result<&'static $crate::Runtime, $crate::Error> {
            __CK_JIT_MANIFEST.runtime()
        }
    };
}

/// Compiles and loads `blobs` of a runtime in parallel; see
/// [`Runtime::warmup`].
pub fn warmup(rt: &Runtime, blobs: &[&str]) -> Vec<(String, Result<(), Error>)> {
    rt.warmup(blobs)
}
