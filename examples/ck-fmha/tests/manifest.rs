//! What the build recorded: every blob of the list in the manifest, in the
//! group of its kind, with CK's compile command and entry prefix; every
//! call of the four rewritten dispatchers resolving an existing blob of the
//! right kind; and the Rust side pairing split-KV and backward kernels
//! exactly as the dispatchers do.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;

use ck_fmha::kernels::{
    bwd_convert_dq, bwd_dot_do_o, bwd_dq_dk_dv, fwd, fwd_appendkv, fwd_splitkv, fwd_splitkv_combine,
};
use ck_fmha::{BwdKernels, SplitkvKernels};
use ck_jit_rt::manifest::SymbolSpec;
use common::Name;

const FAMILIES: [&str; 7] = [
    "fwd",
    "fwd_splitkv",
    "fwd_splitkv_combine",
    "fwd_appendkv",
    "bwd_dot_do_o",
    "bwd_dq_dk_dv",
    "bwd_convert_dq",
];

#[test]
fn every_listed_blob_is_in_the_manifest_in_the_group_of_its_kind() {
    common::setup("manifest");
    let names = common::names();
    assert_eq!(names.len(), 10_554);
    let m = ck_fmha::runtime().unwrap().manifest();
    assert_eq!(m.blobs.len(), 10_554);

    // Kinds counted from the file names alone.
    let mut counted: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &names {
        *counted.entry(n.family).or_default() += 1;
    }
    let expected: BTreeMap<&str, usize> = [
        ("fwd", 1458),
        ("fwd_splitkv", 978),
        ("fwd_splitkv_combine", 99),
        ("fwd_appendkv", 195),
        ("bwd_dot_do_o", 48),
        ("bwd_dq_dk_dv", 7680),
        ("bwd_convert_dq", 96),
    ]
    .into_iter()
    .collect();
    assert_eq!(counted, expected);

    let mut group_names: Vec<&str> = m.groups.iter().map(|g| g.name.as_str()).collect();
    group_names.sort_unstable();
    let mut families = FAMILIES.to_vec();
    families.sort_unstable();
    assert_eq!(group_names, families);
    let mut in_manifest: BTreeMap<&str, usize> = BTreeMap::new();
    for n in &names {
        let blob = m
            .blob(&n.stem)
            .unwrap_or_else(|| panic!("{} is not in the manifest", n.stem));
        let group = m.group_of(blob);
        assert_eq!(group.name, n.family, "{}", n.stem);
        assert_eq!(blob.meta["kind"], n.family);
        assert_eq!(blob.meta["hdim"], n.hdim.to_string());
        assert_eq!(blob.meta["dtype"], n.dtype);
        // The source is in the generated tree, and looks like CK's.
        let src = ck_fmha::generated_dir().join(&blob.source);
        assert!(src.is_file(), "{}", src.display());
        *in_manifest.entry(group.name.as_str()).or_default() += 1;
    }
    assert_eq!(in_manifest, expected);

    // CK's compile command through hipcc, and each kind's entry prefix.
    for g in &m.groups {
        assert_eq!(g.compiler, "hipcc");
        for flag in [
            "--offload-arch=gfx90a",
            "-fgpu-flush-denormals-to-zero",
            "-std=c++17",
            "-O3",
        ] {
            assert!(g.args.iter().any(|a| a == flag), "{}: {:?}", g.name, g.args);
        }
        assert!(
            g.args.iter().any(|a| a.ends_with("ck-standin/include")),
            "{:?}",
            g.args
        );
    }
    let prefix = |family: &str| {
        let g = m.groups.iter().find(|g| g.name == family).unwrap();
        match &g.symbol {
            SymbolSpec::Prefix(p) => p.clone(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(prefix("fwd"), "_Z9fmha_fwd_I");
    assert_eq!(prefix("fwd_splitkv"), "_Z25fmha_fwd_splitkv_oneshot_I");
    assert_eq!(prefix("bwd_dq_dk_dv"), "_Z18fmha_bwd_dq_dk_dv_I");

    // The family tables see the same blobs.
    let sizes = [
        fwd::blobs().unwrap().len(),
        fwd_splitkv::blobs().unwrap().len(),
        fwd_splitkv_combine::blobs().unwrap().len(),
        fwd_appendkv::blobs().unwrap().len(),
        bwd_dot_do_o::blobs().unwrap().len(),
        bwd_dq_dk_dv::blobs().unwrap().len(),
        bwd_convert_dq::blobs().unwrap().len(),
    ];
    let expected_sizes: Vec<usize> = FAMILIES.iter().map(|f| expected[f]).collect();
    assert_eq!(sizes.to_vec(), expected_sizes);
}

/// The blobs each rewritten call resolves, in order, per call.
fn rewritten_calls(file: &str) -> Vec<Vec<String>> {
    let path = ck_fmha::dispatchers_dir().join(file);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut calls = Vec::new();
    for lambda in text.split("[&]() -> float {").skip(1) {
        let body = &lambda[..lambda.find("}()").unwrap()];
        let blobs: Vec<String> = body
            .split("ck_jit_dispatch::resolve<")
            .skip(1)
            .map(|r| {
                let start = r.find(", \"").unwrap() + 3;
                r[start..start + r[start..].find('"').unwrap()].to_string()
            })
            .collect();
        calls.push(blobs);
    }
    calls
}

/// How many direct blob calls the original dispatcher makes.
fn original_calls(direction: &str, file: &str, call: &str) -> usize {
    let path = ck_fmha::generated_dir().join(direction).join(file);
    fs::read_to_string(&path).unwrap().matches(call).count()
}

#[test]
fn every_dispatcher_call_resolves_an_existing_blob_of_the_right_kind() {
    common::setup("manifest");
    let kind: BTreeMap<String, &str> = common::names()
        .into_iter()
        .map(|n| (n.stem, n.family))
        .collect();
    let cases: [(&str, &str, &str, &[&str]); 4] = [
        (
            "fwd",
            "fmha_fwd_api.cpp",
            "return fmha_fwd_<trait_>(s, a);",
            &["fwd"],
        ),
        (
            "fwd_splitkv",
            "fmha_fwd_splitkv_api.cpp",
            "return fmha_fwd_splitkv_<traits_, traits2_>(s, a);",
            &["fwd_splitkv", "fwd_splitkv_combine"],
        ),
        (
            "fwd_appendkv",
            "fmha_fwd_appendkv_api.cpp",
            "return fmha_fwd_appendkv_<trait_>(s, a);",
            &["fwd_appendkv"],
        ),
        (
            "bwd",
            "fmha_bwd_api.cpp",
            "r = fmha_bwd_<dot_do_o_trait_, dq_dk_dv_trait_, convert_dq_trait_>(s, a);",
            &["bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"],
        ),
    ];
    let mut used: BTreeSet<String> = BTreeSet::new();
    let mut counts = BTreeMap::new();
    for (direction, file, direct, kinds) in cases {
        let calls = rewritten_calls(file);
        let original = original_calls(direction, file, direct);
        assert!(original > 0);
        assert_eq!(calls.len(), original, "{file}: every call rewritten");
        for blobs in &calls {
            let got: Vec<&str> = blobs
                .iter()
                .map(|b| *kind.get(b).unwrap_or_else(|| panic!("{file}: no blob {b}")))
                .collect();
            assert_eq!(got, kinds, "{file}: {blobs:?}");
            used.extend(blobs.iter().cloned());
        }
        let text = fs::read_to_string(ck_fmha::dispatchers_dir().join(file)).unwrap();
        assert!(!text.contains(direct), "{file} still calls a blob directly");
        counts.insert(file, calls.len());
    }
    assert_eq!(counts["fmha_fwd_api.cpp"], 1458);
    assert_eq!(counts["fmha_fwd_splitkv_api.cpp"], 978);
    assert_eq!(counts["fmha_fwd_appendkv_api.cpp"], 195);
    assert_eq!(counts["fmha_bwd_api.cpp"], 10_752);
    // Every blob of the dispatchers' main kinds is reachable.
    for (stem, family) in &kind {
        if matches!(
            *family,
            "fwd" | "fwd_splitkv" | "fwd_appendkv" | "bwd_dq_dk_dv"
        ) {
            assert!(used.contains(stem), "{stem} is never called");
        }
    }
}

#[test]
fn rust_pairs_split_kv_and_backward_kernels_as_the_dispatchers_do() {
    common::setup("manifest");
    for call in rewritten_calls("fmha_fwd_splitkv_api.cpp") {
        let split = fwd_splitkv::by_name(&call[0]).unwrap();
        let pair = SplitkvKernels::for_split(split).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(pair.combine.name(), call[1], "combine of {}", call[0]);
    }
    let mut checked = 0;
    for call in rewritten_calls("fmha_bwd_api.cpp") {
        let main = bwd_dq_dk_dv::by_name(&call[1]).unwrap();
        // The helpers' seqlen_q padding is the dispatcher entry's choice.
        let spad = Name::parse(&call[0]).pads_s();
        let k = BwdKernels::for_main(main, spad).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            [k.dot_do_o.name(), k.convert_dq.name()],
            [call[0].as_str(), call[2].as_str()],
            "helpers of {}",
            call[1]
        );
        checked += 1;
    }
    assert_eq!(checked, 10_752);
}
