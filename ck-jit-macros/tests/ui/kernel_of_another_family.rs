use ck_jit_macros::lazy_kernel;
use ck_jit_rt::Query;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel(family = "fwd")]
pub unsafe extern "C" fn fwd(x: i32) -> i32;

#[lazy_kernel(family = "vec")]
pub unsafe extern "C" fn vec(x: i32) -> i32;

fn main() {
    let kernel = fwd::select(&Query::new()).unwrap();
    // A handle is tied to its family: this is a type error, not a call of
    // the wrong blob.
    unsafe { vec::call(kernel, 1) };
}
