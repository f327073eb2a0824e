//! The CK-shaped blob: built with -fvisibility=hidden in its flags, compiled
//! by the real hipcc, its mangled template specialisation found by prefix,
//! called, and its status returned.

mod common;

use ck_jit_rt::manifest::SymbolSpec;
use hip_kernels::ck::{self, run_scale_add_f32_b256, MANGLED};
use hip_kernels::Error;

#[test]
fn hidden_visibility_is_dropped_and_the_symbol_is_a_prefix() {
    common::fresh_cache("ck");
    let rt = hip_kernels::runtime().unwrap();
    let m = rt.manifest();
    let blob = m.blob(run_scale_add_f32_b256::BLOB).unwrap();
    let group = m.group_of(blob);
    assert_eq!(group.name, "ck");
    assert!(
        !group.args.iter().any(|a| a.starts_with("-fvisibility")),
        "{:?}",
        group.args
    );
    assert_eq!(m.symbol_of(blob), SymbolSpec::Prefix("_Z4run_I".into()));
    assert_eq!(blob.meta.get("api").map(String::as_str), Some("ck"));
}

#[test]
fn specialisation_resolves_by_mangled_prefix_and_returns_its_status() {
    common::fresh_cache("ck");
    if !common::hipcc_or_skip() {
        return;
    }
    let by_prefix = run_scale_add_f32_b256::try_get().unwrap_or_else(|e| panic!("{e}"));
    let rt = hip_kernels::runtime().unwrap();
    let loaded = rt.load(run_scale_add_f32_b256::BLOB).unwrap();
    let exact = loaded
        .resolve(&SymbolSpec::Exact(MANGLED.into()))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        by_prefix as *const (), exact,
        "the prefix found another symbol"
    );

    let x = vec![1.5f32; 300];
    let mut y = vec![0.5f32; 300];
    match ck::scale_add_f32(2.0, &x, &mut y, true) {
        Ok(ms) => {
            assert!(ms >= 0.0);
            assert!(y.iter().all(|v| *v == 3.5), "{:?}", &y[..4]);
        }
        Err(Error::Hip { blob, status }) => {
            assert_eq!(blob, run_scale_add_f32_b256::BLOB);
            assert!(status.is_no_device(), "{status}");
        }
        Err(e) => panic!("{e}"),
    }
}
