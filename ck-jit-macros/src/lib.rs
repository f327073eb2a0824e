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
//! ```
//! // build.rs records the blobs and writes $OUT_DIR/ck_jit_manifest.json;
//! // `ck_jit_rt::embed_manifest!();` defines the crate's
//! // `__CK_JIT_MANIFEST` static from it. Here a fixture manifest stands in,
//! // compiling C++ blobs with the system `c++`.
//! # static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
//! #     ck_jit_rt::__private::Embedded::from_json_str(r#"{"format":1,"name":"doc_kernels",
//! #     "root":"/nonexistent","groups":[{"name":"vec","compiler":"c++",
//! #     "args":["-O2","-fPIC","-shared","{src}","-o","{out}"],"symbol":{"exact":"{name}"}}],
//! #     "blobs":[{"name":"saxpy_f32","source":"saxpy_f32.cpp","group":0},
//! #     {"name":"vadd_f32","source":"vadd_f32.cpp","group":0},
//! #     {"name":"vmul_f32","source":"vmul_f32.cpp","group":0}]}"#);
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
//! #   let root = std::env::temp_dir().join(format!("ck-jit-macros-doc-{}", std::process::id()));
//! #   std::fs::create_dir_all(&root).unwrap();
//! #   let blob = |name: &str, op: &str| {
//! #       let src = format!("#include <cstddef>\nextern \"C\" void {name}(const float* a, \
//! #           const float* b, float* o, std::size_t n) {{ for (std::size_t i = 0; i < n; ++i) \
//! #           o[i] = a[i] {op} b[i]; }}\n");
//! #       std::fs::write(root.join(format!("{name}.cpp")), src).unwrap();
//! #   };
//! #   blob("vadd_f32", "+");
//! #   blob("vmul_f32", "*");
//! #   // The fixture's root is relocated to the temporary tree, its cache
//! #   // kept beside it; read at the runtime's first use, below.
//! #   std::env::set_var("CK_JIT_ROOT", &root);
//! #   std::env::set_var("CK_JIT_CACHE_DIR", root.join("cache"));
//! #   std::env::remove_var("CK_JIT_OFFLINE");
//! #   std::env::remove_var("CK_JIT_LAUNCHER");
//!     vadd_f32::prepare()?; // compile and load now rather than at the first call
//!     let (a, b, mut out) = ([1.0f32; 4], [2.0f32; 4], [0.0f32; 4]);
//!     // SAFETY: the pointers are valid for `n` elements.
//!     unsafe { vadd_f32(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 4) };
//!     assert_eq!(out, [3.0; 4]);
//!     assert_eq!(mul::BLOB, "vmul_f32");
//! #   // SAFETY: as above.
//! #   unsafe { mul(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 4) };
//! #   assert_eq!(out, [2.0; 4]);
//! #   let _ = std::fs::remove_dir_all(&root);
//!     Ok(())
//! }
//! ```
//!
//! # What it expands to
//!
//! For each declared fn, a wrapper fn and a companion module of the same
//! name (fns and modules live in different namespaces):
//!
//! ```text
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
//!     // Listed for the program at start-up: warming the blob up by name
//!     // (`Runtime::warmup`) resolves this kernel's symbol and fills the slot.
//!     ::ck_jit_rt::__declare!(&__SLOT);
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
//! | `family = "name"` | a family of blobs behind this one signature (see [Families](#families)); excludes `blob` | none |
//! | `symbol = "name"` | the entry point's exact symbol | the manifest's symbol spec |
//! | `symbol_prefix = "prefix"` | the first function symbol starting with this | the manifest's symbol spec |
//! | `manifest = path` | the `Embedded` manifest static | `crate::__CK_JIT_MANIFEST` |
//! | `manifest_file = "path"` | a manifest file: the blob is one only the fallback manifest records (see [Blobs of the fallback manifest](#blobs-of-the-fallback-manifest)) | none |
//!
//! `symbol` and `symbol_prefix` exclude each other, as do `manifest` and
//! `manifest_file`. On an extern block the outer attribute's `symbol`,
//! `symbol_prefix`, `manifest` and `manifest_file` apply to every fn; a
//! `#[lazy_kernel(...)]` on one fn inside the block sets that fn's own
//! `blob` and overrides the others for it.
//!
//! Every declaration is listed for the program when it starts, so a blob
//! warmed up by name (`ck_jit_rt::runtime()?.warmup(&["dot_f32_v2"])`)
//! has the symbols its declarations name resolved, not the manifest's, and
//! their slots filled: the kernels' first calls then compile nothing.
//!
//! # Blobs of the fallback manifest
//!
//! A program can compile blobs that its own manifest does not record: the
//! runtime also looks in the manifest file that `CK_JIT_MANIFEST` names at
//! run time (the fallback manifest; another package's tree, exported with
//! `ck-jit export-manifest`, say). `manifest_file = "path"` declares such a
//! kernel, with `path` a copy of that manifest at build time:
//!
//! ```ignore
//! #[lazy_kernel(manifest_file = "vendor/ck_jit_manifest.json")]
//! pub unsafe extern "C" fn conv2d_f16(args: *const ConvArgs) -> i32;
//! ```
//!
//! - A relative `path` starts from the directory of the file the attribute
//!   is written in, as for `include_str!`.
//! - The blob is looked up in that file at expansion time: a name it does
//!   not record is a compile error naming the file, with the closest names;
//!   an unreadable file is one too. `CK_JIT_CHECK_MANIFEST` does not apply
//!   to these kernels.
//! - The expansion reads the file with `include_bytes!` (into an unused
//!   constant, so nothing of it reaches the binary): cargo rebuilds the crate
//!   when the file changes.
//! - At run time the kernel resolves through the fallback manifest when
//!   `CK_JIT_MANIFEST` is set and records the blob (the deployment decides
//!   where the tree and its manifest are), else through the file at the
//!   absolute path the build read, parsed at the first call.
//!
//! The generated fn, module and signature checks are those of any other
//! kernel. A family needs an embedded manifest, so `family` and
//! `manifest_file` exclude each other.
//!
//! # Families
//!
//! `family = "fwd"` declares one signature shared by every blob of the
//! manifest group `fwd` (CK's hundreds of forward-attention variants, say);
//! which blob runs is chosen at run time by attributes. It goes on a single
//! fn, on a block of one fn, or on one fn inside a block. The query states
//! what an operation needs; each blob's metadata states what its kernel
//! supports.
//!
//! ```
//! # use ck_jit_macros::lazy_kernel;
//! # #[repr(C)] pub struct StreamConfig { pub log_level: i32 }
//! # #[repr(C)] pub struct FmhaFwdArgs { pub seqlen_q: i32 }
//! # static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
//! #     ck_jit_rt::__private::Embedded::from_json_str(r#"{"format":1,"name":"doc_fmha",
//! #     "root":"/nonexistent","groups":[{"name":"fwd","compiler":"hipcc",
//! #     "args":["{src}","-o","{out}"],"symbol":{"prefix":"_Z9fmha_fwd_I"}}],
//! #     "blobs":[
//! #     {"name":"fmha_fwd_d128_bf16","source":"fwd/fmha_fwd_d128_bf16.cpp","group":0,
//! #      "meta":{"dtype":"bf16","hdim":"128","lse":"1"}},
//! #     {"name":"fmha_fwd_d256_bf16","source":"fwd/fmha_fwd_d256_bf16.cpp","group":0,
//! #      "meta":{"dtype":"bf16","hdim":"256","lse":"1"}},
//! #     {"name":"fmha_fwd_d64_bf16","source":"fwd/fmha_fwd_d64_bf16.cpp","group":0,
//! #      "meta":{"dtype":"bf16","hdim":"64","lse":"1"}}]}"#);
//! use ck_jit_rt::Query;
//!
//! #[lazy_kernel(family = "fwd", symbol_prefix = "_Z9fmha_fwd_I")]
//! pub unsafe extern "C" fn fwd(s: *const StreamConfig, a: FmhaFwdArgs) -> f32;
//!
//! fn attention(stream: &StreamConfig, args: FmhaFwdArgs) -> Result<f32, ck_jit_rt::Error> {
//!     // Once per configuration: compares strings, compiles nothing.
//!     let kernel = fwd::select(&Query::new().eq("dtype", "bf16").ge("hdim", 128).has("lse"))?;
//!     // The first call of a blob compiles and loads it; later ones cost one
//!     // acquire load and an indirect call.
//!     // SAFETY: every blob of `fwd` exports this signature.
//!     Ok(unsafe { fwd::call(kernel, stream, args) })
//! }
//! # // Runs the selection only: the blobs are CK's, compiled by hipcc.
//! # fn main() -> Result<(), ck_jit_rt::Error> {
//! # let kernel = fwd::select(&Query::new().eq("dtype", "bf16").ge("hdim", 128).has("lse"))?;
//! # assert_eq!(kernel.name(), "fmha_fwd_d128_bf16");
//! # let _ = attention;
//! # Ok(())
//! # }
//! ```
//!
//! Among the blobs that match, `select` prefers, in order: the query's
//! `prefer_min`/`prefer_max` keys; the tightest fit of each numeric
//! constraint (`hdim >= 128` prefers 128 over 256); the `priority`
//! metadata, higher first; the blob name. See `ck_jit_rt::family` for
//! every constraint. A miss says, per constraint, how many blobs it let
//! through and which values it saw.
//!
//! There is no fn of the family's name, only its module:
//!
//! ```text
//! pub mod fwd {
//!     use super::*;
//!     /// The manifest group.
//!     pub const FAMILY: &str = "fwd";
//!     /// The C signature every blob of the family exports.
//!     pub type Fn = unsafe extern "C" fn(*const StreamConfig, FmhaFwdArgs) -> f32;
//!     /// Marks this family's handles: another family's `Kernel` is another type.
//!     pub enum Family {}
//!     /// A chosen blob: `Copy`, pointing at its slot in the family table.
//!     pub type Kernel = ::ck_jit_rt::Kernel<Family>;
//!     #[doc(hidden)]
//!     pub static __FAMILY: ::ck_jit_rt::__private::FamilySlots<Family> = /* ... */;
//!     ::ck_jit_rt::__declare!(&__FAMILY); // warm-up by name resolves the family's symbol
//!     pub fn blobs() -> Result<::ck_jit_rt::Members<Family>, ::ck_jit_rt::Error>;
//!     pub fn select(query: &::ck_jit_rt::Query) -> Result<Kernel, ::ck_jit_rt::Error>;
//!     pub fn candidates(query: &::ck_jit_rt::Query) -> Result<Vec<Kernel>, ::ck_jit_rt::Error>;
//!     pub fn by_name(blob: &str) -> Result<Kernel, ::ck_jit_rt::Error>;
//!     pub unsafe fn call(kernel: Kernel, __arg0: *const StreamConfig, __arg1: FmhaFwdArgs) -> f32;
//!     pub fn try_get(kernel: Kernel) -> Result<Fn, ::ck_jit_rt::Error>;
//!     pub fn prepare(kernel: Kernel) -> Result<(), ::ck_jit_rt::Error>;
//! }
//! ```
//!
//! `symbol` and `symbol_prefix` apply to every blob of the family (with
//! `{name}` standing for each blob's name). A caller type named like one of
//! the module's own (`Fn`, `Kernel`, `Family`) is reached through
//! `super::`, so it keeps its meaning in the signature.
//!
//! # Checks at expansion time
//!
//! The declaration must be a plain C signature: no generics, no `...`, no
//! `self`, no body, ABI `"C"` or `"C-unwind"`; the single-fn form must be
//! `unsafe`. Every mistake of one attribute is reported together.
//!
//! Blob and family names are looked up in the manifest when one is
//! available, with the closest names suggested for a miss (a family is the
//! name of a blob group):
//!
//! | variable | effect |
//! |---|---|
//! | `CK_JIT_CHECK_MANIFEST` | check every attribute against this manifest file |
//! | `OUT_DIR` (set by cargo) | check attributes using the default manifest against `$OUT_DIR/ck_jit_manifest.json`, when that file exists |
//!
//! Without either the check is skipped and a wrong name is reported by the
//! runtime at the first call. A kernel with `manifest_file` is checked
//! against its own file instead. A manifest file that exists but cannot be
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
    let source_file = proc_macro::Span::call_site().local_file();
    expand::lazy_kernel(args.into(), item.into(), source_file).into()
}
