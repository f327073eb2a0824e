//! Kernels declared from a manifest file (`manifest_file = "..."`): the
//! crate's own manifest does not record them, and the path is relative to
//! this file.
#![deny(warnings, missing_docs)]

use ck_jit_macros::lazy_kernel;

/// Scales by the factor the manifest compiles it with.
#[lazy_kernel(manifest_file = "../fixtures/fallback/ck_jit_manifest.json")]
pub unsafe extern "C" fn fb_scale(x: i32) -> i32;

#[lazy_kernel(manifest_file = "../fixtures/fallback/ck_jit_manifest.json", symbol = "fb_offset")]
extern "C" {
    #[lazy_kernel(blob = "fb_offset")]
    fn offset(x: i32) -> i32;
}

fn main() {
    let _: unsafe fn(i32) -> i32 = fb_scale;
    let _: unsafe fn(i32) -> i32 = offset;
    let _: Option<unsafe extern "C" fn(i32) -> i32> = None::<fb_scale::Fn>;
    assert_eq!(offset::BLOB, "fb_offset");
    assert!(!fb_scale::__SLOT.is_ready());
}
