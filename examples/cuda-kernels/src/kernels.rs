//! One `#[lazy_kernel]` declaration per blob: the C signature of the blob's
//! host launcher. The first call of each compiles its blob with `nvcc` (or
//! loads it from the disk cache); every launcher returns a `cudaError_t`
//! (0 on success). Matrices are row-major.
//!
//! These are the raw entry points; [`saxpy`](crate::saxpy),
//! [`softmax_rows`](crate::softmax_rows) and [`sgemm`](crate::sgemm) are the
//! safe API over them.

use std::os::raw::c_int;

use ck_jit_macros::lazy_kernel;

#[lazy_kernel]
extern "C" {
    /// `y = a * x + y` over `n` floats.
    pub fn saxpy_f32(a: f32, x: *const f32, y: *mut f32, n: usize) -> c_int;
    /// Softmax of each row of a `rows x cols` matrix.
    pub fn softmax_f32(input: *const f32, out: *mut f32, rows: usize, cols: usize) -> c_int;
    /// `c = a * b` (`m x k` times `k x n`), 8 x 8 tiles.
    pub fn sgemm_f32_t8(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: usize,
        n: usize,
        k: usize,
    ) -> c_int;
    /// `c = a * b` (`m x k` times `k x n`), 16 x 16 tiles.
    pub fn sgemm_f32_t16(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: usize,
        n: usize,
        k: usize,
    ) -> c_int;
    /// `c = a * b` (`m x k` times `k x n`), 32 x 32 tiles.
    pub fn sgemm_f32_t32(
        a: *const f32,
        b: *const f32,
        c: *mut f32,
        m: usize,
        n: usize,
        k: usize,
    ) -> c_int;
}
