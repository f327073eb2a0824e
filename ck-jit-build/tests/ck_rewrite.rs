//! The dispatcher rewrite on CK-shaped trees generated from the real blob
//! list: every call of all four dispatchers maps to an existing blob of the
//! right kind, an unmatched call is an error naming it, and the rewritten
//! dispatchers compile and dispatch through `ck_jit_resolve`.

mod ck_common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use ck_common::{api_source, blob_source, blob_traits, write_tree, TempDir};
use ck_jit_build::ck::{
    rewrite_dispatcher, BlobIndex, BlobTraits, CkFmha, Direction, Error, Kind, Mode,
};

/// The stand-in CK tree whose headers declare the traits of the
/// CK-shaped test trees.
const STANDIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/ck-standin");

fn preset(generated: &Path, out: &Path) -> ck_jit_build::ck::CkFmhaFiles {
    CkFmha::new()
        .source(STANDIN)
        .generated_dir(generated)
        .out_dir(out)
        .name("t")
        .cargo_metadata(false)
        .try_manifest()
        .unwrap()
}

#[test]
fn every_call_of_the_four_dispatchers_maps_to_an_existing_blob() {
    let tmp = TempDir::new("rewrite-all");
    let gen = tmp.path().join("gen");
    let traits = blob_traits(|_| true);
    assert_eq!(write_tree(&gen, &traits), 10_554);
    let files = preset(&gen, &tmp.path().join("out"));
    assert_eq!(files.manifest.blobs.len(), 10_554);

    let t0 = Instant::now();
    let index = files.blob_index().unwrap();
    println!("indexed {} blobs in {:?}", index.len(), t0.elapsed());
    assert_eq!(index.len(), 10_554);

    let kind_of: BTreeMap<&str, Kind> = files
        .manifest
        .blobs
        .iter()
        .map(|b| (b.name.as_str(), Kind::from_name(&b.meta["kind"]).unwrap()))
        .collect();
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut calls_per_api = BTreeMap::new();
    let t0 = Instant::now();
    for api in files.dispatchers() {
        let text = fs::read_to_string(api).unwrap();
        let out = rewrite_dispatcher(&text, &index).unwrap();
        let name = api.file_name().unwrap().to_string_lossy().into_owned();
        for call in &out.calls {
            let expected: &[Kind] = match call.call.as_str() {
                "fmha_fwd_" => &[Kind::Fwd],
                "fmha_fwd_appendkv_" => &[Kind::FwdAppendkv],
                "fmha_fwd_splitkv_" => &[Kind::FwdSplitkv, Kind::FwdSplitkvCombine],
                "fmha_bwd_" => &[Kind::BwdDotDoO, Kind::BwdDqDkDv, Kind::BwdConvertDq],
                other => panic!("unexpected call {other}"),
            };
            let kinds: Vec<Kind> = call.blobs.iter().map(|b| kind_of[b.as_str()]).collect();
            assert_eq!(kinds, expected, "{name}:{}", call.line);
            used.extend(call.blobs.iter().cloned());
        }
        // One resolve per blob argument of every call.
        let resolves = out.text.matches("ck_jit_dispatch::resolve<").count();
        assert_eq!(
            resolves,
            out.calls.iter().map(|c| c.blobs.len()).sum::<usize>()
        );
        // No direct call of a blob template is left.
        for direct in [
            "return fmha_fwd_<trait_>(s, a);",
            "return fmha_fwd_splitkv_<traits_, traits2_>(s, a);",
            "return fmha_fwd_appendkv_<trait_>(s, a);",
            "r = fmha_bwd_<dot_do_o_trait_, dq_dk_dv_trait_, convert_dq_trait_>(s, a);",
        ] {
            assert!(!out.text.contains(direct), "{name} still calls {direct}");
        }
        assert_eq!(out.text.matches("#include \"ck_jit.h\"").count(), 1);
        calls_per_api.insert(name, out.calls.len());
    }
    println!("rewrote {calls_per_api:?} in {:?}", t0.elapsed());
    let count = |k: Kind| traits.iter().filter(|t| t.kind == k).count();
    assert_eq!(calls_per_api["fmha_fwd_api.cpp"], count(Kind::Fwd));
    assert_eq!(
        calls_per_api["fmha_fwd_splitkv_api.cpp"],
        count(Kind::FwdSplitkv)
    );
    assert_eq!(
        calls_per_api["fmha_fwd_appendkv_api.cpp"],
        count(Kind::FwdAppendkv)
    );
    // bwd: batch-mode kernels without seqlen_q padding get a second entry
    // whose dot_do_o/convert_dq pad seqlen_q, as CK's codegen writes them.
    let bwd_entries: usize = traits
        .iter()
        .filter(|t| t.kind == Kind::BwdDqDkDv)
        .map(|t| {
            if !t.pad.s && t.mode == Some(Mode::Batch) {
                2
            } else {
                1
            }
        })
        .sum();
    assert_eq!(calls_per_api["fmha_bwd_api.cpp"], bwd_entries);
    // Every blob of the dispatchers' main kinds is reachable.
    for t in &traits {
        if matches!(
            t.kind,
            Kind::Fwd | Kind::FwdSplitkv | Kind::FwdAppendkv | Kind::BwdDqDkDv
        ) {
            assert!(
                used.contains(&ck_common::render_name(t)),
                "{:?} unused",
                t.kind
            );
        }
    }
    println!(
        "{} distinct blobs reachable from the dispatchers",
        used.len()
    );

    // The files can also be rewritten in one go, into OUT_DIR.
    let dir = tmp.path().join("rewritten");
    let written = files.rewrite_dispatchers(&dir).unwrap();
    assert_eq!(written.len(), 4);
    assert!(written.iter().all(|p| p.starts_with(&dir) && p.is_file()));
}

#[test]
fn an_unmatched_call_is_an_error_naming_its_line_and_traits() {
    let traits = blob_traits(|t| t.hdim == 64 && t.dtype == "fp16" && t.kind == Kind::Fwd);
    let mut index = BlobIndex::new();
    for t in &traits {
        index
            .add_source(&ck_common::render_name(t), &blob_source(t))
            .unwrap();
    }
    let api = api_source(Direction::Fwd, &traits);
    assert!(rewrite_dispatcher(&api, &index).is_ok());

    // A dispatcher entry for a head dimension no blob has.
    let (line_no, line) = api
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("using trait_ = fmha_fwd_traits_<64, FmhaFwdFp16"))
        .unwrap();
    let broken_line = line.replacen("<64, FmhaFwdFp16", "<72, FmhaFwdFp16", 1);
    let broken = api.replacen(line, &broken_line, 1);
    let err = rewrite_dispatcher(&broken, &index).unwrap_err();
    match &err {
        Error::UnmatchedCall {
            line, call, args, ..
        } => {
            assert_eq!(
                *line,
                line_no + 2,
                "the call is on the line after the using"
            );
            assert_eq!(call, "fmha_fwd_");
            assert!(
                args.starts_with("fmha_fwd_traits_<72,FmhaFwdFp16,false,128,64,"),
                "{args}"
            );
        }
        other => panic!("{other:?}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains(&format!("line {}", line_no + 2)) && msg.contains("fmha_fwd_traits_<72"),
        "{msg}"
    );

    // A blob of the wrong kind is no match either.
    let wrong = api.replacen(
        "return fmha_fwd_<trait_>",
        "return fmha_fwd_appendkv_<trait_>",
        1,
    );
    let err = rewrite_dispatcher(&wrong, &index).unwrap_err();
    assert!(
        matches!(
            &err,
            Error::WrongKind {
                found: Kind::Fwd,
                needed: Kind::FwdAppendkv,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("needs a fwd_appendkv blob"),
        "{err}"
    );
}

#[test]
fn split_kv_combine_traits_written_as_arithmetic_match_their_blobs() {
    // CK writes the combine tile as `{bm0}/2, {bn1}/2` in the dispatcher
    // and as plain numbers in the blob.
    let traits = blob_traits(|t| {
        t.hdim == 128 && matches!(t.kind, Kind::FwdSplitkv | Kind::FwdSplitkvCombine)
    });
    let api = api_source(Direction::FwdSplitkv, &traits);
    assert!(api.contains("64/2, 128/2"));
    let mut index = BlobIndex::new();
    for t in &traits {
        index
            .add_source(&ck_common::render_name(t), &blob_source(t))
            .unwrap();
    }
    let out = rewrite_dispatcher(&api, &index).unwrap();
    assert!(!out.calls.is_empty());
    for c in &out.calls {
        let split = BlobTraits::parse(&c.blobs[0]).unwrap();
        let combine = BlobTraits::parse(&c.blobs[1]).unwrap();
        assert_eq!(
            combine.tile,
            [split.tile[0] / 2, split.tile[3] / 2],
            "{}",
            c.blobs[1]
        );
        assert_eq!((combine.lse, combine.squant), (split.lse, split.squant));
    }
    assert!(out.text.contains("ck_tile::launch_kernel(s"));
}

fn cxx() -> Option<&'static str> {
    ["c++", "g++", "clang++"].into_iter().find(|c| {
        Command::new(c)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

#[test]
fn rewritten_dispatchers_compile_and_call_blobs_through_ck_jit_resolve() {
    let Some(cxx) = cxx() else {
        panic!("no C++ compiler (c++, g++, clang++) to compile the rewritten dispatchers");
    };
    let tmp = TempDir::new("rewrite-compile");
    let gen = tmp.path().join("gen");
    // One head dimension and dtype keeps the dispatchers small enough to
    // compile quickly; every kind and every api file is still there.
    let traits = blob_traits(|t| {
        t.hdim == 64
            && t.dtype == "fp16"
            && !(t.kind == Kind::BwdDqDkDv && (t.dropout || t.bias != ck_jit_build::ck::Bias::No))
    });
    write_tree(&gen, &traits);
    let files = preset(&gen, &tmp.path().join("out"));
    let dir = tmp.path().join("rewritten");
    let written = files.rewrite_dispatchers(&dir).unwrap();
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ck/include");
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ck/run_dispatch.cpp");
    let exe = tmp.path().join("run_dispatch");
    let mut cmd = Command::new(cxx);
    cmd.arg("-std=c++17")
        .arg("-Wall")
        .arg("-Wno-unused-variable")
        .arg("-Werror")
        .arg("-I")
        .arg(&include)
        .args(&written)
        .arg(&driver)
        .arg("-o")
        .arg(&exe);
    let t0 = Instant::now();
    let out = cmd.output().unwrap();
    println!(
        "compiled {} dispatchers in {:?}",
        written.len(),
        t0.elapsed()
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .take(40)
            .collect::<Vec<_>>()
            .join("\n")
    );

    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let stdout = String::from_utf8(run.stdout).unwrap();
    let lines: BTreeMap<&str, Vec<&str>> = stdout
        .lines()
        .map(|l| {
            let mut f = l.split(' ');
            (f.next().unwrap(), f.collect())
        })
        .collect();
    println!("{stdout}");

    // fwd: two calls, one resolve (the warm call is one load), the stub's
    // value twice, and the blob is the first dispatcher entry for the traits.
    let fwd = &lines["fwd"];
    assert_eq!(&fwd[..3], ["208", "1", "FF"]);
    assert_eq!(
        fwd[3],
        "fmha_fwd_d64_fp16_batch_shb_b128x64x32x64x32x64_r4x1x1_w32x32x16_qr_async_vr_psddv"
    );
    // split-KV: both blobs resolved, run in order in one launch.
    let skv = &lines["splitkv"];
    assert_eq!(&skv[..3], ["0", "2", "SC"]);
    assert_eq!(BlobTraits::parse(skv[3]).unwrap().kind, Kind::FwdSplitkv);
    assert_eq!(
        BlobTraits::parse(skv[4]).unwrap().kind,
        Kind::FwdSplitkvCombine
    );
    assert!(BlobTraits::parse(skv[4]).unwrap().lse);
    // bwd: three blobs in kernel order, times summed, resolved once.
    let bwd = &lines["bwd"];
    assert_eq!(&bwd[..3], ["222", "3", "DQVDQV"]);
    let kinds: Vec<Kind> = bwd[3..]
        .iter()
        .map(|b| BlobTraits::parse(b).unwrap().kind)
        .collect();
    assert_eq!(
        kinds,
        [Kind::BwdDotDoO, Kind::BwdDqDkDv, Kind::BwdConvertDq]
    );

    // A failed resolve is reported, returns CK's -1 and is retried on the
    // next call rather than cached.
    let run = Command::new(&exe)
        .env("CK_JIT_MOCK_FAIL", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8(run.stdout).unwrap();
    let stderr = String::from_utf8(run.stderr).unwrap();
    let fwd_line = stdout.lines().find(|l| l.starts_with("fwd ")).unwrap();
    let fields: Vec<&str> = fwd_line.split(' ').collect();
    assert_eq!(&fields[1..4], ["-2", "2", "-"]);
    assert!(
        stderr.contains("ck-jit: cannot load blob 'fmha_fwd_d64_fp16"),
        "{stderr}"
    );
    assert!(stderr.contains("mock: no compiler"), "{stderr}");
}
