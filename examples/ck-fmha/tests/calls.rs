//! Selected blobs really compiled (by the mocked `hipcc`, with CK's compile
//! command) on their first call and called: each stand-in kernel writes a
//! record of which kernel ran, and with which arguments, into its output
//! tensor and returns its id, so the tests see which blob ran and that the
//! argument struct crossed into C++ field by field. A second call compiles
//! nothing.

mod common;

use std::collections::BTreeMap;
use std::fs;

use ck_fmha::kernels::fwd;
use ck_fmha::{
    fmha_bwd, fmha_fwd, fmha_fwd_appendkv, AppendkvTraits, BwdTraits, DType, DropSeedOffset,
    FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs, FmhaFwdSplitkvArgs, FwdTraits, Mask, Rope,
    SplitkvTraits, StreamConfig,
};

/// What the stand-in kernels return: FNV-1a of the kernel name, low 24
/// bits.
fn id(name: &str) -> f32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    (h & 0xff_ffff) as f32
}

/// An output tensor large enough for a record.
fn tensor() -> Vec<u8> {
    vec![0u8; 1024]
}

/// The record a stand-in kernel wrote at the start of `out`: the kernel
/// name and its `key=value` pairs.
fn record(out: &[u8]) -> (String, BTreeMap<String, String>) {
    let end = out
        .iter()
        .position(|&b| b == 0)
        .expect("a NUL-terminated record");
    let text = std::str::from_utf8(&out[..end]).unwrap();
    let mut parts = text.split(' ');
    let name = parts.next().unwrap().to_string();
    let fields = parts
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    (name, fields)
}

/// How many times the mock compiled `blob`, from its log.
fn compiles_of(log: &std::path::Path, blob: &str) -> usize {
    let needle = format!("/{blob}.cpp");
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.split('\x1f').any(|a| a.ends_with(&needle)))
        .count()
}

fn fields<'a>(f: &'a BTreeMap<String, String>, keys: &[&str]) -> Vec<&'a str> {
    keys.iter().map(|k| f[*k].as_str()).collect()
}

#[test]
fn forward_compiles_on_first_call_runs_the_selected_blob_and_not_again() {
    let env = common::setup_mocked("calls");
    let t = FwdTraits {
        mask: Mask::TopLeft,
        lse: true,
        dropout: true,
        ..FwdTraits::new(DType::Bf16, 128)
    };
    let mut o = tensor();
    let mut lse = tensor();
    let a = FmhaFwdArgs {
        o_ptr: o.as_mut_ptr().cast(),
        lse_ptr: lse.as_mut_ptr().cast(),
        seqlen_q: 384,
        seqlen_k: 500,
        batch: 2,
        hdim_q: 128,
        hdim_v: 128,
        nhead_q: 8,
        nhead_k: 2,
        scale_s: 0.125,
        stride_o: 1024,
        batch_stride_o: 3_145_728,
        window_size_left: -1,
        window_size_right: 0,
        mask_type: Mask::TopLeft.ck_value(),
        p_drop: 0.25,
        s_randval: true,
        drop_seed_offset: DropSeedOffset::values(7, 9),
        ..Default::default()
    };
    let kernel = t.select(&a).unwrap();
    let name = kernel.name();
    assert!(name.contains("_mask_lse_dropout"), "{name}");
    assert_eq!(compiles_of(&env.log, name), 0);

    let s = StreamConfig::default();
    // SAFETY: the stand-in kernel writes at most 512 bytes to o_ptr.
    let r = unsafe { fmha_fwd(&t, a, &s) }.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r, id(name));
    assert_eq!(compiles_of(&env.log, name), 1, "compiled on the first call");
    let (ran, f) = record(&o);
    assert_eq!(ran, name, "the selected blob ran");
    assert_eq!(
        fields(
            &f,
            &[
                "seqlen_q",
                "seqlen_k",
                "batch",
                "hdim_q",
                "hdim_v",
                "nhead_q",
                "nhead_k",
                "scale_s",
                "stride_o",
                "batch_stride_o",
                "window",
                "mask_type",
                "p_drop",
                "s_randval",
                "drop",
                "seed",
                "offset",
            ]
        ),
        [
            "384", "500", "2", "128", "128", "8", "2", "0.125", "1024", "3145728", "-1,0", "1",
            "0.25", "1", "values", "7", "9"
        ]
    );
    assert_eq!(lse, tensor(), "only the output is written");

    // Warm: through the handle, no compile, same blob.
    o.fill(0);
    // SAFETY: as above.
    let r = unsafe { fwd::call(kernel, &s, a) };
    assert_eq!(r, id(name));
    assert_eq!(record(&o).0, name);
    assert_eq!(compiles_of(&env.log, name), 1);

    // The other alternative of the seed/offset variant arrives as such.
    let (seed, offset) = (1u64, 2u64);
    let b = FmhaFwdArgs {
        drop_seed_offset: DropSeedOffset::pointers(&seed, &offset),
        ..a
    };
    // SAFETY: as above.
    unsafe { fwd::call(kernel, &s, b) };
    assert_eq!(
        fields(&record(&o).1, &["drop", "seed", "offset"]),
        ["ptr", "0", "0"]
    );

    // CK's compile command went to the mocked hipcc, and the object is in
    // this binary's cache.
    let log = fs::read_to_string(&env.log).unwrap();
    let argv = log
        .lines()
        .find(|l| l.contains(&format!("/{name}.cpp")))
        .unwrap();
    for flag in [
        "--offload-arch=gfx90a",
        "-fgpu-flush-denormals-to-zero",
        "-O3",
    ] {
        assert!(argv.split('\x1f').any(|a| a == flag), "{flag}: {argv}");
    }
    let rt = ck_fmha::runtime().unwrap();
    assert_eq!(rt.cache_dir().unwrap(), env.cache);
    assert!(fwd::try_get(kernel).is_ok());
}

#[test]
fn split_kv_runs_the_split_then_the_combine_blob() {
    let env = common::setup_mocked("calls");
    let t = SplitkvTraits {
        lse: true,
        ..SplitkvTraits::new(DType::Fp16, 64)
    };
    let (mut o_acc, mut o) = (tensor(), tensor());
    let a = FmhaFwdSplitkvArgs {
        o_acc_ptr: o_acc.as_mut_ptr().cast(),
        o_ptr: o.as_mut_ptr().cast(),
        seqlen_q: 64,
        seqlen_k: 4096,
        hdim_q: 64,
        hdim_v: 64,
        nhead_q: 4,
        nhead_k: 4,
        num_splits: 8,
        split_stride_o_acc: 4242,
        ..Default::default()
    };
    let k = t.select(&a).unwrap();
    // SAFETY: each stand-in kernel writes at most 512 bytes to its output.
    unsafe { k.run(&StreamConfig::default(), a) }.unwrap_or_else(|e| panic!("{e}"));
    let (split, f) = record(&o_acc);
    assert_eq!(split, k.splitkv.name());
    assert_eq!(
        fields(
            &f,
            &["num_splits", "seqlen_k", "split_stride_o_acc", "paged"]
        ),
        ["8", "4096", "4242", "0"]
    );
    assert_eq!(record(&o).0, k.combine.name());
    assert_eq!(compiles_of(&env.log, k.splitkv.name()), 1);
    assert_eq!(compiles_of(&env.log, k.combine.name()), 1);
}

#[test]
fn append_kv_writes_into_the_cache() {
    let env = common::setup_mocked("calls");
    let t = AppendkvTraits {
        rope: Rope::HalfRotated,
        ..AppendkvTraits::new(DType::Bf16, 64)
    };
    let mut k_cache = tensor();
    let a = FmhaFwdAppendkvArgs {
        k_ptr: k_cache.as_mut_ptr().cast(),
        seqlen_q: 64,
        seqlen_knew: 3,
        hdim_q: 64,
        hdim_v: 64,
        rotary_dim: 32,
        has_mask: true,
        batch_stride_vnew: 777,
        ..Default::default()
    };
    let kernel = t.select(&a).unwrap();
    // SAFETY: the stand-in kernel writes at most 512 bytes to k_ptr.
    let r = unsafe { fmha_fwd_appendkv(&t, a, &StreamConfig::default()) }
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r, id(kernel.name()));
    let (ran, f) = record(&k_cache);
    assert_eq!(ran, kernel.name());
    assert_eq!(
        fields(
            &f,
            &["seqlen_knew", "rotary_dim", "has_mask", "batch_stride_vnew"]
        ),
        ["3", "32", "1", "777"]
    );
    assert_eq!(compiles_of(&env.log, kernel.name()), 1);
}

#[test]
fn backward_runs_three_blobs_in_order_each_into_its_output() {
    let env = common::setup_mocked("calls");
    let t = BwdTraits {
        dropout: true,
        ..BwdTraits::new(DType::Fp16, 64)
    };
    let (mut d, mut dk, mut dq) = (tensor(), tensor(), tensor());
    let a = FmhaBwdArgs {
        d_ptr: d.as_mut_ptr().cast(),
        dk_ptr: dk.as_mut_ptr().cast(),
        dq_ptr: dq.as_mut_ptr().cast(),
        seqlen_q: 100,
        seqlen_k: 128,
        hdim_q: 64,
        hdim_v: 64,
        scale: 0.125,
        split_stride_dq_acc: 99,
        p_drop: 0.5,
        p_undrop: 2.0,
        drop_seed_offset: DropSeedOffset::values(11, 13),
        ..Default::default()
    };
    let k = t.select(&a).unwrap();
    // SAFETY: each stand-in kernel writes at most 512 bytes to its output.
    let r = unsafe { fmha_bwd(&t, a, &StreamConfig::default()) }.unwrap_or_else(|e| panic!("{e}"));
    let names = [k.dot_do_o.name(), k.dq_dk_dv.name(), k.convert_dq.name()];
    assert_eq!(r, id(names[0]) + id(names[1]) + id(names[2]));
    for (out, name) in [(&d, names[0]), (&dk, names[1]), (&dq, names[2])] {
        let (ran, f) = record(out);
        assert_eq!(ran, name);
        assert_eq!(
            fields(
                &f,
                &[
                    "seqlen_q",
                    "scale",
                    "split_stride_dq_acc",
                    "p_undrop",
                    "seed",
                    "offset"
                ]
            ),
            ["100", "0.125", "99", "2", "11", "13"]
        );
        assert_eq!(compiles_of(&env.log, name), 1, "{name}");
    }
}
