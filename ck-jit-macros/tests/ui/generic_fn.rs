use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel]
pub unsafe extern "C" fn vadd_f32<T>(a: *const T, b: *const T, out: *mut T, n: usize);

fn main() {}
