//! Cold start of whole processes whose kernels are all in the disk cache,
//! for any compiler: `cc` (C blobs), `hipcc` (HIP blobs), `nvcc` (CUDA
//! blobs) or a compiler's path.
//!
//! ```text
//! cold-start [--compiler cc|hipcc|nvcc|PATH] [--lang c|hip|cuda]
//!            [--gpu-arch ARCH[,ARCH...]] [--kernels K] [--rounds R] [--dir DIR]
//!            [--manifest json|compact]
//! ```
//!
//! `--manifest` is how the runtime process reads the manifest: `json`
//! (the default) parses the JSON file (`Runtime::from_file`); `compact`
//! maps the compact form the build writes beside it
//! (`Runtime::from_file_for_process`), as a process reads its
//! `CK_JIT_MANIFEST` and, in place, as a program reads its embedded one.
//!
//! Writes a tree of K small blobs and its manifest, compiles them all once
//! through the runtime (`Runtime::warmup`), then starts `load-probe` (found
//! next to this executable) R times in each of three modes, interleaved:
//!
//! - `runtime`: resolves the K kernels through ck-jit as a program does,
//!   every once-per-process cost (manifest read, cache open, compiler
//!   identity) paid where a program pays it;
//! - `dlopen`: the bare baseline, `dlopen` + `dlsym` of the very same
//!   cached objects;
//! - `runtime --split`: as `runtime` with the once-per-process costs paid
//!   up front and timed apart, for the breakdown only.
//!
//! Prints medians: the whole process (spawn to exit) against the bare one,
//! the first hit of a process against the first `dlopen`, the 2nd..Kth
//! kernels, and where the runtime process's time goes. Needs no cargo: the
//! release binaries `cold-start` and `load-probe` side by side, and the
//! compiler, are all it takes. Targets are printed, never asserted.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ck_jit_benches::blobs::{self, CTreeSpec, Lang};
use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::stats::median;
use ck_jit_benches::{probe, workdir};

const USAGE: &str = "usage: cold-start [--compiler cc|hipcc|nvcc|PATH] [--lang c|hip|cuda] \
                     [--gpu-arch ARCH] [--kernels K] [--rounds R] [--dir DIR] \
                     [--manifest json|compact]";

/// The whole-process target: the runtime process at most this many times
/// the bare `dlopen` one.
const WHOLE_TARGET: f64 = 1.2;

struct Options {
    compiler: String,
    lang: Lang,
    gpu_arch: Option<String>,
    kernels: usize,
    rounds: usize,
    dir: Option<PathBuf>,
    /// Map the compact manifest in place of parsing the JSON one.
    compact: bool,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        compiler: "cc".into(),
        lang: Lang::C,
        gpu_arch: None,
        kernels: 32,
        rounds: 15,
        dir: None,
        compact: false,
    };
    let mut lang = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        let count = |v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{a}: '{v}' is not a positive number"))
        };
        match a.as_str() {
            "--compiler" => o.compiler = value()?,
            "--lang" => {
                lang = Some(match value()?.as_str() {
                    "c" => Lang::C,
                    "hip" => Lang::Hip,
                    "cuda" => Lang::Cuda,
                    v => return Err(format!("--lang: '{v}' is not c, hip or cuda")),
                })
            }
            "--gpu-arch" => o.gpu_arch = Some(value()?),
            "--kernels" => o.kernels = count(value()?)?,
            "--rounds" => o.rounds = count(value()?)?,
            "--dir" => o.dir = Some(PathBuf::from(value()?)),
            "--manifest" => {
                o.compact = match value()?.as_str() {
                    "json" => false,
                    "compact" => true,
                    v => return Err(format!("--manifest: '{v}' is not json or compact")),
                }
            }
            "-h" | "--help" => return Err(USAGE.into()),
            _ => return Err(format!("unknown argument '{a}'\n{USAGE}")),
        }
    }
    o.lang = lang.unwrap_or_else(|| Lang::of_compiler(&o.compiler));
    Ok(o)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = parse(&args).and_then(|o| run(&o));
    if let Err(e) = result {
        eprintln!("cold-start: {e}");
        std::process::exit(1);
    }
}

/// `load-probe`, beside this executable.
fn load_probe() -> Result<PathBuf, String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let p = me.with_file_name("load-probe");
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "{} not found: copy load-probe next to cold-start (both from target/release)",
            p.display()
        ))
    }
}

/// The scratch directory: `--dir`, else `CK_JIT_BENCH_DIR/cold-start-<c>`,
/// else `ck-jit-benches/cold-start-<c>` in the target directory this
/// executable runs from (`target/release/..`), so the binaries need not
/// run where they were built.
fn scratch(o: &Options) -> Result<PathBuf, String> {
    if let Some(d) = &o.dir {
        return Ok(d.clone());
    }
    let name = format!(
        "cold-start-{}",
        Path::new(&o.compiler)
            .file_name()
            .map_or("cc".into(), |n| n.to_string_lossy().into_owned())
    );
    if std::env::var_os("CK_JIT_BENCH_DIR").is_some_and(|v| !v.is_empty()) {
        return Ok(workdir::root().join(name));
    }
    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let target = me
        .parent()
        .and_then(Path::parent)
        .ok_or("this executable has no parent directory")?;
    Ok(target.join("ck-jit-benches").join(name))
}

/// The target flags; `--gpu-arch A,B,...` records several architectures
/// (`--offload-arch=` each, or nvcc `-gencode` pairs), so a process that
/// loads the blobs also finds the device (the runtime compiles, and keys,
/// blobs recorded for several architectures for the device in use).
fn gpu_flags(o: &Options) -> Vec<String> {
    let archs: Vec<&str> = o
        .gpu_arch
        .as_deref()
        .map(|a| a.split(',').filter(|x| !x.is_empty()).collect())
        .unwrap_or_default();
    match o.lang {
        Lang::C => archs.iter().map(|a| format!("-march={a}")).collect(),
        Lang::Hip if archs.is_empty() => vec!["--offload-arch=gfx90a".into()],
        Lang::Hip => archs
            .iter()
            .map(|a| format!("--offload-arch={a}"))
            .collect(),
        Lang::Cuda if archs.len() > 1 => archs
            .iter()
            .flat_map(|a| {
                let n = a.trim_start_matches("sm_");
                [
                    "-gencode".to_string(),
                    format!("arch=compute_{n},code=sm_{n}"),
                ]
            })
            .collect(),
        Lang::Cuda => vec![format!(
            "-arch={}",
            archs.first().copied().unwrap_or("sm_90")
        )],
    }
}

/// One probe process's report and its wall time from spawn to exit.
struct Run {
    v: serde_json::Value,
    wall_ms: f64,
    /// Spawn to entry of the probe's `main` (exec, dynamic linking,
    /// runtime start), on the wall clock.
    to_main_ms: f64,
    /// After the probe's last kernel to its exit seen here.
    from_done_ms: f64,
}

fn unix_ms(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn run_probe(exe: &Path, args: &[String], kernels: usize) -> Result<Run, String> {
    let spawned = SystemTime::now();
    let t = Instant::now();
    let v = probe::finish(probe::spawn(exe, args)?)?;
    let wall_ms = t.elapsed().as_secs_f64() * 1e3;
    let exited = unix_ms(SystemTime::now());
    let values = probe::numbers(&v, "values");
    let right = values.len() == kernels
        && values
            .iter()
            .enumerate()
            .all(|(i, &x)| x as i32 == blobs::expected(i, 2));
    if !right {
        return Err(format!("a probe called the wrong kernels: {v}"));
    }
    if v["mode"] == "runtime" && v["compiles"].as_u64() != Some(0) {
        return Err(format!("a cached-kernels probe compiled something: {v}"));
    }
    let to_main_ms = v["started_unix_ms"].as_f64().unwrap_or(f64::NAN) - unix_ms(spawned);
    let from_done_ms = exited - v["done_unix_ms"].as_f64().unwrap_or(f64::NAN);
    Ok(Run {
        v,
        wall_ms,
        to_main_ms,
        from_done_ms,
    })
}

/// Figures collected over the rounds of one mode.
#[derive(Default)]
struct Series {
    wall: Vec<f64>,
    to_main: Vec<f64>,
    from_done: Vec<f64>,
    manifest: Vec<f64>,
    cache_open: Vec<f64>,
    compiler_id: Vec<f64>,
    first: Vec<f64>,
    /// Every 2nd..Kth kernel of every process.
    rest: Vec<f64>,
    /// The sum of the 2nd..Kth kernels, per process.
    rest_sum: Vec<f64>,
}

impl Series {
    fn add(&mut self, r: &Run) {
        let n = |k: &str| r.v[k].as_f64().unwrap_or(f64::NAN);
        let ks = probe::numbers(&r.v, "kernels_ms");
        self.wall.push(r.wall_ms);
        self.to_main.push(r.to_main_ms);
        self.from_done.push(r.from_done_ms);
        self.manifest.push(n("manifest_ms"));
        self.cache_open.push(n("cache_open_ms"));
        self.compiler_id.push(n("compiler_id_ms"));
        self.first.push(ks.first().copied().unwrap_or(f64::NAN));
        self.rest.extend_from_slice(ks.get(1..).unwrap_or(&[]));
        self.rest_sum.push(ks.iter().skip(1).sum());
    }
}

fn run(o: &Options) -> Result<(), String> {
    let exe = load_probe()?;
    let program = ck_jit_rt::__internals::find_program(&o.compiler).ok_or_else(|| {
        let how = match o.lang {
            Lang::Cuda => " (CUDA blobs need nvcc: put it in PATH or pass its path)",
            Lang::Hip => " (HIP blobs need hipcc: put it in PATH or pass its path)",
            Lang::C => "",
        };
        if o.compiler.contains('/') {
            format!(
                "--compiler {}: no executable file at that path{how}",
                o.compiler
            )
        } else {
            format!("--compiler {}: not found in PATH{how}", o.compiler)
        }
    })?;
    let dir = scratch(o)?;
    workdir::remove(&dir).map_err(|e| format!("clearing {}: {e}", dir.display()))?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let flags = gpu_flags(o);
    let flag_refs: Vec<&str> = flags.iter().map(String::as_str).collect();
    let tree = blobs::c_tree(
        &dir.join("tree"),
        &CTreeSpec {
            prefix: "start",
            count: o.kernels,
            weight: 0,
            compiler: &o.compiler,
            flags: &flag_refs,
            lang: o.lang,
        },
    )?;
    let cache = dir.join("cache");
    let written = Instant::now();

    // Compile every blob once, through the runtime, and list the published
    // objects for the bare baseline.
    let rt = ck_jit_rt::Runtime::from_file(&tree.manifest)
        .map_err(|e| e.to_string())?
        .with_cache_dir(&cache);
    let names: Vec<&str> = tree.names.iter().map(String::as_str).collect();
    let t = Instant::now();
    for (name, r) in rt.warmup(&names) {
        r.map_err(|e| format!("pre-building {name}: {e}"))?;
    }
    let prebuild_s = t.elapsed().as_secs_f64();
    let mut list = String::new();
    let mut object_bytes = Vec::new();
    let mut deps = Vec::new();
    for name in &names {
        let plan = rt.plan(name).map_err(|e| e.to_string())?;
        let (entry, bytes) = rt
            .cached_entry(&plan)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("{name} is not in the cache after pre-building"))?;
        object_bytes.push(bytes.len() as f64);
        deps.push(entry.record.deps.len() as f64);
        let _ = writeln!(list, "{name}\t{name}\t{}", entry.object.display());
    }
    let list_path = dir.join("objects.tsv");
    std::fs::write(&list_path, list).map_err(|e| e.to_string())?;
    // A deployed tree's sources were written long before a process starts;
    // the runtime's memo of source digests leaves out files changed in the
    // last two seconds (and so does its memo of hits), so the timed
    // processes start after that, and one untimed runtime loads every
    // blob, remembering sources and hits, as a deployment's first does.
    let settle = Duration::from_millis(2100);
    std::thread::sleep(settle.saturating_sub(written.elapsed()));
    let first = ck_jit_rt::Runtime::from_file(&tree.manifest)
        .map_err(|e| e.to_string())?
        .with_cache_dir(&cache);
    for name in &names {
        first.load(name).map_err(|e| e.to_string())?;
    }

    let mut runtime_args: Vec<String> = vec![
        "runtime".into(),
        "--manifest".into(),
        tree.manifest.display().to_string(),
        "--cache-dir".into(),
        cache.display().to_string(),
    ];
    if o.compact {
        runtime_args.push("--compact".into());
    }
    let mut split_args = runtime_args.clone();
    split_args.push("--split".into());
    runtime_args.extend(tree.names.iter().cloned());
    split_args.extend(tree.names.iter().cloned());
    let dlopen_args: Vec<String> = vec!["dlopen".into(), list_path.display().to_string()];
    let modes: [&[String]; 3] = [&runtime_args, &dlopen_args, &split_args];

    // One process of each mode per round, the order rotating, so drift
    // and the page cache's state hit every mode alike. One unmeasured
    // round first.
    let mut series: [Series; 3] = Default::default();
    for round in 0..=o.rounds {
        for k in 0..3 {
            let m = (round + k) % 3;
            let r = run_probe(&exe, modes[m], o.kernels)?;
            if round > 0 {
                series[m].add(&r);
            }
        }
    }
    let [rt_s, dl_s, split_s] = &series;

    report::heading(&format!(
        "cold start: whole processes loading {k} cached {lang} kernels, compiler {c} ({p}), \
         {r} rounds interleaved, medians",
        k = o.kernels,
        lang = match o.lang {
            Lang::C => "C",
            Lang::Hip => "HIP",
            Lang::Cuda => "CUDA",
        },
        c = o.compiler,
        p = program.display(),
        r = o.rounds,
    ));
    println!(
        "objects: median {:.0} bytes, {:.0} recorded headers each; pre-built in {prebuild_s:.1} s \
         ({} jobs); manifest {}",
        median(&object_bytes),
        median(&deps),
        ck_jit_rt::jobs(),
        if o.compact {
            "compact, mapped (--manifest compact)"
        } else {
            "JSON, parsed (--manifest json)"
        },
    );
    let rows = [
        Comparison {
            bench: "cold_start",
            what: "whole process (spawn to exit)".into(),
            baseline_label: "bare dlopen + dlsym process".into(),
            baseline: median(&dl_s.wall),
            measured_label: "ck-jit runtime process".into(),
            measured: median(&rt_s.wall),
            unit: Unit::Ms,
            target: Target::RatioAtMost(WHOLE_TARGET),
        },
        Comparison {
            bench: "cold_start",
            what: "first hit (first resolve, once-per-process costs in)".into(),
            baseline_label: "first dlopen + dlsym".into(),
            baseline: median(&dl_s.first),
            measured_label: "first resolve".into(),
            measured: median(&rt_s.first),
            unit: Unit::Ms,
            target: Target::None,
        },
        Comparison {
            bench: "cold_start",
            what: "first hit + manifest read".into(),
            baseline_label: "first dlopen + dlsym".into(),
            baseline: median(&dl_s.first),
            measured_label: "manifest read + first resolve".into(),
            measured: median(
                &rt_s
                    .manifest
                    .iter()
                    .zip(&rt_s.first)
                    .map(|(a, b)| a + b)
                    .collect::<Vec<_>>(),
            ),
            unit: Unit::Ms,
            target: Target::None,
        },
        Comparison {
            bench: "cold_start",
            what: format!("per kernel (2nd..Kth, K = {})", o.kernels),
            baseline_label: "dlopen + dlsym".into(),
            baseline: median(&dl_s.rest),
            measured_label: "resolve".into(),
            measured: median(&rt_s.rest),
            unit: Unit::Ms,
            target: Target::None,
        },
    ];
    println!(
        "\n{:<52} {:>11} {:>11} {:>7} {:>10}  target",
        "", "ck-jit", "dlopen", "ratio", "diff"
    );
    for c in &rows {
        let target = match c.target.met(c.baseline, c.measured) {
            None => "-".to_string(),
            Some(met) => format!(
                "<= {WHOLE_TARGET}x the bare process: {}",
                if met { "met" } else { "MISSED" }
            ),
        };
        println!(
            "{:<52} {:>11} {:>11} {:>7.3} {:>10}  {target}",
            c.what,
            Unit::Ms.show(c.measured),
            Unit::Ms.show(c.baseline),
            c.ratio(),
            signed(c.measured - c.baseline),
        );
    }

    println!(
        "\nwhere a process's time goes: ck-jit with the once-per-process costs timed apart \
         (--split, {} more processes), medians (rows need not add up)",
        o.rounds
    );
    println!("{:<52} {:>11} {:>11}", "", "ck-jit", "dlopen");
    let none: &[f64] = &[];
    let breakdown: [(&str, &[f64], &[f64]); 9] = [
        (
            "spawn to main (exec, dynamic linking, Rust start)",
            &split_s.to_main,
            &dl_s.to_main,
        ),
        ("read + parse the manifest", &split_s.manifest, none),
        (
            "open + check the cache directory",
            &split_s.cache_open,
            none,
        ),
        (
            "compiler identity (kept in <cache>/compilers)",
            &split_s.compiler_id,
            none,
        ),
        (
            "first kernel, once-per-process costs paid before",
            &split_s.first,
            &dl_s.first,
        ),
        ("each 2nd..Kth kernel", &split_s.rest, &dl_s.rest),
        (
            "2nd..Kth kernels together",
            &split_s.rest_sum,
            &dl_s.rest_sum,
        ),
        (
            "after the last kernel to exit seen here",
            &split_s.from_done,
            &dl_s.from_done,
        ),
        ("whole process (spawn to exit)", &split_s.wall, &dl_s.wall),
    ];
    let show = |xs: &[f64]| {
        if xs.is_empty() {
            "-".to_string()
        } else {
            Unit::Ms.show(median(xs))
        }
    };
    for (what, a, b) in &breakdown {
        println!("  {what:<50} {:>11} {:>11}", show(a), show(b));
    }
    println!();
    for c in &rows {
        println!("result: {}", c.json());
    }
    for (what, a, b) in &breakdown {
        println!(
            "result: {}",
            serde_json::json!({
                "bench": "cold_start",
                "what": format!("--split breakdown: {what}"),
                "runtime": median(a),
                "dlopen": (!b.is_empty()).then(|| median(b)),
                "unit": "ms",
            })
        );
    }
    Ok(())
}

fn signed(d: f64) -> String {
    let sign = if d >= 0.0 { "+" } else { "-" };
    format!("{sign}{}", Unit::Ms.show(d.abs()))
}
