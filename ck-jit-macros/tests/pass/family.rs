//! `family = "..."`: one signature shared by every blob of a manifest
//! group, a blob chosen by attributes at run time, alone or in a block
//! next to plain kernels; caller types named like generated items.
#![deny(warnings, missing_docs)]

use std::ffi::c_void;

use ck_jit_macros::lazy_kernel;
use ck_jit_rt::Query;

static __CK_JIT_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("../fixtures/manifest.json"));

/// Arguments of the forward kernels.
#[repr(C)]
pub struct Args {
    /// Sequence length.
    pub n: usize,
}

/// A caller type named like the generated `Kernel`.
#[repr(C)]
pub struct Kernel(pub u32);

/// Attention forward: one of the `fwd` blobs.
#[lazy_kernel(family = "fwd", symbol_prefix = "_Z9fmha_fwd")]
pub unsafe extern "C" fn fwd(args: *const Args, stream: *mut c_void) -> f32;

#[lazy_kernel]
extern "C" {
    /// A plain kernel.
    pub fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);
    /// The same family under another name, from a block.
    #[lazy_kernel(family = "fwd")]
    pub fn attention(k: *const Kernel, n: usize) -> Kernel;
}

fn main() {
    let names: Vec<&str> = fwd::blobs().unwrap().iter().map(|m| m.name()).collect();
    assert_eq!(
        names,
        [
            "fmha_fwd_d128_bf16",
            "fmha_fwd_d128_fp16",
            "fmha_fwd_d256_bf16",
            "fmha_fwd_d64_bf16"
        ]
    );
    assert_eq!(fwd::FAMILY, "fwd");

    // hdim >= 100 prefers the tightest fit, 128 over 256.
    let k = fwd::select(&Query::new().eq("dtype", "bf16").ge("hdim", 100)).unwrap();
    assert_eq!((k.name(), k.index()), ("fmha_fwd_d128_bf16", 0));
    assert_eq!(k.meta()["lse"], "1");
    assert!(!k.member().is_ready(), "selection compiles nothing");
    let by_name = fwd::by_name("fmha_fwd_d128_bf16").unwrap();
    assert_eq!(by_name, k);
    let all = fwd::candidates(&Query::new().eq("dtype", "bf16").prefer_max("hdim")).unwrap();
    let all: Vec<&str> = all.iter().map(|k| k.name()).collect();
    assert_eq!(
        all,
        [
            "fmha_fwd_d256_bf16",
            "fmha_fwd_d128_bf16",
            "fmha_fwd_d64_bf16"
        ]
    );

    let err = fwd::select(&Query::new().eq("dtype", "fp8")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no fwd blob matches dtype = fp8: dtype = fp8 matched 0 of 4 \
         (values seen: bf16, fp16)"
    );
    let err = fwd::by_name("vadd_f32").unwrap_err();
    assert!(
        err.to_string().contains("(it belongs to family 'vec')"),
        "{err}"
    );

    let _: unsafe fn(fwd::Kernel, *const Args, *mut c_void) -> f32 = fwd::call;
    let _: fn(fwd::Kernel) -> Result<fwd::Fn, ck_jit_rt::Error> = fwd::try_get;
    let _: fn(fwd::Kernel) -> Result<(), ck_jit_rt::Error> = fwd::prepare;
    let _: Option<unsafe extern "C" fn(*const Args, *mut c_void) -> f32> = None::<fwd::Fn>;
    let _: unsafe fn(attention::Kernel, *const Kernel, usize) -> Kernel = attention::call;
    let _: unsafe fn(*const f32, *const f32, *mut f32, usize) = vadd_f32;
    assert_eq!(attention::blobs().unwrap().len(), 4);
    assert_eq!(Kernel(7).0, 7);
}
