//! Miss overhead beyond the compiler: the time from a call that misses the
//! cache to the filled slot (plan and key, lookup, compile lock, compiler
//! run, checks, publish with fsync, dlopen, symbol), with a compiler that
//! only copies a prebuilt object (`copy-cc`), against that compiler
//! process run directly with the same arguments.
//!
//! Each miss gets a fresh cache directory, opened before the clock starts;
//! the compiler's identity (its `--version` run) is learnt once before
//! measuring, as a long-running process would have. `miss_to_cache_entry`
//! stops before `dlopen` (what `ck-jit build` does). The `_30ms` rows do the
//! same with a copy-cc that first sleeps 30 ms, the time a trivial real
//! `cc` compile takes here: the runtime notices a compiler's exit by
//! polling, so the overhead depends on how long the compiler ran.
//!
//! `cargo bench -p ck-jit-benches --bench miss_overhead -- --warm-up-time 1 --measurement-time 3`

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use ck_jit_benches::blobs::{self, CTreeSpec};
use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::{argv, criterion_estimates, workdir};
use ck_jit_build::Manifest;
use ck_jit_rt::Runtime;
use criterion::{BatchSize, BenchmarkGroup, Criterion, SamplingMode};

const COPY_CC: &str = env!("CARGO_BIN_EXE_copy-cc");
const GROUP: &str = "miss_overhead";
const BLOB: &str = "miss_0";

/// A tree whose one blob copy-cc "compiles", with its manifest.
struct Variant {
    /// Suffix of the bench ids (`""` or `"_30ms"`).
    id: &'static str,
    manifest: Manifest,
    root: PathBuf,
    caches: PathBuf,
}

/// A cache directory removed when dropped (after the clock stopped).
struct Scratch {
    dir: PathBuf,
    rt: Option<Runtime>,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.rt = None;
        let _ = workdir::remove(&self.dir);
    }
}

fn variant(
    dir: &Path,
    id: &'static str,
    prebuilt: &Path,
    sleep_ms: u64,
) -> Result<Variant, String> {
    let copy_from = format!("--copy-from={}", prebuilt.display());
    let sleep = format!("--sleep-ms={sleep_ms}");
    let tree = blobs::c_tree(
        &dir.join(format!("tree{id}")),
        &CTreeSpec {
            prefix: "miss",
            count: 1,
            weight: 0,
            compiler: COPY_CC,
            flags: &[copy_from.as_str(), sleep.as_str()],
            lang: blobs::Lang::C,
        },
    )?;
    let text = std::fs::read_to_string(&tree.manifest).map_err(|e| e.to_string())?;
    Ok(Variant {
        id,
        manifest: Manifest::from_json(&text).map_err(|e| e.to_string())?,
        caches: dir.join(format!("caches{id}")),
        root: tree.root,
    })
}

fn setup() -> Result<(PathBuf, Vec<Variant>), String> {
    let dir = workdir::fresh("miss_overhead").map_err(|e| e.to_string())?;
    let prebuilt = dir.join("prebuilt.so");
    let variants = vec![
        variant(&dir, "", &prebuilt, 0)?,
        variant(&dir, "_30ms", &prebuilt, 30)?,
    ];
    // The object copy-cc hands out: the blob compiled once, ahead.
    let root = &variants[0].root;
    let st = Command::new("cc")
        .args(["-O2", "-fPIC", "-shared", "-I"])
        .arg(root.join("include"))
        .arg(root.join("kernels").join(format!("{BLOB}.c")))
        .arg("-o")
        .arg(&prebuilt)
        .status()
        .map_err(|e| format!("running cc: {e}"))?;
    if !st.success() {
        return Err(format!("cc failed to build the prebuilt object: {st}"));
    }
    Ok((dir, variants))
}

/// A runtime over the manifest with a fresh, already opened cache.
fn fresh_runtime(v: &Variant, n: &AtomicUsize) -> (Runtime, Scratch) {
    let dir = v.caches.join(n.fetch_add(1, Ordering::Relaxed).to_string());
    let rt = Runtime::new(v.manifest.clone(), "miss_overhead bench").with_cache_dir(&dir);
    if let Err(e) = rt.cache() {
        panic!("opening a fresh cache: {e}");
    }
    (rt, Scratch { dir, rt: None })
}

fn call(p: *const ()) -> i32 {
    // SAFETY: the blob exports `int miss_0(int)`.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(p) };
    f(2)
}

/// Runs copy-cc with the argv the runtime would run it with.
fn copy_cc_alone(v: &Variant, out: &Path) -> Duration {
    let dep = out.with_extension("d");
    let argv =
        argv::compile_argv(&v.manifest, BLOB, &v.root, out, &dep).unwrap_or_else(|e| panic!("{e}"));
    let t = Instant::now();
    let st = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .status();
    let dt = t.elapsed();
    match st {
        Ok(st) if st.success() => {}
        other => panic!("copy-cc failed: {other:?}"),
    }
    let _ = std::fs::remove_file(out);
    let _ = std::fs::remove_file(&dep);
    dt
}

fn bench_variant(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    v: &Variant,
    out: &Path,
) {
    let n = AtomicUsize::new(0);
    g.bench_function(format!("copy_cc_alone{}", v.id), |b| {
        b.iter_custom(|iters| (0..iters).map(|_| copy_cc_alone(v, out)).sum())
    });
    g.bench_function(format!("miss_to_cache_entry{}", v.id), |b| {
        b.iter_batched(
            || fresh_runtime(v, &n),
            |(rt, mut scratch)| {
                let r = rt.ensure(BLOB, false);
                scratch.rt = Some(rt);
                match r {
                    Ok((_, _, ck_jit_rt::Outcome::Compiled)) => scratch,
                    other => panic!("expected a compile: {other:?}"),
                }
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function(format!("miss_to_filled_slot{}", v.id), |b| {
        b.iter_batched(
            || fresh_runtime(v, &n),
            |(rt, mut scratch)| {
                let p = rt.resolve(BLOB, None).unwrap_or_else(|e| panic!("{e}"));
                scratch.rt = Some(rt);
                (p, scratch)
            },
            BatchSize::PerIteration,
        )
    });
}

fn main() {
    let started = SystemTime::now();
    let (dir, variants) = match setup() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("miss_overhead: {e}");
            std::process::exit(1);
        }
    };
    // One miss before measuring: learns the compiler's identity (once per
    // process) and checks the whole path works.
    {
        let n = AtomicUsize::new(0);
        let (rt, mut scratch) = fresh_runtime(&variants[0], &n);
        let p = rt.resolve(BLOB, None).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(call(p), blobs::expected(0, 2));
        scratch.rt = Some(rt);
    }

    let mut c = Criterion::default().configure_from_args();
    {
        let mut g = c.benchmark_group(GROUP);
        g.sample_size(20).sampling_mode(SamplingMode::Flat);
        for v in &variants {
            bench_variant(&mut g, v, &dir.join("alone.so"));
        }
        g.finish();
    }
    c.final_summary();

    let median_ms = |f: &str| criterion_estimates::median_ns(GROUP, f, started).map(|ns| ns / 1e6);
    report::heading("miss overhead beyond the compiler (copy-cc copies a prebuilt object)");
    for v in &variants {
        let Some(alone) = median_ms(&format!("copy_cc_alone{}", v.id)) else {
            continue;
        };
        let what = if v.id.is_empty() {
            "copy-cc"
        } else {
            "copy-cc sleeping 30 ms first"
        };
        let rows = [
            (
                "miss_to_cache_entry",
                "to a published, verified cache entry (no dlopen)",
                "runtime ensure: key, lock, compile, publish",
            ),
            (
                "miss_to_filled_slot",
                "from the call to the filled slot",
                "runtime resolve: ... publish, dlopen, symbol",
            ),
        ];
        for (id, to, label) in rows {
            if let Some(m) = median_ms(&format!("{id}{}", v.id)) {
                Comparison {
                    bench: "miss_overhead",
                    what: format!("miss with {what}: {to}"),
                    baseline_label: format!("{what}, process alone"),
                    baseline: alone,
                    measured_label: label.into(),
                    measured: m,
                    unit: Unit::Ms,
                    target: Target::DiffAtMost(5.0),
                }
                .print();
            }
        }
    }
}
