//! Test support for the CK integration tests: the blob list of a real CK
//! codegen run, and a generator of CK-shaped trees from it. Blob sources
//! and `*_api.cpp` dispatchers are written the way CK's codegen templates
//! (`example/ck_tile/01_fmha/codegen/ops/fmha_*.py`) write them, from the
//! traits parsed out of each blob's file name; blob bodies are reduced to
//! what the rewrite looks at (aliases, the `trait_0` declaration and the
//! specialisations).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ck_jit_build::ck::{Bias, BlobTraits, Direction, Kind, Mask, Mode, Rope, VLayout};

/// Every file name of the reference codegen run, `direction/file.cpp`.
pub fn blob_list() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/ck-fmha-blobs.txt");
    fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The parsed traits of every blob in the list (or those `keep` accepts).
pub fn blob_traits(keep: impl Fn(&BlobTraits) -> bool) -> Vec<BlobTraits> {
    blob_list()
        .iter()
        .filter(|l| !l.ends_with("_api.cpp"))
        .map(|l| BlobTraits::parse(l).unwrap())
        .filter(|t| keep(t))
        .collect()
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "ck-jit-build-ck-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn x(v: &[u32]) -> String {
    v.iter().map(u32::to_string).collect::<Vec<_>>().join("x")
}

fn tile_name(t: &BlobTraits) -> String {
    let mut n = format!("b{}", x(&t.tile));
    for r in &t.warps {
        n.push_str(&format!("_r{}", x(r)));
    }
    for w in &t.warp_tiles {
        n.push_str(&format!("_w{}", x(w)));
    }
    if let Some(o) = t.occupancy {
        n.push_str(&format!("_o{o}"));
    }
    n
}

fn mode(t: &BlobTraits) -> &'static str {
    t.mode.map_or("", Mode::as_str)
}

/// The file stem CK's codegen gives a kernel with these traits.
pub fn render_name(t: &BlobTraits) -> String {
    let pad = t.pad.token();
    let mut n = String::new();
    let opt = |n: &mut String, on: bool, tok: &str| {
        if on {
            n.push('_');
            n.push_str(tok);
        }
    };
    let vl = |v: Option<VLayout>| if v == Some(VLayout::Row) { "vr" } else { "vc" };
    let head = format!("{}{}_{}", t.kind.file_prefix(), t.hdim, t.dtype);
    match t.kind {
        Kind::Fwd | Kind::FwdSplitkv => {
            n.push_str(&format!("{head}_{}", mode(t)));
            if let Some(p) = &t.partitioner {
                n.push_str(&format!("_{p}"));
            }
            n.push_str(&format!(
                "_{}_{}_{}",
                tile_name(t),
                t.pipeline.as_deref().unwrap_or(""),
                vl(t.vlayout)
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.bias != Bias::No, t.bias.as_str());
            opt(&mut n, t.mask == Mask::Masked, "mask");
            opt(&mut n, t.lse, "lse");
            opt(&mut n, t.dropout, "dropout");
            opt(&mut n, t.squant, "squant");
            opt(&mut n, t.pagedkv, "pagedkv");
        }
        Kind::FwdSplitkvCombine => {
            n.push_str(&format!(
                "{head}_{}_{}_{}",
                mode(t),
                tile_name(t),
                t.pipeline.as_deref().unwrap_or("")
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.lse, "lse");
            opt(&mut n, t.squant, "squant");
        }
        Kind::FwdAppendkv => {
            n.push_str(&format!("{head}_{}_{}", tile_name(t), vl(t.vlayout)));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.rope != Rope::No, t.rope.as_str());
            opt(&mut n, t.pagedkv, "pagedkv");
        }
        Kind::BwdDotDoO => {
            // No block tile: `..._<mode>_o<occupancy>[_pad]`.
            n.push_str(&format!("{head}_{}_o{}", mode(t), t.occupancy.unwrap_or(0)));
            opt(&mut n, !pad.is_empty(), &pad);
        }
        Kind::BwdConvertDq => {
            let tile = format!("b{}", x(&t.tile));
            n.push_str(&format!(
                "{head}_{tile}_{}_o{}",
                mode(t),
                t.occupancy.unwrap_or(0)
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.deterministic, "deterministic");
        }
        Kind::BwdDqDkDv => {
            n.push_str(&format!(
                "{head}_{}_{}_{}",
                mode(t),
                tile_name(t),
                t.pipeline.as_deref().unwrap_or("")
            ));
            opt(&mut n, !pad.is_empty(), &pad);
            opt(&mut n, t.bias != Bias::No, t.bias.as_str());
            opt(&mut n, t.dbias, "dbias");
            opt(&mut n, t.mask == Mask::Masked, "mask");
            if t.dropout {
                n.push_str("_dropout");
                if let Some(v) = &t.dropout_variant {
                    n.push_str(&format!("_{v}"));
                }
                opt(&mut n, t.store_randval, "storerandval");
            }
            opt(&mut n, t.deterministic, "deterministic");
        }
    }
    n
}

// CK's cpp_symbol_map.py, in the version that wrote the reference list.
fn dtype_cpp(t: &BlobTraits) -> String {
    let bwd = t.kind.direction() == Direction::Bwd;
    let d = match t.dtype.as_str() {
        "fp16" => "Fp16",
        "bf16" => "Bf16",
        "fp8" => "Fp8",
        "bf8" => "Bf8",
        other => panic!("dtype {other}"),
    };
    format!("Fmha{}{d}", if bwd { "Bwd" } else { "Fwd" })
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

fn pipeline_enum(t: &BlobTraits) -> &'static str {
    match t.pipeline.as_deref() {
        Some("qr") => "ck_tile::BlockFmhaPipelineEnum::QRKSVS",
        Some("qr_async") => "ck_tile::BlockFmhaPipelineEnum::QRKSVS_ASYNC",
        Some("qs") => "ck_tile::BlockFmhaPipelineEnum::QSKSVS",
        Some("kr_ktr_vr") => "ck_tile::BlockFmhaBwdPipelineEnum::KRKTRVR",
        Some("kr_ktr_vr_iglp") => "ck_tile::BlockFmhaBwdPipelineEnum::KRKTRVR_IGLP",
        other => panic!("pipeline {other:?}"),
    }
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
    t.tile[..6]
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

const HEADER: &str = "// SPDX-License-Identifier: MIT\n// Copyright (c) 2018-2024, Advanced Micro Devices, Inc. All rights reserved.\n\n// auto generated by generate.py\n";

fn include(t: &BlobTraits) -> &'static str {
    if t.kind.direction() == Direction::Bwd {
        "#include \"fmha_bwd.hpp\"\n"
    } else {
        "#include \"fmha_fwd.hpp\"\n"
    }
}

/// The `<traits_template><...>` a blob of these traits declares, as CK
/// spells it in the blob (aliases such as `fmha_mask_0` included).
fn blob_traits_decl(t: &BlobTraits) -> String {
    let p = &t.pad;
    let dt = dtype_cpp(t);
    match t.kind {
        Kind::Fwd => format!(
            "fmha_fwd_traits_<{}, {dt}, {},{}, {},\n                        {}, fmha_mask_0, {}, {}, {}, {}, {}, {}, {}, {}>",
            t.hdim,
            mode_cpp(t),
            tile6(t),
            vlayout_cpp(t),
            pipeline_enum(t),
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
            pipeline_enum(t),
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
            t.tile[0],
            t.tile[1],
            b(t.lse),
            b(t.squant),
            b(p.s),
            b(p.dv)
        ),
        Kind::FwdAppendkv => format!(
            "fmha_fwd_appendkv_traits_<{}, {dt}, {}, {}, {}, {}, {},\n                        {}, {}, {}, {}, {}, {}>",
            t.hdim,
            t.tile[0],
            t.tile[1],
            t.tile[2],
            t.tile[3],
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
                pipeline_enum(t).into(),
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

/// A blob source as CK writes it for these traits (kernel bodies reduced).
pub fn blob_source(t: &BlobTraits) -> String {
    let mut s = String::from(HEADER);
    s.push_str(include(t));
    let dt = dtype_cpp(t);
    let decl = blob_traits_decl(t);
    match t.kind {
        Kind::Fwd | Kind::FwdAppendkv => {
            let entry = t.kind.entry_function();
            let args = t.kind.args_type();
            let _ = write!(
                s,
                "\nusing fmha_dtype_0 = {dt};\n\n\
                 using fmha_block_tile_0 = ck_tile::sequence<{tiles}>;\n\
                 using fmha_mask_0 = {mask};\n\n\
                 using fmha_kernel_0 = ck_tile::FmhaKernel<fmha_block_tile_0, fmha_mask_0>;\n\n\
                 using trait_0 = {decl};\n\n\
                 #include <iostream>\n\n\
                 template<>\n\
                 float {entry}<trait_0>(const ck_tile::stream_config& s, {args} a)\n\
                 {{\n    using k_ = fmha_kernel_0;\n    if(s.log_level_ > 0)\n        std::cout << \", \" << k_::GetName() << std::flush;\n    auto [kargs, grids] = fmha_create_kargs_and_grids<k_>(a);\n    return ck_tile::launch_kernel(s, ck_tile::make_kernel<256, 1>(k_{{}}, grids, 256, 0, kargs));\n}}\n",
                tiles = x(&t.tile).replace('x', ", "),
                mask = mask_cpp(t),
            );
        }
        Kind::FwdSplitkv | Kind::FwdSplitkvCombine => {
            let base = t.kind.entry_function().trim_end_matches("oneshot_");
            let _ = write!(
                s,
                "\nusing fmha_dtype_0 = {dt};\nusing fmha_mask_0 = {mask};\n\n\
                 namespace {{\ntemplate <bool kHasUnevenSplits>\nstruct kernel_runner {{\n\
                 using fmha_trait = ck_tile::TileFmhaFwdSplitKVTraits<kHasUnevenSplits>;\n\
                 using fmha_kernel = ck_tile::FmhaFwdSplitKVKernel<fmha_trait>;\n\n\
                 static void run(const ck_tile::stream_config& s, fmha_fwd_splitkv_args a)\n{{\n    using k_ = fmha_kernel;\n    auto [kargs, grids] = fmha_fwd_splitkv_create_kargs_and_grids<k_>(a);\n    ck_tile::make_kernel<256, 1>(k_{{}}, grids, 256, 0, kargs)(ck_tile::stream_config{{s.stream_id_}});\n}}\n}};\n}}\n\n\
                 using trait_0 = {decl};\n\n\
                 #include <iostream>\n\n\
                 template<>\n\
                 void {base}oneshot_<trait_0>(const ck_tile::stream_config& s, fmha_fwd_splitkv_args a)\n\
                 {{\n    if (a.num_splits <= 8) {{\n        kernel_runner<true>::run(s, a);\n    }} else {{\n        kernel_runner<false>::run(s, a);\n    }}\n}}\n\n\
                 template<>\n\
                 std::string {base}get_name_<trait_0>()\n\
                 {{\n    using k_ = kernel_runner<true>::fmha_kernel; /// FIXME: choose real kernel type\n    return k_::GetName();\n}}\n",
                mask = mask_cpp(t),
            );
        }
        Kind::BwdDotDoO | Kind::BwdDqDkDv | Kind::BwdConvertDq => {
            let entry = t.kind.entry_function();
            let alias = match t.kind {
                Kind::BwdDotDoO => "dot_do_o_trait_0",
                Kind::BwdDqDkDv => "dq_dk_dv_trait_0",
                _ => "convert_dq_trait_0",
            };
            let _ = write!(s, "\nusing fmha_dtype_0 = {dt};\n\n");
            if t.kind == Kind::BwdDqDkDv {
                let _ = write!(
                    s,
                    "using fmha_mask_0      = {};\nusing fmha_dropout_0   = {};\n\n",
                    mask_cpp(t),
                    dropout_cpp(t)
                );
            }
            let _ = write!(
                s,
                "using fmha_bwd_kernel_0 = ck_tile::FmhaBwdKernel<fmha_dtype_0>;\n\n\
                 using {alias} = {decl};\n\n\
                 #include <iostream>\n\n\
                 template <>\n\
                 float {entry}<{alias}>(const ck_tile::stream_config& s, fmha_bwd_args a)\n\
                 {{\n    using k_ = fmha_bwd_kernel_0;\n    if(s.log_level_ > 0)\n        std::cout << \", \" << k_::GetName() << std::flush;\n    auto [kargs, grids] = fmha_bwd_create_kargs_and_grids<k_>(a);\n    return ck_tile::launch_kernel(\n        s, ck_tile::make_kernel<256, 1>(k_{{}}, grids, 256, 0, kargs));\n}}\n\n\
                 template <>\n\
                 void {entry}oneshot_<{alias}>(const ck_tile::stream_config& s,\n                                                        fmha_bwd_args a)\n\
                 {{\n    using k_ = fmha_bwd_kernel_0;\n    auto [kargs, grids] = fmha_bwd_create_kargs_and_grids<k_>(a);\n    ck_tile::make_kernel<256, 1>(k_{{}}, grids, 256, 0, kargs)(\n        ck_tile::stream_config{{s.stream_id_}});\n}}\n\n\
                 template <>\n\
                 std::string {entry}get_name_<{alias}>()\n\
                 {{\n    using k_ = fmha_bwd_kernel_0;\n    return k_::GetName();\n}}\n"
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

fn fwd_checks(t: &BlobTraits) -> [String; 4] {
    let group = t.mode == Some(Mode::Group);
    let asyn = t.pipeline.as_deref() == Some("qr_async");
    let (bm0, bn0, bk0max) = (t.tile[0], t.tile[1], t.tile[5]);
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

/// Groups `traits` by dtype then hdim, in first-seen order, as CK's
/// `FmhaFwdApiPool` does.
/// Blobs by dtype, then by head dimension.
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
    // CK's tile tables list head dimensions smallest first, so a call goes
    // to the smallest hdim case that covers it.
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

/// The `*_api.cpp` CK writes for `direction`, dispatching to `blobs`
/// (the blobs of the direction's main kind; split-KV combine and the
/// backward helper blobs are derived as CK derives them).
pub fn api_source(direction: Direction, blobs: &[BlobTraits]) -> String {
    let main = match direction {
        Direction::Fwd => Kind::Fwd,
        Direction::FwdSplitkv => Kind::FwdSplitkv,
        Direction::FwdAppendkv => Kind::FwdAppendkv,
        Direction::Bwd => Kind::BwdDqDkDv,
    };
    let main_blobs: Vec<&BlobTraits> = blobs.iter().filter(|t| t.kind == main).collect();
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
    let dt = dtype_cpp(t);
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
                pe = pipeline_enum(t),
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
                pe = pipeline_enum(t),
                mask = mask_cpp(t),
                bias = bias_cpp(t),
                ps = b(p.s),
                psk = b(p.sk),
                pd = b(p.d),
                pdv = b(p.dv),
                bm0 = t.tile[0],
                bn1 = t.tile[3],
            )
        }
        Direction::FwdAppendkv => {
            let (bs, bd, bdv) = (t.tile[0], t.tile[2], t.tile[3]);
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
                t0 = t.tile[0],
                t1 = t.tile[1],
                t2 = t.tile[2],
                t3 = t.tile[3],
                ps = b(p.s),
                psk = b(p.sk),
                pd = b(p.d),
                pdv = b(p.dv),
                rope = rope_cpp(t),
            )
        }
        Direction::Bwd => {
            let group = t.mode == Some(Mode::Group);
            let (bm0, bn0) = (t.tile[0], t.tile[1]);
            let (bhdq, bhdv) = (t.tile[7], t.tile[8]);
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
                    pe = pipeline_enum(t),
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

/// Writes a CK-shaped generated tree under `dir`: each blob of `traits` as
/// `<direction>/<name>.cpp` and the four dispatchers. Returns the number of
/// blobs written.
pub fn write_tree(dir: &Path, traits: &[BlobTraits]) -> usize {
    let mut by_dir: BTreeMap<Direction, Vec<BlobTraits>> = BTreeMap::new();
    for t in traits {
        by_dir
            .entry(t.kind.direction())
            .or_default()
            .push(t.clone());
    }
    let mut n = 0;
    for (d, ts) in &by_dir {
        let sub = dir.join(d.as_str());
        fs::create_dir_all(&sub).unwrap();
        for t in ts {
            fs::write(sub.join(format!("{}.cpp", render_name(t))), blob_source(t)).unwrap();
            n += 1;
        }
        fs::write(sub.join(d.api_file()), api_source(*d, ts)).unwrap();
    }
    n
}

/// Writes an empty file for every name of the list under `dir` (the
/// preset only reads names).
pub fn write_empty_tree(dir: &Path) -> usize {
    let list = blob_list();
    for rel in &list {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        fs::write(&path, "").unwrap();
    }
    list.len()
}
