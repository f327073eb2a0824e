//! The first call of a blob recorded for several GPU architectures:
//! compiled for the device in use against compiled for every recorded
//! target (`CK_JIT_ARCH=all`), each in a new process with an empty cache.
//!
//! ```text
//! arch-first-call [--compiler nvcc|hipcc|PATH] [--targets A,B,C] [--device ARCH]
//!                 [--single ARCH] [--source FILE] [--arg ARG]... [--rounds R] [--dir DIR]
//!                 [--no-load]
//! arch-first-call --detect [--rounds R] [--kfd DIR]
//! ```
//!
//! Writes a tree holding one blob (`--source`, default a CUDA matrix
//! product instantiated for four tile sizes, built into this binary) and a
//! manifest recording it for every architecture of `--targets` (default
//! `sm_80,sm_90,sm_100`: nvcc `-gencode` pairs; `gfx` names:
//! `--offload-arch=` flags), then starts itself R times in each mode,
//! alternating, each with a fresh cache directory:
//!
//! - `device`: `CK_JIT_ARCH` unset (the runtime finds the device), or
//!   `--device ARCH` (`CK_JIT_ARCH=ARCH`, for a machine without the GPU);
//! - `all`: `CK_JIT_ARCH=all`, the recorded argv;
//! - with `--single ARCH`, `single`: the same blob recorded for ARCH alone
//!   (the device's architecture): the single-architecture compile the
//!   device mode is measured against.
//!
//! Each child times the first call (`Runtime::load`: plan, device
//! detection, compile, publish, `dlopen`; with `--no-load` the same minus
//! the `dlopen`, for objects that need a GPU runtime this machine lacks)
//! and prints it; the parent prints the medians and their ratio. The argv
//! each mode compiled is printed once.
//!
//! `--detect` times device detection alone, in R new processes (the
//! runtime detects once per process): AMD (KFD topology in sysfs, or the
//! tree `--kfd DIR` names) and NVIDIA (NVML, else the CUDA driver API).
//!
//! Needs no cargo: the release binary and the compiler are all it takes.
//! Timings are printed, never asserted.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ck_jit_benches::stats::summary;
use ck_jit_benches::workdir;
use ck_jit_rt::arch::Platform;
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::Runtime;

const USAGE: &str = "usage: arch-first-call [--compiler nvcc|hipcc|PATH] [--targets A,B,C] \
                     [--device ARCH] [--single ARCH] [--source FILE] [--arg ARG]... [--rounds R] \
                     [--dir DIR] [--no-load]\n       arch-first-call --detect [--rounds R] [--kfd DIR]";

/// The default blob: four tile sizes of a matrix product.
const DEFAULT_SOURCE: &str = include_str!("../../kernels/arch_tiles.cu");
const BLOB: &str = "arch_tiles";

struct Options {
    compiler: String,
    targets: Vec<String>,
    device: Option<String>,
    single: Option<String>,
    source: Option<PathBuf>,
    args: Vec<String>,
    rounds: usize,
    dir: Option<PathBuf>,
    load: bool,
    detect: bool,
    kfd: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        compiler: "nvcc".into(),
        targets: vec!["sm_80".into(), "sm_90".into(), "sm_100".into()],
        device: None,
        single: None,
        source: None,
        args: Vec::new(),
        rounds: 5,
        dir: None,
        load: true,
        detect: false,
        kfd: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value\n{USAGE}"))
        };
        match a.as_str() {
            "--compiler" => o.compiler = value()?,
            "--targets" => {
                o.targets = value()?
                    .split(',')
                    .filter(|t| !t.is_empty())
                    .map(String::from)
                    .collect()
            }
            "--device" => o.device = Some(value()?),
            "--single" => o.single = Some(value()?),
            "--source" => o.source = Some(PathBuf::from(value()?)),
            "--arg" => o.args.push(value()?),
            "--rounds" => {
                let v = value()?;
                o.rounds = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| format!("--rounds: '{v}' is not a positive number"))?
            }
            "--dir" => o.dir = Some(PathBuf::from(value()?)),
            "--no-load" => o.load = false,
            "--detect" => o.detect = true,
            "--kfd" => o.kfd = Some(PathBuf::from(value()?)),
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument '{other}'\n{USAGE}")),
        }
    }
    if o.targets.len() < 2 && !o.detect {
        return Err("--targets needs two architectures or more".into());
    }
    Ok(o)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--child") => child(&args[1..]),
        Some("--child-detect") => child_detect(&args[1..]),
        _ => parse(&args).and_then(|o| if o.detect { detect(&o) } else { run(&o) }),
    };
    if let Err(e) = result {
        eprintln!("arch-first-call: {e}");
        std::process::exit(1);
    }
}

fn is_amd(targets: &[String]) -> bool {
    targets.iter().all(|t| t.starts_with("gfx"))
}

/// The argument template recording `targets` in the compiler's spelling.
fn template(o: &Options, targets: &[String]) -> Vec<String> {
    let mut args: Vec<String> = Vec::new();
    if is_amd(&o.targets) {
        args.extend(o.args.iter().cloned());
        args.extend(targets.iter().map(|t| format!("--offload-arch={t}")));
        args.extend(["-shared".into(), "-fPIC".into()]);
    } else {
        if o.args.is_empty() {
            args.extend(["-O3", "-std=c++17"].map(String::from));
        }
        args.extend(o.args.iter().cloned());
        for t in targets {
            let cc = t.trim_start_matches("sm_");
            args.push("-gencode".into());
            args.push(format!("arch=compute_{cc},code=sm_{cc}"));
        }
        args.extend(["-Xcompiler", "-fPIC", "-shared"].map(String::from));
    }
    args.extend(["{src}", "-o", "{out}"].map(String::from));
    args
}

fn run(o: &Options) -> Result<(), String> {
    let dir = match &o.dir {
        Some(d) => {
            workdir::remove(d).map_err(|e| format!("{}: {e}", d.display()))?;
            fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
            fs::canonicalize(d).map_err(|e| format!("{}: {e}", d.display()))?
        }
        None => workdir::fresh("arch-first-call").map_err(|e| e.to_string())?,
    };
    let (text, name, ext) = match &o.source {
        Some(p) => {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("cpp");
            (
                fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?,
                p.file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or(BLOB)
                    .to_string(),
                ext.to_string(),
            )
        }
        None => (
            DEFAULT_SOURCE.to_string(),
            BLOB.to_string(),
            "cu".to_string(),
        ),
    };
    let tree = dir.join("tree");
    fs::create_dir_all(&tree).map_err(|e| e.to_string())?;
    fs::write(tree.join(format!("{name}.{ext}")), text).map_err(|e| e.to_string())?;
    let write_manifest = |targets: &[String], file: &str| -> Result<PathBuf, String> {
        let mut m = Manifest::new("arch_first_call", tree.to_string_lossy());
        m.groups.push(Group {
            name: "gpu".into(),
            compiler: o.compiler.clone(),
            args: template(o, targets),
            cwd: None,
            symbol: SymbolSpec::Exact(name.clone()),
            depfile: false,
            family: None,
            neutral: Default::default(),
        });
        m.blobs.push(Blob {
            name: name.clone(),
            source: format!("{name}.{ext}"),
            group: 0,
            symbol: None,
            meta: Default::default(),
        });
        m.finish().map_err(|e| format!("manifest: {e}"))?;
        let path = dir.join(file);
        fs::write(&path, m.to_json()).map_err(|e| e.to_string())?;
        Ok(path)
    };
    let manifest = write_manifest(&o.targets, "manifest.json")?;
    let single = match &o.single {
        Some(a) => Some(write_manifest(
            std::slice::from_ref(a),
            "manifest-single.json",
        )?),
        None => None,
    };

    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let platform = if is_amd(&o.targets) { "amd" } else { "nvidia" };
    let device_label = match &o.device {
        Some(d) => format!("CK_JIT_ARCH={d}"),
        None => "CK_JIT_ARCH unset (detected)".to_string(),
    };
    println!(
        "blob {name} for {} with {}, {} rounds, {}",
        o.targets.join(", "),
        o.compiler,
        o.rounds,
        if o.load {
            "first call = plan + compile + publish + dlopen"
        } else {
            "first call = plan + compile + publish (no dlopen)"
        }
    );
    let modes = if single.is_some() { 3 } else { 2 };
    let label = |mode: usize| match mode {
        0 => device_label.clone(),
        1 => "CK_JIT_ARCH=all".to_string(),
        _ => format!("recorded for {} alone", o.single.as_deref().unwrap_or("")),
    };
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); modes];
    for round in 0..o.rounds {
        // Rotate which mode goes first, so drift hits all alike.
        for k in 0..modes {
            let mode = (round + k) % modes;
            let cache = dir.join(format!("cache-{mode}-{round}"));
            let mut cmd = Command::new(&me);
            let m = match (mode, &single) {
                (2, Some(s)) => s,
                _ => &manifest,
            };
            cmd.arg("--child")
                .arg(m)
                .arg(&name)
                .arg(platform)
                .arg(if o.load { "load" } else { "ensure" })
                .env("CK_JIT_CACHE_DIR", &cache)
                .env_remove("CK_JIT_OFFLINE");
            match (mode, &o.device) {
                (0, Some(d)) => cmd.env("CK_JIT_ARCH", d),
                (1, _) => cmd.env("CK_JIT_ARCH", "all"),
                _ => cmd.env_remove("CK_JIT_ARCH"),
            };
            let out = cmd.output().map_err(|e| format!("{}: {e}", me.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "child failed ({}):\n{}{}",
                    out.status,
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            let line = String::from_utf8_lossy(&out.stdout);
            let v: serde_json::Value = serde_json::from_str(line.trim())
                .map_err(|e| format!("child output '{line}': {e}"))?;
            let ms = v["first_call_ms"].as_f64().unwrap_or(f64::NAN);
            times[mode].push(ms);
            if round == 0 || (round == 1 && mode == 0 && modes == 3) {
                println!(
                    "  {}: device {}, argv: {}",
                    label(mode),
                    v["device"].as_str().unwrap_or("-"),
                    v["argv"].as_str().unwrap_or("")
                );
                if let Some(us) = v["detect_us"].as_f64() {
                    println!("    device detection in that process: {us:.0} µs");
                }
            }
            println!(
                "  round {round} {:<6} {ms:>10.1} ms",
                ["device", "all", "single"][mode]
            );
            let _ = workdir::remove(&cache);
        }
    }
    let s: Vec<_> = times.iter().map(|t| summary(t)).collect();
    if let (Some(d), Some(a)) = (&s[0], &s[1]) {
        println!("first call, median (min..max) over {} rounds:", d.n);
        for (mode, x) in s.iter().enumerate() {
            if let Some(x) = x {
                println!(
                    "  {}: {:>10.1} ms ({:.1}..{:.1})",
                    label(mode),
                    x.median,
                    x.min,
                    x.max
                );
            }
        }
        println!(
            "  ratio all / device: {:.2} (device-arch compile saves {:.1} ms)",
            a.median / d.median,
            a.median - d.median
        );
        if let Some(Some(one)) = s.get(2) {
            println!(
                "  ratio device / single-architecture compile: {:.3}",
                d.median / one.median
            );
        }
    }
    Ok(())
}

/// One first call in this new process; prints one JSON line.
fn child(args: &[String]) -> Result<(), String> {
    let [manifest, blob, platform, how] = args else {
        return Err("--child MANIFEST BLOB amd|nvidia load|ensure".into());
    };
    let rt = Runtime::from_file(Path::new(manifest)).map_err(|e| e.to_string())?;
    let t0 = Instant::now();
    if how == "load" {
        rt.load(blob).map_err(|e| e.to_string())?;
    } else {
        rt.ensure(blob, false).map_err(|e| e.to_string())?;
    }
    let first_call_ms = t0.elapsed().as_secs_f64() * 1e3;
    let plan = rt.plan(blob).map_err(|e| e.to_string())?;
    let platform = if platform == "amd" {
        Platform::Amd
    } else {
        Platform::Nvidia
    };
    // Cached: what the first call's detection found and took, if it ran.
    let detect_us = match &plan.device {
        Some(d) if d.found_by != "CK_JIT_ARCH" => {
            ck_jit_rt::__internals::detect_device(platform, None)
                .map(|(_, took)| took.as_secs_f64() * 1e6)
        }
        _ => None,
    };
    let device = plan
        .device
        .as_ref()
        .map(|d| format!("{} (from {})", d.arch, d.found_by));
    println!(
        "{}",
        serde_json::json!({
            "first_call_ms": first_call_ms,
            "device": device,
            "detect_us": detect_us,
            "argv": plan.group.args.join(" "),
        })
    );
    Ok(())
}

fn detect(o: &Options) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut amd = Vec::new();
    let mut nvidia = Vec::new();
    let mut found = (String::new(), String::new());
    for _ in 0..o.rounds {
        let mut cmd = Command::new(&me);
        cmd.arg("--child-detect");
        if let Some(k) = &o.kfd {
            cmd.arg(k);
        }
        let out = cmd.output().map_err(|e| e.to_string())?;
        let line = String::from_utf8_lossy(&out.stdout);
        let v: serde_json::Value =
            serde_json::from_str(line.trim()).map_err(|e| format!("child output '{line}': {e}"))?;
        amd.push(v["amd_us"].as_f64().unwrap_or(f64::NAN));
        nvidia.push(v["nvidia_us"].as_f64().unwrap_or(f64::NAN));
        found = (
            v["amd"].as_str().unwrap_or("none").to_string(),
            v["nvidia"].as_str().unwrap_or("none").to_string(),
        );
    }
    let show = |what: &str, xs: &[f64], device: &str| {
        if let Some(s) = summary(xs) {
            println!(
                "{what}: {:.0} µs median ({:.0}..{:.0}) over {} new processes; found: {device}",
                s.median, s.min, s.max, s.n
            );
        }
    };
    let amd_what = match &o.kfd {
        Some(k) => format!("AMD, KFD topology at {}", k.display()),
        None => format!("AMD, KFD topology at {}", ck_jit_rt::__internals::KFD_NODES),
    };
    show(&amd_what, &amd, &found.0);
    show("NVIDIA, NVML / CUDA driver API", &nvidia, &found.1);
    Ok(())
}

/// Device detection in this new process; prints one JSON line.
fn child_detect(args: &[String]) -> Result<(), String> {
    let env = ck_jit_rt::config::device_env();
    let t0 = Instant::now();
    let amd = match args.first() {
        Some(k) => ck_jit_rt::__internals::amd_device(Path::new(k), &env),
        None => ck_jit_rt::__internals::detect_device(Platform::Amd, None).map(|(d, _)| d),
    };
    let amd_us = t0.elapsed().as_secs_f64() * 1e6;
    let t1 = Instant::now();
    let nvidia = ck_jit_rt::__internals::detect_device(Platform::Nvidia, None).map(|(d, _)| d);
    let nvidia_us = t1.elapsed().as_secs_f64() * 1e6;
    let show =
        |d: Option<ck_jit_rt::arch::Device>| d.map(|d| format!("{} (from {})", d.arch, d.found_by));
    println!(
        "{}",
        serde_json::json!({
            "amd_us": amd_us,
            "amd": show(amd),
            "nvidia_us": nvidia_us,
            "nvidia": show(nvidia),
        })
    );
    Ok(())
}
