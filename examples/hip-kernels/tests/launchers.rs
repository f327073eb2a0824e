//! The family's blobs compiled by the real hipcc, loaded and called; the
//! HIP status a launcher returns reaches the caller as a typed error.

mod common;

use std::sync::{Mutex, MutexGuard};

use hip_kernels::{kernels, scale_add, sum, variants, Block, Error, F16};

static SERIAL: Mutex<()> = Mutex::new(());

/// Runs this binary's tests one at a time: one reads the process-wide
/// compile counter.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn setup() -> bool {
    common::fresh_cache("launchers");
    common::hipcc_or_skip()
}

/// A call either worked (there is a GPU: `check` verifies the result) or
/// failed with the status HIP reports when there is none.
fn assert_result_or_no_device<T>(r: Result<T, Error>, blob: &str, check: impl FnOnce(T)) {
    match r {
        Ok(v) => check(v),
        Err(Error::Hip { blob: b, status }) => {
            assert_eq!(b, blob);
            assert!(
                status.is_no_device(),
                "unexpected HIP status from {blob}: {status}"
            );
            let name = status.name().expect("a no-device status has a name");
            let msg = Error::Hip { blob: b, status }.to_string();
            assert!(
                msg.contains(blob)
                    && msg.contains(&status.code().to_string())
                    && msg.contains(name),
                "{msg}"
            );
        }
        Err(e) => panic!("{blob}: expected a result or a HIP status, got: {e}"),
    }
}

#[test]
fn every_family_blob_compiles_with_hipcc_and_exports_its_launcher() {
    let _one_at_a_time = serial();
    if !setup() {
        return;
    }
    let family: Vec<String> = variants()
        .unwrap()
        .into_iter()
        .filter(|v| v.api.is_none())
        .map(|v| v.blob)
        .collect();
    assert_eq!(family.len(), 8, "{family:?}");
    let names: Vec<&str> = family.iter().map(String::as_str).collect();
    let rt = hip_kernels::runtime().unwrap();
    for (blob, r) in rt.warmup(&names) {
        if let Err(e) = r {
            panic!("{blob}: {e}");
        }
    }
    // Each resolved entry point is the launcher the blob exports.
    assert!(kernels::scale_add_f16_b256::try_get().is_ok());
    assert!(kernels::sum_f32_b64::try_get().is_ok());
}

#[test]
fn scale_add_f32_surfaces_the_hip_status_as_a_typed_error() {
    let _one_at_a_time = serial();
    if !setup() {
        return;
    }
    let x: Vec<f32> = (0..1000).map(|i| i as f32).collect();
    let y0: Vec<f32> = (0..1000).map(|i| 1.0 - i as f32).collect();
    for block in Block::ALL {
        let mut y = y0.clone();
        let blob = format!("scale_add_f32_b{}", block.threads());
        let r = scale_add(block, 2.0, &x, &mut y);
        assert_result_or_no_device(r, &blob, |()| {
            for i in 0..x.len() {
                assert_eq!(y[i], 2.0 * x[i] + y0[i], "element {i}");
            }
        });
    }
}

#[test]
fn sum_f16_surfaces_the_hip_status_as_a_typed_error() {
    let _one_at_a_time = serial();
    if !setup() {
        return;
    }
    let x: Vec<F16> = (0..4096).map(|i| F16::from_f32((i % 7) as f32)).collect();
    let want: f32 = x.iter().map(|v| v.to_f32()).sum();
    for block in Block::ALL {
        let blob = format!("sum_f16_b{}", block.threads());
        assert_result_or_no_device(sum(block, &x), &blob, |got| assert_eq!(got, want));
    }
}

#[test]
fn a_failed_call_leaves_the_kernel_loaded_and_compiles_nothing_more() {
    // The compile counter is per process: no other test may compile meanwhile.
    let _one_at_a_time = serial();
    if !setup() {
        return;
    }
    let x = [F16::from_f32(1.0); 16];
    let mut y = [F16::from_f32(2.0); 16];
    let _ = scale_add(Block::B64, 1.0, &x, &mut y);
    let before = ck_jit_rt::stats().compiles;
    for _ in 0..10 {
        let r = scale_add(Block::B64, 1.0, &x, &mut y);
        assert!(matches!(r, Ok(()) | Err(Error::Hip { .. })), "{r:?}");
    }
    assert_eq!(ck_jit_rt::stats().compiles, before);
}

#[test]
fn mismatched_lengths_are_refused_before_any_compile() {
    common::fresh_cache("launchers");
    let mut y = [0.0f32; 3];
    let r = scale_add(Block::B64, 1.0, &[1.0f32; 4], &mut y);
    assert!(
        matches!(r, Err(Error::LengthMismatch { x: 4, y: 3 })),
        "{r:?}"
    );
}
