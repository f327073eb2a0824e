//! The Rust side of CK's dispatchers on the blobs CK's generator wrote:
//! decisions evaluated from the rules the build read out of CK's
//! `*_api.cpp`, checked against each chosen blob's own declared traits.
//! (`ck_oracle.rs` compares them with CK's compiled dispatcher.)

use std::collections::BTreeMap;

use ck_fmha::kernels::fwd;
use ck_fmha::{
    select_bwd, select_fwd, select_fwd_appendkv, select_fwd_splitkv, Device, Error, FmhaBwdArgs,
    FmhaBwdTraits, FmhaFwdAppendkvArgs, FmhaFwdAppendkvTraits, FmhaFwdArgs, FmhaFwdSplitkvArgs,
    FmhaFwdSplitkvTraits, FmhaFwdTraits,
};

/// Whether the build read a CK tree; a visible skip otherwise, a failure
/// when `CK_JIT_REQUIRE_CK_DATA` is set.
fn have_ck() -> bool {
    if ck_fmha::ck_tree().is_some() {
        return true;
    }
    assert!(
        std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_none(),
        "CK_JIT_REQUIRE_CK_DATA is set but ck-fmha was built without a CK tree"
    );
    eprintln!("SKIPPED: ck-fmha was built without a CK tree (CK_FMHA_CK)");
    false
}

fn is_ck_2025() -> bool {
    ck_fmha::ck_tree().is_some_and(|t| t.ends_with("ck-2025-11"))
}

fn fwd_traits(dtype: &str, hdim: i32) -> FmhaFwdTraits {
    FmhaFwdTraits {
        hdim_q: hdim,
        hdim_v: hdim,
        data_type: dtype.into(),
        is_v_rowmajor: true,
        mask_type: "mask_enum::no_mask".into(),
        bias_type: "bias_enum::no_bias".into(),
        ..Default::default()
    }
}

fn fwd_args(seqlen_q: i32, seqlen_k: i32, hdim: i32) -> FmhaFwdArgs {
    FmhaFwdArgs {
        seqlen_q,
        seqlen_k,
        max_seqlen_q: seqlen_q,
        hdim_q: hdim,
        hdim_v: hdim,
        batch: 2,
        nhead_q: 8,
        nhead_k: 8,
        ..Default::default()
    }
}

#[test]
fn the_build_records_every_kind_for_the_asked_architecture() {
    if !have_ck() {
        return;
    }
    let m = ck_fmha::runtime().unwrap().manifest();
    let mut kinds = BTreeMap::new();
    for b in &m.blobs {
        assert_eq!(b.meta["arch"], "gfx9", "{}", b.name);
        *kinds.entry(b.meta["kind"].as_str()).or_insert(0) += 1;
    }
    eprintln!("{kinds:?}");
    if is_ck_2025() {
        assert_eq!(
            kinds,
            BTreeMap::from([
                ("bwd_convert_dq", 120),
                ("bwd_dot_do_o", 60),
                ("bwd_dq_dk_dv", 6720),
                ("fwd", 3932),
                ("fwd_appendkv", 99),
                ("fwd_splitkv", 1008),
                ("fwd_splitkv_combine", 138),
            ])
        );
    }
}

#[test]
fn a_plain_fwd_operation_gets_a_kernel_with_only_what_it_asked_for() {
    if !have_ck() {
        return;
    }
    let d = Device::mi300x();
    for (dtype, hdim, sq, sk) in [
        ("fp16", 128, 512, 512),
        ("bf16", 64, 100, 333),
        ("fp16", 256, 1024, 77),
    ] {
        let t = fwd_traits(dtype, hdim);
        let k = select_fwd(&t, &fwd_args(sq, sk, hdim), &d).unwrap();
        let meta = k.meta();
        assert_eq!(meta["dtype"], dtype, "{}", k.name());
        assert_eq!(meta["mode"], "batch", "{}", k.name());
        assert!(meta["hdim"].parse::<i32>().unwrap() >= hdim, "{}", k.name());
        for (key, neutral) in [
            ("logits", "false"),
            ("lse", "false"),
            ("dropout", "false"),
            ("skip", "false"),
            ("squant", "false"),
            ("bias", "no"),
            ("mask", "no"),
        ] {
            assert_eq!(meta[key], neutral, "{}: {key}", k.name());
        }
        // A length no tile divides gets a kernel that pads it.
        if sk % 64 != 0 {
            assert_eq!(meta["skpad"], "true", "{}", k.name());
        }
    }
}

#[test]
fn asking_for_a_trait_gets_a_kernel_that_has_it() {
    if !have_ck() {
        return;
    }
    let d = Device::mi300x();
    let t = FmhaFwdTraits {
        has_lse: true,
        has_logits_soft_cap: true,
        is_group_mode: true,
        mask_type: "mask_enum::mask_top_left".into(),
        ..fwd_traits("bf16", 128)
    };
    let k = select_fwd(&t, &fwd_args(300, 300, 128), &d).unwrap();
    let meta = k.meta();
    assert_eq!(
        (
            &*meta["lse"],
            &*meta["logits"],
            &*meta["mode"],
            &*meta["mask"]
        ),
        ("true", "true", "group", "mask"),
        "{}",
        k.name()
    );
    assert_eq!(fwd::by_name(k.name()).unwrap().name(), k.name());
}

#[test]
fn what_ck_has_no_kernel_for_is_an_error_not_another_kernel() {
    if !have_ck() {
        return;
    }
    let d = Device::mi300x();
    let e = select_fwd(&fwd_traits("fp64", 128), &fwd_args(128, 128, 128), &d).unwrap_err();
    assert!(matches!(e, Error::NoKernel { .. }), "{e}");
    assert!(e.to_string().contains("fmha_fwd calls no kernel"), "{e}");
    // Another architecture: CK's dispatcher compares the device name.
    let gfx1100 = Device {
        name: "gfx1100".into(),
        compute_units: 96,
    };
    let e = select_fwd(&fwd_traits("fp16", 128), &fwd_args(128, 128, 128), &gfx1100).unwrap_err();
    assert!(matches!(e, Error::NoKernel { .. }), "{e}");
    // A value CK compares with `!=`: any mask but `no_mask` takes a
    // masked kernel, as in the C++.
    let t = FmhaFwdTraits {
        mask_type: "mask_enum::window_generic".into(),
        ..fwd_traits("fp16", 128)
    };
    let k = select_fwd(&t, &fwd_args(128, 128, 128), &d).unwrap();
    assert_eq!(k.meta()["mask"], "mask", "{}", k.name());
}

#[test]
fn splitkv_appendkv_and_bwd_get_every_kernel_their_dispatcher_runs() {
    if !have_ck() {
        return;
    }
    let d = Device::mi300x();
    let t = FmhaFwdSplitkvTraits {
        hdim_q: 128,
        hdim_v: 128,
        data_type: "fp16".into(),
        is_v_rowmajor: true,
        mask_type: "mask_enum::no_mask".into(),
        bias_type: "bias_enum::no_bias".into(),
        ..Default::default()
    };
    let a = FmhaFwdSplitkvArgs {
        seqlen_q: 1,
        seqlen_k: 4096,
        hdim_q: 128,
        hdim_v: 128,
        batch: 1,
        nhead_q: 8,
        nhead_k: 8,
        num_splits: 4,
        ..Default::default()
    };
    let k = select_fwd_splitkv(&t, &a, &d).unwrap();
    assert_eq!(k.splitkv.meta()["kind"], "fwd_splitkv");
    assert_eq!(k.combine.meta()["kind"], "fwd_splitkv_combine");
    assert_eq!(k.splitkv.meta()["dtype"], "fp16");

    let t = FmhaFwdAppendkvTraits {
        hdim_q: 128,
        hdim_v: 128,
        data_type: "bf16".into(),
        is_v_rowmajor: true,
        rope_type: "rope_enum::none".into(),
    };
    let a = FmhaFwdAppendkvArgs {
        seqlen_q: 64,
        seqlen_knew: 16,
        hdim_q: 128,
        hdim_v: 128,
        batch: 1,
        nhead_q: 8,
        nhead_k: 8,
        ..Default::default()
    };
    let k = select_fwd_appendkv(&t, &a, &d).unwrap();
    assert_eq!(k.meta()["kind"], "fwd_appendkv");
    assert_eq!(k.meta()["dtype"], "bf16");

    let t = FmhaBwdTraits {
        hdim_q: 64,
        hdim_v: 64,
        data_type: "fp16".into(),
        mask_type: "mask_enum::no_mask".into(),
        bias_type: "bias_enum::no_bias".into(),
        ..Default::default()
    };
    let a = FmhaBwdArgs {
        seqlen_q: 256,
        seqlen_k: 256,
        max_seqlen_q: 256,
        max_seqlen_k: 256,
        hdim_q: 64,
        hdim_v: 64,
        batch: 2,
        nhead_q: 8,
        nhead_k: 8,
        ..Default::default()
    };
    let k = select_bwd(&t, &a, &d).unwrap();
    assert_eq!(k.dot_do_o.meta()["kind"], "bwd_dot_do_o");
    assert_eq!(k.dq_dk_dv.meta()["kind"], "bwd_dq_dk_dv");
    assert_eq!(k.dq_dk_dv.meta()["dtype"], "fp16");
    if let Some(c) = k.convert_dq {
        assert_eq!(c.meta()["kind"], "bwd_convert_dq");
    }
}
