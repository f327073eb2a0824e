//! A second process for multi-process tests: resolves one blob through the
//! runtime exactly as a lazy call would, calls it as `extern "C" fn(i32) ->
//! i32`, and prints one JSON line with the result and the counters.
//!
//! `ck-jit-probe <manifest> <cache-dir> <blob> <arg> [--hold-ms N] [--again]`
//!
//! With `--again`, a failed resolve prints its error line, waits for a line
//! on standard input, and resolves once more in the same process.
//!
//! `ck-jit-probe <manifest> <cache-dir> --warmup a,b,c` warms those blobs
//! with `Runtime::warmup` instead and prints one JSON line with the
//! counters and the errors (exit 1 if any blob failed).

use std::path::PathBuf;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let (Some(manifest), Some(cache), Some("--warmup"), Some(blobs)) = (
        args.first(),
        args.get(1),
        args.get(2).map(String::as_str),
        args.get(3),
    ) {
        warmup(manifest, cache, blobs);
        return;
    }
    if args.len() < 4 {
        eprintln!(
            "usage: ck-jit-probe <manifest> <cache-dir> <blob> <arg> [--hold-ms N] [--again]"
        );
        std::process::exit(2);
    }
    let hold = args
        .iter()
        .position(|a| a == "--hold-ms")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let rt = match ck_jit_rt::Runtime::from_file(&PathBuf::from(&args[0])) {
        Ok(rt) => rt.with_cache_dir(&args[1]),
        Err(e) => {
            println!("{}", serde_json::json!({"error": e.to_string()}));
            std::process::exit(1);
        }
    };
    let arg: i32 = args[3].parse().unwrap_or(0);
    let mut t0 = Instant::now();
    let mut resolved = rt.resolve(&args[2], None);
    if let (Err(e), true) = (&resolved, args.iter().any(|a| a == "--again")) {
        println!("{}", serde_json::json!({"error": e.to_string()}));
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
        t0 = Instant::now();
        resolved = rt.resolve(&args[2], None);
    }
    match resolved {
        Ok(p) => {
            let dt = t0.elapsed();
            // SAFETY: the test blobs export `int f(int)`.
            let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(p) };
            let mut value = f(arg);
            if hold > 0 {
                // Keep calling while other processes republish or evict.
                let end = Instant::now() + Duration::from_millis(hold);
                while Instant::now() < end {
                    value = f(arg);
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            let s = ck_jit_rt::stats();
            println!(
                "{}",
                serde_json::json!({
                    "value": value,
                    "compiles": s.compiles,
                    "hits": s.cache_hits,
                    "ms": dt.as_secs_f64() * 1e3,
                })
            );
        }
        Err(e) => {
            println!("{}", serde_json::json!({"error": e.to_string()}));
            std::process::exit(1);
        }
    }
}

fn warmup(manifest: &str, cache: &str, blobs: &str) {
    let rt = match ck_jit_rt::Runtime::from_file(&PathBuf::from(manifest)) {
        Ok(rt) => rt.with_cache_dir(cache),
        Err(e) => {
            println!("{}", serde_json::json!({"error": e.to_string()}));
            std::process::exit(1);
        }
    };
    let names: Vec<&str> = blobs.split(',').filter(|b| !b.is_empty()).collect();
    let errors: Vec<String> = rt
        .warmup(&names)
        .into_iter()
        .filter_map(|(b, r)| r.err().map(|e| format!("{b}: {e}")))
        .collect();
    let s = ck_jit_rt::stats();
    println!(
        "{}",
        serde_json::json!({"compiles": s.compiles, "hits": s.cache_hits, "errors": errors})
    );
    if !errors.is_empty() {
        std::process::exit(1);
    }
}
