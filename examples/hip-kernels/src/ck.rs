//! The CK-shaped blob: `run_<scale_add_traits_<float, 256>>`, a C++
//! template specialisation like a ComposableKernel instance. Its entry point
//! is not `extern "C"`, so its exported name is mangled
//! ([`MANGLED`]); the build records the prefix `_Z4run_I` and the runtime
//! takes the first exported function starting with it.

use std::ffi::c_void;

use ck_jit_macros::lazy_kernel;

use crate::error::Error;
use crate::status::HipStatus;

/// Where to launch and whether to time the kernel (C++ `stream_config`).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct StreamConfig {
    /// The `hipStream_t` (null: the default stream).
    pub stream: *mut c_void,
    /// Whether to time the kernel with HIP events.
    pub time_kernel: bool,
}

/// One call's arguments (C++ `scale_add_args`): host pointers and sizes.
#[derive(Debug, Clone, Copy)]
#[repr(C)]
pub struct ScaleAddArgs {
    /// `n` input elements.
    pub x: *const c_void,
    /// `n` elements, read and overwritten with `alpha * x + y`.
    pub y: *mut c_void,
    /// The scale.
    pub alpha: f32,
    /// Elements.
    pub n: usize,
}

/// The exported name of the specialisation, as `nm -D` shows it.
pub const MANGLED: &str = "_Z4run_I17scale_add_traits_IfLi256EEEfRK13stream_config14scale_add_args";

// The specialisation is a C++ function, not `extern "C"`; its Itanium C++
// ABI is the C ABI here: a reference is a pointer, and a trivially copyable
// struct is passed by value as C passes it.
#[lazy_kernel]
extern "C" {
    /// `run_<scale_add_traits_<float, 256>>(s, a)`: kernel time in ms (0
    /// unless timed), or minus the `hipError_t` of the failing HIP call.
    pub fn run_scale_add_f32_b256(s: *const StreamConfig, a: ScaleAddArgs) -> f32;
}

/// `y = alpha * x + y` through the CK-shaped blob, on the default stream.
/// Returns the kernel time in ms when `time_kernel`, else 0.
///
/// # Errors
///
/// As [`scale_add`](crate::scale_add).
pub fn scale_add_f32(
    alpha: f32,
    x: &[f32],
    y: &mut [f32],
    time_kernel: bool,
) -> Result<f32, Error> {
    if x.len() != y.len() {
        return Err(Error::LengthMismatch {
            x: x.len(),
            y: y.len(),
        });
    }
    run_scale_add_f32_b256::prepare()?;
    let s = StreamConfig {
        stream: std::ptr::null_mut(),
        time_kernel,
    };
    let a = ScaleAddArgs {
        x: x.as_ptr().cast(),
        y: y.as_mut_ptr().cast(),
        alpha,
        n: y.len(),
    };
    // SAFETY: s lives across the call; the launcher reads a.n floats of x
    // and reads and writes a.n of y, which both slices hold.
    let ms = unsafe { run_scale_add_f32_b256(&s, a) };
    if ms < 0.0 {
        Err(Error::Hip {
            blob: run_scale_add_f32_b256::BLOB,
            status: HipStatus::from_code(-ms as i32),
        })
    } else {
        Ok(ms)
    }
}
