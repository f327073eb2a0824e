//! Real ComposableKernel (CK) FMHA blobs, compiled by a real HIP compiler
//! through the runtime's own path.
//!
//! For each of the two CK versions beside the workspace
//! (`shared/data/ck/ck-2024-10-23` and `ck-2025-11`, the CK the
//! `amd-aiter` wheel ships), the test
//!
//! 1. runs CK's `generate.py` through [`CkFmha`] once per direction (`fwd`,
//!    `fwd_splitkv`, `bwd`) with a narrow `--filter`, so each run writes a
//!    handful of d64 fp16 blobs, and records the manifest;
//! 2. compiles, through [`Runtime::ensure`] (key, lock, compile, publish in
//!    a fresh cache), one blob of each kind `fwd`, `fwd_splitkv`,
//!    `fwd_splitkv_combine`, `bwd_dot_do_o`, `bwd_dq_dk_dv` and
//!    `bwd_convert_dq`, with the manifest's command line unchanged: CK's
//!    flags, `--offload-arch=gfx942`, the CK include directories,
//!    `-fPIC -shared {src} -o {out}`;
//! 3. loads each object (`dlopen(RTLD_NOW)`) and resolves its entry symbol
//!    (the `_Z9fmha_fwd_I...`-style prefix the preset records) with
//!    [`Runtime::resolve`]; the kernel is never called;
//! 4. compiles the forward dispatcher `fmha_fwd_api.cpp` of the same
//!    filtered run with `-c` against the real ck_tile headers.
//!
//! Compiles run two at a time (CI has two cores); the timings are printed
//! and written to `target/real-ck-timings.txt`.
//!
//! # The compiler
//!
//! `.ci/hip-toolchain.sh` assembles, from registry packages only, an
//! upstream clang 20 (`pip ziglang`) with HIP 6.1 headers and device
//! libraries (from the `triton` wheel) and `clang-offload-bundler` (apt
//! `clang-tools-15`); see that script. Its `bin/hipcc` is a drop-in for
//! ROCm's `hipcc`: the clang wrapper with the toolchain's flags (`-x hip`,
//! the ROCm path, `-no-hip-rt`, ...) first. The test points the runtime at
//! it the way a user would, with `CK_JIT_HIPCC`, so the manifest is exactly
//! what the preset records for a ROCm machine and nothing in it is specific
//! to this toolchain.
//!
//! # The HIP runtime
//!
//! There is no AMD GPU and no ROCm runtime: `-no-hip-rt` leaves the HIP
//! runtime functions undefined in every object. The test compiles
//! `tests/fixtures/real_ck/hip_stand_in.c`, which defines them (registration
//! succeeds, every other call returns `hipErrorNoDevice`), and loads it with
//! `RTLD_GLOBAL` into this test binary (its own process) before any blob
//! loads. Every undefined `hip*` symbol of every blob is checked against it
//! first, so a blob needing a new HIP function fails with its name.
//!
//! # Running it
//!
//! ```text
//! .ci/hip-toolchain.sh                    # once: target/hip-toolchain, ~1 minute
//! cargo test -p ck-jit-tests --test real_ck -- --nocapture
//! ```
//!
//! The toolchain is found through `CK_JIT_REAL_HIP_ENV` (the `env.sh` the
//! script writes), else `target/hip-toolchain/env.sh`. Without it the test
//! prints a skip line and passes, unless `CK_JIT_REQUIRE_REAL_CK=1` (set by
//! `.ci/run`), which makes it fail.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::CString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ck_jit_build::manifest::SymbolSpec;
use ck_jit_ck::{write_stubs, CkFmha};
use ck_jit_rt::{Outcome, Runtime};
use ck_jit_tests::{build_hip_stand_in, run_ok, Tree};

/// The architecture every blob is compiled for.
const ARCH: &str = "gfx942";

/// Flags this compiler must never get (the toolchain's notes: with the
/// first the compile does not finish; the second is AMD's compiler only).
const FORBIDDEN_FLAGS: &[&str] = &[
    "-amdgpu-function-calls=false",
    "-amdgpu-coerce-illegal-types=1",
];

/// The blob kinds compiled from each CK version, i.e. manifest group names.
const KINDS: &[&str] = &[
    "fwd",
    "fwd_splitkv",
    "fwd_splitkv_combine",
    "bwd_dot_do_o",
    "bwd_dq_dk_dv",
    "bwd_convert_dq",
];

/// One CK version and the generator filters that keep its runs small.
struct CkVersion {
    label: &'static str,
    tree: PathBuf,
    /// `--filter` per direction. CK 2024-10-23 filters the splitkv and
    /// dq_dk_dv kernels only (every dot_do_o and convert_dq is written);
    /// CK 2025-11 takes `combine@splitkv` and `dot_do_o@convert_dq@dq_dk_dv`.
    filters: [(&'static str, &'static str); 3],
    /// The blob-name suffix to pick. CK 2025-11 writes every kernel once per
    /// target (`--targets`, default `gfx9,gfx950`); only the `_gfx9` ones are
    /// compiled for gfx942 here.
    suffix: &'static str,
}

fn versions(ws: &Path) -> Vec<CkVersion> {
    vec![
        CkVersion {
            label: "ck-2024-10-23",
            tree: ws.join("../shared/data/ck/ck-2024-10-23"),
            filters: [
                ("fwd", "*d64_fp16_batch*_qr_vr_psskddv"),
                ("fwd_splitkv", "*d64_fp16_batch_*_ps*_lse"),
                ("bwd", "*d64_fp16_batch*_o1_kr_ktr_vr_psskddv"),
            ],
            suffix: "",
        },
        CkVersion {
            label: "ck-2025-11",
            tree: ws.join("../shared/data/ck/ck-2025-11"),
            filters: [
                (
                    "fwd",
                    "*d64_fp16_batch_*_qr_vr_psskddv_nlogits_nbias_nmask_nlse_ndropout_nskip_nsquant_ntrload",
                ),
                (
                    "fwd_splitkv",
                    "*d64_fp16_*\
                     @*d64_fp16_batch_*_qr_vr_psk_nlogits_nbias_nmask_lse_nsquant_npagedkv",
                ),
                (
                    "bwd",
                    "*d64_fp16_b64_batch_o2_npad\
                     @*d64_fp16_b64x*_batch_o2_npad_ndeterministic\
                     @*d64_fp16_batch_*_npad_nbias_ndbias_nmask_ndropout_ndeterministic_ntrload",
                ),
            ],
            suffix: "_gfx9",
        },
    ]
}

/// What `.ci/hip-toolchain.sh` set up.
struct Toolchain {
    /// The hipcc drop-in (`CK_JIT_REAL_HIPCC`).
    hipcc: PathBuf,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Reads the toolchain's `env.sh` (`KEY="value"` lines).
fn toolchain(ws: &Path) -> Result<Toolchain, String> {
    let env = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target/hip-toolchain/env.sh"));
    let text = fs::read_to_string(&env).map_err(|e| {
        format!(
            "no HIP toolchain at {} ({e}); run .ci/hip-toolchain.sh or set CK_JIT_REAL_HIP_ENV",
            env.display()
        )
    })?;
    let vars: BTreeMap<&str, &str> = text
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim(), v.trim().trim_matches('"')))
        .collect();
    let get = |k: &str| {
        vars.get(k)
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .ok_or_else(|| format!("{}: {k} is missing or does not exist", env.display()))
    };
    Ok(Toolchain {
        hipcc: get("CK_JIT_REAL_HIPCC")?,
    })
}

/// One compile: a blob through the runtime, or a dispatcher with `-c`.
enum Job {
    Blob {
        version: usize,
        kind: &'static str,
        blob: String,
    },
    Dispatcher {
        version: usize,
        argv: Vec<String>,
        cwd: PathBuf,
    },
}

impl Job {
    fn label(&self, versions: &[CkVersion]) -> String {
        match self {
            Job::Blob { version, blob, .. } => format!("{} {blob}", versions[*version].label),
            Job::Dispatcher { version, argv, .. } => {
                let src = argv
                    .iter()
                    .rev()
                    .find(|a| a.ends_with(".cpp"))
                    .map(|a| a.rsplit('/').next().unwrap_or(a))
                    .unwrap_or("?");
                format!("{} {src} (-c)", versions[*version].label)
            }
        }
    }
}

/// A finished compile.
struct Compiled {
    label: String,
    took: Duration,
    /// The published object (blobs; `None` for the dispatcher).
    object: Option<PathBuf>,
    size: usize,
    blob: String,
}

/// The shortest d64 fp16 blob name of `kind` with `suffix`: the one with
/// the fewest optional features among what the filter let through (CK
/// 2024-10-23 writes every dot_do_o and convert_dq blob whatever the filter).
fn pick(rt: &Runtime, kind: &str, suffix: &str) -> Option<String> {
    let m = rt.manifest();
    m.blobs
        .iter()
        .filter(|b| b.meta.get("kind").is_some_and(|k| k == kind))
        .filter(|b| b.name.contains("_d64_fp16_") && b.name.ends_with(suffix))
        .map(|b| b.name.clone())
        .min_by_key(|n| (n.len(), n.clone()))
}

/// `nm -D` symbol names of `object`, defined or undefined.
fn dynamic_symbols(object: &Path, defined: bool) -> Vec<String> {
    let flag = if defined {
        "--defined-only"
    } else {
        "--undefined-only"
    };
    run_ok(Command::new("nm").args(["-D", flag]).arg(object))
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|s| s.split('@').next().unwrap_or(s).to_string())
        .collect()
}

/// Compiles the HIP stand-in and loads it into this process with
/// `RTLD_GLOBAL`, so the blobs' undefined HIP symbols resolve to it.
fn load_hip_stand_in(dir: &Path) -> PathBuf {
    let lib = dir.join("libamdhip64_stand_in.so");
    build_hip_stand_in(&lib);
    let c = CString::new(lib.to_str().expect("utf-8 path")).expect("no NUL");
    // SAFETY: a plain C library without constructors; the handle is kept
    // open for the life of the process.
    let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
    assert!(
        !handle.is_null(),
        "cannot load the HIP stand-in {}",
        lib.display()
    );
    lib
}

fn skip_or_fail(why: &str) {
    if std::env::var("CK_JIT_REQUIRE_REAL_CK").is_ok_and(|v| v == "1") {
        panic!("CK_JIT_REQUIRE_REAL_CK=1 but {why}");
    }
    eprintln!("SKIPPED real_ck: {why}");
}

#[test]
fn real_ck_blobs_compile_load_and_resolve() {
    let started = Instant::now();
    let ws = workspace();
    let tc = match toolchain(&ws) {
        Ok(tc) => tc,
        Err(why) => return skip_or_fail(&why),
    };
    for tool in ["cc", "nm", "python3"] {
        if Command::new(tool).arg("--version").output().is_err() {
            return skip_or_fail(&format!("{tool} is not installed"));
        }
    }
    // The only test in this binary: nothing else reads the environment
    // while it is set. CK_JIT_HIPCC is how the runtime finds `hipcc`; the
    // generator must not write __pycache__ into the CK trees.
    std::env::set_var("CK_JIT_HIPCC", &tc.hipcc);
    std::env::set_var("PYTHONDONTWRITEBYTECODE", "1");

    let tree = Tree::new("real-ck");
    let stand_in = load_hip_stand_in(&tree.dir);
    let stand_in_symbols = dynamic_symbols(&stand_in, true);
    let versions = versions(&ws);

    // 1. Generate and record, one CkFmha run per direction.
    let mut runtimes: Vec<Vec<Runtime>> = Vec::new();
    let mut jobs = VecDeque::new();
    let mut report = String::new();
    let mut lazy_objects: Vec<(usize, PathBuf)> = Vec::new();
    // Per version: the fwd run's files and its dispatcher's object.
    let mut fwd_runs: Vec<(usize, ck_jit_ck::CkFmhaFiles, PathBuf)> = Vec::new();
    for (vi, v) in versions.iter().enumerate() {
        let mut rts = Vec::new();
        for (direction, filter) in v.filters {
            let t = Instant::now();
            let out = tree.path(&format!("{}/{}", v.label, direction));
            let files = CkFmha::new()
                .source(&v.tree)
                .direction(direction)
                .receipt(1)
                .filter(filter)
                .arch(ARCH)
                .compiler("hipcc")
                .name(&format!("real_ck_{}", v.label.replace('-', "_")))
                .out_dir(&out)
                .cargo_metadata(false)
                .try_manifest()
                .unwrap_or_else(|e| panic!("{} {direction}: {e}", v.label));
            writeln!(
                report,
                "{} generate -d {}: {} files, {} blobs recorded, {:.1}s",
                v.label,
                direction,
                files.files().len(),
                files.manifest().blobs.len(),
                t.elapsed().as_secs_f64()
            )
            .unwrap();
            for g in &files.manifest().groups {
                assert_eq!(g.compiler, "hipcc", "{}: group {}", v.label, g.name);
                assert!(
                    g.args
                        .iter()
                        .any(|a| a == &format!("--offload-arch={ARCH}")),
                    "{}: group {} lacks --offload-arch={ARCH}: {:?}",
                    v.label,
                    g.name,
                    g.args
                );
                for bad in FORBIDDEN_FLAGS {
                    assert!(
                        !g.args.iter().any(|a| a == bad),
                        "{}: {bad} in {:?}",
                        v.label,
                        g.args
                    );
                }
            }
            if direction == "fwd" {
                let api = files
                    .dispatchers()
                    .find(|p| p.ends_with("fmha_fwd_api.cpp"))
                    .unwrap_or_else(|| panic!("{}: no fmha_fwd_api.cpp generated", v.label))
                    .to_path_buf();
                // The fwd blobs' group (`fwd`, or `fwd_gfx9` per family).
                let fwd_blob = files
                    .manifest()
                    .blobs
                    .iter()
                    .find(|b| b.meta["kind"] == "fwd")
                    .expect("a fwd blob");
                let group = files.manifest().group_of(fwd_blob).clone();
                let root = files.manifest().root.clone();
                // CK's dispatcher, unchanged, and the stubs that make it
                // lazy: each compiled as CK compiles its sources, `-c`.
                let stubs = write_stubs(&files, &out.join("stubs"))
                    .unwrap_or_else(|e| panic!("{}: stubs: {e}", v.label));
                fwd_runs.push((vi, files.clone(), api.with_extension("o")));
                let mut sources = vec![api];
                sources.extend(stubs.files.iter().cloned());
                let capi_include = ws.join("ck-jit-capi/include");
                for src in sources {
                    let obj = src.with_extension("o");
                    let mut argv = vec![tc.hipcc.display().to_string()];
                    argv.push(format!("-I{}", capi_include.display()));
                    argv.extend(group.args.iter().map(|a| {
                        let a = a
                            .replace("{root}", &root)
                            .replace("{src}", &src.display().to_string())
                            .replace("{out}", &obj.display().to_string());
                        if a == "-shared" {
                            "-c".to_string()
                        } else {
                            a
                        }
                    }));
                    lazy_objects.push((vi, obj));
                    jobs.push_back(Job::Dispatcher {
                        version: vi,
                        argv,
                        cwd: PathBuf::from(&root),
                    });
                }
                writeln!(
                    report,
                    "{} lazy fwd dispatcher: fmha_fwd_api.cpp unchanged + {} stub files defining {} specialisations",
                    v.label,
                    stubs.files.len(),
                    stubs.specialisations
                )
                .unwrap();
            }
            let path = out.join("ck_jit_manifest.json");
            // Each blob is compiled and timed on its own: without the
            // dispatchers' call sets (which the preset records), a bwd
            // kernel's first compile would bring its operation's other
            // kernels along (tests/tests/together.rs tests that).
            let mut alone = files.manifest().clone();
            alone.together.clear();
            fs::write(&path, alone.to_json()).expect("write manifest");
            let rt = Runtime::from_file(&path)
                .expect("manifest reads back")
                .with_cache_dir(tree.path("cache"));
            for kind in KINDS {
                if !files
                    .manifest()
                    .blobs
                    .iter()
                    .any(|b| b.meta["kind"] == *kind)
                {
                    continue;
                }
                let blob = pick(&rt, kind, v.suffix).unwrap_or_else(|| {
                    panic!("{}: no {kind} blob ending in '{}'", v.label, v.suffix)
                });
                jobs.push_back(Job::Blob {
                    version: vi,
                    kind,
                    blob,
                });
            }
            rts.push(rt);
        }
        let kinds: Vec<_> = jobs
            .iter()
            .filter_map(|j| match j {
                Job::Blob { version, kind, .. } if *version == vi => Some(*kind),
                _ => None,
            })
            .collect();
        for kind in KINDS {
            assert!(kinds.contains(kind), "{}: no {kind} blob recorded", v.label);
        }
        runtimes.push(rts);
    }
    let generated = started.elapsed();

    // 2. Compile, two at a time; the dq_dk_dv blobs are the longest, so first.
    let mut jobs: Vec<Job> = jobs.into();
    jobs.sort_by_key(|j| {
        !matches!(
            j,
            Job::Blob {
                kind: "bwd_dq_dk_dv",
                ..
            }
        )
    });
    let queue = Mutex::new(jobs.into_iter().collect::<VecDeque<_>>());
    let done: Mutex<Vec<Compiled>> = Mutex::new(Vec::new());
    let compile_start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let Some(job) = queue.lock().unwrap().pop_front() else {
                    return;
                };
                let label = job.label(&versions);
                let t = Instant::now();
                match &job {
                    Job::Blob { version, blob, .. } => {
                        let rt = runtimes[*version]
                            .iter()
                            .find(|rt| rt.manifest().blob(blob).is_some())
                            .expect("blob's runtime");
                        let (entry, bytes, outcome) = rt
                            .ensure(blob, false)
                            .unwrap_or_else(|e| panic!("{label}: {e}"));
                        assert_eq!(outcome, Outcome::Compiled, "{label}: fresh cache");
                        done.lock().unwrap().push(Compiled {
                            label,
                            took: t.elapsed(),
                            object: Some(entry.object),
                            size: bytes.len(),
                            blob: blob.clone(),
                        });
                    }
                    Job::Dispatcher { argv, cwd, .. } => {
                        run_ok(Command::new(&argv[0]).args(&argv[1..]).current_dir(cwd));
                        let obj =
                            PathBuf::from(&argv[argv.iter().position(|a| a == "-o").unwrap() + 1]);
                        let size = fs::metadata(&obj).map(|m| m.len() as usize).unwrap_or(0);
                        assert!(size > 0, "{label}: no object written");
                        done.lock().unwrap().push(Compiled {
                            label,
                            took: t.elapsed(),
                            object: None,
                            size,
                            blob: String::new(),
                        });
                    }
                }
            });
        }
    });
    let compiled = compile_start.elapsed();

    // 3. Load against the stand-in and resolve the entry symbols.
    let mut done = done.into_inner().unwrap();
    done.sort_by(|a, b| a.label.cmp(&b.label));
    for Compiled {
        label,
        took,
        object,
        size,
        blob,
    } in &done
    {
        write!(report, "{:6.1}s {:>9} B  {label}", took.as_secs_f64(), size).unwrap();
        let Some(object) = object else {
            writeln!(report).unwrap();
            continue;
        };
        let missing: Vec<_> = dynamic_symbols(object, false)
            .into_iter()
            .filter(|s| s.starts_with("hip") || s.starts_with("__hip"))
            .filter(|s| !stand_in_symbols.contains(s))
            .collect();
        assert!(
            missing.is_empty(),
            "{label}: HIP functions the stand-in lacks (add them to hip_stand_in.c): {missing:?}"
        );
        let rt = runtimes
            .iter()
            .flatten()
            .find(|rt| rt.manifest().blob(blob).is_some())
            .expect("blob's runtime");
        let b = rt.manifest().blob(blob).expect("recorded");
        let SymbolSpec::Prefix(prefix) = rt.manifest().symbol_of(b) else {
            panic!(
                "{label}: entry symbol is not a prefix: {:?}",
                rt.manifest().symbol_of(b)
            );
        };
        let ptr = rt
            .resolve(blob, None)
            .unwrap_or_else(|e| panic!("{label}: {e}"));
        assert!(!ptr.is_null(), "{label}: null entry");
        let names: Vec<_> = dynamic_symbols(object, true)
            .into_iter()
            .filter(|s| s.starts_with(&prefix))
            .collect();
        assert!(
            !names.is_empty(),
            "{label}: no exported symbol starts with {prefix}"
        );
        writeln!(
            report,
            "\n         entry {} ({} matching)",
            names[0],
            names.len()
        )
        .unwrap();
    }
    // 4. The lazy dispatcher links: every blob specialisation CK's
    // dispatcher calls is defined by a stub, none is left undefined.
    for (vi, v) in versions.iter().enumerate() {
        let objects: Vec<&PathBuf> = lazy_objects
            .iter()
            .filter(|(i, _)| *i == vi)
            .map(|(_, o)| o)
            .collect();
        // What the compiled objects need, checked where it cannot be
        // fooled: with the stubs nothing is missing; without them, every
        // recorded fwd blob's entry is a specialisation the dispatcher
        // object leaves undefined (what deleting those blobs would leave).
        let (_, files, api_obj) = fwd_runs
            .iter()
            .find(|(i, _, _)| *i == vi)
            .expect("the fwd run");
        let owned: Vec<PathBuf> = objects.iter().map(|p| p.to_path_buf()).collect();
        files
            .check_objects(&owned, Path::new("libfmha_fwd_lazy.so"))
            .unwrap_or_else(|e| panic!("{}: {e}", v.label));
        let alone = ck_jit_ck::__private::missing_specialisations(
            std::slice::from_ref(api_obj),
            files.blob_templates().expect("blob templates"),
        )
        .expect("the dispatcher object reads");
        let fwd_blobs = files
            .manifest()
            .blobs
            .iter()
            .filter(|b| b.meta["kind"] == "fwd")
            .count();
        let fwd_missing = alone.iter().filter(|m| m.template == "fmha_fwd_").count();
        assert!(
            fwd_missing >= fwd_blobs && alone.iter().all(|m| m.object.ends_with("fmha_fwd_api.o")),
            "{}: the dispatcher alone leaves {fwd_missing} fmha_fwd_ specialisations undefined \
             for {fwd_blobs} fwd blobs: {alone:?}",
            v.label
        );
        writeln!(
            report,
            "{}: fmha_fwd_api.o alone leaves {} blob specialisations undefined ({fwd_missing} \
             fmha_fwd_ for {fwd_blobs} fwd blobs); with the stubs, none",
            v.label,
            alone.len()
        )
        .unwrap();
        let lib = tree.path(&format!("{}/libfmha_fwd_lazy.so", v.label));
        run_ok(
            Command::new("cc")
                .args(["-shared", "-o"])
                .arg(&lib)
                .args(&objects),
        );
        let undefined: Vec<String> = dynamic_symbols(&lib, false)
            .into_iter()
            .filter(|s| s.contains("fmha_fwd_"))
            .collect();
        assert!(
            undefined.is_empty(),
            "{}: the lazy dispatcher calls specialisations no stub defines: {undefined:?}",
            v.label
        );
        let defined = dynamic_symbols(&lib, true);
        assert!(
            defined.iter().any(|s| s.starts_with("_Z8fmha_fwd")),
            "{}: no fmha_fwd API in the lazy library",
            v.label
        );
        let unresolved_capi: Vec<String> = dynamic_symbols(&lib, false)
            .into_iter()
            .filter(|s| s.starts_with("ck_jit_"))
            .collect();
        writeln!(
            report,
            "{}: libfmha_fwd_lazy.so links; blob calls go through {unresolved_capi:?}",
            v.label
        )
        .unwrap();
    }
    writeln!(
        report,
        "generate {:.1}s, compile (2 at a time) {:.1}s, total {:.1}s",
        generated.as_secs_f64(),
        compiled.as_secs_f64(),
        started.elapsed().as_secs_f64()
    )
    .unwrap();
    eprint!("{report}");
    let _ = fs::write(ws.join("target/real-ck-timings.txt"), &report);
}
