//! One `#[lazy_kernel]` declaration per blob of the `family` group: the C
//! signature of the blob's host launcher. The first call of each compiles
//! its blob with `hipcc` (or loads it from the disk cache); every launcher
//! returns a `hipError_t` (0 on success).
//!
//! These are the raw entry points; [`scale_add`](crate::scale_add) and
//! [`sum`](crate::sum) are the safe API over them.

use std::os::raw::c_int;

use ck_jit_macros::lazy_kernel;

use crate::F16;

#[lazy_kernel]
extern "C" {
    /// `y = alpha * x + y` over `n` f32, 64-thread blocks.
    pub fn scale_add_f32_b64(alpha: f32, x: *const f32, y: *mut f32, n: usize) -> c_int;
    /// `y = alpha * x + y` over `n` f32, 256-thread blocks.
    pub fn scale_add_f32_b256(alpha: f32, x: *const f32, y: *mut f32, n: usize) -> c_int;
    /// `y = alpha * x + y` over `n` f16 (computed in f32), 64-thread blocks.
    pub fn scale_add_f16_b64(alpha: f32, x: *const F16, y: *mut F16, n: usize) -> c_int;
    /// `y = alpha * x + y` over `n` f16 (computed in f32), 256-thread blocks.
    pub fn scale_add_f16_b256(alpha: f32, x: *const F16, y: *mut F16, n: usize) -> c_int;
    /// `*out = x[0] + ... + x[n - 1]` over f32, 64-thread blocks.
    pub fn sum_f32_b64(x: *const f32, n: usize, out: *mut f32) -> c_int;
    /// `*out = x[0] + ... + x[n - 1]` over f32, 256-thread blocks.
    pub fn sum_f32_b256(x: *const f32, n: usize, out: *mut f32) -> c_int;
    /// `*out = x[0] + ... + x[n - 1]` over f16 (accumulated in f32),
    /// 64-thread blocks.
    pub fn sum_f16_b64(x: *const F16, n: usize, out: *mut f32) -> c_int;
    /// `*out = x[0] + ... + x[n - 1]` over f16 (accumulated in f32),
    /// 256-thread blocks.
    pub fn sum_f16_b256(x: *const F16, n: usize, out: *mut f32) -> c_int;
}
