//! CK-shaped blob trees from `data/ck-fmha-blobs.txt` (the 10,558 files
//! one CK FMHA codegen run writes: 10,554 kernel blobs and four API
//! dispatchers), for the build-time and prebuild benches.
//!
//! Each blob becomes a small C++ file with the shape of CK's: one traits
//! alias whose template arguments come from the file name, and one
//! specialisation of the direction's entry template. Those compile with the
//! host `c++` in a fraction of a second; real CK blobs need `hipcc` and
//! CK's headers and take far longer, so compile times measured on these are
//! a floor for CK, not an estimate of it.

use std::fs;
use std::path::{Path, PathBuf};

use ck_jit_build::{BlobGroup, Build};

/// The codegen directions, each a directory of the tree and a group of the
/// manifest.
pub const DIRECTIONS: [&str; 4] = ["fwd", "fwd_splitkv", "fwd_appendkv", "bwd"];

/// Attributes recorded from a blob's file name.
pub const META_PATTERN: &str = r"^fmha_(?P<kind>[a-z_]+?)_d(?P<hdim>\d+)_(?P<dtype>fp16|bf16|fp8)_(?:b[0-9x]+_)?(?P<mode>batch|group)?";

/// Flags every generated blob compiles with.
pub const FLAGS: [&str; 2] = ["-O2", "-std=c++17"];

/// One line of the list: `direction/file.cpp`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// `fwd`, `fwd_splitkv`, `fwd_appendkv` or `bwd`.
    pub direction: String,
    /// The file stem (the blob name).
    pub name: String,
}

impl Listed {
    /// Whether this is an API dispatcher rather than a kernel blob.
    pub fn is_api(&self) -> bool {
        self.name.ends_with("_api")
    }

    /// Path relative to the tree root.
    pub fn path(&self) -> String {
        format!("{}/{}.cpp", self.direction, self.name)
    }
}

/// The list shipped with the benches.
pub fn default_list() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/ck-fmha-blobs.txt")
}

/// Reads a list of `direction/name.cpp` lines.
pub fn read_list(path: &Path) -> Result<Vec<Listed>, String> {
    let text = fs::read_to_string(path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (dir, file) = l
                .trim()
                .split_once('/')
                .ok_or_else(|| format!("{}: not direction/file: {l:?}", path.display()))?;
            let name = file
                .strip_suffix(".cpp")
                .ok_or_else(|| format!("{}: not a .cpp file: {l:?}", path.display()))?;
            Ok(Listed {
                direction: dir.to_string(),
                name: name.to_string(),
            })
        })
        .collect()
}

/// The entry template a blob of `kind` specialises (CK's bwd direction has
/// three kinds of blob: dq/dk/dv, dot(dO, O) and convert dq).
fn entry_template(kind: &str) -> &'static str {
    match kind {
        "fwd_splitkv" => "fmha_fwd_splitkv_",
        "fwd_appendkv" => "fmha_fwd_appendkv_",
        "bwd_dot_do_o" => "fmha_bwd_dot_do_o_",
        "bwd_convert_dq" => "fmha_bwd_convert_dq_",
        "bwd" => "fmha_bwd_dq_dk_dv_",
        _ => "fmha_fwd_",
    }
}

/// The kind of a blob name: the part between `fmha_` and `_d<hdim>_`.
fn kind_of(name: &str) -> &str {
    let rest = name.strip_prefix("fmha_").unwrap_or(name);
    let mut at = 0;
    while let Some(i) = rest[at..].find("_d") {
        let after = &rest[at + i + 2..];
        if after.starts_with(|c: char| c.is_ascii_digit()) {
            return &rest[..at + i];
        }
        at += i + 2;
    }
    rest
}

/// The symbol prefix of a direction's entry points (Itanium-mangled names
/// start with the length of the template's name).
pub fn symbol_prefix(direction: &str) -> String {
    match direction {
        // Three entry templates share the directory: any mangled function.
        "bwd" => "_Z".to_string(),
        d => {
            let t = entry_template(d);
            format!("_Z{}{t}I", t.len())
        }
    }
}

/// The C++ source standing in for blob `b`.
pub fn source(b: &Listed) -> String {
    if b.is_api() {
        return format!(
            "// Stand-in for CK's {} (an API dispatcher, not a kernel blob).\n",
            b.path()
        );
    }
    let name = b.name.as_str();
    let kind = kind_of(name);
    let parts: Vec<&str> = name.split('_').collect();
    let hdim = parts
        .iter()
        .find_map(|p| p.strip_prefix('d').and_then(|d| d.parse::<u32>().ok()))
        .unwrap_or(64);
    let dtype = parts
        .iter()
        .find(|p| ["fp16", "bf16", "fp8"].contains(p))
        .copied()
        .unwrap_or("fp16");
    let mut tile: Vec<u32> = parts
        .iter()
        .find_map(|p| {
            let dims = p.strip_prefix('b')?;
            let v: Option<Vec<u32>> = dims.split('x').map(|d| d.parse().ok()).collect();
            v.filter(|v| !v.is_empty())
        })
        .unwrap_or_default();
    tile.resize(6, 16);
    let has = |f: &str| parts.contains(&f);
    let group = has("group");
    let mask = has("mask");
    let bias = if has("alibi") {
        2
    } else if has("bias") {
        1
    } else {
        0
    };
    let lse = has("lse");
    let dropout = has("dropout");
    let tile = tile
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "// Stand-in for CK's generated blob {path} (ck-jit benchmarks): the\n\
         // same shape, one traits alias and one specialisation, at a small size.\n\
         #include \"ck_shape.hpp\"\n\n\
         using trait_0 = ck_shape::traits_<{hdim}, ck_shape::{dtype}_t, {group}, {tile},\n    \
         /*mask*/ {mask}, /*bias*/ {bias}, /*lse*/ {lse}, /*dropout*/ {dropout}>;\n\n\
         template <>\n\
         float {entry}<trait_0>(const ck_shape::stream_config& s, ck_shape::fmha_args a)\n\
         {{\n    return ck_shape::launch<trait_0>(s, a);\n}}\n",
        path = b.path(),
        entry = entry_template(kind),
    )
}

/// The header every generated blob includes.
pub const HEADER: &str = r#"// Shared by the ck-jit benchmarks' CK-shaped blobs: CK-like traits and
// entry templates, small enough for the host compiler.
#pragma once
#include <cstdint>

namespace ck_shape {
struct stream_config { void* stream_id; bool time_kernel; int log_level; int cold_niters; int nrepeat; };
struct fmha_args {
    const void* q; const void* k; const void* v; void* o;
    std::int64_t seqlen_q, seqlen_k, batch, nhead, hdim;
    float scale;
};
struct fp16_t { std::uint16_t bits; };
struct bf16_t { std::uint16_t bits; };
struct fp8_t { std::uint8_t bits; };

template <int HDim, typename DType, bool Group, int M0, int N0, int K0, int N1, int K1, int K0Max,
          bool Mask, int Bias, bool Lse, bool Dropout>
struct traits_ {
    static constexpr int hdim = HDim, m0 = M0, n0 = N0, k0 = K0, n1 = N1, k1 = K1, k0max = K0Max;
    static constexpr bool group = Group, mask = Mask, lse = Lse, dropout = Dropout;
    static constexpr int bias = Bias;
    using dtype = DType;
};

template <int M0, int N0, int K0>
struct tile {
    static float run(const fmha_args& a) {
        float acc = 0.f;
        for (int m = 0; m < M0; m += 16)
            for (int n = 0; n < N0; n += 16)
                for (int k = 0; k < K0; k += 8)
                    acc += a.scale * float(m * 7 + n * 3 + k);
        return acc;
    }
};

template <typename T>
float launch(const stream_config& s, const fmha_args& a) {
    if (s.log_level > 0) return -1.f;
    float r = tile<T::m0, T::n0, T::k0>::run(a) + tile<T::n1, T::k1, T::k0max>::run(a);
    if constexpr (T::mask) r *= 0.5f;
    if constexpr (T::bias == 2) r += float(a.nhead);
    if constexpr (T::dropout) r *= 0.9f;
    if constexpr (T::lse) r -= 1.f;
    return r + float(T::hdim) + float(sizeof(typename T::dtype));
}
} // namespace ck_shape

template <typename T> float fmha_fwd_(const ck_shape::stream_config&, ck_shape::fmha_args);
template <typename T> float fmha_fwd_splitkv_(const ck_shape::stream_config&, ck_shape::fmha_args);
template <typename T> float fmha_fwd_appendkv_(const ck_shape::stream_config&, ck_shape::fmha_args);
template <typename T> float fmha_bwd_dq_dk_dv_(const ck_shape::stream_config&, ck_shape::fmha_args);
template <typename T> float fmha_bwd_dot_do_o_(const ck_shape::stream_config&, ck_shape::fmha_args);
template <typename T> float fmha_bwd_convert_dq_(const ck_shape::stream_config&, ck_shape::fmha_args);
"#;

/// Writes `blobs` (and `include/ck_shape.hpp`) under `root`; returns how
/// many files were written.
pub fn write_tree(root: &Path, blobs: &[Listed]) -> Result<usize, String> {
    let include = root.join("include");
    fs::create_dir_all(&include).map_err(|e| format!("creating {}: {e}", include.display()))?;
    fs::write(include.join("ck_shape.hpp"), HEADER).map_err(|e| e.to_string())?;
    for d in DIRECTIONS {
        fs::create_dir_all(root.join(d)).map_err(|e| e.to_string())?;
    }
    for b in blobs {
        let p = root.join(b.path());
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs::write(&p, source(b)).map_err(|e| format!("writing {}: {e}", p.display()))?;
    }
    Ok(blobs.len())
}

/// One group per direction: glob, API dispatchers excluded, the host
/// compiler, CK-like flags, the symbol prefix and metadata from the name.
pub fn groups(compiler: &str) -> Vec<BlobGroup> {
    DIRECTIONS
        .iter()
        .map(|d| {
            let mut g = BlobGroup::new(d);
            g.glob(&format!("{d}/*.cpp"))
                .exclude("*_api.cpp")
                .compiler(compiler)
                .flags(FLAGS)
                .include("include")
                .symbol_prefix(&symbol_prefix(d))
                .meta_pattern(META_PATTERN)
                .meta("direction", d)
                .allow_empty(true);
            g
        })
        .collect()
}

/// Writes the manifest of a tree written by [`write_tree`] into `out_dir`.
pub fn write_manifest(root: &Path, out_dir: &Path, compiler: &str) -> Result<PathBuf, String> {
    let mut b = Build::new();
    b.root(root)
        .out_dir(out_dir)
        .name("ck_jit_bench_fmha")
        .cargo_metadata(false);
    for g in groups(compiler) {
        b.group(g);
    }
    b.try_write().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(line: &str) -> Listed {
        let (d, f) = line.split_once('/').unwrap();
        Listed {
            direction: d.into(),
            name: f.trim_end_matches(".cpp").into(),
        }
    }

    #[test]
    fn kinds_come_from_the_part_before_the_head_dim() {
        assert_eq!(kind_of("fmha_fwd_d128_bf16_batch_x"), "fwd");
        assert_eq!(kind_of("fmha_fwd_splitkv_d64_fp16_b"), "fwd_splitkv");
        assert_eq!(
            kind_of("fmha_bwd_dot_do_o_d128_bf16_batch_o2"),
            "bwd_dot_do_o"
        );
        assert_eq!(
            kind_of("fmha_bwd_convert_dq_d128_bf16_b64x128_batch_o2"),
            "bwd_convert_dq"
        );
    }

    #[test]
    fn a_source_carries_the_traits_of_its_name() {
        let b = listed("fwd/fmha_fwd_d128_bf16_group_hbs_b128x128x32x128x32x128_r4x1x1_w32x32x16_qr_async_vc_psskddv_alibi_mask_lse.cpp");
        let s = source(&b);
        assert!(
            s.contains("traits_<128, ck_shape::bf16_t, true, 128, 128, 32, 128, 32, 128"),
            "{s}"
        );
        assert!(
            s.contains("/*mask*/ true, /*bias*/ 2, /*lse*/ true, /*dropout*/ false"),
            "{s}"
        );
        assert!(s.contains("float fmha_fwd_<trait_0>"), "{s}");
        assert_eq!(symbol_prefix("fwd"), "_Z9fmha_fwd_I");
        assert_eq!(symbol_prefix("fwd_splitkv"), "_Z17fmha_fwd_splitkv_I");
    }

    #[test]
    fn the_shipped_list_has_the_codegen_run_of_the_design_notes() {
        let all = read_list(&default_list()).unwrap();
        assert_eq!(all.len(), 10_558);
        assert_eq!(all.iter().filter(|b| b.is_api()).count(), 4);
    }
}
