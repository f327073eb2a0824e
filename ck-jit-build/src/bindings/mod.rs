//! Rust types from C headers, with bindgen (the `bindgen` feature): write
//! a kernel signature once, in C, and let the Rust side follow it.
//!
//! [`Launchers`]: a C header of launcher declarations becomes a
//! `#[lazy_kernel] extern "C" { ... }` block, with the header's types. It
//! writes a file into `OUT_DIR` for the crate to `include!`, and prints
//! `cargo:rerun-if-changed` for every file clang read. Nothing here
//! compiles a kernel; the only program started is a `clang` asked for its
//! resource directory when none lies beside libclang.
//!
//! Rust copies of CK's structs are not made here: `ck-jit-ck`'s
//! `ffi::rust_structs` reads them from the CK tree without libclang.
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
//! library directories). Any libclang from 11 on will do. Without a
//! system one:
//!
//! ```sh
//! pip install libclang==18.1.1
//! export LIBCLANG_PATH=$(python3 -c 'import clang, os; print(os.path.dirname(clang.__file__))')/native
//! ```
//!
//! That wheel carries no clang headers, so the resource directory
//! (`stddef.h`) comes from a `clang` on `PATH` (any version from 11 on;
//! Debian's `clang-15` will do) or from `resource_dir()`. A missing libclang is an
//! [`Error::Libclang`](crate::Error::Libclang) that says
//! this.
//!
//! # Environment
//!
//! | variable | used for |
//! |---|---|
//! | `LIBCLANG_PATH`, `LLVM_CONFIG_PATH` | where libclang is (read by clang-sys) |
//! | `CLANG_PATH`, `PATH` | the `clang` asked for its resource directory |
//! | `BINDGEN_EXTRA_CLANG_ARGS` | more clang arguments (read by bindgen) |
//! | `OUT_DIR` | where `write("file.rs")` writes (set by cargo) |
//!
//! Each is announced with `cargo:rerun-if-env-changed`.

mod clang;
mod generated;
mod launchers;

pub use clang::{libclang, Libclang};
pub use generated::Bindings;
pub use launchers::Launchers;
