//! The C-header route end to end: `kernels/launchers.h` declares three
//! launchers once; `build.rs` generated their `#[lazy_kernel]` block with
//! bindgen's types (a struct by pointer, a struct by value, a C enum) and
//! recorded the blobs in `kernels/`, compiling none. Each call here
//! compiles its blob with `cc` on first use, loads it and runs it.

#[test]
fn kernels_declared_in_a_c_header_compile_on_first_call_and_run() {
    if let Some(why) = ck_jit_bindgen_tests::LAUNCHERS_SKIPPED {
        assert!(
            std::env::var("CK_JIT_REQUIRE_BINDGEN").map_or(true, |v| v != "1"),
            "CK_JIT_REQUIRE_BINDGEN=1 but the launcher bindings were not generated: {why}"
        );
        eprintln!("SKIPPED: no launcher bindings: {why}");
    } else {
        #[cfg(launchers)]
        run();
    }
}

#[cfg(launchers)]
fn run() {
    use ck_jit_bindgen_tests::launchers::{
        affine_i32, affine_op_AFFINE_ADD, affine_op_AFFINE_MUL, affine_params, vadd_f32, vec3,
        vec3_dot,
    };

    let cache = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bindgen-launchers-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    // Read at the runtime's first use, below; this is the only test of
    // the binary, so nothing else reads the environment meanwhile.
    std::env::set_var("CK_JIT_CACHE_DIR", &cache);
    std::env::remove_var("CK_JIT_OFFLINE");
    std::env::remove_var("CK_JIT_LAUNCHER");

    // The blob names the build asked for, checked against the manifest
    // when the block expanded.
    assert_eq!(vadd_f32::BLOB, "vadd_f32");
    assert_eq!(affine_i32::BLOB, "affine_v2");

    let a = [1.0f32, 2.0, 3.0, 4.0];
    let b = [10.0f32, 20.0, 30.0, 40.0];
    let mut out = [0.0f32; 4];
    // SAFETY: the pointers are valid for `n` elements, as the header's
    // contract asks.
    unsafe { vadd_f32(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), out.len()) };
    assert_eq!(out, [11.0, 22.0, 33.0, 44.0]);

    let mut x = [1i32, 2, 3];
    let p = affine_params {
        scale: 3,
        bias: 1,
        op: affine_op_AFFINE_ADD,
    };
    // SAFETY: `p` and `x` are valid; `n` is the length of `x`.
    let sum = unsafe { affine_i32(&p, x.as_mut_ptr(), x.len()) };
    assert_eq!((x, sum), ([4, 7, 10], 21));
    let p = affine_params {
        op: affine_op_AFFINE_MUL,
        ..p
    };
    // SAFETY: as above.
    let sum = unsafe { affine_i32(&p, x.as_mut_ptr(), x.len()) };
    assert_eq!((x, sum), ([12, 21, 30], 63));

    let u = vec3 {
        x: 1.0,
        y: 2.0,
        z: 3.0,
        weight: 2,
    };
    let v = vec3 {
        x: 4.0,
        y: 5.0,
        z: 6.0,
        weight: 3,
    };
    // SAFETY: structs passed by value, as declared.
    let dot = unsafe { vec3_dot(u, v) };
    assert_eq!(dot, 32.0 * 6.0);

    let stats = ck_jit_rt::stats();
    assert_eq!(stats.compiles, 3, "{stats:?}");
    let _ = std::fs::remove_dir_all(&cache);
}
