//! CK 2025-11's own forward dispatcher, its lazy stubs and the C glue of
//! `ck_jit_ck::ffi`, compiled into this crate by its build script
//! (see there); Rust calls `ck_jit_fmha_fwd`, CK's `fmha_fwd` picks the
//! blob, and ck-jit compiles it on its first call.

#![allow(non_camel_case_types, missing_docs)]

use std::ffi::{c_char, c_void};
use std::ptr;

ck_jit_rt::embed_manifest!();

/// Why the dispatcher is not compiled in, or empty when it is.
pub const SKIP: &str = env!("CK_DISPATCH_SKIP");

/// CK's dropout seed and offset (`std::variant` of two pairs): not used by
/// this crate's calls, laid out as libstdc++ lays the variant out.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DropSeedOffset {
    values: [u64; 2],
    index: u8,
}

impl DropSeedOffset {
    /// The (seed, offset) alternative.
    pub fn values(seed: u64, offset: u64) -> DropSeedOffset {
        DropSeedOffset {
            values: [seed, offset],
            index: 0,
        }
    }
}

#[allow(dead_code)]
const _USED: (fn() -> *const c_void, *const c_char) = (ptr::null, ptr::null());

include!(concat!(env!("OUT_DIR"), "/ck_jit_glue.rs"));

/// Makes this crate's embedded manifest the one the stubs resolve blobs
/// through (once per process).
pub fn register() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let rt = ck_jit_runtime().expect("the embedded manifest");
        let _ = ck_jit_capi::register(rt);
    });
}
