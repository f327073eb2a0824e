//! Drivers of the benchmarks that time whole builds, run through the
//! scripts in `benches/scripts/`:
//!
//! ```text
//! bench-tool ck-scale [--rounds R] [--aot-sample N] [--jobs J]
//! bench-tool prebuild --ck-jit PATH [--blobs N] [--rounds R] [--jobs J]
//! ```
//!
//! `ck-scale` (the build at CK scale): writes the 10,554 blobs of
//! `data/ck-fmha-blobs.txt` as small CK-shaped files and a crate whose
//! `build.rs` records them with plain `BlobGroup` globs per direction,
//! times that crate's `cargo build` (and the `build.rs` inside it) against
//! a tree of four blobs, reports the
//! manifest's size and the binary size delta, and compares the build with
//! compiling every blob ahead of time, extrapolated from a sample of real
//! host compiles. The CK preset is not measured here: it needs a CK tree
//! whose headers declare the traits each blob is described by, and these
//! stand-in files come with none; benchmark 18 measures it on CK's own
//! generator output.
//! `--groups`, once the choice between the two, is accepted and changes
//! nothing.
//!
//! `prebuild` (prebuild throughput): `ck-jit build --all -j J` over a few
//! hundred CK-shaped host blobs against `make -j J` running the identical
//! compile commands.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use ck_jit_benches::fmha::{self, Listed};
use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::stats::median;
use ck_jit_benches::{argv, workdir};
use ck_jit_build::Manifest;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("ck-scale") => ck_scale(&Opts::parse(&args[1..], 3)),
        Some("prebuild") => prebuild(&Opts::parse(&args[1..], 5)),
        _ => Err(
            "usage: bench-tool ck-scale [--rounds R] [--aot-sample N] [--jobs J]\n       \
                  bench-tool prebuild --ck-jit PATH [--blobs N] [--rounds R] [--jobs J]"
                .into(),
        ),
    };
    if let Err(e) = r {
        eprintln!("bench-tool: {e}");
        std::process::exit(1);
    }
}

struct Opts {
    rounds: usize,
    jobs: usize,
    blobs: usize,
    aot_sample: usize,
    ck_jit: Option<PathBuf>,
}

impl Opts {
    fn parse(args: &[String], rounds: usize) -> Opts {
        let num = |name: &str, default: usize| {
            args.iter()
                .position(|a| a == name)
                .and_then(|i| args.get(i + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(default)
        };
        Opts {
            rounds: num("--rounds", rounds),
            jobs: num("--jobs", 2),
            blobs: num("--blobs", 300),
            aot_sample: num("--aot-sample", 20),
            ck_jit: args
                .iter()
                .position(|a| a == "--ck-jit")
                .and_then(|i| args.get(i + 1))
                .map(PathBuf::from),
        }
    }
}

fn io<T>(what: &str, r: std::io::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

/// Runs a command to completion, output to `log`; returns seconds.
fn timed(cmd: &mut Command, log: &Path) -> Result<f64, String> {
    timed_split(cmd, None, log)
}

/// [`timed`], with stdout to `out` when given (stderr still to `log`).
fn timed_split(cmd: &mut Command, out: Option<&Path>, log: &Path) -> Result<f64, String> {
    let f = io("creating a log", fs::File::create(log))?;
    let stdout = match out {
        Some(p) => io("creating an output file", fs::File::create(p))?,
        None => io("creating a log", f.try_clone())?,
    };
    let t = Instant::now();
    let st = io(
        &format!("starting {cmd:?}"),
        cmd.stdin(Stdio::null()).stdout(stdout).stderr(f).status(),
    )?;
    let secs = t.elapsed().as_secs_f64();
    if !st.success() {
        let tail = fs::read_to_string(log).unwrap_or_default();
        let tail: String = tail
            .chars()
            .rev()
            .take(3000)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        return Err(format!(
            "{cmd:?} failed ({st}); log {}:\n{tail}",
            log.display()
        ));
    }
    Ok(secs)
}

/// `n` blobs spread evenly over the list (kernel blobs only).
fn spread(all: &[Listed], n: usize) -> Vec<Listed> {
    let kernels: Vec<&Listed> = all.iter().filter(|b| !b.is_api()).collect();
    let n = n.min(kernels.len()).max(1);
    (0..n)
        .map(|i| kernels[i * kernels.len() / n].clone())
        .collect()
}

fn read_manifest(path: &Path) -> Result<Manifest, String> {
    let text = io("reading the manifest", fs::read_to_string(path))?;
    Manifest::from_json(&text).map_err(|e| e.to_string())
}

/// Compiles each blob once with its manifest command; seconds per blob.
fn compile_each(
    m: &Manifest,
    root: &Path,
    names: &[String],
    out: &Path,
) -> Result<Vec<f64>, String> {
    io("creating the output dir", fs::create_dir_all(out))?;
    let mut secs = Vec::new();
    for name in names {
        let so = out.join(format!("{name}.so"));
        let dep = out.join(format!("{name}.d"));
        let cmd = argv::compile_argv(m, name, root, &so, &dep)?;
        let log = out.join(format!("{name}.log"));
        secs.push(timed(Command::new(&cmd[0]).args(&cmd[1..]), &log)?);
    }
    Ok(secs)
}

// ---------------------------------------------------------------- ck-scale

const CRATE_TOML: &str = include_str!("../../ck-scale/Cargo.toml.in");
const CRATE_BUILD: &str = include_str!("../../ck-scale/build.rs.in");
const CRATE_MAIN: &str = include_str!("../../ck-scale/main.rs.in");

/// What one `cargo build` of the CK-scale crate reported.
struct CrateBuild {
    secs: f64,
    build_rs_ms: Option<f64>,
    blobs: Option<u64>,
    manifest_bytes: Option<u64>,
}

fn cargo_build(krate: &Path, target: &Path, tree: &Path, log: &Path) -> Result<CrateBuild, String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let secs = timed(
        Command::new(cargo)
            .args(["build", "--release", "--offline", "--manifest-path"])
            .arg(krate.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", target)
            .env("CK_SCALE_TREE", tree)
            .env_remove("CK_JIT_CHECK_MANIFEST"),
        log,
    )?;
    let text = fs::read_to_string(log).unwrap_or_default();
    let report = text
        .lines()
        .filter_map(|l| l.split_once("ck-scale-build ").map(|(_, j)| j))
        .filter_map(|j| serde_json::from_str::<serde_json::Value>(j).ok())
        .next_back();
    Ok(CrateBuild {
        secs,
        build_rs_ms: report.as_ref().and_then(|v| v["build_rs_ms"].as_f64()),
        blobs: report.as_ref().and_then(|v| v["blobs"].as_u64()),
        manifest_bytes: report.as_ref().and_then(|v| v["manifest_bytes"].as_u64()),
    })
}

fn cargo_clean_crate(krate: &Path, target: &Path) -> Result<(), String> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let st = io(
        "running cargo clean",
        Command::new(cargo)
            .args([
                "clean",
                "--release",
                "--offline",
                "-p",
                "ck-scale",
                "--manifest-path",
            ])
            .arg(krate.join("Cargo.toml"))
            .env("CARGO_TARGET_DIR", target)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status(),
    )?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("cargo clean failed: {st}"))
    }
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if fs::read_to_string(path).ok().as_deref() != Some(text) {
        io(
            &format!("writing {}", path.display()),
            fs::write(path, text),
        )?;
    }
    Ok(())
}

fn ck_scale(o: &Opts) -> Result<(), String> {
    let bench = "ck_scale_groups";
    let all = fmha::read_list(&fmha::default_list())?;
    let kernels: Vec<Listed> = all.iter().filter(|b| !b.is_api()).cloned().collect();
    let base = workdir::root().join("ck-scale");
    let full = base.join("tree-full");
    let tiny = base.join("tree-tiny");
    for d in [&full, &tiny] {
        io("clearing a tree", workdir::remove(d))?;
    }
    let t = Instant::now();
    fmha::write_tree(&full, &all)?;
    let tree_secs = t.elapsed().as_secs_f64();
    // The tiny tree: the first blob of each direction (the kernel the crate
    // declares among them) and the API files.
    let mut seen = BTreeSet::new();
    let small: Vec<Listed> = all
        .iter()
        .filter(|b| b.is_api() || seen.insert(b.direction.clone()))
        .cloned()
        .collect();
    fmha::write_tree(&tiny, &small)?;
    let kernel = small
        .iter()
        .find(|b| b.direction == "fwd" && !b.is_api())
        .ok_or("no fwd blob in the list")?;
    println!(
        "wrote {} files ({} kernel blobs) in {tree_secs:.2} s under {}",
        all.len(),
        kernels.len(),
        full.display()
    );

    // The crate: its target directory persists, so dependencies build once.
    let krate = base.join("crate");
    let target = base.join("target");
    io("creating the crate", fs::create_dir_all(krate.join("src")))?;
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .ok_or("no workspace dir")?;
    let fill = |s: &str| {
        s.replace("@WORKSPACE@", &workspace.display().to_string())
            .replace("@META_PATTERN@", fmha::META_PATTERN)
            .replace("@BLOB@", &kernel.name)
    };
    write_if_changed(&krate.join("Cargo.toml"), &fill(CRATE_TOML))?;
    write_if_changed(&krate.join("build.rs"), &fill(CRATE_BUILD))?;
    write_if_changed(&krate.join("src/main.rs"), &fill(CRATE_MAIN))?;
    if !krate.join("Cargo.lock").exists() {
        // The workspace's lock: the same dependency versions, no download.
        let _ = fs::copy(workspace.join("Cargo.lock"), krate.join("Cargo.lock"));
    }
    let logs = base.join("logs");
    io("creating logs", fs::create_dir_all(&logs))?;
    let fresh_deps = !target.join("release").exists();
    let first = cargo_build(&krate, &target, &tiny, &logs.join("first.log"))?;
    if fresh_deps {
        println!(
            "first build of the crate with its dependencies (once): {:.1} s",
            first.secs
        );
    }

    let bin = target.join("release/ck-scale");
    let size = |p: &Path| fs::metadata(p).map(|m| m.len() as f64).unwrap_or(f64::NAN);
    let (mut tiny_build, mut full_build, mut edit_build, mut noop_build) =
        (vec![], vec![], vec![], vec![]);
    let (mut tiny_rs, mut full_rs, mut edit_rs) = (vec![], vec![], vec![]);
    let (mut tiny_size, mut full_size) = (f64::NAN, f64::NAN);
    let (mut manifest_bytes, mut tiny_manifest_bytes, mut blobs) = (f64::NAN, f64::NAN, 0);
    let mut parse_ms = Vec::new();
    let edited = full.join(kernel.path());
    for round in 0..o.rounds {
        println!("round {}/{}", round + 1, o.rounds);
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for is_full in order {
            let tree = if is_full { &full } else { &tiny };
            cargo_clean_crate(&krate, &target)?;
            let b = cargo_build(
                &krate,
                &target,
                tree,
                &logs.join(format!("build-{round}-{is_full}.log")),
            )?;
            let ms = b.build_rs_ms.ok_or("the build script printed no timing")?;
            if is_full {
                full_build.push(b.secs);
                full_rs.push(ms);
                full_size = size(&bin);
                manifest_bytes = b.manifest_bytes.map_or(f64::NAN, |v| v as f64);
                blobs = b.blobs.unwrap_or(0);
            } else {
                tiny_build.push(b.secs);
                tiny_rs.push(ms);
                tiny_size = size(&bin);
                tiny_manifest_bytes = b.manifest_bytes.map_or(f64::NAN, |v| v as f64);
            }
        }
        // Full tree: a rebuild after editing one blob, then one with nothing
        // changed, then the binary's manifest parse.
        let mut text = io("reading a blob", fs::read_to_string(&edited))?;
        let _ = writeln!(text, "// edit {round}");
        io("editing a blob", fs::write(&edited, text))?;
        let b = cargo_build(
            &krate,
            &target,
            &full,
            &logs.join(format!("edit-{round}.log")),
        )?;
        edit_build.push(b.secs);
        if let Some(ms) = b.build_rs_ms {
            edit_rs.push(ms);
        }
        noop_build.push(
            cargo_build(
                &krate,
                &target,
                &full,
                &logs.join(format!("noop-{round}.log")),
            )?
            .secs,
        );
        let out = io("running ck-scale", Command::new(&bin).output())?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
            format!(
                "ck-scale printed {:?}: {e}",
                String::from_utf8_lossy(&out.stdout)
            )
        })?;
        parse_ms.push(v["manifest_parse_ms"].as_f64().unwrap_or(f64::NAN));
    }
    if blobs as usize != kernels.len() {
        return Err(format!(
            "the manifest holds {blobs} blobs, expected {}",
            kernels.len()
        ));
    }

    // Ahead of time: a sample of the same blobs compiled for real with the
    // same command, extrapolated to all of them on `jobs` cores.
    let aot = base.join("aot");
    io("clearing the sample", workdir::remove(&aot))?;
    let manifest = fmha::write_manifest(&full, &aot.join("out"), "c++")?;
    let m = read_manifest(&manifest)?;
    let sample: Vec<String> = spread(&all, o.aot_sample)
        .into_iter()
        .map(|b| b.name)
        .collect();
    let mut sample_secs = Vec::new();
    for _ in 0..o.rounds {
        sample_secs.extend(compile_each(&m, &full, &sample, &aot.join("objects"))?);
    }
    let per_blob = median(&sample_secs);
    let aot_secs = per_blob * kernels.len() as f64 / o.jobs as f64;

    report::heading(&format!(
        "build at CK scale: {} blobs (CK FMHA codegen list) recorded by {}, {} rounds",
        kernels.len(),
        "BlobGroup globs + meta_pattern",
        o.rounds
    ));
    Comparison {
        bench,
        what: format!(
            "cargo build of the crate vs compiling every blob ahead of time \
             (EXTRAPOLATED: median of {} host c++ compiles of {} sampled blobs x {} / {} jobs)",
            sample_secs.len(),
            sample.len(),
            kernels.len(),
            o.jobs
        ),
        baseline_label: "ahead-of-time compile, extrapolated".into(),
        baseline: aot_secs,
        measured_label: "cargo build --release (build.rs + crate), 10,554 blobs".into(),
        measured: median(&full_build),
        unit: Unit::S,
        target: Target::None,
    }
    .print();
    report::figure(
        bench,
        "host c++ compile of one CK-shaped blob (sample median)",
        per_blob * 1e3,
        Unit::Ms,
    );
    Comparison {
        bench,
        what: "build.rs: scan, metadata, manifest write (timed inside build.rs)".into(),
        baseline_label: "tree of 4 blobs".into(),
        baseline: median(&tiny_rs),
        measured_label: "tree of 10,554 blobs".into(),
        measured: median(&full_rs),
        unit: Unit::Ms,
        target: Target::None,
    }
    .print();
    Comparison {
        bench,
        what: "cargo build --release of the crate (its dependencies already built)".into(),
        baseline_label: "tree of 4 blobs".into(),
        baseline: median(&tiny_build),
        measured_label: "tree of 10,554 blobs".into(),
        measured: median(&full_build),
        unit: Unit::S,
        target: Target::None,
    }
    .print();
    Comparison {
        bench,
        what: "binary size (the embedded manifest)".into(),
        baseline_label: "tree of 4 blobs".into(),
        baseline: tiny_size,
        measured_label: "tree of 10,554 blobs".into(),
        measured: full_size,
        unit: Unit::Bytes,
        target: Target::None,
    }
    .print();
    report::figure(
        bench,
        "manifest size, 10,554 blobs",
        manifest_bytes,
        Unit::Bytes,
    );
    report::figure(
        bench,
        "manifest size, 4 blobs",
        tiny_manifest_bytes,
        Unit::Bytes,
    );
    report::figure(
        bench,
        "rebuild after editing one blob: cargo build",
        median(&edit_build),
        Unit::S,
    );
    report::figure(
        bench,
        "rebuild after editing one blob: build.rs inside",
        median(&edit_rs),
        Unit::Ms,
    );
    report::figure(
        bench,
        "cargo build with nothing changed",
        median(&noop_build),
        Unit::S,
    );
    report::figure(
        bench,
        "embedded manifest parse at run time (once per process)",
        median(&parse_ms),
        Unit::Ms,
    );
    Ok(())
}

// ---------------------------------------------------------------- prebuild

fn makefile(m: &Manifest, root: &Path, out: &Path) -> Result<String, String> {
    let mut targets = Vec::new();
    let mut rules = String::new();
    for b in &m.blobs {
        let so = out.join(format!("{}.so", b.name));
        let dep = out.join(format!("{}.d", b.name));
        let cmd = argv::compile_argv(m, &b.name, root, &so, &dep)?;
        let so = so.display().to_string();
        let _ = writeln!(
            rules,
            "{so}: {}\n\t{}\n",
            root.join(&b.source).display(),
            ck_jit_rt::shell_quote(&cmd).replace('$', "$$")
        );
        targets.push(so);
    }
    Ok(format!(
        "# The compile commands ck-jit runs for {} blobs (same argv), for make.\n\
         all: {}\n\n{rules}",
        targets.len(),
        targets.join(" \\\n  ")
    ))
}

fn prebuild(o: &Opts) -> Result<(), String> {
    let ck_jit = o
        .ck_jit
        .clone()
        .ok_or("--ck-jit PATH (the ck-jit binary) is required")?;
    if !ck_jit.is_file() {
        return Err(format!("no ck-jit binary at {}", ck_jit.display()));
    }
    let dir = io("creating the work dir", workdir::fresh("prebuild"))?;
    let all = fmha::read_list(&fmha::default_list())?;
    let picked = spread(&all, o.blobs);
    let tree = dir.join("tree");
    fmha::write_tree(&tree, &picked)?;
    let manifest = fmha::write_manifest(&tree, &dir.join("out"), "c++")?;
    let m = read_manifest(&manifest)?;
    let n = m.blobs.len();
    let make_out = dir.join("make-out");
    let mk = dir.join("Makefile");
    io(
        "writing the Makefile",
        fs::write(&mk, makefile(&m, &tree, &make_out)?),
    )?;

    let (mut make_secs, mut ck_secs) = (vec![], vec![]);
    let (mut ck_compile_step, mut ck_rest) = (vec![], vec![]);
    for round in 0..o.rounds {
        let order = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for use_make in order {
            if use_make {
                io("clearing make's output", workdir::remove(&make_out))?;
                io("creating make's output", fs::create_dir_all(&make_out))?;
                let s = timed(
                    Command::new("make")
                        .arg("-j")
                        .arg(o.jobs.to_string())
                        .arg("-f")
                        .arg(&mk),
                    &dir.join(format!("make-{round}.log")),
                )?;
                let built = fs::read_dir(&make_out)
                    .map(|d| {
                        d.flatten()
                            .filter(|e| e.path().extension().is_some_and(|x| x == "so"))
                            .count()
                    })
                    .unwrap_or(0);
                if built != n {
                    return Err(format!("make built {built} objects, expected {n}"));
                }
                println!("round {}: make -j {}: {s:.2} s", round + 1, o.jobs);
                make_secs.push(s);
            } else {
                let cache = dir.join("cache");
                io("clearing the cache", workdir::remove(&cache))?;
                let report = dir.join(format!("ck-jit-{round}.json"));
                let s = timed_split(
                    Command::new(&ck_jit)
                        .arg("--json")
                        .arg("build")
                        .arg("--manifest")
                        .arg(&manifest)
                        .arg("--cache-dir")
                        .arg(&cache)
                        .arg("--all")
                        .arg("-j")
                        .arg(o.jobs.to_string())
                        .env_remove("CK_JIT_LAUNCHER")
                        .env_remove("CK_JIT_OFFLINE"),
                    Some(&report),
                    &dir.join(format!("ck-jit-{round}.log")),
                )?;
                let text = io("reading the ck-jit report", fs::read(&report))?;
                let v: serde_json::Value = serde_json::from_slice(&text)
                    .map_err(|e| format!("ck-jit printed no JSON report ({e})"))?;
                if v["compiled"].as_u64() != Some(n as u64) {
                    return Err(format!("ck-jit compiled {}, expected {n}", v["compiled"]));
                }
                let total: f64 = v["blobs"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|b| b["seconds"].as_f64()).sum())
                    .unwrap_or(f64::NAN);
                let compiling = v["stats"]["compile_seconds"].as_f64().unwrap_or(f64::NAN);
                ck_compile_step.push(compiling / n as f64);
                ck_rest.push((total - compiling) / n as f64);
                println!("round {}: ck-jit build -j {}: {s:.2} s", round + 1, o.jobs);
                ck_secs.push(s);
            }
        }
    }
    report::heading(&format!(
        "prebuild throughput: {n} CK-shaped host blobs, -j {}, {} rounds",
        o.jobs, o.rounds
    ));
    Comparison {
        bench: "prebuild",
        what: "blobs compiled per second (higher is better; ratio = ck-jit / make)".into(),
        baseline_label: format!("make -j {} (identical compile commands)", o.jobs),
        baseline: n as f64 / median(&make_secs),
        measured_label: format!("ck-jit build --all -j {}", o.jobs),
        measured: n as f64 / median(&ck_secs),
        unit: Unit::PerS,
        target: Target::RatioAtLeast(0.95),
    }
    .print();
    report::figure("prebuild", "make: wall time", median(&make_secs), Unit::S);
    report::figure(
        "prebuild",
        "ck-jit build: wall time",
        median(&ck_secs),
        Unit::S,
    );
    println!("per blob (medians over rounds of the means):");
    report::figure(
        "prebuild",
        &format!("make: wall x {} jobs / blobs", o.jobs),
        median(&make_secs) * o.jobs as f64 / n as f64 * 1e3,
        Unit::Ms,
    );
    report::figure(
        "prebuild",
        "ck-jit: compile step (compiler run until its exit is seen)",
        median(&ck_compile_step) * 1e3,
        Unit::Ms,
    );
    report::figure(
        "prebuild",
        "ck-jit: rest of the blob (key, lock, checks, publish)",
        median(&ck_rest) * 1e3,
        Unit::Ms,
    );
    Ok(())
}
