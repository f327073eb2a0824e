//! Build-script helper for ck-jit: records how to compile each kernel source
//! file (a *blob*) into a manifest in `OUT_DIR`, and compiles none of them.
//! The ck-jit runtime compiles a blob the first time it is called.
//!
//! ```toml
//! [build-dependencies]
//! ck-jit-build = "0.1"
//! ```
//!
//! ```no_run
//! // build.rs
//! use ck_jit_build::{BlobGroup, Build};
//!
//! fn main() {
//!     Build::new()
//!         .group(
//!             BlobGroup::new("vec")
//!                 .glob("kernels/vec_*.cpp")
//!                 .flags(["-O2", "-std=c++17"])
//!                 .include("include")
//!                 .meta_pattern(r"(?P<op>[a-z]+)_(?P<dtype>f32|f64)"),
//!         )
//!         .write();
//! }
//! ```
//!
//! Each file becomes one blob named after its file stem
//! (`kernels/vec_add_f32.cpp` is blob `vec_add_f32`), compiled at run time
//! with `c++ -O2 -std=c++17 -I{root}/include -fPIC -shared {src} -o {out}`
//! and entered through the exported symbol named like the blob. See
//! [`BlobGroup`] for every setting and [`manifest`] for the file format.
//!
//! # Without Rust code: `ck-jit.toml`
//!
//! The same settings can live in a config file, loaded with
//! [`from_config`] or [`Build::config_file`]:
//!
//! ```no_run
//! // in build.rs's main
//! ck_jit_build::from_config("ck-jit.toml").write();
//! ```
//!
//! ```toml
//! name = "my_kernels"          # optional: the cache name
//! root = "."                   # optional: relative to this file's directory (the default)
//! watch = "blob-directories"   # optional: or "crate-sources" (see `Watch`)
//!
//! [[group]]
//! name = "vec"
//! glob = ["kernels/vec_*.cpp"] # or one string; and/or files = ["kernels/x.cpp"]
//! exclude = []                 # a pattern without '/' matches file names anywhere
//! compiler = "c++"
//! flags = ["-O2", "-std=c++17"]
//! include = ["include"]        # relative to root: -I{root}/include
//! define = { USE_FAST = "1", DEBUG = true }   # -DUSE_FAST=1, -DDEBUG (in name order)
//! symbol = { exact = "{name}" }               # or { prefix = "fmha_fwd_" }
//! meta_pattern = '(?P<op>[a-z]+)_(?P<dtype>f32|f64)'
//! meta = { op_kind = "vector" }
//! family = "vec"               # optional: the family (default: the group's name)
//! neutral = { bias = "none" }  # optional: what a query not naming a key holds it to
//! shared = true                # add -fPIC -shared
//! depfile = true               # the compiler takes -MD -MF
//! # also: allow_empty, require_meta_match, cwd, args_template
//! ```
//!
//! Keys are named like the [`BlobGroup`] setters; an unknown key is an
//! error naming it, the file and the line. Explicit setters win over the
//! file's `name` and `root`; the file's groups come after those added with
//! [`Build::group`].
//!
//! # Environment
//!
//! Every variable read is listed here; each one not set by cargo is
//! announced with `cargo:rerun-if-env-changed`.
//!
//! | variable | used for |
//! |---|---|
//! | `CK_JIT_NAME` | cache name, when neither [`Build::name`] nor the config file sets one (default `ck_jit`) |
//! | `OUT_DIR` | where the manifest is written, unless [`Build::out_dir`] is set (set by cargo) |
//! | `CARGO_MANIFEST_DIR` | the tree root, unless [`Build::root`] or the config file's `root` is set (set by cargo) |
//! | `LIBCLANG_PATH`, `LLVM_CONFIG_PATH`, `CLANG_PATH`, `BINDGEN_EXTRA_CLANG_ARGS` | `bindings` (feature `bindgen`): libclang, the `clang` asked for its resource directory, extra clang arguments |
//!
//! The compiler is not taken from `CC`/`CXX`: blobs are not host build
//! artifacts. `CK_JIT_ROOT` and the `CK_JIT_*` variables not listed above
//! are read by the runtime, not here.
//!
//! # What is recorded, and when it is redone
//!
//! The manifest holds the canonical root, the cache name, one argument
//! template per group and one entry per blob (sorted by name); the same tree
//! always gives a byte-identical file, and an unchanged file is not
//! rewritten. Blob contents are not read: the runtime hashes sources when it
//! compiles. The build script therefore only needs to rerun when files are
//! added or removed, so it prints `cargo:rerun-if-changed` for the
//! top-most directories its globs list (and for each config file), never one
//! line per blob. Cargo checks a directory line recursively, so editing a
//! blob also reruns the build script, and cargo recompiles a crate whenever
//! its build script reruns, even though the manifest stays the same.
//! [`Build::watch`]`(`[`Watch::CrateSources`]`)` watches the crate's `src`
//! directory instead of the blob directories: the manifest is then rewritten
//! when the crate is recompiled anyway, and editing a blob recompiles no Rust
//! code (the runtime still recompiles the edited blob at its next first
//! call, since its cache key covers the source); a blob added with no change
//! to the crate's sources is recorded at the next change.
//!
//! A directory holding the cargo target directory (blobs globbed from the
//! package root of a single-crate project) cannot be watched without
//! rerunning every build: its subdirectories and matched files are watched
//! instead, and a `cargo:warning` says that new files directly in it go
//! unnoticed; keeping blobs in a subdirectory avoids this.
//!
//! [`Build`] compiles nothing and starts no program.
//!
//! # CK and aiter
//!
//! CK's fused-attention blobs, CK's dispatchers made lazy and the
//! interception of foreign builds live in the `ck-jit-ck` crate, which
//! assembles and writes its manifests through [`assemble`].
//!
//! # Bindings (feature `bindgen`)
//!
//! With the `bindgen` feature, the `bindings` module generates Rust types
//! with bindgen: `bindings::Launchers` turns a C header of launcher
//! declarations into a `#[lazy_kernel] extern "C" { ... }` block. libclang
//! is loaded at build time from `LIBCLANG_PATH`. Rust copies of CK's
//! structs come from `ck-jit-ck` (`ffi::rust_structs`), which reads them
//! without libclang. Its failures are variants of the crate's one error
//! type, [`Error`], as the manifest builder's are.
//!
//! # Checks
//!
//! The build fails, naming the file or group, on: a file whose stem is not a
//! safe blob name (only ASCII letters, digits, `_`, `-`, `.`; so no spaces,
//! `$`, line breaks or leading `-`), a path that is not UTF-8, a symlink
//! leading outside the root, two files with one stem, one file in two
//! groups, a group that finds no files (unless
//! [`BlobGroup::allow_empty`]), and settings that cannot make a compile
//! command. `-fvisibility=hidden` is always dropped from a group's flags,
//! since it would hide the entry symbol.
#![deny(missing_docs)]

pub mod assemble;
#[cfg(feature = "bindgen")]
pub mod bindings;
mod build;
mod cargo;
mod config;
mod discover;
mod env;
mod error;
mod group;
pub use ck_jit_manifest as manifest;

pub use assemble::write_manifest;
pub use build::{from_config, Build};
pub use cargo::CargoOutput;
pub use config::Watch;
pub use error::{Error, FileProblem, NotAKernel};
pub use group::{BlobFile, BlobGroup};
pub use manifest::Manifest;
