//! Compiles CK 2025-11's own forward dispatcher (a narrow generator run:
//! fp16, d128, batch mode, no mask, bias, lse or dropout), its lazy stubs
//! and the C glue into this crate with the `cc` crate and the HIP compiler
//! of `.ci/hip-toolchain.sh`, plus a stand-in HIP runtime that shows one
//! gfx942 device. Without that compiler or the CK tree beside the
//! repository, the crate builds without them (`cfg(ck_dispatch)` unset)
//! and its test says so.
use std::fs;
use std::path::{Path, PathBuf};

use ck_jit_ck::{ffi, CkFmha};

const FILTER: &str = "*d128_fp16_batch_*_nlogits_nbias_nmask_nlse_ndropout_nskip_nsquant_ntrload";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(ck_dispatch)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../fixtures/hip_device.cpp");
    println!("cargo:rerun-if-env-changed=CK_JIT_REAL_HIP_ENV");
    let here = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let ws = here.join("../..");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap());
    let env = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target/hip-toolchain/env.sh"));
    let ck = ws.join("../shared/data/ck/ck-2025-11");
    println!("cargo:rerun-if-changed={}", env.display());
    let hipcc = fs::read_to_string(&env).ok().and_then(|t| {
        t.lines()
            .filter_map(|l| l.split_once('='))
            .find(|(k, _)| k.trim() == "CK_JIT_REAL_HIPCC")
            .map(|(_, v)| PathBuf::from(v.trim().trim_matches('"')))
    });
    let (Some(hipcc), true) = (hipcc, ck.is_dir()) else {
        // Nothing to compile with: an empty manifest, no glue.
        fs::write(out.join("ck_jit_glue.rs"), "").unwrap();
        let m = ck_jit_build::manifest::Manifest::new("ck_jit_dispatch_test", ".");
        fs::write(out.join("ck_jit_manifest.json"), m.to_json()).unwrap();
        fs::write(out.join("ck_jit_manifest.ckm"), m.to_compact()).unwrap();
        println!("cargo:rustc-env=CK_DISPATCH_SKIP=no HIP toolchain (.ci/hip-toolchain.sh) or no CK tree at ../shared/data/ck/ck-2025-11");
        return;
    };
    println!("cargo:rustc-env=CK_DISPATCH_SKIP=");
    let files = CkFmha::new()
        .source(&ck)
        .direction("fwd")
        .filter(FILTER)
        .arch("gfx942")
        .name("ck_jit_dispatch_test")
        .write();
    let built = ffi::compile_dispatchers(
        &files,
        &hipcc,
        "ck_jit_dispatch",
        &out,
        &["-Wno-unused-result", "-Wno-unused-command-line-argument"],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(built.dispatchers.iter().any(|d| d == "fmha_fwd"));
    // The HIP runtime: every function CK's host code calls, answering
    // "no device" except for the device's name and compute units.
    cc::Build::new()
        .cpp(true)
        .compiler(&hipcc)
        .flag("-Wno-unused-command-line-argument")
        .file(ws.join("tests/fixtures/hip_device.cpp"))
        .compile("hip_device");
    cc::Build::new()
        .file(ws.join("tests/fixtures/real_ck/hip_stand_in.c"))
        .compile("hip_stand_in");
    println!("cargo:rustc-cfg=ck_dispatch");
    let _ = Path::new(&built.rust);
}
