//! The ck-jit runtime's C ABI as a library for C and C++ programs:
//! `libck_jit_capi.a` and `libck_jit_capi.so`, declared by
//! `ck-jit-rt/include/ck_jit.h`.
//!
//! ```sh
//! cargo build --release -p ck-jit-capi
//! c++ -I ck-jit-rt/include main.cpp target/release/libck_jit_capi.a \
//!     -lpthread -ldl -lm -lrt -lutil -lgcc_s
//! CK_JIT_MANIFEST=/path/to/ck_jit_manifest.json ./a.out
//! ```
//!
//! (`rustc --print native-static-libs` lists the system libraries the
//! static library needs on a given target.)
//!
//! It defines nothing itself: the functions are `ck_jit_rt::capi`'s, and
//! the process-wide runtime, environment and errors are as documented
//! there. It is a crate of its own so that building `ck-jit-rt` as a
//! dependency does not also link a static and a shared library.
#![deny(missing_docs)]

pub use ck_jit_rt::capi::{
    ck_jit_last_error, ck_jit_resolve, ck_jit_set_cache_dir, ck_jit_warmup, CkJitFn,
};
