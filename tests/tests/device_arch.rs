//! A blob recorded for several GPU architectures is compiled for one
//! device: the argv the (mocked) compiler runs holds only that device's
//! targets, each device has its own cache entry, `CK_JIT_ARCH=all` runs
//! the recorded argv, and a foreign device or a malformed `CK_JIT_ARCH` is
//! an error before any compile.

use ck_jit_rt::arch::{ArchChoice, Platform};
use ck_jit_rt::config::Config;
use ck_jit_rt::{Error, Outcome, Runtime};
use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");

/// nvcc's spelling of three architectures, as a package build records it.
const THREE_GENCODES: [&str; 6] = [
    "-gencode",
    "arch=compute_80,code=sm_80",
    "-gencode",
    "arch=compute_90,code=sm_90",
    "-gencode",
    "arch=compute_100,code=sm_100",
];

fn config(arch: &str) -> Config {
    let mut c = test_config();
    c.arch = ArchChoice::parse(Some(arch));
    c
}

fn runtime(t: &Tree, extra: &[&str], config: Config) -> Runtime {
    let log = format!("--mock-log={}", t.compile_log().display());
    let mut args = vec![log.as_str()];
    args.extend_from_slice(extra);
    t.runtime(&c_manifest(&t.dir, &["k"], MOCK, &args), config)
}

/// The argv of each compile the mocked compiler ran.
fn compiled_argvs(t: &Tree) -> Vec<Vec<String>> {
    std::fs::read_to_string(t.compile_log())
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('\x1f').map(String::from).collect())
        .collect()
}

/// The GPU target arguments of an argv (what follows `-gencode`, and
/// `--offload-arch=` flags).
fn targets(argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        if a == "-gencode" {
            out.extend(it.next().cloned());
        } else if a.starts_with("--offload-arch") {
            out.push(a.clone());
        }
    }
    out
}

#[test]
fn the_nvcc_compile_holds_only_the_gencode_pair_of_ck_jit_arch() {
    let t = Tree::new("arch-nvcc");
    t.c_blob("k", 3, 1);
    let rt = runtime(&t, &THREE_GENCODES, config("sm_90"));
    let plan = rt.plan("k").unwrap();
    assert_eq!(plan.device.as_ref().unwrap().arch.to_string(), "sm_90");
    assert_eq!(plan.device.as_ref().unwrap().found_by, "CK_JIT_ARCH");
    assert_eq!(rt.ensure("k", false).unwrap().2, Outcome::Compiled);
    let argvs = compiled_argvs(&t);
    assert_eq!(argvs.len(), 1);
    assert_eq!(targets(&argvs[0]), ["arch=compute_90,code=sm_90"]);
    assert_eq!(call(rt.resolve("k", None).unwrap(), 2), 7);
}

#[test]
fn the_hipcc_compile_holds_only_the_offload_arch_of_ck_jit_arch() {
    let t = Tree::new("arch-hip");
    t.c_blob("k", 2, 0);
    let rt = runtime(
        &t,
        &["--offload-arch=gfx942;gfx90a", "-O3"],
        config("gfx90a"),
    );
    assert_eq!(rt.ensure("k", false).unwrap().2, Outcome::Compiled);
    let argvs = compiled_argvs(&t);
    assert_eq!(targets(&argvs[0]), ["--offload-arch=gfx90a"]);
    assert!(argvs[0].contains(&"-O3".to_string()), "{:?}", argvs[0]);
}

#[test]
fn two_architectures_are_two_entries_and_all_compiles_the_recorded_argv() {
    let t = Tree::new("arch-key");
    t.c_blob("k", 1, 1);
    let outcome = |arch: &str| {
        runtime(&t, &THREE_GENCODES, config(arch))
            .ensure("k", false)
            .unwrap()
            .2
    };
    assert_eq!(outcome("sm_90"), Outcome::Compiled);
    assert_eq!(outcome("sm_100"), Outcome::Compiled);
    assert_eq!(outcome("sm_90"), Outcome::Cached);
    assert_eq!(outcome("sm_100"), Outcome::Cached);
    assert_eq!(outcome("all"), Outcome::Compiled);
    assert_eq!(outcome("all"), Outcome::Cached);
    let argvs = compiled_argvs(&t);
    assert_eq!(argvs.len(), 3);
    assert_eq!(targets(&argvs[0]), ["arch=compute_90,code=sm_90"]);
    assert_eq!(targets(&argvs[1]), ["arch=compute_100,code=sm_100"]);
    assert_eq!(
        targets(&argvs[2]),
        [THREE_GENCODES[1], THREE_GENCODES[3], THREE_GENCODES[5]]
    );
    // `all` is the key the blob had before devices were told apart: the
    // recorded argv.
    let recorded = runtime(&t, &THREE_GENCODES, config("all"))
        .plan("k")
        .unwrap();
    assert!(recorded.device.is_none());
    let narrowed = runtime(&t, &THREE_GENCODES, config("sm_90"))
        .plan("k")
        .unwrap();
    assert_ne!(recorded.inputs_key, narrowed.inputs_key);
}

#[test]
fn a_blob_recorded_for_one_architecture_keeps_its_key() {
    let t = Tree::new("arch-one");
    t.c_blob("k", 1, 1);
    let one = ["-gencode", "arch=compute_90,code=[sm_90,compute_90]"];
    let key = |c: Config| runtime(&t, &one, c).plan("k").unwrap().inputs_key;
    let default = key(test_config());
    assert_eq!(key(config("all")), default);
    assert_eq!(key(config("sm_90")), default);
    assert_eq!(key(config("gfx942")), default);
}

#[test]
fn a_device_none_of_the_targets_runs_is_an_error_and_compiles_nothing() {
    let t = Tree::new("arch-foreign");
    t.c_blob("k", 1, 1);
    let rt = runtime(&t, &THREE_GENCODES[2..], config("sm_80"));
    let e = rt.ensure("k", false).unwrap_err();
    assert!(matches!(e, Error::ForeignDevice { .. }), "{e}");
    let text = e.to_string();
    for part in ["'k'", "sm_80", "CK_JIT_ARCH", "sm_90, sm_100"] {
        assert!(text.contains(part), "{text}");
    }
    // The lazy path reports the same, and is not stuck with it.
    assert!(matches!(rt.load("k"), Err(Error::ForeignDevice { .. })));
    assert_eq!(t.compiles(), 0);
}

#[test]
fn a_malformed_ck_jit_arch_is_an_error_listing_the_forms() {
    let t = Tree::new("arch-bad");
    t.c_blob("k", 1, 1);
    let rt = runtime(&t, &THREE_GENCODES, config("hopper"));
    let e = rt.ensure("k", false).unwrap_err();
    assert!(matches!(e, Error::ArchVariable { .. }), "{e}");
    let text = e.to_string();
    for part in ["CK_JIT_ARCH='hopper'", "gfx942", "sm_90", "all"] {
        assert!(text.contains(part), "{text}");
    }
    assert_eq!(t.compiles(), 0);
    // A blob that names no GPU target never needs the variable.
    let plain = t.runtime(&c_manifest(&t.dir, &["k"], MOCK, &[]), config("hopper"));
    assert_eq!(plain.ensure("k", false).unwrap().2, Outcome::Compiled);
}

#[test]
fn without_ck_jit_arch_the_detected_device_or_the_recorded_targets_are_compiled() {
    let t = Tree::new("arch-detect");
    t.c_blob("k", 1, 1);
    let rt = runtime(&t, &THREE_GENCODES, test_config());
    let detected = ck_jit_rt::__internals::detect_device(Platform::Nvidia, None);
    match (rt.ensure("k", false), &detected) {
        (Ok(_), None) => {
            // No NVIDIA device here: what was recorded.
            assert_eq!(
                targets(&compiled_argvs(&t)[0]),
                [THREE_GENCODES[1], THREE_GENCODES[3], THREE_GENCODES[5]]
            );
        }
        (Ok(_), Some((d, _))) => {
            // One pair: the one the detected device runs best.
            assert_eq!(targets(&compiled_argvs(&t)[0]).len(), 1);
            let planned = rt.plan("k").unwrap().device.unwrap();
            assert_eq!(planned.arch, d.arch);
        }
        (Err(e), Some(_)) => assert!(matches!(e, Error::ForeignDevice { .. }), "{e}"),
        (Err(e), None) => panic!("{e}"),
    }
}
