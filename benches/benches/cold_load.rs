//! Cold load from the disk cache in a fresh process: the cost of finding a
//! pre-built kernel in the cache (key, lookup, verification), loading it
//! and resolving its symbol, per kernel, against plain `dlopen` + `dlsym`
//! of the very same cached objects in the same kind of process.
//!
//! Builds a tree of small C blobs, compiles them all once with `cc`
//! through the runtime, then starts `load-probe` many times, alternating
//! the two modes. Once-per-process costs (manifest parse, cache open, the
//! compiler's `--version` run) are timed apart from the per-kernel cost.
//!
//! `cargo bench -p ck-jit-benches --bench cold_load`
//! (`-- --kernels N --rounds R` to change the size; 32 and 25 by default)

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use ck_jit_benches::blobs::{self, CTreeSpec};
use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::stats::median;
use ck_jit_benches::{probe, workdir};

const LOAD_PROBE: &str = env!("CARGO_BIN_EXE_load-probe");

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    if !std::env::args().any(|a| a == "--bench") {
        // Built and run by `cargo test --benches`: nothing to measure.
        println!("cold_load: run with `cargo bench` to measure");
        return;
    }
    if let Err(e) = run(arg("--kernels", 32), arg("--rounds", 25)) {
        eprintln!("cold_load: {e}");
        std::process::exit(1);
    }
}

fn run(kernels: usize, rounds: usize) -> Result<(), String> {
    let dir = workdir::fresh("cold_load").map_err(|e| e.to_string())?;
    let tree = blobs::c_tree(
        &dir.join("tree"),
        &CTreeSpec {
            prefix: "cold",
            count: kernels,
            weight: 0,
            compiler: "cc",
            flags: &[],
            lang: blobs::Lang::C,
        },
    )?;
    let cache = dir.join("cache");

    // Pre-build every blob with the real compiler, and list the published
    // objects for the baseline.
    let rt = ck_jit_rt::Runtime::from_file(&tree.manifest)
        .map_err(|e| e.to_string())?
        .with_cache_dir(&cache);
    let names: Vec<&str> = tree.names.iter().map(String::as_str).collect();
    for (name, r) in rt.warmup(&names) {
        r.map_err(|e| format!("pre-building {name}: {e}"))?;
    }
    let mut list = String::new();
    let mut object_bytes = Vec::new();
    for name in &names {
        let plan = rt.plan(name).map_err(|e| e.to_string())?;
        let (entry, bytes) = rt
            .cached_entry(&plan)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{name} is not in the cache after pre-building"))?;
        object_bytes.push(bytes.len() as f64);
        let _ = writeln!(list, "{name}\t{name}\t{}", entry.object.display());
    }
    let list_path = dir.join("objects.tsv");
    std::fs::write(&list_path, list).map_err(|e| e.to_string())?;

    let mut runtime_args: Vec<String> = vec![
        "runtime".into(),
        "--manifest".into(),
        tree.manifest.display().to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
        "--split".into(),
    ];
    runtime_args.extend(tree.names.iter().cloned());
    let dlopen_args: Vec<String> = vec!["dlopen".into(), list_path.display().to_string()];

    let (mut rt_kernel, mut rt_first, mut dl_kernel, mut dl_first) =
        (vec![], vec![], vec![], vec![]);
    let (mut manifest_ms, mut cache_ms, mut compiler_ms) = (vec![], vec![], vec![]);
    let (mut rt_wall, mut dl_wall) = (vec![], vec![]);
    let exe = Path::new(LOAD_PROBE);
    for round in 0..rounds {
        // Alternate which mode goes first, so drift hits both alike.
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for use_runtime in order {
            let args = if use_runtime {
                &runtime_args
            } else {
                &dlopen_args
            };
            let t = Instant::now();
            let v = probe::finish(probe::spawn(exe, args)?)?;
            let wall = t.elapsed().as_secs_f64() * 1e3;
            check_values(&v, kernels)?;
            let ks = probe::numbers(&v, "kernels_ms");
            if use_runtime {
                if v["compiles"].as_u64() != Some(0) {
                    return Err(format!("a cold-load probe compiled something: {v}"));
                }
                rt_first.push(ks[0]);
                rt_kernel.extend_from_slice(&ks[1..]);
                manifest_ms.push(v["manifest_ms"].as_f64().unwrap_or(f64::NAN));
                cache_ms.push(v["cache_open_ms"].as_f64().unwrap_or(f64::NAN));
                compiler_ms.push(v["compiler_id_ms"].as_f64().unwrap_or(f64::NAN));
                rt_wall.push(wall);
            } else {
                dl_first.push(ks[0]);
                dl_kernel.extend_from_slice(&ks[1..]);
                dl_wall.push(wall);
            }
        }
    }

    report::heading(&format!(
        "cold load from the disk cache: {kernels} small C kernels (median object {:.0} bytes), \
         {rounds} fresh processes per mode",
        median(&object_bytes)
    ));
    Comparison {
        bench: "cold_load",
        what: "per kernel, 2nd..Nth of a process".into(),
        baseline_label: "dlopen + dlsym of the cached .so".into(),
        baseline: median(&dl_kernel),
        measured_label: "ck-jit resolve: key, lookup, verify, dlopen, symbol".into(),
        measured: median(&rt_kernel),
        unit: Unit::Ms,
        target: Target::AtMost(1.0),
    }
    .print();
    Comparison {
        bench: "cold_load",
        what: "first kernel of a process".into(),
        baseline_label: "dlopen + dlsym of the cached .so".into(),
        baseline: median(&dl_first),
        measured_label: "ck-jit resolve (once-per-process costs paid before)".into(),
        measured: median(&rt_first),
        unit: Unit::Ms,
        target: Target::AtMost(1.0),
    }
    .print();
    println!("once per process (ck-jit), medians:");
    report::figure(
        "cold_load",
        "read + parse the manifest",
        median(&manifest_ms),
        Unit::Ms,
    );
    report::figure(
        "cold_load",
        "open + check the cache directory",
        median(&cache_ms),
        Unit::Ms,
    );
    report::figure(
        "cold_load",
        "identify the compiler (`cc --version` run)",
        median(&compiler_ms),
        Unit::Ms,
    );
    Comparison {
        bench: "cold_load",
        what: format!("whole process: start, load {kernels} kernels, exit (spawn to exit)"),
        baseline_label: "dlopen + dlsym process".into(),
        baseline: median(&dl_wall),
        measured_label: "ck-jit runtime process".into(),
        measured: median(&rt_wall),
        unit: Unit::Ms,
        target: Target::None,
    }
    .print();
    Ok(())
}

fn check_values(v: &serde_json::Value, kernels: usize) -> Result<(), String> {
    let values = probe::numbers(v, "values");
    let ok = values.len() == kernels
        && values
            .iter()
            .enumerate()
            .all(|(i, &x)| x as i32 == blobs::expected(i, 2));
    if ok {
        Ok(())
    } else {
        Err(format!("a probe called the wrong kernels: {v}"))
    }
}
