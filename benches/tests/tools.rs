//! The benchmarks' tools do what their figures claim: the baselines run
//! the very command the runtime runs, `copy-cc` stands in for a compiler
//! on the runtime's real miss path, and `load-probe` loads the same kernels
//! in both of its modes. No timing is checked here.

use std::fmt::Write as _;
use std::path::Path;

use ck_jit_benches::blobs::{self, CTreeSpec};
use ck_jit_benches::{argv, probe, workdir};
use ck_jit_rt::Runtime;

const COPY_CC: &str = env!("CARGO_BIN_EXE_copy-cc");
const LOAD_PROBE: &str = env!("CARGO_BIN_EXE_load-probe");

fn manifest(path: &Path) -> ck_jit_build::Manifest {
    ck_jit_build::Manifest::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn copy_cc_fills_a_slot_and_the_baseline_runs_the_recorded_command() {
    let dir = workdir::fresh("test-copy-cc").unwrap();
    let prebuilt = dir.join("prebuilt.so");
    let from = format!("--copy-from={}", prebuilt.display());
    let tree = blobs::c_tree(
        &dir.join("tree"),
        &CTreeSpec {
            prefix: "copied",
            count: 1,
            weight: 0,
            compiler: COPY_CC,
            flags: &[from.as_str()],
            lang: blobs::Lang::C,
        },
    )
    .unwrap();
    let name = &tree.names[0];
    let st = std::process::Command::new("cc")
        .args(["-fPIC", "-shared", "-I"])
        .arg(tree.root.join("include"))
        .arg(tree.root.join(format!("kernels/{name}.c")))
        .arg("-o")
        .arg(&prebuilt)
        .status()
        .unwrap();
    assert!(st.success());

    let rt = Runtime::from_file(&tree.manifest)
        .unwrap()
        .with_cache_dir(dir.join("cache"));
    let (_, _, outcome) = rt.ensure(name, false).unwrap();
    assert_eq!(outcome, ck_jit_rt::Outcome::Compiled);
    let p = rt.resolve(name, None).unwrap();
    // SAFETY: the blob exports `int copied_0(int)`.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(p) };
    assert_eq!(f(2), blobs::expected(0, 2));

    let (entry, _) = rt
        .cached_entry(&rt.plan(name).unwrap())
        .unwrap()
        .expect("the copied object is in the cache");
    let recorded = &entry.record.command[0];
    // The runtime compiled into temp paths; give the baseline the same.
    let words: Vec<&str> = recorded.split(' ').collect();
    let out = words[words.iter().position(|w| *w == "-o").unwrap() + 1];
    let dep = words[words.iter().position(|w| *w == "-MF").unwrap() + 1];
    let ours = argv::compile_argv(
        &manifest(&tree.manifest),
        name,
        &tree.root,
        Path::new(out),
        Path::new(dep),
    )
    .unwrap();
    assert_eq!(&ours.join(" "), recorded);
    workdir::remove(&dir).unwrap();
}

#[test]
fn load_probe_loads_the_same_kernels_through_the_runtime_and_through_dlopen() {
    let dir = workdir::fresh("test-load-probe").unwrap();
    let tree = blobs::c_tree(
        &dir.join("tree"),
        &CTreeSpec {
            prefix: "probed",
            count: 3,
            weight: 2,
            compiler: "cc",
            flags: &[],
            lang: blobs::Lang::C,
        },
    )
    .unwrap();
    let cache = dir.join("cache");
    let rt = Runtime::from_file(&tree.manifest)
        .unwrap()
        .with_cache_dir(&cache);
    let mut list = String::new();
    for name in &tree.names {
        rt.resolve(name, None).unwrap();
        let (entry, _) = rt.cached_entry(&rt.plan(name).unwrap()).unwrap().unwrap();
        writeln!(list, "{name}\t{name}\t{}", entry.object.display()).unwrap();
    }
    let list_path = dir.join("objects.tsv");
    std::fs::write(&list_path, list).unwrap();
    let want: Vec<f64> = (0..3).map(|i| blobs::expected(i, 2) as f64).collect();

    let mut args = vec![
        "runtime".to_string(),
        "--manifest".into(),
        tree.manifest.display().to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
        "--split".into(),
    ];
    args.extend(tree.names.iter().cloned());
    let exe = Path::new(LOAD_PROBE);
    let v = probe::finish(probe::spawn(exe, &args).unwrap()).unwrap();
    assert_eq!(probe::numbers(&v, "values"), want, "{v}");
    assert_eq!(v["compiles"], 0, "{v}");
    assert_eq!(v["hits"], 3, "{v}");
    assert_eq!(probe::numbers(&v, "kernels_ms").len(), 3);

    let v = probe::finish(
        probe::spawn(
            exe,
            &["dlopen".to_string(), list_path.display().to_string()],
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(probe::numbers(&v, "values"), want, "{v}");

    let v = probe::finish(
        probe::spawn(
            exe,
            &[
                "runtime",
                "--manifest",
                "/nonexistent",
                "--cache-dir",
                "x",
                "b",
            ],
        )
        .unwrap(),
    );
    assert!(v.unwrap_err().contains("probe failed"));
    workdir::remove(&dir).unwrap();
}

#[test]
fn every_bench_script_parses_and_their_shared_helpers_answer_as_they_say() {
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts");
    let mut seen = 0;
    for entry in std::fs::read_dir(&scripts).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "sh") {
            let st = std::process::Command::new("bash")
                .arg("-n")
                .arg(&path)
                .status()
                .unwrap();
            assert!(st.success(), "{} does not parse", path.display());
            seen += 1;
        }
    }
    assert!(seen > 0, "no script in {}", scripts.display());
    let empty = workdir::fresh("test-pairs-empty").unwrap();
    let out = std::process::Command::new("bash")
        .arg(scripts.join("cold-start-pairs.sh"))
        .args(["1", "1"])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no cold-start and load-probe there"));
    // The scripts' shared median: the middle number, or the mean of the two.
    for (input, want) in [
        ("3 1 2", "2"),
        ("3 1 2 4", "2.5"),
        ("1.2\n0.9\n1.5\n", "1.2"),
    ] {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                ". '{}'; printf '{input}' | median",
                scripts.join("lib.sh").display()
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            want,
            "{input:?}"
        );
    }
}
