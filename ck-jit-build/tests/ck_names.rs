//! Every file name one real CK codegen run writes (receipt 1, all four
//! directions: `tests/data/ck-fmha-blobs.txt`) is classified, and every
//! blob name parses completely into traits that render back to the name.

mod ck_common;

use std::collections::BTreeMap;

use ck_common::{blob_list, render_name};
use ck_jit_build::ck::{classify, BlobTraits, Direction, FileClass, Kind};

#[test]
fn every_generated_file_is_classified_and_counted_by_kind() {
    let list = blob_list();
    assert_eq!(list.len(), 10_558);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for rel in &list {
        let class = classify(rel);
        let key = match class {
            FileClass::Blob(k) => {
                // The directory a blob sits in is its kind's direction.
                assert_eq!(rel.split('/').next(), Some(k.direction().as_str()), "{rel}");
                k.as_str().to_string()
            }
            FileClass::Api(d) => {
                assert_eq!(rel, &format!("{}/{}", d.as_str(), d.api_file()));
                "api".to_string()
            }
            other => panic!("{rel} classified as {other:?}"),
        };
        *counts.entry(key).or_default() += 1;
    }
    println!("files by kind: {counts:?}");
    let expected = [
        ("api", 4),
        ("bwd_convert_dq", 96),
        ("bwd_dot_do_o", 48),
        ("bwd_dq_dk_dv", 7680),
        ("fwd", 1458),
        ("fwd_appendkv", 195),
        ("fwd_splitkv", 978),
        ("fwd_splitkv_combine", 99),
    ];
    let expected: BTreeMap<String, usize> =
        expected.iter().map(|(k, n)| (k.to_string(), *n)).collect();
    assert_eq!(counts, expected);
    assert_eq!(counts.values().sum::<usize>() - 4, 10_554);
    assert_eq!(Direction::ALL.len(), 4);
}

#[test]
fn every_blob_name_parses_fully_and_renders_back() {
    let mut by_kind: BTreeMap<Kind, usize> = BTreeMap::new();
    let mut meta_keys: BTreeMap<Kind, std::collections::BTreeSet<String>> = BTreeMap::new();
    for rel in blob_list() {
        let FileClass::Blob(kind) = classify(&rel) else {
            continue;
        };
        let t = BlobTraits::parse(&rel).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.kind, kind, "{rel}");
        assert!(t.extra.is_empty(), "{rel}: unknown tokens {:?}", t.extra);
        let stem = rel
            .rsplit('/')
            .next()
            .and_then(|f| f.strip_suffix(".cpp"))
            .unwrap();
        assert_eq!(
            render_name(&t),
            stem,
            "the traits of {rel} do not render back"
        );
        *by_kind.entry(kind).or_default() += 1;
        let m = t.meta();
        assert_eq!(m["kind"], kind.as_str());
        let keys = meta_keys.entry(kind).or_default();
        if keys.is_empty() {
            keys.extend(m.keys().cloned());
        } else {
            // Every blob of a kind carries the same attributes.
            assert_eq!(
                keys.iter().collect::<Vec<_>>(),
                m.keys().collect::<Vec<_>>(),
                "{rel}"
            );
        }
    }
    for (kind, n) in &by_kind {
        println!("{kind:>20}: {n:5} blobs, metadata {:?}", meta_keys[kind]);
    }
    assert_eq!(by_kind.values().sum::<usize>(), 10_554);
    assert_eq!(by_kind.len(), 7);
}

#[test]
fn the_traits_carry_what_the_names_say() {
    let t = BlobTraits::parse(
        "fwd_splitkv/fmha_fwd_splitkv_d128_bf16_batch_b64x128x32x128x32x128_r4x1x1_w16x16x16_qr_vc_psk_bias_lse.cpp",
    )
    .unwrap();
    let m = t.meta();
    let get = |k: &str| m.get(k).map(String::as_str);
    assert_eq!(get("hdim"), Some("128"));
    assert_eq!(get("mode"), Some("batch"));
    assert_eq!(get("tile"), Some("b64x128x32x128x32x128"));
    assert_eq!(get("pipeline"), Some("qr"));
    assert_eq!(get("vlayout"), Some("col"));
    assert_eq!((get("spad"), get("skpad")), (Some("false"), Some("true")));
    assert_eq!(
        (get("bias"), get("mask"), get("lse")),
        (Some("bias"), Some("no"), Some("true"))
    );
    assert_eq!(
        (get("squant"), get("pagedkv")),
        (Some("false"), Some("false"))
    );
    assert_eq!(get("partitioner"), None);

    let t = BlobTraits::parse(
        "fmha_fwd_d256_fp16_group_hbs_b128x128x32x256x32x256_r4x1x1_w32x32x16_qr_vr_psskddv_alibi_mask_lse_dropout",
    )
    .unwrap();
    let m = t.meta();
    assert_eq!(m["partitioner"], "hbs");
    assert_eq!(m["mode"], "group");
    assert_eq!(
        (m["mask"].as_str(), m["dropout"].as_str()),
        ("mask", "true")
    );
}
