//! A fresh process that loads kernels, for the cold-load and stampede
//! benches. Prints one JSON line with its timings.
//!
//! ```text
//! load-probe runtime --manifest M --cache-dir D [--split] [--compact] BLOB...
//! load-probe dlopen LIST
//! ```
//!
//! `runtime` resolves each blob through the ck-jit runtime exactly as a
//! lazy call does (compiling it on a miss), calls it with 2, and reports
//! the time of each resolve. With `--split` the once-per-process costs are
//! paid up front and timed apart: reading the manifest, opening the cache,
//! identifying the compiler (its `--version` run); without it they fall
//! into the first resolve, as in a program. With `--compact` the manifest
//! is read as a process reads its `CK_JIT_MANIFEST`
//! (`Runtime::from_file_for_process`: the compact form beside the JSON
//! one, mapped); without it the JSON is parsed (`Runtime::from_file`).
//!
//! Every report also carries `started_unix_ms` and `done_unix_ms`, the
//! wall-clock times at entry to `main` and after the last kernel, so a
//! driver can line up concurrent probes.
//!
//! `dlopen` is the baseline: plain `dlopen(RTLD_NOW | RTLD_LOCAL)` and
//! `dlsym` of each `name<TAB>symbol<TAB>path` line of LIST (cached objects
//! the runtime published), and a call.

use std::ffi::CString;
use std::path::PathBuf;
use std::time::Instant;

use serde_json::json;

fn unix_ms() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn main() {
    let started = unix_ms();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("runtime") => runtime(&args[1..]),
        Some("dlopen") => dlopen(&args[1..]),
        _ => Err(
            "usage: load-probe runtime --manifest M --cache-dir D [--split] [--compact] BLOB... | load-probe dlopen LIST"
                .into(),
        ),
    };
    match result {
        Ok(mut v) => {
            v["started_unix_ms"] = json!(started);
            v["done_unix_ms"] = json!(unix_ms());
            println!("{v}")
        }
        Err(e) => {
            println!("{}", json!({ "error": e }));
            std::process::exit(1);
        }
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn call(p: *const (), x: i32) -> i32 {
    // SAFETY: every bench blob exports `int name(int)`.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(p) };
    f(x)
}

fn runtime(args: &[String]) -> Result<serde_json::Value, String> {
    let mut manifest = None;
    let mut cache = None;
    let mut split = false;
    let mut compact = false;
    let mut blobs = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--manifest" => manifest = it.next().map(PathBuf::from),
            "--cache-dir" => cache = it.next().map(PathBuf::from),
            "--split" => split = true,
            "--compact" => compact = true,
            _ => blobs.push(a.clone()),
        }
    }
    let manifest = manifest.ok_or("--manifest is required")?;
    let cache = cache.ok_or("--cache-dir is required")?;
    if blobs.is_empty() {
        return Err("no blob named".into());
    }

    let t = Instant::now();
    let rt = if compact {
        ck_jit_rt::Runtime::from_file_for_process(&manifest)
    } else {
        ck_jit_rt::Runtime::from_file(&manifest)
    }
    .map_err(|e| e.to_string())?
    .with_cache_dir(cache);
    // Kept for the process, as a program's is (`embed_manifest!`'s static,
    // the C ABI's): never dropped, as the bare process never closes its
    // handles.
    let rt: &'static ck_jit_rt::Runtime = Box::leak(Box::new(rt));
    let manifest_ms = ms(t);
    let (mut cache_open_ms, mut compiler_id_ms) = (0.0, 0.0);
    if split {
        let t = Instant::now();
        rt.cache().map_err(|e| e.to_string())?;
        cache_open_ms = ms(t);
        let first = rt
            .manifest()
            .blob(&blobs[0])
            .ok_or_else(|| format!("unknown blob {}", blobs[0]))?;
        let program = rt.manifest().group_of(first).compiler.clone();
        let t = Instant::now();
        let store = rt.cache_dir().ok().map(|d| d.join("compilers"));
        ck_jit_rt::__internals::identify(
            &program,
            &blobs[0],
            &ck_jit_rt::config::config().compiler_check,
            store.as_deref(),
        )
        .map_err(|e| e.to_string())?;
        compiler_id_ms = ms(t);
    }
    let mut kernels_ms = Vec::new();
    let mut values = Vec::new();
    for b in &blobs {
        let t = Instant::now();
        let p = rt.resolve(b, None).map_err(|e| e.to_string())?;
        kernels_ms.push(ms(t));
        values.push(call(p, 2));
    }
    let s = ck_jit_rt::stats();
    Ok(json!({
        "mode": "runtime",
        "manifest_ms": manifest_ms,
        "cache_open_ms": cache_open_ms,
        "compiler_id_ms": compiler_id_ms,
        "kernels_ms": kernels_ms,
        "values": values,
        "compiles": s.compiles,
        "hits": s.cache_hits,
        "sources_read": s.sources_read,
    }))
}

fn dlopen(args: &[String]) -> Result<serde_json::Value, String> {
    let list = args.first().ok_or("dlopen needs a LIST file")?;
    let text = std::fs::read_to_string(list).map_err(|e| format!("reading {list}: {e}"))?;
    let mut entries = Vec::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let mut f = line.split('\t');
        let (Some(_name), Some(sym), Some(path)) = (f.next(), f.next(), f.next()) else {
            return Err(format!("bad line in {list}: {line:?}"));
        };
        let sym = CString::new(sym).map_err(|e| e.to_string())?;
        let path = CString::new(path).map_err(|e| e.to_string())?;
        entries.push((sym, path));
    }
    let mut kernels_ms = Vec::new();
    let mut values = Vec::new();
    for (sym, path) in &entries {
        let t = Instant::now();
        // SAFETY: both are NUL-terminated strings that outlive the calls;
        // the objects are blobs this bench compiled (their initialisers
        // are empty). The handles are never closed.
        let p = unsafe {
            let h = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
            if h.is_null() {
                return Err(format!("dlopen {path:?} failed"));
            }
            libc::dlsym(h, sym.as_ptr())
        };
        kernels_ms.push(ms(t));
        if p.is_null() {
            return Err(format!("dlsym {sym:?} failed"));
        }
        values.push(call(p as *const (), 2));
    }
    Ok(json!({ "mode": "dlopen", "kernels_ms": kernels_ms, "values": values }))
}
