//! Records how to compile every kernel under `kernels/` (compiling none),
//! and gives each the metadata a selector reads: which operations it
//! fuses, in which order.
//!
//! A kernel's name is its chain: `gemm_bias_relu_f32` multiplies, adds a
//! bias, then applies a relu, in f32. Each operation kind becomes a key
//! whose value is its place in the chain (`gemm=1, bias_add=2, relu=3`),
//! `ops` counts them and `dtype` is the last part.

use ck_jit_build::{BlobFile, BlobGroup, Build};

/// The operation kinds, as they appear in kernel names.
const KINDS: [(&str, &str); 3] = [("gemm", "gemm"), ("bias", "bias_add"), ("relu", "relu")];

fn main() {
    Build::new()
        .name("ck_jit_fusion")
        .group(
            BlobGroup::new("fused")
                .glob("kernels/*.cpp")
                .compiler("c++")
                .flags(["-O2", "-std=c++17"])
                .include("kernels/include")
                .meta_pattern(r"_(?P<dtype>f32|f64)$")
                .require_meta_match(true)
                .meta_with(chain_meta),
        )
        .write();
}

/// `gemm=1, bias_add=2, relu=3, ops=3` for `gemm_bias_relu_f32`.
fn chain_meta(blob: &BlobFile<'_>) -> Result<Vec<(String, String)>, String> {
    let chain: Vec<&str> = blob.name.split('_').collect();
    let ops = &chain[..chain.len() - 1];
    let mut meta = Vec::new();
    for (place, part) in ops.iter().enumerate() {
        let Some((_, kind)) = KINDS.iter().find(|(name, _)| name == part) else {
            return Err(format!(
                "'{part}' is not an operation (expected one of gemm, bias, relu)"
            ));
        };
        meta.push((kind.to_string(), (place + 1).to_string()));
    }
    meta.push(("ops".into(), ops.len().to_string()));
    Ok(meta)
}
