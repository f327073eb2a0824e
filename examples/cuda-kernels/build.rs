//! Records how `nvcc` compiles every CUDA blob under `kernels/` and compiles
//! none of them: that happens on each kernel's first call.
//!
//! `CUDA_KERNELS_ARCH` (default `sm_90`) is the GPU architecture passed as
//! `-arch`.

use ck_jit_build::{BlobGroup, Build};

const ARCH_VAR: &str = "CUDA_KERNELS_ARCH";
const DEFAULT_ARCH: &str = "sm_90";

fn main() {
    println!("cargo:rerun-if-env-changed={ARCH_VAR}");
    let arch = match std::env::var(ARCH_VAR) {
        Ok(v) if !v.trim().is_empty() => v.trim().to_string(),
        _ => DEFAULT_ARCH.to_string(),
    };
    if !is_arch(&arch) {
        eprintln!("error: {ARCH_VAR}: '{arch}' is not a CUDA architecture (expected e.g. sm_80, sm_90, sm_90a)");
        std::process::exit(1);
    }
    // The library reports what it was built for.
    println!("cargo:rustc-env=CUDA_KERNELS_ARCH_USED={arch}");

    // nvcc spells position-independent code for the host compiler as
    // -Xcompiler -fPIC; -cudart static (nvcc's default, stated here) makes
    // each object self-contained apart from the driver.
    let nvcc = |name: &str, glob: &str| {
        let mut g = BlobGroup::new(name);
        g.glob(glob)
            .compiler("nvcc")
            .shared(false)
            .flags(["-O3", "-std=c++17", "-cudart", "static"])
            .flag(&format!("-arch={arch}"))
            .flags(["-Xcompiler", "-fPIC", "-shared"]);
        g
    };
    Build::new()
        .name("cuda_kernels")
        .group(
            nvcc("cuda", "kernels/*.cu")
                .include("kernels/include")
                // sgemm_f32_t16.cu -> {op: sgemm, dtype: f32, tile: 16}
                .meta_pattern(r"^(?P<op>saxpy|softmax|sgemm)_(?P<dtype>f32)(?:_t(?P<tile>\d+))?$")
                .require_meta_match(true),
        )
        .group(
            // Launchers over device pointers on a caller's stream, and the
            // host calls a program needs around them (streams, memory,
            // graph capture): what the graph-capture program uses.
            nvcc("cuda_stream", "kernels/stream/*.cu")
                .meta_pattern(r"^(?P<op>scale|add|axpby)_(?P<dtype>f32)_stream$"),
        )
        .write();
}

/// `sm_90`, `sm_90a`, `compute_90`, ...
fn is_arch(a: &str) -> bool {
    let digits = a
        .strip_prefix("sm_")
        .or_else(|| a.strip_prefix("compute_"))
        .map(|d| d.strip_suffix('a').unwrap_or(d));
    digits.is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}
