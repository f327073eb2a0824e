//! ck-jit example: CUDA kernels (saxpy, a row softmax, and a tiled sgemm in
//! three tile sizes), each a blob that `nvcc` compiles on its first call.
//!
//! The build records the blobs under `kernels/` and compiles none; the
//! architecture is `CUDA_KERNELS_ARCH` at build time (default `sm_90`).
//!
//! # Device memory
//!
//! Each blob's host launcher manages its own device memory: it allocates
//! (`cudaMalloc`), copies in, launches, copies out, frees, and returns the
//! `cudaError_t` as an int. The Rust side passes host slices and needs no
//! CUDA bindings, so this crate builds and links on machines without CUDA.
//! The price is an allocation and two copies per call, which the benchmark
//! measures along with everything else. A CUDA failure reaches the caller as
//! [`Error::Cuda`] with a [`CudaStatus`]; a missing `nvcc` as [`Error::Jit`]
//! naming `nvcc` and `CK_JIT_NVCC`.
//!
//! Each blob links the CUDA runtime statically (`-cudart static`), so a
//! compiled blob needs only the driver's `libcuda.so.1`.
//!
//! # Choosing a variant by metadata
//!
//! [`sgemm`] picks its tile size with a query over the manifest's metadata
//! (`op`, `tile`, from the file names); see [`choose_tile`].
//!
//! # Moving the tree
//!
//! The manifest records this crate's directory as the root of the blob
//! tree. Where the repository lives elsewhere at run time, set
//! `CK_JIT_ROOT=<repo>/examples/cuda-kernels`.
//!
//! ```no_run
//! let x = vec![1.0f32; 1 << 20];
//! let mut y = vec![2.0f32; 1 << 20];
//! cuda_kernels::saxpy(3.0, &x, &mut y)?; // the first call runs nvcc
//! assert_eq!(y[0], 5.0);
//! # Ok::<(), cuda_kernels::Error>(())
//! ```
#![deny(missing_docs)]

mod error;
pub mod kernels;
mod ops;
pub mod reference;
mod status;

pub use error::Error;
pub use ops::{
    choose_tile, saxpy, sgemm, sgemm_variants, sgemm_with_tile, softmax_rows, SgemmVariant,
};
pub use status::CudaStatus;

ck_jit_rt::embed_manifest!();

/// The GPU architecture the blobs are built for (`CUDA_KERNELS_ARCH` at
/// build time).
pub const ARCH: &str = env!("CUDA_KERNELS_ARCH_USED");

/// The ck-jit runtime over this crate's blobs (for `warmup`, the manifest,
/// the cache directory).
///
/// # Errors
///
/// When the embedded manifest cannot be read.
pub fn runtime() -> Result<&'static ck_jit_rt::Runtime, ck_jit_rt::Error> {
    ck_jit_runtime()
}

/// The blob tree next to the executable (`<repo>/target/<profile>/<exe>` →
/// `<repo>/examples/cuda-kernels`) when the tree recorded at build time is
/// gone and `CK_JIT_ROOT` is not set: for a repository copied to a GPU
/// machine. Call it before the runtime reads its environment and set
/// `CK_JIT_ROOT` to what it returns.
pub fn tree_beside_executable() -> Option<std::path::PathBuf> {
    if std::env::var_os("CK_JIT_ROOT").is_some() {
        return None;
    }
    let recorded = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if recorded.join("kernels").is_dir() {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    let repo = exe.parent()?.parent()?.parent()?;
    let tree = repo.join("examples").join("cuda-kernels");
    tree.join("kernels").is_dir().then_some(tree)
}
