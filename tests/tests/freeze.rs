//! `freeze()` and `CK_JIT_OFFLINE=1` turn a miss into an error and never
//! run the compiler; hits still load. (Own test binary: freezing is
//! process-wide.)

use std::process::Command;

use ck_jit_rt::Error;
use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");
const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");

#[test]
fn freeze_and_offline_turn_misses_into_errors_without_compiling() {
    let t = Tree::new("freeze");
    t.c_blob("warm", 2, 0);
    t.c_blob("cold", 3, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["cold", "warm"], MOCK, &[&log]);
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("warm", None).unwrap(), 5), 10);
    assert_eq!(t.compiles(), 1);

    ck_jit_rt::freeze();
    let err = rt.resolve("cold", None).unwrap_err();
    assert!(matches!(err, Error::Offline { .. }), "{err}");
    assert!(err.to_string().contains("freeze()"), "{err}");
    // A hit in a new runtime (another process's view) still loads.
    let rt2 = t.runtime(&m, test_config());
    assert_eq!(call(rt2.resolve("warm", None).unwrap(), 5), 10);
    assert_eq!(t.compiles(), 1);
    // Not remembered as a failure: after unfreeze the same runtime compiles.
    ck_jit_rt::unfreeze();
    assert_eq!(call(rt.resolve("cold", None).unwrap(), 5), 15);
    assert_eq!(t.compiles(), 2);

    // CK_JIT_OFFLINE (set to "yes") in a new process.
    t.c_blob("cold", 4, 0);
    let manifest = t.write_manifest(&m);
    let out = Command::new(PROBE)
        .arg(&manifest)
        .arg(t.cache_dir())
        .args(["cold", "1"])
        .env("CK_JIT_OFFLINE", "yes")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    // The value as set, the directory looked in, and how to fill it.
    assert!(text.contains("CK_JIT_OFFLINE=yes"), "{text}");
    assert!(
        text.contains(&t.cache_dir().display().to_string()),
        "{text}"
    );
    assert!(text.contains("ck-jit build --manifest"), "{text}");
    assert_eq!(t.compiles(), 2);
}
