//! The public entry point a CK version's header declares is what a Rust
//! caller decides, whatever internal split that version's dispatcher uses.
//!
//! Newer CK (ROCm/rocm-libraries,
//! `projects/composablekernel/example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py`)
//! renders the forward dispatch twice, as `fmha_fwd_v2` (every pipeline but
//! the v3 one) and `fmha_fwd_v3` (the v3 pipeline only), each in an
//! anonymous namespace, and the public `fmha_fwd` holds no blob call:
//!
//! ```cpp
//! float fmha_fwd(fmha_fwd_traits traits, fmha_fwd_args args, const ck_tile::stream_config& config) {
//!     if (args.max_seqlen_q > 1) {
//!         float r = fmha_fwd_v3(traits, args, config);
//!         if (r >= 0) return r;
//!     }
//!     return fmha_fwd_v2(traits, args, config);
//! }
//! ```
//!
//! Here a copy of CK 2025-11's generator is changed into that shape: its
//! dispatch function renamed `fmha_fwd_v2` (all of today's dispatch, so
//! its decisions must be the unchanged CK's), a `fmha_fwd_v3` rendered by
//! the same code from a subset of the traits (2025-11 has no v3 pipeline;
//! the batch-mode `qr_async` traits stand in for it), and newer CK's
//! public `fmha_fwd` above, word for word.
#![cfg(feature = "build")]

mod real_ck;

use std::fs;
use std::path::Path;

use ck_jit_ck::rules::{Decision, Env, RulesFile, Value};
use ck_jit_ck::{CkFmha, CkFmhaFiles};
use real_ck::{ck_copy, ck_tree, Scratch, CK_2025};

/// Replaces `from` (once, exactly) in `text`.
fn edit(text: &mut String, from: &str, to: &str) {
    assert_eq!(text.matches(from).count(), 1, "{from:?} in fmha_fwd.py");
    *text = text.replacen(from, to, 1);
}

/// Newer CK's `fmha_fwd_api.cpp` shape, from CK 2025-11's generator.
fn split_fwd_dispatch(ck: &Path) {
    let py = ck.join("example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py");
    let mut text = fs::read_to_string(&py).unwrap();
    // The dispatch function becomes a template of its own, named by the
    // caller and kept in an anonymous namespace.
    edit(
        &mut text,
        "}} // namespace\n\nfloat fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config& s) {{\n",
        "}} // namespace\n\"\"\"\n\nFMHA_FWD_API_FUNC_TEMPLATE = \"\"\"\nnamespace {{\n\
         float {F_func_name}([[maybe_unused]] fmha_fwd_traits t, [[maybe_unused]] fmha_fwd_args a, \
         [[maybe_unused]] const ck_tile::stream_config& s) {{\n",
    );
    edit(
        &mut text,
        "{F_dispatch}\n    return r;\n}}\n\"\"\"\n",
        "{F_dispatch}\n    return r;\n}}\n}} // namespace\n\"\"\"\n\n\
         FMHA_FWD_API_FOOTER = \"\"\"\n\
         float fmha_fwd(fmha_fwd_traits traits, fmha_fwd_args args, const ck_tile::stream_config& config) {\n\
         \x20   if (args.max_seqlen_q > 1) {\n\
         \x20       float r = fmha_fwd_v3(traits, args, config);\n\
         \x20       if (r >= 0) return r;\n\
         \x20   }\n\
         \x20   return fmha_fwd_v2(traits, args, config);\n\
         }\n\"\"\"\n",
    );
    // Rendered once per function, from the traits each one takes.
    edit(
        &mut text,
        "    @property\n    def api(self) -> str:\n        per_arch = str()\n",
        "    @property\n    def api(self) -> str:\n\
         \x20       def only_v3(trait):\n\
         \x20           return trait.pipeline_tag == \"qr_async\" and trait.mode == \"batch\"\n\
         \x20       return (\n\
         \x20           FMHA_FWD_KERNEL_HEADER\n\
         \x20           + FMHA_FWD_API.format()\n\
         \x20           + self.render(\"fmha_fwd_v2\", lambda trait: True)\n\
         \x20           + self.render(\"fmha_fwd_v3\", only_v3)\n\
         \x20           + FMHA_FWD_API_FOOTER\n\
         \x20       )\n\n\
         \x20   def render(self, func_name, filter_fn) -> str:\n        per_arch = str()\n",
    );
    edit(
        &mut text,
        "for i_trait, trait in enumerate(pool_by_hdim):",
        "for i_trait, trait in enumerate([t for t in pool_by_hdim if filter_fn(t)]):",
    );
    edit(
        &mut text,
        "return FMHA_FWD_KERNEL_HEADER + FMHA_FWD_API.format(F_dispatch=indent(per_arch))",
        "return FMHA_FWD_API_FUNC_TEMPLATE.format(F_func_name=func_name, F_dispatch=indent(per_arch))",
    );
    fs::write(&py, text).unwrap();
}

fn generate(ck: &Path, out: &Path) -> CkFmhaFiles {
    CkFmha::new()
        .source(ck)
        .out_dir(out)
        .name("t")
        .cargo_metadata(false)
        .direction("fwd")
        .filter("*_d128_fp16_*")
        .arch("gfx942")
        .try_manifest()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn fwd_rules(files: &CkFmhaFiles) -> RulesFile {
    let rules = files.dispatch_rules().unwrap_or_else(|e| panic!("{e}"));
    rules
        .into_iter()
        .find(|r| r.file == "fmha_fwd_api.cpp")
        .expect("rules of fmha_fwd_api.cpp")
}

/// One forward operation, answered under the parameter names of the
/// function decided (`t`/`a` of 2025-11's `fmha_fwd`, `traits`/`args` of
/// newer CK's).
struct Op {
    traits: &'static str,
    args: &'static str,
    group: bool,
    lse: bool,
    seqlen_q: i64,
    seqlen_k: i64,
}

impl Env for Op {
    fn value(&self, name: &str) -> Option<Value> {
        if let Some(f) = name
            .strip_prefix(self.traits)
            .and_then(|n| n.strip_prefix('.'))
        {
            return Some(match f {
                "data_type" => Value::Str("fp16".into()),
                "hdim_q" | "hdim_v" => Value::Int(128),
                "is_group_mode" => Value::Bool(self.group),
                "is_v_rowmajor" => Value::Bool(true),
                "has_lse" => Value::Bool(self.lse),
                "mask_type" => Value::Enum("mask_enum::no_mask".into()),
                "bias_type" => Value::Enum("bias_enum::no_bias".into()),
                "has_logits_soft_cap"
                | "has_dropout"
                | "do_fp8_static_quant"
                | "skip_min_seqlen_q" => Value::Bool(false),
                _ => return None,
            });
        }
        if let Some(f) = name
            .strip_prefix(self.args)
            .and_then(|n| n.strip_prefix('.'))
        {
            return Some(match f {
                "seqlen_q" | "max_seqlen_q" => Value::Int(self.seqlen_q),
                "seqlen_k" => Value::Int(self.seqlen_k),
                "hdim_q" | "hdim_v" => Value::Int(128),
                "batch" => Value::Int(2),
                "nhead_q" | "nhead_k" => Value::Int(8),
                "seqstart_q_ptr" | "seqstart_k_ptr" | "seqlen_k_ptr" | "cu_seqlen_q_ptr"
                | "cu_seqlen_k_ptr" => Value::Null,
                _ => return None,
            });
        }
        (name == "num_cus").then_some(Value::Int(304))
    }

    fn call(&self, function: &str, args: &[Value]) -> Option<Value> {
        match (function, args) {
            ("ck_tile::get_device_name", []) => Some(Value::Str("gfx942".into())),
            ("get_num_cus", [_]) => Some(Value::Bool(true)),
            ("get_num_blocks", [Value::Int(m0)]) => {
                Some(Value::Int(2 * 8 * ((self.seqlen_q + m0 - 1) / m0)))
            }
            _ => None,
        }
    }
}

fn operations() -> Vec<(bool, bool, i64, i64)> {
    let mut ops = Vec::new();
    for group in [false, true] {
        for lse in [false, true] {
            for q in [1, 64, 100, 128, 1000] {
                for k in [64, 100, 128, 4096] {
                    ops.push((group, lse, q, k));
                }
            }
        }
    }
    ops
}

fn op(names: (&'static str, &'static str), (group, lse, q, k): (bool, bool, i64, i64)) -> Op {
    Op {
        traits: names.0,
        args: names.1,
        group,
        lse,
        seqlen_q: q,
        seqlen_k: k,
    }
}

#[test]
fn newer_cks_public_fmha_fwd_decides_through_v3_then_v2() {
    let Some(real) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("public-entry");
    let Some(ck) = ck_copy(CK_2025, &tmp.path().join("ck")) else {
        return;
    };
    split_fwd_dispatch(&ck);
    let today = fwd_rules(&generate(&real, &tmp.path().join("today")));
    let split = fwd_rules(&generate(&ck, &tmp.path().join("split")));
    let api = walk(&tmp.path().join("split"))
        .into_iter()
        .find(|p| p.ends_with("fmha_fwd_api.cpp"))
        .map(|p| fs::read_to_string(p).unwrap())
        .expect("the generated fmha_fwd_api.cpp");
    assert!(api.contains("float fmha_fwd_v2(") && api.contains("float fmha_fwd_v3("));
    assert!(api.contains("float r = fmha_fwd_v3(traits, args, config);"));

    let (mut v3_ran, mut v2_only, mut none) = (0, 0, 0);
    for o in operations() {
        let want = today.decide("fmha_fwd", &op(("t", "a"), o)).unwrap();
        let v2 = split.decide("fmha_fwd_v2", &op(("t", "a"), o)).unwrap();
        assert_eq!(v2.blobs(), want.blobs(), "{o:?}: v2 is today's dispatch");
        let v3 = split.decide("fmha_fwd_v3", &op(("t", "a"), o)).unwrap();
        let public = split
            .decide("fmha_fwd", &op(("traits", "args"), o))
            .unwrap_or_else(|e| panic!("{o:?}: {e}"));
        let (_, _, q, _) = o;
        if q > 1 && !v3.blobs().is_empty() {
            // v3's kernel, then today's where it refuses the arguments.
            assert_eq!(public.blobs(), v3.blobs(), "{o:?}");
            let mut tried = vec![v3.blobs()];
            tried.extend(want.candidates());
            assert_eq!(public.candidates(), tried, "{o:?}");
            assert!(matches!(public, Decision::Fallback { .. }), "{o:?}");
            v3_ran += 1;
        } else {
            assert_eq!(public.candidates(), want.candidates(), "{o:?}");
            if want.blobs().is_empty() {
                none += 1;
            } else {
                v2_only += 1;
            }
        }
    }
    eprintln!("{v3_ran} through v3, {v2_only} through v2 alone, {none} with no kernel");
    assert!(v3_ran > 0 && v2_only > 0, "{v3_ran} {v2_only}");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
