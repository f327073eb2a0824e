use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel(family = "fwd", blob = "fmha_fwd_d128_bf16")]
pub unsafe extern "C" fn fwd(x: i32) -> i32;

#[lazy_kernel]
extern "C" {
    #[lazy_kernel(family = "fwd", blob = "fmha_fwd_d64_bf16")]
    pub fn fwd_small(x: i32) -> i32;
}

fn main() {}
