//! `blob`, `symbol` and `symbol_prefix`, on the attribute and per fn, and
//! the "C-unwind" ABI.
#![deny(warnings)]

use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel(blob = "vadd_f32", symbol = "vadd_entry")]
pub unsafe extern "C-unwind" fn add(a: *const f32, b: *const f32, out: *mut f32, n: usize);

#[lazy_kernel(symbol_prefix = "kernel_")]
extern "C" {
    pub fn vadd_f64(a: *const f64, b: *const f64, out: *mut f64, n: usize);
    #[lazy_kernel(blob = "vmul_f32")]
    pub fn mul(a: *const f32, b: *const f32, out: *mut f32, n: usize);
    #[lazy_kernel(blob = "saxpy_f32", symbol = "saxpy")]
    pub fn saxpy(a: f32, x: *const f32, y: *mut f32, n: usize);
}

#[lazy_kernel]
unsafe extern "C" {
    #[lazy_kernel(blob = "vadd_f32")]
    pub fn abort_on_bad_input(code: i32) -> !;
}

fn main() {
    let _: Option<unsafe extern "C-unwind" fn(*const f32, *const f32, *mut f32, usize)> =
        None::<add::Fn>;
    let _: unsafe fn(i32) -> ! = abort_on_bad_input;
    let _ = (add::prepare, vadd_f64::prepare, mul::prepare, saxpy::prepare);
    assert_eq!(add::BLOB, "vadd_f32");
    assert_eq!(vadd_f64::BLOB, "vadd_f64");
    assert_eq!(mul::BLOB, "vmul_f32");
    assert_eq!(saxpy::BLOB, "saxpy_f32");
    assert_eq!(abort_on_bad_input::BLOB, "vadd_f32");
}
