//! A single bodiless `unsafe extern "C" fn`.
#![deny(warnings, missing_docs)]

use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

/// `y = a * x + y` over `n` floats.
#[lazy_kernel]
pub unsafe extern "C" fn saxpy_f32(a: f32, x: *const f32, y: *mut f32, n: usize);

/// Kept private, with the default symbol and a raw parameter list.
#[lazy_kernel]
unsafe extern "C" fn vadd_f32(_: *const f32, b: *const f32, mut out: *mut f32, n: usize);

fn main() {
    let _: unsafe fn(f32, *const f32, *mut f32, usize) = saxpy_f32;
    let _: unsafe fn(*const f32, *const f32, *mut f32, usize) = vadd_f32;
    let _: Option<unsafe extern "C" fn(f32, *const f32, *mut f32, usize)> = None::<saxpy_f32::Fn>;
    let _ = vadd_f32::prepare;
    assert_eq!(saxpy_f32::BLOB, "saxpy_f32");
    assert_eq!(vadd_f32::BLOB, "vadd_f32");
}
