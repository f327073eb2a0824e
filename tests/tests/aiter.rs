//! aiter's own build of `libmha_fwd`, intercepted end to end, in
//! record-only mode: no ROCm is installed.
//!
//! The test unpacks the `amd-aiter` wheel (0.1.7.post2.dev18, the aiter and
//! CK that users install today; `.ci/aiter.sh` downloads it) and runs
//! aiter's build of `libmha_fwd` — `aiter.jit.core.compile_ops` with the
//! recipe of `optCompilerConfig.json`, as aiter's
//! `op_tests/cpp/mha/compile.py` does (`tests/fixtures/aiter/build_mha.py`)
//! — under [`Intercept`] with:
//!
//! - a synthetic ROCm home of HIP 6.4 ([`Intercept::hip_version`]): aiter
//!   reads its version, probes its flags and links its `libamdhip64`;
//! - the real HIP compiler of `.ci/hip-toolchain.sh` for aiter's host
//!   sources (CK's dispatchers, aiter's API, the asm launcher) and the
//!   stubs, without the two flags that upstream clang lacks
//!   (`NOT_IN_CLANG`);
//! - lazy libraries ([`Intercept::lazy_libraries`]) with this workspace's
//!   `libck_jit_capi.a`.
//!
//! It checks that every blob file aiter's generators wrote was recorded
//! (none compiled), per kind, with metadata from its declarations; that the
//! manifest is relocatable (no absolute path under the tree); that
//! aiter's link step was made lazy and the library aiter installs exports
//! its API and not the runtime's symbols; and that a program calling
//! `aiter::mha_fwd` through it, with a HIP stand-in showing one gfx942,
//! gets CK's dispatcher to compile exactly one blob, on its first call,
//! with the recorded command (a mocked `hipcc`: `tests/fixtures/aiter/
//! mock_hipcc.py`), and not again on the second call.
//!
//! Then the same program runs with the real compiler and a fresh cache:
//! the blob (`fwd_gfx9`, fp16, d128) is compiled for gfx942 with its
//! recorded command less the two flags upstream clang lacks
//! (`CK_JIT_DROP_FLAGS`: one refused, the other makes the compile run past
//! ten minutes; about 30 s and 780 MB without them), cached and loaded,
//! and its entry runs CK's kernel launch. The stand-in HIP runtime refuses
//! the launch (and notes it in `HIP_STAND_IN_LOG`), CK's
//! `launch_and_check` throws, and the program prints what it threw: the
//! test checks both calls got that far, one launch each, with one compile
//! in the process (`CK_JIT_VERBOSE` lines, `counters.json`) and one object
//! in the cache.
//!
//! ```text
//! .ci/hip-toolchain.sh && .ci/aiter.sh     # once: target/hip-toolchain, target/aiter
//! cargo test -p ck-jit-tests --test aiter -- --nocapture
//! ```
//!
//! `libmha_bwd` is built twice over. Whole (15,252 blobs, about 32
//! minutes here), by `aiters_mha_bwd_build_links_a_lazy_library`, which is
//! ignored by default. Narrowed, in CI: CK's bwd generator given aiter's
//! own `--filter` for one variant at one head dimension (fp16, d128, no
//! bias, mask or dropout, not deterministic; [`BWD_ONE_VARIANT`]), the
//! rest of the recipe as it is: 158 blobs, about 75 s of build here, then
//! a program calling `aiter::mha_bwd` through the library gets the three
//! blobs that one call runs (dot_do_o, dq_dk_dv, convert_dq) compiled on
//! its first call, each once (the mocked `hipcc`), and nothing on the
//! second.
//!
//! Without the wheel, its Python packages or the toolchain the test prints
//! a skip line and passes, unless `CK_JIT_REQUIRE_AITER=1` (set by
//! `.ci/run`).
//!
//! For benchmark 20 (`benches/scripts/aiter-first-call.sh`):
//! `CK_JIT_AITER_CAPI` links another `libck_jit_capi.a` into the library
//! (a release build), and `CK_JIT_AITER_KEEP=<dir>` builds in `<dir>/fwd`
//! and keeps it after a pass, with `aiter-fwd.env` naming the calling
//! program, the library, the warm cache and the blob's object.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ck_jit_build::manifest::Manifest;
use ck_jit_ck::intercept::{self, Intercept};
use ck_jit_tests::{build_hip_stand_in, capi_staticlib};

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static SHIM_HOOK: extern "C" fn() = shim_hook;

#[cfg(target_os = "linux")]
extern "C" fn shim_hook() {
    if intercept::is_shim() {
        intercept::shim_main()
    }
}

/// The HIP version the synthetic ROCm home states (ROCm 6.4.1).
const HIP_VERSION: &str = "6.4.43482-0";

/// Flags aiter passes for that version that upstream clang 20 lacks
/// (`.ci/hip-toolchain.sh`): dropped from the host compiles, kept in the
/// recorded blob commands, dropped from those at run time for the real
/// blob compile (`CK_JIT_DROP_FLAGS`). Upstream clang refuses the first
/// ("Unknown command line argument"); with the second, the device compile
/// of a d128 fp16 fwd blob ran past 600 s.
const NOT_IN_CLANG: &[&str] = &[
    "-mllvm -amdgpu-coerce-illegal-types=1",
    "-mllvm -amdgpu-function-calls=false",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn skip_or_fail(why: &str) {
    if std::env::var("CK_JIT_REQUIRE_AITER").is_ok_and(|v| v == "1") {
        panic!("CK_JIT_REQUIRE_AITER=1 but {why}");
    }
    eprintln!("SKIPPED aiter: {why}");
}

/// `KEY="value"` lines of the toolchain's `env.sh`.
fn toolchain_env(ws: &Path) -> Option<BTreeMap<String, String>> {
    let path = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target/hip-toolchain/env.sh"));
    let text = fs::read_to_string(path).ok()?;
    Some(
        text.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
            .collect(),
    )
}

/// `$CK_JIT_AITER_KEEP/<api>`, when set: the test's tree is made there
/// and kept after a pass, with `aiter-<api>.env` naming what a benchmark
/// reruns (benches/scripts/aiter-first-call.sh).
fn kept(api: &str) -> Option<PathBuf> {
    let keep = PathBuf::from(std::env::var_os("CK_JIT_AITER_KEEP")?);
    let keep = if keep.is_absolute() {
        keep
    } else {
        std::env::current_dir().unwrap().join(keep)
    };
    Some(keep.join(api))
}

fn find_wheel(ws: &Path) -> Option<PathBuf> {
    if let Some(w) = std::env::var_os("CK_JIT_AITER_WHEEL") {
        return Some(PathBuf::from(w));
    }
    let dir = ws.join("target/aiter");
    fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("amd_aiter-") && n.ends_with(".whl"))
        })
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{cmd:?} failed: {text}");
    text
}

/// Defined dynamic symbols of a shared object (`nm -D --defined-only`).
fn exports(lib: &Path) -> Vec<String> {
    run(Command::new("nm")
        .args(["-D", "--defined-only", "-C"])
        .arg(lib))
    .lines()
    .filter_map(|l| l.splitn(3, ' ').nth(2).map(String::from))
    .collect()
}

/// An intercepted aiter build of `libmha_<api>` and where it ran.
struct Built {
    tmp: ck_jit_tests::Tree,
    root: PathBuf,
    jit: PathBuf,
    real_hipcc: PathBuf,
    done: intercept::Intercepted,
    took: std::time::Duration,
    listing_before: Vec<String>,
}

/// Runs aiter's build of `libmha_<api>` intercepted (see the module
/// docs), CK's generator narrowed by `kernel_filter` when one is given
/// (`tests/fixtures/aiter/build_mha.py`); `None` after a skip line when
/// something it needs is missing.
fn build(api: &str, kernel_filter: Option<&str>) -> Option<Built> {
    let ws = workspace();
    let Some(wheel) = find_wheel(&ws) else {
        skip_or_fail("no amd-aiter wheel (run .ci/aiter.sh, or set CK_JIT_AITER_WHEEL)");
        return None;
    };
    let Some(tc) = toolchain_env(&ws) else {
        skip_or_fail("no HIP toolchain (run .ci/hip-toolchain.sh)");
        return None;
    };
    let probe = Command::new("python3")
        .args(["-c", "import packaging, psutil, pandas"])
        .status();
    if !probe.is_ok_and(|s| s.success()) || Command::new("ninja").arg("--version").output().is_err()
    {
        skip_or_fail("aiter's build needs python3 with packaging, psutil, pandas and ninja (.ci/aiter.sh installs them)");
        return None;
    }
    // `CK_JIT_AITER_CAPI` links another build of the C ABI into the lazy
    // library (a release build, for benches/scripts/aiter-first-call.sh).
    let capi = match std::env::var_os("CK_JIT_AITER_CAPI") {
        Some(a) => PathBuf::from(a),
        None => match capi_staticlib() {
            Some(a) => a,
            None => {
                skip_or_fail("no libck_jit_capi.a beside the test binary");
                return None;
            }
        },
    };
    let real_hipcc = PathBuf::from(&tc["CK_JIT_REAL_HIPCC"]);

    let tmp = match kept(api) {
        // Where the caller keeps the tree; made afresh.
        Some(dir) => {
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            ck_jit_tests::Tree { dir }
        }
        None => ck_jit_tests::Tree::new(&format!("aiter-{api}")),
    };
    let root = tmp.dir.join("aiter");
    fs::create_dir_all(&root).unwrap();
    run(Command::new("unzip")
        .arg("-q")
        .arg(&wheel)
        .arg("-d")
        .arg(&root));
    // aiter's build installs the library into op_tests/cpp/mha, where
    // its compile.py lives in a checkout; the wheel has no such directory.
    fs::create_dir_all(root.join("op_tests/cpp/mha")).unwrap();
    let listing_before = listing(&root);
    let jit = root.join("jit");
    let work = tmp.dir.join("work");
    let out = tmp.dir.join("out");
    fs::create_dir_all(&out).unwrap();

    let started = Instant::now();
    let mut argv: Vec<std::ffi::OsString> = vec![
        "python3".into(),
        ws.join("tests/fixtures/aiter/build_mha.py")
            .into_os_string(),
        root.clone().into_os_string(),
        api.into(),
    ];
    argv.extend(kernel_filter.map(Into::into));
    let mut i = Intercept::new(argv);
    i.current_dir(&root)
        .root(&root)
        .hip_version(HIP_VERSION)
        .env("GPU_ARCHS", "gfx942")
        .env("AITER_JIT_DIR", &jit)
        .env("MAX_JOBS", "2")
        .real_compiler(&real_hipcc)
        .lazy_libraries(&capi)
        .work_dir(&work)
        .out_dir(&out)
        .name(&format!("aiter_mha_{api}"))
        .cargo_metadata(false)
        .shim_program(std::env::current_exe().unwrap());
    for f in NOT_IN_CLANG {
        i.real_compiler_drops(f);
    }
    let done = match i.try_write() {
        Ok(d) => d,
        Err(e) => panic!("{e}"),
    };
    Some(Built {
        tmp,
        root,
        jit,
        real_hipcc,
        done,
        took: started.elapsed(),
        listing_before,
    })
}

/// Checks what every intercepted build must give: each blob file recorded
/// per kind, relocatable, one lazy link exporting `api_functions` and
/// none of the runtime's symbols, the wheel's files untouched. Returns the
/// blob count per group.
fn check_build(b: &Built, api: &str, api_functions: &[&str]) -> BTreeMap<String, usize> {
    let Built {
        root,
        jit,
        done,
        took,
        listing_before,
        ..
    } = b;
    let blob_dir = jit.join(format!("build/libmha_{api}/blob"));
    let blob_files: Vec<String> = fs::read_dir(&blob_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("fmha_") && n.contains("_d") && !n.ends_with("_api.cpp"))
        .collect();
    let m: &Manifest = &done.manifest;
    assert_eq!(
        m.blobs.len(),
        blob_files.len(),
        "every blob file is recorded"
    );
    let mut per_group: BTreeMap<String, usize> = BTreeMap::new();
    for b in &m.blobs {
        *per_group.entry(m.group_of(b).name.clone()).or_default() += 1;
    }
    eprintln!(
        "aiter libmha_{api}: {} blobs recorded, build {:.1} s, {} link(s) made lazy: {per_group:?}",
        m.blobs.len(),
        took.as_secs_f64(),
        done.links.len()
    );
    // Relocatable: nothing under the tree is recorded by its absolute path.
    let json = m.to_json();
    let root_text = fs::canonicalize(root).unwrap().display().to_string();
    assert!(
        !json.contains(&format!("{root_text}/")),
        "an absolute path under the tree in the manifest"
    );
    assert!(json.contains("-I{root}/aiter_meta/3rdparty/composable_kernel/include"));
    assert!(json.contains("--offload-arch=gfx942"));
    assert!(json.contains("-amdgpu-coerce-illegal-types=1"));

    // What CK's dispatchers call together, read at the lazy link: every
    // splitkv kernel with its combine kernel, bwd's kernels together.
    let kinds = |set: &Vec<u32>| -> Vec<String> {
        let mut k: Vec<String> = set
            .iter()
            .map(|&i| m.group_of(&m.blobs[i as usize]).name.clone())
            .collect();
        k.sort();
        k.dedup();
        k
    };
    let mut set_kinds: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for set in m.together.iter().filter(|s| s.len() > 1) {
        *set_kinds.entry(kinds(set)).or_default() += 1;
    }
    eprintln!("aiter libmha_{api}: sets called together, by kinds: {set_kinds:?}");
    if per_group.keys().any(|g| g.contains("splitkv_combine")) {
        assert!(
            set_kinds
                .keys()
                .any(|k| k.iter().any(|g| g.contains("splitkv_combine"))),
            "no splitkv set recorded: {set_kinds:?}"
        );
    }
    if per_group.keys().any(|g| g.contains("dq_dk_dv")) {
        assert!(
            set_kinds
                .keys()
                .any(|k| k.len() >= 2 && k.iter().any(|g| g.contains("dq_dk_dv"))),
            "no bwd set recorded: {set_kinds:?}"
        );
    }

    // aiter's link was made lazy; the library aiter installs exports its
    // API and keeps the runtime inside.
    assert_eq!(done.links.len(), 1, "{:?}", done.links);
    assert_eq!(done.links[0].blobs.len(), m.blobs.len());
    // The stubs of a splitkv kernel may hold its call until its combine
    // kernel is named (the order read from CK's dispatcher), and those of
    // bwd's dot_do_o until its dq_dk_dv; the kernel that ends an operation
    // never holds.
    let stubs = fs::read_to_string(&done.links[0].stubs).unwrap();
    let holding = |kind: &str| {
        stubs
            .split("// ")
            .filter(|s| s.contains(&format!("{kind}<")))
            .filter(|s| s.contains("ck_jit_stub_call<true>"))
            .count()
    };
    for (group, kind) in [
        ("fwd_splitkv_gfx9", "fmha_fwd_splitkv_oneshot_"),
        ("bwd_dot_do_o", "fmha_bwd_dot_do_o_oneshot_"),
    ] {
        if per_group.keys().any(|g| g.starts_with(group)) {
            assert!(holding(kind) > 0, "no {kind} stub holds its call");
        }
    }
    assert_eq!(holding("fmha_fwd_splitkv_combine_oneshot_"), 0);
    assert_eq!(holding("fmha_bwd_convert_dq_oneshot_"), 0);
    eprintln!(
        "aiter libmha_{api}: {} stubs may hold their call",
        stubs.matches("ck_jit_stub_call<true>").count()
    );
    let lib = root.join(format!("op_tests/cpp/mha/libmha_{api}.so"));
    assert!(lib.is_file(), "aiter installed {}", lib.display());
    let syms = exports(&lib);
    let exported: Vec<&String> = syms.iter().filter(|s| s.starts_with("aiter::")).collect();
    eprintln!("libmha_{api}.so exports: {exported:?}");
    for f in api_functions {
        assert!(
            exported.iter().any(|s| s.starts_with(f)),
            "{f} exported: {exported:?}"
        );
    }
    assert!(
        !syms.iter().any(|s| s.starts_with("ck_jit_")),
        "the runtime's symbols stay inside the library"
    );
    // The foreign tree: only aiter's own jit directory (AITER_JIT_DIR,
    // inside it here) and the installed library were written.
    let installed = format!("op_tests/cpp/mha/libmha_{api}.so");
    let after: Vec<String> = listing(root)
        .into_iter()
        .filter(|p| !p.starts_with("jit/") && p != "jit" && *p != installed)
        .collect();
    assert_eq!(
        &after, listing_before,
        "the wheel's files are left as found"
    );
    per_group
}

/// As the fwd test, for `libmha_bwd` (about 15,000 blob files): aiter's
/// build runs one compile at a time here and CK's bwd dispatcher alone
/// takes several minutes and 4 GB with this compiler, so it is not run by
/// default: `cargo test -p ck-jit-tests --test aiter -- --ignored`.
#[test]
#[ignore]
fn aiters_mha_bwd_build_links_a_lazy_library() {
    let Some(b) = build("bwd", None) else { return };
    let groups = check_build(&b, "bwd", &["aiter::mha_bwd("]);
    for kind in ["bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"] {
        assert!(
            groups.keys().any(|g| g.starts_with(kind)),
            "kind {kind} recorded: {groups:?}"
        );
    }
}

/// CK's bwd kernels narrowed the way aiter's own per-variant bwd build
/// narrows them (`cmdGenFunc_mha_bwd` in aiter/ops/mha.py: `--filter
/// dot_do_o@convert_dq@dq_dk_dv` on the dtype and the variant's traits),
/// and to one head dimension: fp16, d128, no bias, no mask, no dropout,
/// not deterministic. The filter reaches CK's generator only; the recipe's
/// other generators (aiter's pre/post kernels, its asm v3 kernels, its
/// API) run as they are.
const BWD_ONE_VARIANT: &str = "*_d128_fp16*@*_d128_fp16*_ndeterministic*\
                               @*_d128_fp16_*_nbias_ndbias_nmask_ndropout_ndeterministic*";

/// The full bwd build above, narrowed (see [`BWD_ONE_VARIANT`]) so that
/// CI can afford it: the same checks of the build, then a program calling
/// `aiter::mha_bwd` through the library gets CK's bwd dispatcher to
/// compile, on its first call, the blobs that one call runs (dot_do_o,
/// dq_dk_dv and, where its dispatcher asks for one, convert_dq: a set
/// called together), each once, with the recorded command (the mocked
/// `hipcc`), and nothing on the second call.
#[test]
fn aiters_mha_bwd_build_narrowed_to_one_head_dimension_links_a_lazy_library_that_compiles_one_call_on_first_call(
) {
    let started = Instant::now();
    let Some(b) = build("bwd", Some(BWD_ONE_VARIANT)) else {
        return;
    };
    let groups = check_build(&b, "bwd", &["aiter::mha_bwd("]);
    for kind in ["bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"] {
        assert!(
            groups.keys().any(|g| g.starts_with(kind)),
            "kind {kind} recorded: {groups:?}"
        );
    }
    let Built { tmp, done, .. } = &b;
    let m: &Manifest = &done.manifest;
    // The filter took: every dq_dk_dv kernel (CK's generator alone makes
    // those) is of the one variant.
    let dq_dk_dv: Vec<&str> = m
        .blobs
        .iter()
        .filter(|b| m.group_of(b).name.starts_with("bwd_dq_dk_dv"))
        .map(|b| b.name.as_str())
        .collect();
    assert!(!dq_dk_dv.is_empty());
    for name in &dq_dk_dv {
        assert!(
            name.starts_with("fmha_bwd_d128_fp16_")
                && name.contains("_nbias_ndbias_nmask_ndropout_ndeterministic"),
            "{name} is not of the one variant"
        );
    }

    let exe = link_caller(&b, "bwd", "call_mha_bwd.cpp");
    let mock_log = tmp.dir.join("mock-hipcc.log");
    let calls = tmp.dir.join("calls.txt");
    let out_text = run(Command::new(&exe)
        .env(
            "CK_JIT_HIPCC",
            workspace().join("tests/fixtures/aiter/mock_hipcc.py"),
        )
        .env("CK_JIT_CACHE_DIR", tmp.dir.join("cache"))
        .env("MOCK_HIPCC_LOG", &mock_log)
        .env("MOCK_CALLS", &calls)
        .env("MOCK_BLOB_RESULT", "42"));
    eprintln!("{out_text}");
    for call in 0..2 {
        let line = out_text
            .lines()
            .find(|l| l.starts_with(&format!("call {call}: ")))
            .unwrap_or_else(|| panic!("call {call} printed: {out_text}"));
        assert!(!line.contains("threw"), "{line}");
    }
    // What each call ran, in order: the blobs' functions write their names.
    let called = fs::read_to_string(&calls).unwrap();
    let called: Vec<&str> = called.lines().collect();
    assert!(
        !called.is_empty() && called.len().is_multiple_of(2),
        "two calls, the same kernels each: {called:?}"
    );
    let (first, second) = called.split_at(called.len() / 2);
    assert_eq!(first, second, "the second call runs what the first ran");
    let kinds: Vec<&str> = first
        .iter()
        .map(|n| {
            let blob = m
                .blob(n)
                .unwrap_or_else(|| panic!("{n} called, and not in the manifest"));
            m.group_of(blob).name.as_str()
        })
        .collect();
    for kind in ["bwd_dot_do_o", "bwd_dq_dk_dv"] {
        assert!(
            kinds.iter().any(|k| k.starts_with(kind)),
            "a {kind} kernel ran: {kinds:?}"
        );
    }
    // Compiled: exactly the blobs the first call ran, each once, with the
    // recorded command.
    let compiles = fs::read_to_string(&mock_log).unwrap();
    let compiled: Vec<String> = compiles
        .lines()
        .map(|l| {
            let argv: Vec<&str> = l.split('\x1f').collect();
            assert!(argv.contains(&"--offload-arch=gfx942"), "{argv:?}");
            let src = argv
                .iter()
                .find(|a| a.ends_with(".cpp"))
                .unwrap_or_else(|| panic!("a source in {argv:?}"));
            Path::new(src)
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut want: Vec<String> = first.iter().map(|s| s.to_string()).collect();
    want.sort();
    want.dedup();
    let mut got = compiled.clone();
    got.sort();
    assert_eq!(
        got.len(),
        compiled.len(),
        "a blob compiled twice: {compiled:?}"
    );
    assert_eq!(got, want, "compiled what the first call ran, nothing else");
    eprintln!(
        "aiter libmha_bwd, one variant: {} blobs recorded and linked lazily, \
         {} compiled at the first call ({kinds:?}); test {:.1} s",
        m.blobs.len(),
        compiled.len(),
        started.elapsed().as_secs_f64()
    );
}

/// Compiles `tests/fixtures/aiter/<fixture>` and links it against the
/// library aiter installed (`libmha_<api>.so`) and a stand-in HIP runtime
/// that shows one gfx942; the program, ready to run.
fn link_caller(b: &Built, api: &str, fixture: &str) -> PathBuf {
    let Built {
        tmp,
        root,
        real_hipcc,
        ..
    } = b;
    let ws = workspace();
    let installed = root.join("op_tests/cpp/mha");
    let stand_in = tmp.dir.join("hip");
    fs::create_dir_all(&stand_in).unwrap();
    build_hip_stand_in(&stand_in.join("libamdhip64.so"));
    let ck = root.join("aiter_meta/3rdparty/composable_kernel");
    let exe = tmp.dir.join(format!("call_mha_{api}"));
    let obj = tmp.dir.join(format!("call_mha_{api}.o"));
    run(Command::new(real_hipcc)
        .arg("-std=c++20")
        .arg("--offload-host-only")
        .arg(format!(
            "-I{}",
            root.join("aiter_meta/csrc/include").display()
        ))
        .arg(format!("-I{}", ck.join("include").display()))
        .arg(format!(
            "-I{}",
            ck.join("example/ck_tile/01_fmha").display()
        ))
        .arg("-c")
        .arg(ws.join("tests/fixtures/aiter").join(fixture))
        .arg("-o")
        .arg(&obj));
    let device = tmp.dir.join("hip_device.o");
    run(Command::new(real_hipcc)
        .arg("--offload-host-only")
        .arg("-c")
        .arg(ws.join("tests/fixtures/hip_device.cpp"))
        .arg("-o")
        .arg(&device));
    run(Command::new("c++")
        .arg(&obj)
        .arg(&device)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", installed.display()))
        .arg(format!("-L{}", stand_in.display()))
        .args([format!("-lmha_{api}").as_str(), "-lamdhip64"])
        .arg(format!(
            "-Wl,-rpath,{}:{}",
            installed.display(),
            stand_in.display()
        )));
    exe
}

#[test]
fn aiters_mha_fwd_build_links_a_lazy_library_that_compiles_one_blob_on_first_call() {
    let Some(b) = build("fwd", None) else { return };
    let per_group = check_build(
        &b,
        "fwd",
        &[
            "aiter::mha_fwd(",
            "aiter::mha_fwd_splitkv(",
            "aiter::mha_batch_prefill(",
        ],
    );
    for kind in [
        "fwd_gfx9",
        "fwd_splitkv_gfx9",
        "fwd_splitkv_combine_gfx9",
        "batch_prefill",
    ] {
        assert!(
            per_group.contains_key(kind),
            "kind {kind} recorded: {per_group:?}"
        );
    }
    let Built {
        tmp,
        root,
        real_hipcc,
        done,
        ..
    } = &b;
    let ws = workspace();
    let m: &Manifest = &done.manifest;
    // Metadata from the blobs' declarations.
    let fwd = m
        .blobs
        .iter()
        .find(|b| m.group_of(b).name == "fwd_gfx9")
        .unwrap();
    for key in ["dtype", "hdim", "mode", "mask", "bias", "lse", "arch"] {
        assert!(fwd.meta.contains_key(key), "{key} in {:?}", fwd.meta);
    }
    let installed = root.join("op_tests/cpp/mha");

    // A call through the library compiles exactly one blob, once.
    let stand_in = tmp.dir.join("hip");
    fs::create_dir_all(&stand_in).unwrap();
    build_hip_stand_in(&stand_in.join("libamdhip64.so"));
    let ck = root.join("aiter_meta/3rdparty/composable_kernel");
    let exe = tmp.dir.join("call_mha_fwd");
    let obj = tmp.dir.join("call_mha_fwd.o");
    run(Command::new(real_hipcc)
        .arg("-std=c++20")
        .arg("--offload-host-only")
        .arg(format!(
            "-I{}",
            root.join("aiter_meta/csrc/include").display()
        ))
        .arg(format!("-I{}", ck.join("include").display()))
        .arg(format!(
            "-I{}",
            ck.join("example/ck_tile/01_fmha").display()
        ))
        .arg("-c")
        .arg(ws.join("tests/fixtures/aiter/call_mha_fwd.cpp"))
        .arg("-o")
        .arg(&obj));
    let device = tmp.dir.join("hip_device.o");
    run(Command::new(real_hipcc)
        .arg("--offload-host-only")
        .arg("-c")
        .arg(ws.join("tests/fixtures/hip_device.cpp"))
        .arg("-o")
        .arg(&device));
    run(Command::new("c++")
        .arg(&obj)
        .arg(&device)
        .arg("-o")
        .arg(&exe)
        .arg(format!("-L{}", installed.display()))
        .arg(format!("-L{}", stand_in.display()))
        .args(["-lmha_fwd", "-lamdhip64"])
        .arg(format!(
            "-Wl,-rpath,{}:{}",
            installed.display(),
            stand_in.display()
        )));
    let mock_log = tmp.dir.join("mock-hipcc.log");
    let calls = tmp.dir.join("calls.txt");
    let cache = tmp.dir.join("cache");
    let out_text = run(Command::new(&exe)
        .env(
            "CK_JIT_HIPCC",
            ws.join("tests/fixtures/aiter/mock_hipcc.py"),
        )
        .env("CK_JIT_CACHE_DIR", &cache)
        .env("MOCK_HIPCC_LOG", &mock_log)
        .env("MOCK_CALLS", &calls)
        .env("MOCK_BLOB_RESULT", "42"));
    eprintln!("{out_text}");
    assert!(out_text.contains("call 0: 42"), "{out_text}");
    assert!(out_text.contains("call 1: 42"), "{out_text}");
    let compiles = fs::read_to_string(&mock_log).unwrap();
    let compiles: Vec<&str> = compiles.lines().collect();
    assert_eq!(compiles.len(), 1, "exactly one blob compiled: {compiles:?}");
    let argv: Vec<&str> = compiles[0].split('\x1f').collect();
    assert!(argv.contains(&"--offload-arch=gfx942"), "{argv:?}");
    let called = fs::read_to_string(&calls).unwrap();
    let called: Vec<&str> = called.lines().collect();
    assert_eq!(called.len(), 2, "{called:?}");
    assert_eq!(called[0], called[1]);
    let blob = m
        .blob(called[0])
        .expect("the blob called is in the manifest");
    assert_eq!(m.group_of(blob).name, "fwd_gfx9");
    assert_eq!(blob.meta.get("hdim").map(String::as_str), Some("128"));
    assert_eq!(blob.meta.get("dtype").map(String::as_str), Some("fp16"));
    assert!(argv
        .iter()
        .any(|a| a.ends_with(&format!("{}.cpp", called[0]))));

    // The same program with the real compiler and a cache of its own: the
    // blob is compiled for gfx942 with its recorded command, less the two
    // flags upstream clang lacks (`CK_JIT_DROP_FLAGS`), loaded, and its
    // entry runs CK's kernel launch, which the stand-in refuses: CK's
    // `launch_and_check` throws, and the program prints what it threw.
    let real_cache = tmp.dir.join("cache-real");
    let launches = tmp.dir.join("launches.txt");
    let started = Instant::now();
    let out = Command::new(&exe)
        .env("CK_JIT_HIPCC", real_hipcc)
        .env("CK_JIT_CACHE_DIR", &real_cache)
        .env("CK_JIT_DROP_FLAGS", NOT_IN_CLANG.join("; "))
        .env("CK_JIT_VERBOSE", "1")
        // About 20 s here; a compile with a flag that makes it run for
        // many minutes (see NOT_IN_CLANG) fails the test in ten.
        .env("CK_JIT_COMPILE_TIMEOUT", "600")
        .env("HIP_STAND_IN_LOG", &launches)
        .output()
        .unwrap();
    let took = started.elapsed();
    let real_text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{real_text}");
    assert_eq!(
        out.status.code(),
        Some(3),
        "the program reports a call that threw: {real_text}"
    );
    let compiled: Vec<&str> = real_text
        .lines()
        .filter(|l| l.starts_with("ck-jit: compiled "))
        .collect();
    assert_eq!(compiled.len(), 1, "one real compile: {real_text}");
    assert!(
        compiled[0].starts_with(&format!("ck-jit: compiled {} in ", called[0])),
        "the blob the mocked run called: {}",
        compiled[0]
    );
    let compile_ms: f64 = compiled[0]
        .split(" in ")
        .nth(1)
        .and_then(|t| t.split(" ms").next())
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("a compile time in {}", compiled[0]));
    // Both calls reached the blob's kernel launch (the first after the
    // compile and load, the second straight through the stub).
    for call in 0..2 {
        let line = real_text
            .lines()
            .find(|l| l.starts_with(&format!("call {call}: ")))
            .unwrap_or_else(|| panic!("call {call} printed: {real_text}"));
        assert!(
            line.contains("threw: HIP Function Failed")
                && line.contains("kernel_launch.hpp")
                && line.contains("(HIP stand-in)"),
            "call {call} threw at CK's kernel launch: {line}"
        );
    }
    let refused = fs::read_to_string(&launches).unwrap_or_default();
    let refused: Vec<&str> = refused.lines().collect();
    assert_eq!(
        refused, ["__hipPushCallConfiguration"; 2],
        "one kernel launch a call, refused by the stand-in"
    );
    // One object in the new cache, compiled once: the process's counts.
    let objects = files_named(&real_cache, ".so");
    assert_eq!(objects.len(), 1, "one object cached: {objects:?}");
    let counters: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(real_cache.join("counters.json")).unwrap())
            .unwrap();
    assert_eq!(counters["compiles"], 1, "{counters}");
    assert_eq!(counters["failures"], 0, "{counters}");
    eprintln!(
        "aiter libmha_fwd: real compile of {} for gfx942: {:.1} s (the process: {:.1} s), {} bytes",
        called[0],
        compile_ms / 1e3,
        took.as_secs_f64(),
        fs::metadata(&objects[0]).unwrap().len()
    );

    if let Some(dir) = kept("fwd") {
        // What a warm process's first call needs, for the benchmark.
        let vars = [
            ("EXE", exe.display().to_string()),
            ("LIB", installed.join("libmha_fwd.so").display().to_string()),
            ("STAND_IN", stand_in.display().to_string()),
            ("DEVICE_OBJ", device.display().to_string()),
            ("CACHE", real_cache.display().to_string()),
            ("BLOB", called[0].to_string()),
            ("OBJECT", objects[0].display().to_string()),
            ("HIPCC", real_hipcc.display().to_string()),
            ("DROP_FLAGS", NOT_IN_CLANG.join("; ")),
            ("COMPILE_MS", format!("{compile_ms:.0}")),
        ];
        let text: String = vars.iter().map(|(k, v)| format!("{k}='{v}'\n")).collect();
        fs::write(dir.join("aiter-fwd.env"), text).unwrap();
        eprintln!("aiter libmha_fwd: kept in {}", dir.display());
        // Its tree stays.
        std::mem::forget(b);
    }
}

/// Files under `dir` (recursively) whose names end with `suffix`.
fn files_named(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    listing(dir)
        .into_iter()
        .map(|p| dir.join(p))
        .filter(|p| p.is_file() && p.to_string_lossy().ends_with(suffix))
        .collect()
}

/// Every path under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}
