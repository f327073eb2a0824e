//! What a new process pays to open a library's manifest and find its
//! first blob, at CK scale: the runtime a lazy library (`libmha_fwd.so`'s
//! stubs through `ck_jit_resolve_with`) makes over the manifest its link
//! step named, read from the JSON (`Runtime::from_file`) against the
//! compact form beside it (`Runtime::from_file_for_process`, what the C
//! ABI now does), and a process that does nothing (the baseline: start and
//! exit).
//!
//! ```text
//! manifest-open [--blobs N] [--rounds R]
//! ```
//!
//! Writes a manifest of N blobs (default 6,688, aiter's fwd library) with
//! CK-like metadata, in both forms, then starts itself R times per mode,
//! interleaved, and times each whole process from outside (spawn to exit).
//! Each child opens the manifest and looks one blob up (the last), as the
//! first call of a warm process does before its cache lookup and `dlopen`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::stats::median;
use ck_jit_benches::workdir;
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};

const USAGE: &str = "usage: manifest-open [--blobs N] [--rounds R]";

fn child(mode: &str, path: &Path, blob: &str) -> Result<(), String> {
    let rt = match mode {
        "json" => ck_jit_rt::Runtime::from_file(path),
        "compact" => ck_jit_rt::Runtime::from_file_for_process(path),
        "none" => return Ok(()),
        _ => return Err(format!("unknown mode {mode}")),
    }
    .map_err(|e| e.to_string())?;
    if !rt.contains(blob).map_err(|e| e.to_string())? {
        return Err(format!("{blob} is not in {}", path.display()));
    }
    Ok(())
}

fn manifest(blobs: usize) -> Manifest {
    let mut m = Manifest::new("ck_jit_bench_manifest_open", "/nonexistent/tree");
    m.groups.push(Group {
        name: "fwd".into(),
        compiler: "hipcc".into(),
        args: [
            "-O3",
            "-std=c++20",
            "--offload-arch=gfx942",
            "-fPIC",
            "-shared",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain(["{src}".into(), "-o".into(), "{out}".into()])
        .collect(),
        cwd: None,
        symbol: SymbolSpec::Prefix("_Z9fmha_fwd_I".into()),
        depfile: true,
        family: None,
        neutral: Default::default(),
    });
    let dtypes = ["fp16", "bf16", "fp8"];
    let hdims = ["64", "128", "192", "256"];
    for i in 0..blobs {
        let mut meta = BTreeMap::new();
        meta.insert("dtype".to_string(), dtypes[i % 3].to_string());
        meta.insert("hdim".to_string(), hdims[i % 4].to_string());
        meta.insert("mode".to_string(), ["batch", "group"][i % 2].to_string());
        meta.insert("mask".to_string(), (i % 3 != 0).to_string());
        meta.insert(
            "bias".to_string(),
            ["no", "alibi", "elementwise"][i % 3].to_string(),
        );
        meta.insert("lse".to_string(), (i % 5 == 0).to_string());
        meta.insert("dropout".to_string(), (i % 7 == 0).to_string());
        meta.insert(
            "tile".to_string(),
            format!("{}x128x32x128x32x128", 64 << (i % 2)),
        );
        m.blobs.push(Blob {
            name: format!(
                "fmha_fwd_d{}_{}_{}_b{}_pipeline{}_{i}",
                hdims[i % 4],
                dtypes[i % 3],
                ["batch", "group"][i % 2],
                64 << (i % 2),
                i % 11
            ),
            source: format!("blobs/fmha_fwd_{i}.cpp"),
            group: 0,
            symbol: None,
            meta,
        });
    }
    m.finish().expect("a valid manifest");
    m
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let (Some(mode), Some(path), Some(blob)) = (args.get(1), args.get(2), args.get(3)) else {
            eprintln!("{USAGE}");
            std::process::exit(2);
        };
        if let Err(e) = child(mode, Path::new(path), blob) {
            eprintln!("manifest-open: {e}");
            std::process::exit(1);
        }
        return;
    }
    let (mut blobs, mut rounds) = (6688usize, 15usize);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let v = it.next().and_then(|v| v.parse().ok());
        match (a.as_str(), v) {
            ("--blobs", Some(n)) => blobs = n,
            ("--rounds", Some(n)) => rounds = n,
            _ => {
                eprintln!("{USAGE}");
                std::process::exit(2);
            }
        }
    }
    let dir = workdir::fresh("manifest-open").expect("a scratch directory");
    let m = manifest(blobs);
    let last = m.blobs.last().expect("blobs").name.clone();
    // Both forms, as a build writes them.
    let json = ck_jit_build::write_manifest(&m, &dir).expect("written");
    let me: PathBuf = std::env::current_exe().expect("this program");
    let modes = ["none", "json", "compact"];
    let mut times: [Vec<f64>; 3] = Default::default();
    for round in 0..=rounds {
        for k in 0..3 {
            let mode = (round + k) % 3;
            let t = Instant::now();
            let st = Command::new(&me)
                .args(["--child", modes[mode]])
                .arg(&json)
                .arg(&last)
                .status()
                .expect("the child runs");
            let ms = t.elapsed().as_secs_f64() * 1e3;
            assert!(st.success(), "{} failed", modes[mode]);
            if round > 0 {
                times[mode].push(ms);
            }
        }
    }
    let json_bytes = std::fs::metadata(&json).map(|m| m.len()).unwrap_or(0);
    report::heading(&format!(
        "manifest-open: a new process opens a {blobs}-blob manifest ({:.1} MB of JSON) and finds one blob, {rounds} rounds",
        json_bytes as f64 / 1e6
    ));
    let [none, from_json, compact] = times.map(|t| median(&t));
    for (label, measured, target) in [
        (
            "the JSON parsed (Runtime::from_file)",
            from_json,
            Target::None,
        ),
        (
            "the compact form read in place (from_file_for_process, the C ABI's)",
            compact,
            Target::RatioAtMost(1.2),
        ),
    ] {
        Comparison {
            bench: "manifest_open",
            what: format!("whole process, {label}"),
            baseline_label: "a process that starts and exits".into(),
            baseline: none,
            measured_label: label.into(),
            measured,
            unit: Unit::Ms,
            target,
        }
        .print();
    }
}
