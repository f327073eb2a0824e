//! Stampede: 16 processes ask for the same cold kernel at once, against
//! one process compiling it alone. One of the 16 compiles (the compile
//! lock of the cache key), the others wait and load its result; the bench
//! checks that exactly one compile ran.
//!
//! The kernel is a C blob compiled for real by `cc`, at two sizes: a
//! trivial one (a few tens of ms to compile: the fixed costs of 16
//! processes weigh most) and one of 300 small functions (about half a
//! second). Each round starts from an empty cache; the two cases alternate
//! which goes first.
//!
//! `cargo bench -p ck-jit-benches --bench stampede`
//! (`-- --procs N --rounds R --weights W,W` to change it; 16, 7 and 0,300
//! by default)

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use ck_jit_benches::blobs::{self, CTreeSpec};
use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::stats::median;
use ck_jit_benches::{argv, probe, workdir};

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
        println!("stampede: run with `cargo bench` to measure");
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    let weights: Vec<usize> = args
        .iter()
        .position(|a| a == "--weights")
        .and_then(|i| args.get(i + 1))
        .map(|v| v.split(',').filter_map(|w| w.parse().ok()).collect())
        .unwrap_or_else(|| vec![0, 300]);
    for w in weights {
        if let Err(e) = run(arg("--procs", 16), arg("--rounds", 7), w) {
            eprintln!("stampede: {e}");
            std::process::exit(1);
        }
    }
}

/// One wave of probes on an empty cache.
struct Wave {
    /// First start to last exit, as the parent saw it (ms).
    wall: f64,
    /// Compiles the probes ran in all.
    compiles: u64,
    /// The compiling probe's resolve time (ms).
    compile_resolve: f64,
    /// Last probe's entry to `main` after the first one's (ms).
    start_spread: f64,
    /// Last probe done after the compiling probe was done (ms).
    tail_after_compile: f64,
}

/// Starts `procs` probes on an empty cache at once and waits for all.
fn wave(args: &[String], procs: usize) -> Result<Wave, String> {
    let exe = Path::new(LOAD_PROBE);
    let t = Instant::now();
    let children = (0..procs)
        .map(|_| probe::spawn(exe, args))
        .collect::<Result<Vec<_>, _>>()?;
    let mut reports = Vec::new();
    for c in children {
        reports.push(probe::finish(c)?);
    }
    let wall = t.elapsed().as_secs_f64() * 1e3;
    let num = |v: &serde_json::Value, f: &str| v[f].as_f64().unwrap_or(f64::NAN);
    let mut compiles = 0;
    let mut compiler = None;
    for v in &reports {
        if probe::numbers(v, "values") != [blobs::expected(0, 2) as f64] {
            return Err(format!("a probe got a wrong value: {v}"));
        }
        let c = v["compiles"].as_u64().unwrap_or(0);
        if c > 0 {
            compiler = Some(v);
        }
        compiles += c;
    }
    let compiler = compiler.ok_or("no probe compiled")?;
    let fold =
        |f: &str, pick: fn(f64, f64) -> f64| reports.iter().map(|v| num(v, f)).fold(f64::NAN, pick);
    Ok(Wave {
        wall,
        compiles,
        compile_resolve: probe::numbers(compiler, "kernels_ms")
            .first()
            .copied()
            .unwrap_or(f64::NAN),
        start_spread: fold("started_unix_ms", f64::max) - fold("started_unix_ms", f64::min),
        tail_after_compile: fold("done_unix_ms", f64::max) - num(compiler, "done_unix_ms"),
    })
}

fn run(procs: usize, rounds: usize, weight: usize) -> Result<(), String> {
    let bench = if weight == 0 {
        "stampede_trivial"
    } else {
        "stampede_weighted"
    };
    let dir = workdir::fresh(&format!("stampede-{weight}")).map_err(|e| e.to_string())?;
    let tree = blobs::c_tree(
        &dir.join("tree"),
        &CTreeSpec {
            prefix: bench,
            count: 1,
            weight,
            compiler: "cc",
            flags: &[],
            lang: blobs::Lang::C,
        },
    )?;
    let blob = &tree.names[0];
    let text = std::fs::read_to_string(&tree.manifest).map_err(|e| e.to_string())?;
    let manifest = ck_jit_build::Manifest::from_json(&text).map_err(|e| e.to_string())?;

    let (mut single, mut herd, mut cc_alone) = (vec![], vec![], vec![]);
    let (mut single_compile, mut herd_compile, mut spread, mut tail) =
        (vec![], vec![], vec![], vec![]);
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [1, procs]
        } else {
            [procs, 1]
        };
        for n in order {
            let cache = dir.join(format!("cache-{round}-{n}"));
            let args: Vec<String> = vec![
                "runtime".into(),
                "--manifest".into(),
                tree.manifest.display().to_string(),
                "--cache-dir".into(),
                cache.display().to_string(),
                blob.clone(),
            ];
            let w = wave(&args, n)?;
            if w.compiles != 1 {
                return Err(format!(
                    "{n} processes ran {} compiles, expected 1",
                    w.compiles
                ));
            }
            if n == 1 {
                single.push(w.wall);
                single_compile.push(w.compile_resolve);
            } else {
                herd.push(w.wall);
                herd_compile.push(w.compile_resolve);
                spread.push(w.start_spread);
                tail.push(w.tail_after_compile);
            }
            workdir::remove(&cache).map_err(|e| e.to_string())?;
        }
        // Context: the compile command alone, run directly.
        let out = dir.join("alone.so");
        let dep = dir.join("alone.d");
        let cmd = argv::compile_argv(&manifest, blob, &tree.root, &out, &dep)?;
        let t = Instant::now();
        let st = Command::new(&cmd[0])
            .args(&cmd[1..])
            .stdin(Stdio::null())
            .status()
            .map_err(|e| e.to_string())?;
        cc_alone.push(t.elapsed().as_secs_f64() * 1e3);
        if !st.success() {
            return Err(format!("the compile command failed: {st}"));
        }
    }

    report::heading(&format!(
        "stampede: {procs} processes, one cold kernel ({}, real cc compile), {rounds} rounds",
        if weight == 0 {
            "trivial C blob".to_string()
        } else {
            format!("C blob of {weight} small functions")
        }
    ));
    report::figure(
        bench,
        "the compile command alone (cc, run directly)",
        median(&cc_alone),
        Unit::Ms,
    );
    Comparison {
        bench,
        what: format!("{procs} processes get the same cold kernel (start to last exit)"),
        baseline_label: "1 process compiles it alone".into(),
        baseline: median(&single),
        measured_label: format!("{procs} processes, 1 compile, {} wait and load", procs - 1),
        measured: median(&herd),
        unit: Unit::Ms,
        target: Target::RatioAtMost(1.10),
    }
    .print();
    println!("where the difference goes (medians):");
    report::figure(
        bench,
        "compiling probe's resolve, alone",
        median(&single_compile),
        Unit::Ms,
    );
    report::figure(
        bench,
        &format!("compiling probe's resolve, among {procs}"),
        median(&herd_compile),
        Unit::Ms,
    );
    report::figure(
        bench,
        "last probe's start after the first's",
        median(&spread),
        Unit::Ms,
    );
    report::figure(
        bench,
        "last probe done after the compiling one",
        median(&tail),
        Unit::Ms,
    );
    Ok(())
}
