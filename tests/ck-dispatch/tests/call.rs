//! Rust calls CK's own `fmha_fwd(traits, args, stream_config)`, compiled
//! into the crate unchanged with the `cc` crate: CK's dispatcher picks the
//! blob, the lazy stub resolves it through the crate's embedded manifest,
//! and ck-jit compiles it on the first call with the recorded command (a
//! mocked `hipcc`, `tests/fixtures/aiter/mock_hipcc.py`, whose object
//! returns 42 and notes the call), and not again on the second.
//!
//! Needs the HIP compiler of `.ci/hip-toolchain.sh` at build time; without
//! it the test prints a skip line, or fails under `CK_JIT_REQUIRE_REAL_CK=1`.

#[test]
fn rust_calls_cks_own_fmha_fwd_and_its_blob_compiles_on_first_call() {
    if !ck_jit_dispatch_tests::SKIP.is_empty() {
        let why = ck_jit_dispatch_tests::SKIP;
        if std::env::var("CK_JIT_REQUIRE_REAL_CK").is_ok_and(|v| v == "1") {
            panic!("CK_JIT_REQUIRE_REAL_CK=1 but {why}");
        }
        eprintln!("SKIPPED ck-dispatch: {why}");
    } else {
        #[cfg(ck_dispatch)]
        call();
    }
}

#[cfg(ck_dispatch)]
fn call() {
    use ck_jit_dispatch_tests::*;
    use std::fs;
    use std::path::Path;

    let tmp =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ck-dispatch-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp).unwrap();
    let mock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/aiter/mock_hipcc.py");
    let log = tmp.join("mock.log");
    let calls = tmp.join("calls.txt");
    // The only test of this binary: nothing else reads the environment
    // concurrently.
    std::env::set_var("CK_JIT_HIPCC", &mock);
    std::env::set_var("CK_JIT_CACHE_DIR", tmp.join("cache"));
    std::env::set_var("MOCK_HIPCC_LOG", &log);
    std::env::set_var("MOCK_CALLS", &calls);
    std::env::set_var("MOCK_BLOB_RESULT", "42");
    register();

    let traits = CkJitFmhaFwdTraits {
        hdim_q: 128,
        hdim_v: 128,
        data_type: c"fp16".as_ptr(),
        is_group_mode: false,
        is_v_rowmajor: true,
        has_logits_soft_cap: false,
        mask_type: 0,
        bias_type: 0,
        has_lse: false,
        has_dropout: false,
        do_fp8_static_quant: false,
        skip_min_seqlen_q: false,
    };
    let args = FmhaFwdArgs {
        seqlen_q: 256,
        seqlen_k: 256,
        batch: 1,
        max_seqlen_q: 256,
        hdim_q: 128,
        hdim_v: 128,
        nhead_q: 8,
        nhead_k: 8,
        scale_s: 0.088,
        window_size_left: -1,
        window_size_right: -1,
        ..FmhaFwdArgs::default()
    };
    let stream = StreamConfig::default();
    for _ in 0..2 {
        // SAFETY: the glue's C entry point over CK's fmha_fwd, with CK's
        // own struct layouts; the blob it calls is the mock's.
        let t = unsafe { ck_jit_fmha_fwd(&traits, &args, &stream) };
        assert_eq!(t, 42.0, "CK's dispatcher reached the lazily compiled blob");
    }
    let compiles = fs::read_to_string(&log).unwrap();
    assert_eq!(compiles.lines().count(), 1, "one compile: {compiles}");
    let called = fs::read_to_string(&calls).unwrap();
    let called: Vec<&str> = called.lines().collect();
    assert_eq!(called.len(), 2);
    assert_eq!(called[0], called[1]);
    assert!(
        called[0].starts_with("fmha_fwd_d128_fp16_batch_"),
        "{called:?}"
    );
    assert!(compiles.contains("--offload-arch=gfx942"));
    eprintln!(
        "CK's fmha_fwd picked {} and ck-jit compiled it on the first call",
        called[0]
    );
}
