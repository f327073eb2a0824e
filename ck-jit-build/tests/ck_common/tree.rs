//! Writes a CK-shaped generated tree from a list of blob file names, as
//! CK's FMHA code generator (`example/ck_tile/01_fmha/generate.py`) would
//! for them: one `<direction>/<name>.cpp` per blob and one `*_api.cpp`
//! dispatcher per direction.
//!
//! Each blob has the structure of CK's (`#include "fmha_fwd.hpp"`, the
//! `using trait_0 = fmha_fwd_traits_<...>;` declaration spelled as CK's
//! templates spell it, the entry template specialisations) with the kernel
//! replaced by a host function, `fmha_standin::run`, that records which
//! kernel ran (`ck-jit-build/tests/fixtures/ck-standin/.../fmha_standin.hpp`); the
//! dispatchers are CK's if-chains over the public traits. The traits of
//! each blob come from its name.
//!
//! The one copy of the writer: the CK integration tests of this crate
//! include it through `ck_common`, and the `ck-fmha` example's build
//! script through `#[path]`. It never compiles anything, and it writes only
//! under the directory it is given.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use ck_jit_build::ck::{Bias, BlobTraits, Direction, Kind, Mask, Mode, Rope, VLayout};

/// Why a blob cannot be written.
#[derive(Debug)]
pub enum TreeError {
    /// A name of the list is not a CK FMHA blob name this writer knows.
    Name { name: String, why: String },
    /// Writing failed.
    Io { path: String, source: io::Error },
}

impl std::fmt::Display for TreeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TreeError::Name { name, why } => write!(f, "blob '{name}': {why}"),
            TreeError::Io { path, source } => write!(f, "cannot write '{path}': {source}"),
        }
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> TreeError + '_ {
    move |source| TreeError::Io {
        path: path.display().to_string(),
        source,
    }
}

/// The blob file names of `list` (one `direction/name.cpp` per line), the
/// dispatchers left out.
pub fn blob_names(list: &str) -> Vec<&str> {
    list.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.ends_with("_api.cpp"))
        .collect()
}

/// Parses every name and checks that its traits can be written.
pub fn parse_all(names: &[&str]) -> Result<Vec<BlobTraits>, TreeError> {
    names
        .iter()
        .map(|name| {
            let bad = |why: String| TreeError::Name {
                name: name.to_string(),
                why,
            };
            let t = BlobTraits::parse(name).map_err(|e| bad(e.why))?;
            if !t.extra.is_empty() {
                return Err(bad(format!("unknown tokens {:?}", t.extra)));
            }
            dtype_cpp(&t).ok_or_else(|| bad(format!("unknown data type '{}'", t.dtype)))?;
            let tile_len = match t.kind {
                Kind::Fwd | Kind::FwdSplitkv => 6,
                Kind::FwdAppendkv => 4,
                Kind::FwdSplitkvCombine => 2,
                Kind::BwdDqDkDv => 9,
                Kind::BwdDotDoO | Kind::BwdConvertDq => 0,
            };
            if t.tile.len() < tile_len {
                return Err(bad(format!("expected a block tile of {tile_len} sizes")));
            }
            if matches!(t.kind, Kind::Fwd | Kind::FwdSplitkv | Kind::BwdDqDkDv)
                && pipeline_enum(&t).is_none()
            {
                return Err(bad(format!("unknown pipeline {:?}", t.pipeline)));
            }
            Ok(t)
        })
        .collect()
}

/// Writes the tree under `dir`: every blob of `names` (`direction/file.cpp`
/// as listed) and the four dispatchers. Returns the number of blobs
/// written.
pub fn write_tree(dir: &Path, names: &[&str]) -> Result<usize, TreeError> {
    let traits = parse_all(names)?;
    let mut by_dir: BTreeMap<Direction, Vec<&BlobTraits>> = BTreeMap::new();
    for (name, t) in names.iter().zip(&traits) {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(io_err(parent))?;
        }
        let stem = name.rsplit('/').next().unwrap_or(name);
        let stem = stem.strip_suffix(".cpp").unwrap_or(stem);
        fs::write(&path, blob_source(stem, t)).map_err(io_err(&path))?;
        by_dir.entry(t.kind.direction()).or_default().push(t);
    }
    for (d, ts) in &by_dir {
        let path = dir.join(d.as_str()).join(d.api_file());
        fs::write(&path, api_source(*d, ts)).map_err(io_err(&path))?;
    }
    Ok(traits.len())
}

fn x(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join("x")
}

fn tile_at(t: &BlobTraits, i: usize) -> u32 {
    t.tile.get(i).copied().unwrap_or(0)
}

// CK's cpp_symbol_map.py, in the version that wrote the blob list.
fn dtype_cpp(t: &BlobTraits) -> Option<String> {
    let bwd = t.kind.direction() == Direction::Bwd;
    let d = match t.dtype.as_str() {
        "fp16" => "Fp16",
        "bf16" => "Bf16",
        "fp8" if !bwd => "Fp8",
        "bf8" if !bwd => "Bf8",
        _ => return None,
    };
    Some(format!("Fmha{}{d}", if bwd { "Bwd" } else { "Fwd" }))
}

fn dt(t: &BlobTraits) -> String {
    dtype_cpp(t).unwrap_or_default()
}

fn b(v: bool) -> &'static str {
    if v {
        "true"
    } else {
        "false"
    }
}

fn mode_cpp(t: &BlobTraits) -> &'static str {
    b(t.mode == Some(Mode::Group))
}

fn vlayout_cpp(t: &BlobTraits) -> &'static str {
    b(t.vlayout == Some(VLayout::Row))
}

fn mask_cpp(t: &BlobTraits) -> &'static str {
    match t.mask {
        Mask::No => "ck_tile::SimplifiedGenericAttentionMask<false>",
        _ => "ck_tile::SimplifiedGenericAttentionMask<true>",
    }
}

fn mask_check(t: &BlobTraits) -> &'static str {
    match t.mask {
        Mask::No => "t.mask_type == mask_enum::no_mask",
        _ => "t.mask_type != mask_enum::no_mask",
    }
}

fn bias_cpp(t: &BlobTraits) -> &'static str {
    match t.bias {
        Bias::No => "ck_tile::BlockAttentionBiasEnum::NO_BIAS",
        Bias::Elementwise => "ck_tile::BlockAttentionBiasEnum::ELEMENTWISE_BIAS",
        Bias::Alibi => "ck_tile::BlockAttentionBiasEnum::ALIBI",
    }
}

fn bias_check(t: &BlobTraits) -> &'static str {
    match t.bias {
        Bias::No => "bias_enum::no_bias",
        Bias::Elementwise => "bias_enum::elementwise_bias",
        Bias::Alibi => "bias_enum::alibi",
    }
}

fn pipeline_enum(t: &BlobTraits) -> Option<&'static str> {
    Some(match t.pipeline.as_deref()? {
        "qr" => "ck_tile::BlockFmhaPipelineEnum::QRKSVS",
        "qr_async" => "ck_tile::BlockFmhaPipelineEnum::QRKSVS_ASYNC",
        "qs" => "ck_tile::BlockFmhaPipelineEnum::QSKSVS",
        "kr_ktr_vr" => "ck_tile::BlockFmhaBwdPipelineEnum::KRKTRVR",
        "kr_ktr_vr_iglp" => "ck_tile::BlockFmhaBwdPipelineEnum::KRKTRVR_IGLP",
        _ => return None,
    })
}

fn pipeline(t: &BlobTraits) -> &'static str {
    pipeline_enum(t).unwrap_or_default()
}

fn dropout_cpp(t: &BlobTraits) -> &'static str {
    match (t.dropout, t.dropout_variant.as_deref(), t.store_randval) {
        (false, _, _) => "ck_tile::BlockDropoutBwd<false, true,  false>",
        (true, Some("wg32"), false) => "ck_tile::BlockDropoutBwd<true,  true,  false>",
        (true, Some("wg32"), true) => "ck_tile::BlockDropoutBwd<true,  true,  true >",
        (true, _, false) => "ck_tile::BlockDropoutBwd<true,  false, false>",
        (true, _, true) => "ck_tile::BlockDropoutBwd<true,  false, true >",
    }
}

fn dropout_check(t: &BlobTraits) -> &'static str {
    match (t.dropout, t.store_randval) {
        (false, _) => "t.has_dropout == false",
        (true, false) => "t.has_dropout == true && t.is_store_randval == false",
        (true, true) => "t.has_dropout == true && t.is_store_randval == true",
    }
}

fn rope_cpp(t: &BlobTraits) -> &'static str {
    match t.rope {
        Rope::No => "ck_tile::RotaryEmbeddingEnum::NONE",
        Rope::Interleaved => "ck_tile::RotaryEmbeddingEnum::INTERLEAVED",
        Rope::HalfRotated => "ck_tile::RotaryEmbeddingEnum::HALF_ROTATED",
    }
}

fn rope_check(t: &BlobTraits) -> &'static str {
    match t.rope {
        Rope::No => "rope_enum::none",
        Rope::Interleaved => "rope_enum::interleaved",
        Rope::HalfRotated => "rope_enum::half_rotated",
    }
}

fn tile6(t: &BlobTraits) -> String {
    (0..6)
        .map(|i| tile_at(t, i).to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first lines of every generated file.
const HEADER: &str =
    "// Generated by ck-jit-build/tests/ck_common/tree.rs in the shape of\n// the output of CK's example/ck_tile/01_fmha/generate.py.\n";

/// The `<traits_template><...>` a blob of these traits declares, as CK
/// spells it in the blob (aliases such as `fmha_mask_0` included).
fn blob_traits_decl(t: &BlobTraits) -> String {
    let p = &t.pad;
    let dt = dt(t);
    match t.kind {
        Kind::Fwd => format!(
            "fmha_fwd_traits_<{}, {dt}, {},{}, {},\n                        {}, fmha_mask_0, {}, {}, {}, {}, {}, {}, {}, {}>",
            t.hdim,
            mode_cpp(t),
            tile6(t),
            vlayout_cpp(t),
            pipeline(t),
            bias_cpp(t),
            b(t.lse),
            b(t.dropout),
            b(t.squant),
            b(p.s),
            b(p.sk),
            b(p.d),
            b(p.dv)
        ),
        Kind::FwdSplitkv => format!(
            "fmha_fwd_splitkv_traits_<{}, {dt}, {}, {}, {},\n                        {}, fmha_mask_0, {}, {}, {}, {}, {}, {}, {}, \n                        {}>",
            t.hdim,
            mode_cpp(t),
            tile6(t),
            vlayout_cpp(t),
            pipeline(t),
            bias_cpp(t),
            b(t.lse),
            b(t.squant),
            b(t.pagedkv),
            b(p.s),
            b(p.sk),
            b(p.d),
            b(p.dv)
        ),
        Kind::FwdSplitkvCombine => format!(
            "fmha_fwd_splitkv_combine_traits_<{}, {dt}, {}, {}, {},\n                        {}, {}, {}, {}>",
            t.hdim,
            mode_cpp(t),
            tile_at(t, 0),
            tile_at(t, 1),
            b(t.lse),
            b(t.squant),
            b(p.s),
            b(p.dv)
        ),
        Kind::FwdAppendkv => format!(
            "fmha_fwd_appendkv_traits_<{}, {dt}, {}, {}, {}, {}, {},\n                        {}, {}, {}, {}, {}, {}>",
            t.hdim,
            tile_at(t, 0),
            tile_at(t, 1),
            tile_at(t, 2),
            tile_at(t, 3),
            vlayout_cpp(t),
            b(p.s),
            b(p.sk),
            b(p.d),
            b(p.dv),
            rope_cpp(t),
            b(t.pagedkv)
        ),
        Kind::BwdDotDoO => format!(
            "fmha_bwd_dot_do_o_traits_<{}, {dt}, {}, {}, {}>",
            t.hdim,
            mode_cpp(t),
            b(p.s),
            b(p.dv)
        ),
        Kind::BwdDqDkDv => {
            let fields = [
                t.hdim.to_string(),
                dt,
                mode_cpp(t).into(),
                pipeline(t).into(),
                "fmha_mask_0".into(),
                "fmha_dropout_0".into(),
                bias_cpp(t).into(),
                b(t.dbias).into(),
                b(p.s).into(),
                b(p.sk).into(),
                b(p.d).into(),
                b(p.dv).into(),
                b(t.deterministic).into(),
            ];
            format!(
                "fmha_bwd_dq_dk_dv_traits_<{}>",
                fields.join(",\n                                                         ")
            )
        }
        Kind::BwdConvertDq => {
            let fields = [
                t.hdim.to_string(),
                dt,
                mode_cpp(t).into(),
                b(p.s).into(),
                b(p.d).into(),
                b(t.deterministic).into(),
            ];
            format!(
                "fmha_bwd_convert_dq_traits_<{}>",
                fields.join(",\n                                                             ")
            )
        }
    }
}

/// The argument of `fmha_standin::run` the kernel of `kind` writes its
/// record to: its output tensor.
fn output_of(kind: Kind) -> &'static str {
    match kind {
        Kind::Fwd | Kind::FwdSplitkvCombine => "a.o_ptr",
        Kind::FwdSplitkv => "a.o_acc_ptr",
        Kind::FwdAppendkv => "a.k_ptr",
        Kind::BwdDotDoO => "a.d_ptr",
        Kind::BwdDqDkDv => "a.dk_ptr",
        Kind::BwdConvertDq => "a.dq_ptr",
    }
}

/// A blob source for these traits, named `name`: CK's structure, with the
/// kernel launch replaced by the stand-in's record.
pub fn blob_source(name: &str, t: &BlobTraits) -> String {
    let mut s = String::with_capacity(2048);
    s.push_str(HEADER);
    let bwd = t.kind.direction() == Direction::Bwd;
    s.push_str(if bwd {
        "#include \"fmha_bwd.hpp\"\n"
    } else {
        "#include \"fmha_fwd.hpp\"\n"
    });
    let _ = write!(s, "\nusing fmha_dtype_0 = {};\n", dt(t));
    if !t.tile.is_empty() {
        let _ = write!(
            s,
            "\nusing fmha_block_tile_0 = ck_tile::sequence<{}>;\n",
            x(&t.tile).replace('x', ", ")
        );
    }
    if matches!(t.kind, Kind::Fwd | Kind::FwdSplitkv | Kind::BwdDqDkDv) {
        let _ = writeln!(s, "using fmha_mask_0 = {};", mask_cpp(t));
    }
    if t.kind == Kind::BwdDqDkDv {
        let _ = writeln!(s, "using fmha_dropout_0 = {};", dropout_cpp(t));
    }
    let alias = match t.kind {
        Kind::BwdDotDoO => "dot_do_o_trait_0",
        Kind::BwdDqDkDv => "dq_dk_dv_trait_0",
        Kind::BwdConvertDq => "convert_dq_trait_0",
        _ => "trait_0",
    };
    let _ = write!(
        s,
        "\n// The kernel, by the name CK's kernel type reports. Its body is the\n\
         // stand-in's: it records that it ran (fmha_standin.hpp).\n\
         namespace {{\nstruct fmha_kernel_0\n{{\n    static const char* GetName() {{ return \"{name}\"; }}\n}};\n}} // namespace\n\n\
         using {alias} = {};\n\n#include <iostream>\n",
        blob_traits_decl(t)
    );
    let entry = t.kind.entry_function();
    let args = t.kind.args_type();
    let out = output_of(t.kind);
    match t.kind {
        Kind::Fwd | Kind::FwdAppendkv => {
            let _ = write!(
                s,
                "\ntemplate<>\n\
                 float {entry}<{alias}>(const ck_tile::stream_config& s, {args} a)\n\
                 {{\n    using k_ = fmha_kernel_0;\n    if(s.log_level_ > 0)\n        std::cout << \", \" << k_::GetName() << std::flush;\n    return fmha_standin::run(k_::GetName(), {out}, a);\n}}\n"
            );
        }
        Kind::FwdSplitkv | Kind::FwdSplitkvCombine => {
            let base = entry.trim_end_matches("oneshot_");
            let _ = write!(
                s,
                "\ntemplate<>\n\
                 void {base}oneshot_<{alias}>(const ck_tile::stream_config& s, {args} a)\n\
                 {{\n    using k_ = fmha_kernel_0;\n    if(s.log_level_ > 0)\n        std::cout << \", \" << k_::GetName() << std::flush;\n    fmha_standin::run(k_::GetName(), {out}, a);\n}}\n\n\
                 template<>\n\
                 std::string {base}get_name_<{alias}>()\n\
                 {{\n    using k_ = fmha_kernel_0;\n    return k_::GetName();\n}}\n"
            );
        }
        Kind::BwdDotDoO | Kind::BwdDqDkDv | Kind::BwdConvertDq => {
            let _ = write!(
                s,
                "\ntemplate <>\n\
                 float {entry}<{alias}>(const ck_tile::stream_config& s, {args} a)\n\
                 {{\n    using k_ = fmha_kernel_0;\n    if(s.log_level_ > 0)\n        std::cout << \", \" << k_::GetName() << std::flush;\n    return fmha_standin::run(k_::GetName(), {out}, a);\n}}\n\n\
                 template <>\n\
                 void {entry}oneshot_<{alias}>(const ck_tile::stream_config& s, {args} a)\n\
                 {{\n    using k_ = fmha_kernel_0;\n    (void)s;\n    fmha_standin::run(k_::GetName(), {out}, a);\n}}\n\n\
                 template <>\n\
                 std::string {entry}get_name_<{alias}>()\n\
                 {{\n    using k_ = fmha_kernel_0;\n    return k_::GetName();\n}}\n"
            );
        }
    }
    s
}

const K0_MAX_SUBMAX: &[(u32, u32)] = &[(32, 32), (64, 64), (96, 128), (128, 128), (256, 256)];

fn submax(bk0max: u32) -> u32 {
    K0_MAX_SUBMAX
        .iter()
        .find(|(k, _)| *k == bk0max)
        .map_or(bk0max, |(_, v)| *v)
}

/// CK's padding checks of a forward dispatcher entry: seqlen_q, seqlen_k,
/// hdim_q, hdim_v.
fn fwd_checks(t: &BlobTraits) -> [String; 4] {
    let group = t.mode == Some(Mode::Group);
    let asyn = t.pipeline.as_deref() == Some("qr_async");
    let (bm0, bn0, bk0max) = (tile_at(t, 0), tile_at(t, 1), tile_at(t, 5));
    let vec = if t.dtype.contains('8') { 16 } else { 8 };
    let s = if group {
        "true/*group mode spad always true*/".to_string()
    } else if asyn {
        "true".to_string()
    } else if t.pad.s {
        format!("true /*a.seqlen_q % {bm0} != 0*/")
    } else {
        format!("a.seqlen_q % {bm0} == 0")
    };
    let sk = if group {
        "true/*group mode skpad always true*/".to_string()
    } else if asyn {
        if t.pad.sk {
            format!("a.seqlen_k == 0 || a.seqlen_k % {bn0} != 0")
        } else {
            format!("a.seqlen_k != 0 && a.seqlen_k % {bn0} == 0")
        }
    } else if t.pad.sk {
        format!("true /*a.seqlen_k % {bn0} != 0*/")
    } else {
        format!("a.seqlen_k % {bn0} == 0")
    };
    let dim = |pad: bool, what: &str| {
        if asyn {
            format!("a.{what} % {vec} == 0")
        } else if pad {
            format!("true /*a.{what} % {} != 0*/", submax(bk0max))
        } else {
            format!("a.{what} % {} == 0", submax(bk0max))
        }
    };
    [s, sk, dim(t.pad.d, "hdim_q"), dim(t.pad.dv, "hdim_v")]
}

/// Blobs by dtype, then by head dimension, smallest first (CK's
/// `FmhaFwdApiPool`): a call goes to the smallest hdim that covers it.
type Pool<'a> = Vec<(String, Vec<(u32, Vec<&'a BlobTraits>)>)>;

fn pool<'a>(traits: &[&'a BlobTraits]) -> Pool<'a> {
    let mut out: Pool<'a> = Vec::new();
    for t in traits {
        let di = match out.iter().position(|(d, _)| *d == t.dtype) {
            Some(i) => i,
            None => {
                out.push((t.dtype.clone(), Vec::new()));
                out.len() - 1
            }
        };
        let hdims = &mut out[di].1;
        match hdims.iter_mut().find(|(h, _)| *h == t.hdim) {
            Some((_, v)) => v.push(t),
            None => hdims.push((t.hdim, vec![*t])),
        }
    }
    for (_, hdims) in &mut out {
        hdims.sort_by_key(|(h, _)| *h);
    }
    out
}

fn if_(i: usize) -> &'static str {
    if i == 0 {
        "if"
    } else {
        "else if"
    }
}

/// The `*_api.cpp` CK writes for `direction`, dispatching to `blobs` (the
/// blobs of the direction's main kind; the split-KV combine and backward
/// helper blobs are named through their traits, as CK derives them).
pub fn api_source(direction: Direction, blobs: &[&BlobTraits]) -> String {
    let main = match direction {
        Direction::Fwd => Kind::Fwd,
        Direction::FwdSplitkv => Kind::FwdSplitkv,
        Direction::FwdAppendkv => Kind::FwdAppendkv,
        Direction::Bwd => Kind::BwdDqDkDv,
    };
    let main_blobs: Vec<&BlobTraits> = blobs.iter().copied().filter(|t| t.kind == main).collect();
    let mut dispatch = String::new();
    for (i, (dtype, hdims)) in pool(&main_blobs).iter().enumerate() {
        let mut per_hdim = String::new();
        for (j, (hdim, traits)) in hdims.iter().enumerate() {
            let mut inners = String::new();
            for (k, t) in traits.iter().enumerate() {
                inners.push_str(&inner_dispatch(direction, t, if_(k)));
            }
            let _ = write!(
                per_hdim,
                "        {} (t.hdim_q <= {hdim} && t.hdim_v <= {hdim}) {{\n{inners}        }}\n",
                if_(j)
            );
        }
        let _ = write!(
            dispatch,
            "    {}(t.data_type.compare(\"{dtype}\") == 0){{\n{per_hdim}    }}\n",
            if_(i)
        );
    }
    if dispatch.is_empty() {
        dispatch.push_str("    (void)t ; (void)s ; (void)a;");
    }
    let include = if direction == Direction::Bwd {
        "#include \"fmha_bwd.hpp\"\n"
    } else {
        "#include \"fmha_fwd.hpp\"\n"
    };
    let body = match direction {
        Direction::Fwd => format!(
            "\nfloat fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config& s){{\n    float r = -1;\n{dispatch}\n    return r;\n}}\n"
        ),
        Direction::FwdSplitkv => format!(
            "\n#include <iostream>\n\n\
             template<typename fmha_fwd_splitkv_traits_, typename fmha_fwd_splitkv_combine_traits_>\n\
             float fmha_fwd_splitkv_(const ck_tile::stream_config& s, fmha_fwd_splitkv_args a)\n{{\n    if(s.log_level_ > 0)\n    std::cout\n    << \", \" << fmha_fwd_splitkv_get_name_<fmha_fwd_splitkv_traits_>()\n    << \", \" << fmha_fwd_splitkv_combine_get_name_<fmha_fwd_splitkv_combine_traits_>() \n    << std::flush;\n\n\
             \x20   return ck_tile::launch_kernel(s,\n        [=](const ck_tile::stream_config& s_){{ fmha_fwd_splitkv_oneshot_<fmha_fwd_splitkv_traits_>(s_, a); }}, \n        [=](const ck_tile::stream_config& s_){{ fmha_fwd_splitkv_combine_oneshot_<fmha_fwd_splitkv_combine_traits_>(s_, a); }}\n    );\n}}\n\n\
             float fmha_fwd_splitkv(fmha_fwd_splitkv_traits t, fmha_fwd_splitkv_args a, const ck_tile::stream_config& s){{\n    float r = -1;\n{dispatch}\n    return r;\n}}\n"
        ),
        Direction::FwdAppendkv => format!(
            "\nfloat fmha_fwd_appendkv(fmha_fwd_appendkv_traits t, fmha_fwd_appendkv_args a, const ck_tile::stream_config& s){{\n    float r = -1;\n{dispatch}\n    return r;\n}}\n"
        ),
        Direction::Bwd => format!(
            "\n#include <iostream>\n\n\
             template <typename dot_do_o_trait_, typename dq_dk_dv_trait_, typename convert_dq_trait_>\n\
             float fmha_bwd_(const ck_tile::stream_config& s, fmha_bwd_args a)\n{{\n    if(s.log_level_ > 0)\n        std::cout << \", \" << fmha_bwd_dot_do_o_get_name_<dot_do_o_trait_>() << \", \" << fmha_bwd_dq_dk_dv_get_name_<dq_dk_dv_trait_>() << \", \" << fmha_bwd_convert_dq_get_name_<convert_dq_trait_>() << std::flush;\n    return ck_tile::launch_kernel(s,\n        [=](const ck_tile::stream_config& s_){{ fmha_bwd_dot_do_o_oneshot_<dot_do_o_trait_>(s_, a); }},\n        [=](const ck_tile::stream_config& s_){{ fmha_bwd_dq_dk_dv_oneshot_<dq_dk_dv_trait_>(s_, a); }},\n        [=](const ck_tile::stream_config& s_){{ fmha_bwd_convert_dq_oneshot_<convert_dq_trait_>(s_, a); }}\n    );\n}}\n\n\
             float fmha_bwd(fmha_bwd_traits t, fmha_bwd_args a, const ck_tile::stream_config& s){{\n    float r = -1;\n{dispatch}\n    return r;\n}}\n"
        ),
    };
    format!("{HEADER}{include}{body}")
}

fn inner_dispatch(direction: Direction, t: &BlobTraits, iff: &str) -> String {
    let dt = dt(t);
    let p = &t.pad;
    match direction {
        Direction::Fwd => {
            let [s, sk, d, dv] = fwd_checks(t);
            format!(
                "            {iff}((t.is_group_mode == {mode}) && (t.is_v_rowmajor == {vl}) && ({mc}) && (t.bias_type == {bc}) && (t.has_lse == {lse})  && (t.has_dropout == {drop}) && (t.do_fp8_static_quant == {sq}) &&\n                        ({s}) && ({sk}) && ({d}) && ({dv})) {{\n                using trait_ = fmha_fwd_traits_<{hdim}, {dt}, {mode}, {tile}, {vl}, {pe}, {mask}, {bias}, {lse}, {drop}, {sq}, {ps}, {psk}, {pd}, {pdv}>;\n                return fmha_fwd_<trait_>(s, a);\n            }}\n",
                mode = mode_cpp(t),
                vl = vlayout_cpp(t),
                mc = mask_check(t),
                bc = bias_check(t),
                lse = b(t.lse),
                drop = b(t.dropout),
                sq = b(t.squant),
                hdim = t.hdim,
                tile = tile6(t),
                pe = pipeline(t),
                mask = mask_cpp(t),
                bias = bias_cpp(t),
                ps = b(p.s),
                psk = b(p.sk),
                pd = b(p.d),
                pdv = b(p.dv),
            )
        }
        Direction::FwdSplitkv => {
            let [s, sk, d, dv] = fwd_checks(t);
            format!(
                "            {iff}((t.is_group_mode == {mode}) && (t.is_v_rowmajor == {vl}) && ({mc}) && (t.bias_type == {bc}) && (t.has_lse == {lse}) && (t.do_fp8_static_quant == {sq}) &&\n                        ((a.block_table_ptr != nullptr) == {pk}) && ({s}) && ({sk}) && ({d}) && ({dv})) {{\n                using traits_ = fmha_fwd_splitkv_traits_<{hdim}, {dt}, {mode}, {tile}, {vl}, {pe}, {mask}, {bias}, {lse}, {sq}, {pk}, {ps}, {psk}, {pd}, {pdv}>;\n                using traits2_ = fmha_fwd_splitkv_combine_traits_<{hdim}, {dt}, {mode}, {bm0}/2, {bn1}/2, {lse}, {sq}, {ps}, {pdv}>;\n\n                return fmha_fwd_splitkv_<traits_, traits2_>(s, a);\n            }}\n",
                mode = mode_cpp(t),
                vl = vlayout_cpp(t),
                mc = mask_check(t),
                bc = bias_check(t),
                lse = b(t.lse),
                sq = b(t.squant),
                pk = b(t.pagedkv),
                hdim = t.hdim,
                tile = tile6(t),
                pe = pipeline(t),
                mask = mask_cpp(t),
                bias = bias_cpp(t),
                ps = b(p.s),
                psk = b(p.sk),
                pd = b(p.d),
                pdv = b(p.dv),
                bm0 = tile_at(t, 0),
                bn1 = tile_at(t, 3),
            )
        }
        Direction::FwdAppendkv => {
            let (bs, bd, bdv) = (tile_at(t, 0), tile_at(t, 2), tile_at(t, 3));
            let sc = if p.s {
                format!("true /*a.seqlen_q % {bs} != 0*/")
            } else {
                format!("a.seqlen_q % {bs} == 0")
            };
            let dc = if p.d {
                format!("true /*a.hdim_q % {bd} != 0*/")
            } else {
                format!("a.hdim_q % {bd} == 0")
            };
            let dvc = if p.dv {
                format!("true /*a.hdim_v % {bdv} != 0*/")
            } else {
                format!("a.hdim_v % {bdv} == 0")
            };
            format!(
                "            {iff}((t.is_v_rowmajor == {vl}) &&\n                    ({sc}) && (true) && ({dc}) && ({dvc}) && (t.rope_type == {rc}) &&\n                    ((a.block_table_ptr != nullptr) == {pk})) {{\n                using trait_ = fmha_fwd_appendkv_traits_<{hdim}, {dt}, {t0}, {t1}, {t2}, {t3}, {vl}, {ps}, {psk}, {pd}, {pdv}, {rope}, {pk}>;\n                return fmha_fwd_appendkv_<trait_>(s, a);\n            }}\n",
                vl = vlayout_cpp(t),
                rc = rope_check(t),
                pk = b(t.pagedkv),
                hdim = t.hdim,
                t0 = tile_at(t, 0),
                t1 = tile_at(t, 1),
                t2 = tile_at(t, 2),
                t3 = tile_at(t, 3),
                ps = b(p.s),
                psk = b(p.sk),
                pd = b(p.d),
                pdv = b(p.dv),
                rope = rope_cpp(t),
            )
        }
        Direction::Bwd => {
            let group = t.mode == Some(Mode::Group);
            let (bm0, bn0) = (tile_at(t, 0), tile_at(t, 1));
            let (bhdq, bhdv) = (tile_at(t, 7), tile_at(t, 8));
            let mut out = String::new();
            for spad1 in [true, false] {
                if !spad1 && (p.s || group) {
                    continue;
                }
                let sc = if group {
                    "true".to_string()
                } else if p.s && spad1 {
                    format!("a.seqlen_q % {bm0} != 0")
                } else if spad1 {
                    format!("a.seqlen_q % {bm0} == 0 and a.seqlen_q % 64 != 0")
                } else {
                    "a.seqlen_q % 64 == 0".to_string()
                };
                let skc = if group {
                    "true".to_string()
                } else if p.sk {
                    format!("a.seqlen_k % {bn0} != 0")
                } else {
                    format!("a.seqlen_k % {bn0} == 0")
                };
                let dc = format!("a.hdim_q % {bhdq} {} 0", if p.d { "!=" } else { "==" });
                let dvc = format!("a.hdim_v % {bhdv} {} 0", if p.dv { "!=" } else { "==" });
                let _ = write!(
                    out,
                    "            {iff}((t.is_group_mode == {mode}) && ({mc}) && (t.bias_type == {bc}) && (t.has_dbias == {dbias}) && ({dropc}) &&\n                        ({sc}) && ({skc}) && ({dc}) && ({dvc}) && (t.is_deterministic == {det})) {{\n                using dot_do_o_trait_ = fmha_bwd_dot_do_o_traits_<{hdim}, {dt}, {mode}, {s1}, {pdv}>;\n                using dq_dk_dv_trait_ = fmha_bwd_dq_dk_dv_traits_<{hdim}, {dt}, {mode}, {pe}, {mask}, {drop}, {bias}, {dbias}, {ps}, {psk}, {pd}, {pdv}, {det}>;\n                using convert_dq_trait_ = fmha_bwd_convert_dq_traits_<{hdim}, {dt}, {mode}, {s1}, {pd}, {det}>;\n                r = fmha_bwd_<dot_do_o_trait_, dq_dk_dv_trait_, convert_dq_trait_>(s, a);\n                return r;\n            }}\n",
                    mode = mode_cpp(t),
                    mc = mask_check(t),
                    bc = bias_check(t),
                    dbias = b(t.dbias),
                    dropc = dropout_check(t),
                    det = b(t.deterministic),
                    hdim = t.hdim,
                    s1 = b(spad1),
                    pe = pipeline(t),
                    mask = mask_cpp(t),
                    drop = dropout_cpp(t),
                    bias = bias_cpp(t),
                    ps = b(p.s),
                    psk = b(p.sk),
                    pd = b(p.d),
                    pdv = b(p.dv),
                );
            }
            out
        }
    }
}
