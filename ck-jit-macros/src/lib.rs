//! `#[lazy_kernel]`: declare a kernel blob as a Rust `unsafe fn` that
//! compiles and loads it on first call.
//!
//! A blob is a source file that `ck-jit-build` recorded in the crate's
//! manifest at build time; nothing is compiled then. The attribute turns a
//! C declaration of the blob's entry point into a fn whose first call
//! compiles the blob (unless a cached build is found), loads it and caches
//! the entry point in a static slot. Later calls cost one acquire load and
//! an indirect call.
//!
//! # Example
//!
//! ```ignore
//! // build.rs records the blobs and writes $OUT_DIR/ck_jit_manifest.json;
//! // this defines the crate's `__CK_JIT_MANIFEST` static from it.
//! ck_jit_rt::embed_manifest!();
//!
//! use ck_jit_macros::lazy_kernel;
//!
//! #[lazy_kernel]
//! extern "C" {
//!     /// Adds two vectors of `n` floats into `out`.
//!     pub fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);
//!     #[lazy_kernel(blob = "vmul_f32", symbol_prefix = "vmul")]
//!     pub fn mul(a: *const f32, b: *const f32, out: *mut f32, n: usize);
//! }
//!
//! /// One fn can also stand alone; it must say `unsafe extern "C"`.
//! #[lazy_kernel(blob = "saxpy_f32")]
//! pub unsafe extern "C" fn saxpy(a: f32, x: *const f32, y: *mut f32, n: usize);
//!
//! fn main() -> Result<(), ck_jit_rt::Error> {
//!     vadd_f32::prepare()?; // compile and load now rather than at the first call
//!     let (a, b, mut out) = ([1.0f32; 4], [2.0f32; 4], [0.0f32; 4]);
//!     // SAFETY: the pointers are valid for `n` elements.
//!     unsafe { vadd_f32(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 4) };
//!     assert_eq!(mul::BLOB, "vmul_f32");
//!     Ok(())
//! }
//! ```
//!
//! # What it expands to
//!
//! For each declared fn, a wrapper fn and a companion module of the same
//! name (fns and modules live in different namespaces):
//!
//! ```ignore
//! /// (the fn's own docs, then generated ones)
//! #[inline]
//! pub unsafe fn vadd_f32(__arg0: *const f32, __arg1: *const f32, __arg2: *mut f32, __arg3: usize) {
//!     let __p = vadd_f32::__SLOT.get(); // panics with the runtime's error if it cannot load
//!     let __f: vadd_f32::Fn = unsafe { ::core::mem::transmute::<*const (), vadd_f32::Fn>(__p) };
//!     unsafe { __f(__arg0, __arg1, __arg2, __arg3) }
//! }
//!
//! pub mod vadd_f32 {
//!     use super::*;
//!     /// The blob this kernel is compiled from.
//!     pub const BLOB: &str = "vadd_f32";
//!     /// The kernel's C signature.
//!     pub type Fn = unsafe extern "C" fn(*const f32, *const f32, *mut f32, usize);
//!     #[doc(hidden)]
//!     pub static __SLOT: ::ck_jit_rt::__private::Slot = ::ck_jit_rt::__private::Slot::new(
//!         &crate::__CK_JIT_MANIFEST,
//!         BLOB,
//!         ::ck_jit_rt::__private::SymbolOverride::Manifest,
//!     );
//!     /// Compiles and loads, returning the entry point or the error.
//!     pub fn try_get() -> Result<Fn, ::ck_jit_rt::Error> { /* ... */ }
//!     /// Compiles and loads ahead of the first call.
//!     pub fn prepare() -> Result<(), ::ck_jit_rt::Error> { /* ... */ }
//! }
//! ```
//!
//! `#[cfg]` and doc attributes go on both items, other attributes on the
//! fn. The generated module reaches the caller's names through
//! `use super::*`, so declare kernels at module level (not inside a fn
//! body), and use types the enclosing module can name.
//!
//! # Arguments
//!
//! All are optional.
//!
//! | argument | meaning | default |
//! |---|---|---|
//! | `blob = "name"` | the blob to compile; only on a single fn | the fn's name |
//! | `symbol = "name"` | the entry point's exact symbol | the manifest's symbol spec |
//! | `symbol_prefix = "prefix"` | the first function symbol starting with this | the manifest's symbol spec |
//! | `manifest = path` | the `Embedded` manifest static | `crate::__CK_JIT_MANIFEST` |
//!
//! `symbol` and `symbol_prefix` exclude each other. On an extern block the
//! outer attribute's `symbol`, `symbol_prefix` and `manifest` apply to every
//! fn; a `#[lazy_kernel(...)]` on one fn inside the block sets that fn's
//! own `blob` and overrides the others for it.
//!
//! # Checks at expansion time
//!
//! The declaration must be a plain C signature: no generics, no `...`, no
//! `self`, no body, ABI `"C"` or `"C-unwind"`; the single-fn form must be
//! `unsafe`. Every mistake of one attribute is reported together.
//!
//! Blob names are looked up in the manifest when one is available, with the
//! closest names suggested for a miss:
//!
//! | variable | effect |
//! |---|---|
//! | `CK_JIT_CHECK_MANIFEST` | check every attribute against this manifest file |
//! | `OUT_DIR` (set by cargo) | check attributes using the default manifest against `$OUT_DIR/ck_jit_manifest.json`, when that file exists |
//!
//! Without either the check is skipped and a wrong name is reported by the
//! runtime at the first call. A manifest file that exists but cannot be
//! parsed is a compile error. Cargo does not know that the macro reads
//! `CK_JIT_CHECK_MANIFEST`: changing only the variable rebuilds nothing.
#![deny(missing_docs)]

mod errors;
mod expand;
mod manifest;
mod parse;
mod valid;

use proc_macro::TokenStream;

/// Declares kernels whose blobs compile and load on first call; see the
/// crate documentation.
#[proc_macro_attribute]
pub fn lazy_kernel(args: TokenStream, item: TokenStream) -> TokenStream {
    expand::lazy_kernel(args.into(), item.into()).into()
}
