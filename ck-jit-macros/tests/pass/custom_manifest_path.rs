//! `manifest = path` in every form, and kernels in nested modules whose
//! signatures use `self::` and `super::` paths.
#![deny(warnings)]

use ck_jit_macros::lazy_kernel;

mod manifests {
    pub static KERNELS: ck_jit_rt::__private::Embedded =
        ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));
}

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[repr(C)]
pub struct Params {
    pub n: usize,
}

#[lazy_kernel(manifest = crate::manifests::KERNELS)]
pub unsafe extern "C" fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);

mod nested {
    use ck_jit_macros::lazy_kernel;

    static LOCAL: ck_jit_rt::__private::Embedded =
        ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

    #[repr(C)]
    pub struct Local(pub f32);

    #[lazy_kernel(manifest = LOCAL)]
    extern "C" {
        pub fn vadd_f32(a: *const Local, p: *const super::Params) -> self::Local;
    }

    #[lazy_kernel(manifest = self::LOCAL)]
    pub unsafe extern "C" fn vadd_f64(p: &super::Params, out: Option<&mut [f64; 4]>);

    #[lazy_kernel(manifest = super::manifests::KERNELS)]
    pub unsafe extern "C" fn vmul_f32(p: *const crate::Params);

    /// The crate's default manifest from a nested module.
    #[lazy_kernel]
    pub unsafe extern "C" fn saxpy_f32(a: f32, x: *const f32, y: *mut f32, n: usize);
}

fn main() {
    let _: unsafe fn(*const f32, *const f32, *mut f32, usize) = vadd_f32;
    let _: unsafe fn(*const nested::Local, *const Params) -> nested::Local = nested::vadd_f32;
    let _: unsafe fn(&Params, Option<&mut [f64; 4]>) = nested::vadd_f64;
    let _: unsafe fn(*const Params) = nested::vmul_f32;
    let _: unsafe fn(f32, *const f32, *mut f32, usize) = nested::saxpy_f32;
    assert_eq!(Params { n: 4 }.n, 4);
    assert_eq!(nested::Local(1.0).0, 1.0);
    assert_eq!(nested::vadd_f64::BLOB, "vadd_f64");
}
