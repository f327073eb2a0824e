//! An extern block of several kernels: each becomes an `unsafe fn` and a
//! module of the same name.
#![deny(warnings, missing_docs)]

use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel]
extern "C" {
    /// Adds two vectors of `n` floats into `out`.
    pub fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);
    /// Adds two vectors of `n` doubles into `out`, returning a status.
    pub fn vadd_f64(a: *const f64, b: *const f64, out: *mut f64, n: usize) -> i32;
    fn vmul_f32(_: *const f32, _: *const f32, _: *mut f32, _: usize);
}

fn main() {
    let _: unsafe fn(*const f32, *const f32, *mut f32, usize) = vadd_f32;
    let _: unsafe fn(*const f64, *const f64, *mut f64, usize) -> i32 = vadd_f64;
    let _: unsafe fn(*const f32, *const f32, *mut f32, usize) = vmul_f32;

    let _: Option<unsafe extern "C" fn(*const f32, *const f32, *mut f32, usize)> =
        None::<vadd_f32::Fn>;
    let _: Option<unsafe extern "C" fn(*const f64, *const f64, *mut f64, usize) -> i32> =
        None::<vadd_f64::Fn>;
    let _: fn() -> Result<vmul_f32::Fn, ck_jit_rt::Error> = vmul_f32::try_get;
    let _: fn() -> Result<(), ck_jit_rt::Error> = vmul_f32::prepare;

    assert_eq!(vadd_f32::BLOB, "vadd_f32");
    assert_eq!(vadd_f64::BLOB, "vadd_f64");
    assert_eq!(vmul_f32::BLOB, "vmul_f32");
    assert_eq!(vadd_f32::__SLOT.blob(), "vadd_f32");
}
