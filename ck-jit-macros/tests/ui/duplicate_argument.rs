use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel(blob = "vadd_f32", blob = "vadd_f64")]
pub unsafe extern "C" fn add(a: *const f32, b: *const f32, out: *mut f32, n: usize);

fn main() {}
