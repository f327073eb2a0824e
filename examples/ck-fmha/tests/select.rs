//! Choosing blobs by attributes, compiling nothing: each family's answer to
//! a query is the blob the file names say it should be (computed from the
//! names' tokens, not from the manifest's metadata), the traits of an
//! operation pick the kernels CK's dispatcher would, and a request no blob
//! supports is an error that says why.

mod common;

use ck_fmha::kernels::{
    bwd_convert_dq, bwd_dot_do_o, bwd_dq_dk_dv, fwd, fwd_appendkv, fwd_splitkv, fwd_splitkv_combine,
};
use ck_fmha::{
    AppendkvTraits, Bias, BwdTraits, DType, Error, FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs,
    FmhaFwdSplitkvArgs, FwdTraits, Mask, Mode, Rope, SplitkvTraits, VLayout,
};
use ck_jit_rt::{Query, SelectError};
use common::{expected, Name};

/// Checks one family's answer: the selected blob and the number of
/// candidates against the names `keep` accepts.
macro_rules! check_query {
    ($family:ident, $names:expr, $query:expr, $largest:expr, $keep:expr) => {{
        let query: Query = $query;
        let (want, count) = expected($names, stringify!($family), $largest, $keep);
        let want = want.unwrap_or_else(|| panic!("no name matches {query}"));
        let got = $family::select(&query).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got.name(), want.stem, "{} {query}", stringify!($family));
        let all = $family::candidates(&query).unwrap();
        assert_eq!(all.len(), count, "{} {query}", stringify!($family));
        assert_eq!(all[0], got);
        assert_eq!($family::by_name(&want.stem).unwrap(), got);
        println!(
            "{:<20} {query}\n    -> {} of {count}",
            stringify!($family),
            got.name()
        );
    }};
}

#[test]
fn each_family_selects_the_blob_the_names_say() {
    common::setup("select");
    let names = common::names();
    let n = &names;

    check_query!(
        fwd,
        n,
        Query::new()
            .eq("dtype", "bf16")
            .eq("mode", "batch")
            .ge("hdim", 128)
            .has("lse"),
        false,
        |x: &Name| x.dtype == "bf16" && x.has("batch") && x.hdim >= 128 && x.has("lse")
    );
    check_query!(
        fwd,
        n,
        Query::new()
            .eq("dtype", "fp16")
            .eq("mode", "group")
            .ge("hdim", 65)
            .eq("bias", "alibi")
            .eq("mask", "mask")
            .has("dropout")
            .lacks("lse"),
        false,
        |x: &Name| x.dtype == "fp16"
            && x.has("group")
            && x.hdim >= 65
            && x.has("alibi")
            && x.has("mask")
            && x.has("dropout")
            && !x.has("lse")
    );
    check_query!(
        fwd,
        n,
        Query::new()
            .eq("dtype", "bf16")
            .eq("vlayout", "col")
            .prefer_max("hdim"),
        true,
        |x: &Name| x.dtype == "bf16" && x.has("vc")
    );
    check_query!(
        fwd_splitkv,
        n,
        Query::new()
            .eq("dtype", "bf16")
            .ge("hdim", 200)
            .has("pagedkv")
            .lacks("lse"),
        false,
        |x: &Name| x.dtype == "bf16" && x.hdim >= 200 && x.has("pagedkv") && !x.has("lse")
    );
    check_query!(
        fwd_splitkv_combine,
        n,
        Query::new()
            .eq("dtype", "fp16")
            .eq("hdim", 64)
            .eq("mode", "group")
            .has("lse"),
        false,
        |x: &Name| x.dtype == "fp16" && x.hdim == 64 && x.has("group") && x.has("lse")
    );
    check_query!(
        fwd_appendkv,
        n,
        Query::new()
            .eq("dtype", "fp16")
            .ge("hdim", 64)
            .eq("rope", "half")
            .eq("vlayout", "col")
            .has("pagedkv"),
        false,
        |x: &Name| x.dtype == "fp16"
            && x.hdim >= 64
            && x.has("half")
            && x.has("vc")
            && x.has("pagedkv")
    );
    check_query!(
        bwd_dot_do_o,
        n,
        Query::new().eq("dtype", "fp16").eq("hdim", 32).has("spad"),
        false,
        |x: &Name| x.dtype == "fp16" && x.hdim == 32 && x.pads_s()
    );
    check_query!(
        bwd_dq_dk_dv,
        n,
        Query::new()
            .eq("dtype", "bf16")
            .eq("mode", "group")
            .ge("hdim", 100)
            // The generator's own name for the dropout variant.
            .eq("dropout", "dropout_wg16_storerandval")
            .has("deterministic"),
        false,
        |x: &Name| x.dtype == "bf16"
            && x.has("group")
            && x.hdim >= 100
            && x.has("wg16")
            && x.has("storerandval")
            && x.has("deterministic")
    );
    check_query!(
        bwd_convert_dq,
        n,
        Query::new()
            .eq("dtype", "bf16")
            .eq("mode", "batch")
            .ge("hdim", 256)
            .has("deterministic"),
        false,
        |x: &Name| x.dtype == "bf16" && x.has("batch") && x.hdim >= 256 && x.has("deterministic")
    );
}

#[test]
fn an_unmatched_query_says_which_constraint_failed_and_what_exists() {
    common::setup("select");
    // No backward kernel in fp8: the dtype alone rules everything out.
    let q = Query::new().eq("dtype", "fp8").ge("hdim", 64);
    let err = bwd_dq_dk_dv::select(&q).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, SelectError::NoMatch(_)), "{err:?}");
    assert!(
        msg.contains("no bwd_dq_dk_dv blob matches dtype = fp8, hdim >= 64")
            && msg.contains("dtype = fp8 matched 0 of 7680 (values seen: bf16, fp16)")
            && msg.contains("hdim >= 64 matched 5760 of 7680"),
        "{msg}"
    );

    // Each constraint alone matches, together they do not: fp8 forward
    // kernels never store the lse.
    let t = FwdTraits {
        lse: true,
        v_layout: VLayout::ColMajor,
        ..FwdTraits::new(DType::Fp8, 128)
    };
    let a = FmhaFwdArgs {
        seqlen_q: 128,
        seqlen_k: 128,
        hdim_q: 128,
        hdim_v: 128,
        ..Default::default()
    };
    let err = t.select(&a).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NoBlob(_)), "{err:?}");
    assert!(
        msg.contains("no fwd blob matches dtype = fp8")
            && msg.contains("has lse matched 720 of 1458")
            && msg.contains("together they match none:")
            && msg.contains("and of those has lse matched 0 of 2"),
        "{msg}"
    );

    // A head dimension larger than any kernel's.
    let err = FwdTraits::new(DType::Bf16, 512).select(&a).unwrap_err();
    assert!(
        err.to_string()
            .contains("hdim >= 512 matched 0 of 1458 (closest values seen: 256, 128, 64, 32)"),
        "{err}"
    );
}

#[test]
fn a_shape_no_kernel_pads_for_is_an_error_naming_the_check() {
    common::setup("select");
    // CK generates fp8 forward kernels without padding only (and with V
    // column-major).
    let t = FwdTraits {
        v_layout: VLayout::ColMajor,
        ..FwdTraits::new(DType::Fp8, 128)
    };
    let mut a = FmhaFwdArgs {
        seqlen_q: 256,
        seqlen_k: 256,
        hdim_q: 128,
        hdim_v: 128,
        ..Default::default()
    };
    let k = t.select(&a).unwrap();
    assert_eq!(
        k.name(),
        "fmha_fwd_d128_fp8_batch_shb_b128x128x32x128x32x128_r4x1x1_w32x32x32_qr_vc_squant"
    );
    a.seqlen_q = 100;
    let err = t.select(&a).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Shape { matched: 1, .. }), "{err:?}");
    assert!(
        msg.contains("1 fwd blobs of the smallest head dimension match dtype = fp8")
            && msg.contains("none handles this shape")
            && msg.contains("needs seqlen_q % 128 == 0 (seqlen_q = 100)"),
        "{msg}"
    );
}

/// The first `fwd` name of `keep`, in the dispatcher's order.
fn first_fwd(names: &[Name], keep: impl Fn(&Name) -> bool) -> String {
    expected(names, "fwd", false, keep)
        .0
        .map(|n| n.stem.clone())
        .unwrap()
}

#[test]
fn forward_traits_pick_by_shape_like_the_dispatcher() {
    common::setup("select");
    let names = common::names();
    let t = FwdTraits {
        lse: true,
        ..FwdTraits::new(DType::Bf16, 128)
    };
    let plain = |x: &Name| {
        x.dtype == "bf16"
            && x.hdim == 128
            && x.has("batch")
            && x.has("vr")
            && x.has("lse")
            && !x.has("mask")
            && !x.has("alibi")
            && !x.has("bias")
            && !x.has("dropout")
    };
    let select = |seqlen_q, seqlen_k, hdim| {
        let a = FmhaFwdArgs {
            seqlen_q,
            seqlen_k,
            hdim_q: hdim,
            hdim_v: hdim,
            ..Default::default()
        };
        let t = FwdTraits {
            hdim_q: hdim as u32,
            hdim_v: hdim as u32,
            ..t
        };
        t.select(&a).unwrap().name()
    };
    // Aligned: the async pipeline, whose key length is not padded.
    assert_eq!(
        select(512, 512, 128),
        first_fwd(&names, |x| plain(x) && x.has("async") && x.pad() == "psddv")
    );
    // A ragged key length: the async kernel that pads it.
    assert_eq!(
        select(512, 500, 128),
        first_fwd(&names, |x| plain(x)
            && x.has("async")
            && x.pad() == "psskddv")
    );
    // A head dimension of whole 8-element vectors below 128 still runs
    // async, on the 128 kernels.
    assert_eq!(
        select(512, 512, 120),
        first_fwd(&names, |x| plain(x) && x.has("async") && x.pad() == "psddv")
    );
    // Not whole vectors: only the padded synchronous pipeline.
    assert_eq!(
        select(512, 512, 100),
        first_fwd(&names, |x| plain(x)
            && !x.has("async")
            && x.pad() == "psskddv")
    );
}

#[test]
fn split_kv_append_kv_and_backward_traits_pick_their_kernels() {
    common::setup("select");
    let names = common::names();

    // Split-KV: the split kernel, and the combine kernel paired with it.
    let t = SplitkvTraits {
        lse: true,
        v_layout: VLayout::ColMajor,
        ..SplitkvTraits::new(DType::Fp16, 64)
    };
    let a = FmhaFwdSplitkvArgs {
        seqlen_q: 64,
        seqlen_k: 1000,
        hdim_q: 64,
        hdim_v: 64,
        num_splits: 4,
        ..Default::default()
    };
    let k = t.select(&a).unwrap();
    let split = Name::parse(k.splitkv.name());
    assert!(
        split.dtype == "fp16"
            && split.hdim == 64
            && split.has("vc")
            && split.has("lse")
            && !split.has("pagedkv")
            && split.pad().contains("sk"),
        "{}",
        split.stem
    );
    let combine = Name::parse(k.combine.name());
    assert_eq!(combine.family, "fwd_splitkv_combine");
    assert!(combine.hdim == 64 && combine.has("lse"), "{}", combine.stem);

    // Paged: the block table decides.
    let mut table = [0i32; 4];
    let paged = FmhaFwdSplitkvArgs {
        block_table_ptr: table.as_mut_ptr().cast(),
        ..a
    };
    assert!(Name::parse(t.select(&paged).unwrap().splitkv.name()).has("pagedkv"));

    // Append-KV with rotary embedding.
    let t = AppendkvTraits {
        rope: Rope::Interleaved,
        ..AppendkvTraits::new(DType::Bf16, 128)
    };
    let a = FmhaFwdAppendkvArgs {
        seqlen_q: 1,
        seqlen_knew: 1,
        hdim_q: 128,
        hdim_v: 128,
        rotary_dim: 64,
        ..Default::default()
    };
    let got = t.select(&a).unwrap().name();
    // seqlen_q = 1 is not a multiple of the 64-token tile: a kernel that
    // pads it, though one that does not comes first by name.
    let unpadded = expected(&names, "fwd_appendkv", false, |x| {
        x.dtype == "bf16" && x.hdim == 128 && x.has("vr") && x.has("inter") && !x.has("pagedkv")
    });
    assert!(!unpadded.0.unwrap().pads_s());
    let want = expected(&names, "fwd_appendkv", false, |x| {
        x.dtype == "bf16"
            && x.hdim == 128
            && x.has("vr")
            && x.has("inter")
            && !x.has("pagedkv")
            && x.pads_s()
    });
    assert_eq!(got, want.0.unwrap().stem);

    // Backward: aligned lengths take the unpadded kernels, and helpers
    // without seqlen_q padding; a ragged seqlen_q takes padded ones.
    let t = BwdTraits {
        mask: Mask::TopLeft,
        ..BwdTraits::new(DType::Fp16, 64)
    };
    let mut a = FmhaBwdArgs {
        seqlen_q: 256,
        seqlen_k: 256,
        hdim_q: 64,
        hdim_v: 64,
        ..Default::default()
    };
    let main = |x: &Name| {
        x.dtype == "fp16"
            && x.hdim == 64
            && x.has("batch")
            && x.has("mask")
            && !x.has("alibi")
            && !x.has("bias")
            && !x.has("dbias")
            && !x.has("dropout")
            && !x.has("deterministic")
    };
    let k = t.select(&a).unwrap();
    let want = expected(&names, "bwd_dq_dk_dv", false, |x| {
        main(x) && x.pad().is_empty()
    });
    assert_eq!(k.dq_dk_dv.name(), want.0.unwrap().stem);
    assert_eq!(k.dot_do_o.name(), "fmha_bwd_dot_do_o_d64_fp16_batch_o2");
    assert!(Name::parse(k.convert_dq.name()).pad().is_empty());

    a.seqlen_q = 100;
    let k = t.select(&a).unwrap();
    let want = expected(&names, "bwd_dq_dk_dv", false, |x| {
        main(x) && x.pad() == "ps"
    });
    assert_eq!(k.dq_dk_dv.name(), want.0.unwrap().stem);
    assert_eq!(k.dot_do_o.name(), "fmha_bwd_dot_do_o_d64_fp16_batch_o2_ps");
    assert!(Name::parse(k.convert_dq.name()).pads_s());

    // Group mode, deterministic, with bias gradient.
    let t = BwdTraits {
        mode: Mode::Group,
        bias: Bias::Elementwise,
        dbias: true,
        deterministic: true,
        ..BwdTraits::new(DType::Bf16, 128)
    };
    let k = t.select(&a).unwrap();
    for name in [k.dot_do_o.name(), k.dq_dk_dv.name(), k.convert_dq.name()] {
        let n = Name::parse(name);
        assert!(
            n.has("group") && n.hdim == 128 && n.dtype == "bf16",
            "{name}"
        );
    }
    let main = Name::parse(k.dq_dk_dv.name());
    assert!(main.has("bias") && main.has("dbias") && main.has("deterministic"));
    assert!(Name::parse(k.convert_dq.name()).has("deterministic"));
}
