//! Records how `hipcc` compiles every HIP blob under `kernels/` and compiles
//! none of them: that happens on each kernel's first call.
//!
//! `HIP_KERNELS_ARCHS` (comma- or space-separated, default `gfx90a`) picks
//! the GPU architectures each blob is built for, one `--offload-arch=` each.

use ck_jit_build::{BlobGroup, Build};

const ARCHS_VAR: &str = "HIP_KERNELS_ARCHS";
const DEFAULT_ARCHS: &str = "gfx90a";

fn main() {
    println!("cargo:rerun-if-env-changed={ARCHS_VAR}");
    let archs = match std::env::var(ARCHS_VAR) {
        Ok(v) if !v.trim().is_empty() => v,
        _ => DEFAULT_ARCHS.to_string(),
    };
    let archs = match parse_archs(&archs) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {ARCHS_VAR}: {e}");
            std::process::exit(1);
        }
    };
    // The library reports what it was built for.
    println!("cargo:rustc-env=HIP_KERNELS_ARCHS_USED={}", archs.join(","));
    let arch_flags: Vec<String> = archs
        .iter()
        .map(|a| format!("--offload-arch={a}"))
        .collect();

    Build::new()
        .name("hip_kernels")
        .group(
            BlobGroup::new("family")
                .glob("kernels/*.hip")
                .compiler("hipcc")
                .flags(["-O3", "-std=c++17"])
                .flags(&arch_flags)
                .include("kernels/include")
                // scale_add_f16_b256.hip -> {op: scale_add, dtype: f16, block: 256}
                .meta_pattern(r"^(?P<op>scale_add|sum)_(?P<dtype>f32|f16)_b(?P<block>\d+)$")
                .require_meta_match(true),
        )
        .group(
            // CK-shaped blobs: one C++ template specialisation each, found by
            // its mangled name's prefix. CK builds with hidden visibility;
            // ck-jit drops the flag, which would hide the entry point.
            BlobGroup::new("ck")
                .glob("kernels/ck/*.hip")
                .compiler("hipcc")
                .flags(["-O3", "-std=c++17", "-fvisibility=hidden"])
                .flags(&arch_flags)
                .include("kernels/include")
                .symbol_prefix("_Z4run_I")
                .meta_pattern(r"^run_(?P<op>scale_add)_(?P<dtype>f32)_b(?P<block>\d+)$")
                .require_meta_match(true)
                .meta("api", "ck"),
        )
        .write();
}

/// Splits an architecture list, refusing names that could not be one
/// `--offload-arch` value (`gfx90a`, `gfx942`, `gfx90a:xnack+`).
fn parse_archs(list: &str) -> Result<Vec<String>, String> {
    let archs: Vec<String> = list
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|a| !a.is_empty())
        .map(str::to_string)
        .collect();
    if archs.is_empty() {
        return Err(format!(
            "'{list}' names no architecture (e.g. gfx90a,gfx942)"
        ));
    }
    for a in &archs {
        let ok = a.starts_with("gfx")
            && a.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b":+-_".contains(&b));
        if !ok {
            return Err(format!(
                "'{a}' is not a HIP offload architecture (expected e.g. gfx90a, gfx942, gfx90a:xnack+)"
            ));
        }
    }
    Ok(archs)
}
