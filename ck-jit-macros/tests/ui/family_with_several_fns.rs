use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel(family = "fwd")]
extern "C" {
    pub fn fwd(x: i32) -> i32;
    pub fn fwd_lse(x: i32, lse: *mut f32) -> i32;
}

fn main() {
    // Uses of either still resolve: the mistake is reported once.
    let _ = fwd::select(&ck_jit_rt::Query::new());
    let _ = fwd_lse::FAMILY;
}
