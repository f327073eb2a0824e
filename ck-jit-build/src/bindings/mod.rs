//! Rust types from C and C++ headers, with bindgen (the `bindgen`
//! feature): write a signature or a struct once, in C, and let the Rust
//! side follow it.
//!
//! - [`CkTypes`]: CK's FMHA argument and traits structs (`fmha_fwd_args`,
//!   `fmha_bwd_traits`, ...) and `ck_tile::stream_config`, generated from
//!   the CK tree at hand, so the bindings are always the version's own;
//! - [`Launchers`]: a C header of launcher declarations becomes a
//!   `#[lazy_kernel] extern "C" { ... }` block, with the header's types.
//!
//! Both write a file into `OUT_DIR` for the crate to `include!`, and print
//! `cargo:rerun-if-changed` for every file clang read. Nothing here
//! compiles a kernel; the only program started is a `clang` asked for its
//! resource directory when none lies beside libclang.
//!
//! ```toml
//! [build-dependencies]
//! ck-jit-build = { version = "0.1", features = ["bindgen"] }
//! ```
//!
//! # libclang
//!
//! bindgen parses with libclang, loaded at build time (never linked):
//! where `LIBCLANG_PATH` says (a directory holding `libclang.so`, or the
//! file), else where clang-sys looks (`llvm-config --libdir`, the system's
//! library directories). CK's headers need libclang 17 or newer; Debian
//! 12's libclang 14 rejects their `static_assert(false)`. Without a
//! system one:
//!
//! ```sh
//! pip install libclang==18.1.1
//! export LIBCLANG_PATH=$(python3 -c 'import clang, os; print(os.path.dirname(clang.__file__))')/native
//! ```
//!
//! That wheel carries no clang headers, so the resource directory
//! (`stddef.h`, the HIP wrapper headers) comes from a `clang` on `PATH`
//! (any version from 11 on; Debian's `clang-15` will do) or from
//! `resource_dir()`. A missing libclang is an [`Error::Libclang`] that says
//! this.
//!
//! # Environment
//!
//! | variable | used for |
//! |---|---|
//! | `LIBCLANG_PATH`, `LLVM_CONFIG_PATH` | where libclang is (read by clang-sys) |
//! | `CLANG_PATH`, `PATH` | the `clang` asked for its resource directory |
//! | `ROCM_PATH`, `HIP_PATH` | [`CkTypes`]: where HIP's headers are, unless `hip_include()` says |
//! | `BINDGEN_EXTRA_CLANG_ARGS` | more clang arguments (read by bindgen) |
//! | `OUT_DIR` | where `write("file.rs")` writes (set by cargo) |
//!
//! Each is announced with `cargo:rerun-if-env-changed`.

mod ck;
mod clang;
mod error;
mod generated;
mod items;
mod launchers;

pub use ck::CkTypes;
pub use clang::{libclang, Libclang};
pub use error::Error;
pub use generated::Bindings;
pub use items::{BoundField, BoundStruct};
pub use launchers::Launchers;
