use ck_jit_macros::lazy_kernel;

// The file is checked on its own, not against CK_JIT_CHECK_MANIFEST.
#[lazy_kernel(manifest_file = "../fixtures/fallback/ck_jit_manifest.json")]
pub unsafe extern "C" fn fb_scal(x: i32) -> i32;

#[lazy_kernel(manifest_file = "../fixtures/fallback/ck_jit_manifest.json")]
extern "C" {
    pub fn fb_offset(x: i32) -> i32;
    #[lazy_kernel(blob = "vadd_f32")]
    pub fn vadd(x: i32) -> i32;
}

fn main() {}
