use ck_jit_macros::lazy_kernel;

#[lazy_kernel(manifest_file = "../fixtures/no_such_manifest.json")]
extern "C" {
    pub fn fb_scale(x: i32) -> i32;
    pub fn fb_offset(x: i32) -> i32;
}

fn main() {
    // The kernels still exist, so their uses add no errors.
    let _ = fb_scale::prepare;
    let _ = fb_offset::BLOB;
}
