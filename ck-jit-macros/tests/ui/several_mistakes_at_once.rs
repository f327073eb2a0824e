use ck_jit_macros::lazy_kernel;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

#[lazy_kernel(blob = "vadd_f32", symbol = "entry", symbol_prefix = "vadd", colour = "red")]
extern "system" {
    pub fn add<T>(a: *const T, n: usize);
    pub fn mul(&self, ...);
    static N: usize;
}

fn main() {}
