//! `ck-jit build`: compiles blobs into the cache ahead of time. Each blob
//! goes through `Runtime::ensure`, the lazy call's own path (same key, same
//! lock, same verification), on a pool of `-j` threads; the runtime's own
//! compile limit is set to the same number (and, under make or cargo, the
//! runtime takes the jobserver's slots besides).

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ck_jit_rt::config::config;
use ck_jit_rt::{Outcome, Runtime};
use serde::Serialize;

use crate::args::BuildArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output;
use crate::select::{self, WhenEmpty};

#[derive(Debug, Serialize)]
struct BlobDoc {
    name: String,
    /// `compiled`, `cached` or `failed`.
    outcome: &'static str,
    object: Option<String>,
    seconds: f64,
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct StatsDoc {
    compiles: u64,
    cache_hits: u64,
    compile_seconds: f64,
}

#[derive(Debug, Serialize)]
struct Report {
    manifest: String,
    cache: String,
    jobs: usize,
    force: bool,
    compiled: usize,
    cached: usize,
    failed: usize,
    seconds: f64,
    /// The runtime's counters for this process.
    stats: StatsDoc,
    blobs: Vec<BlobDoc>,
}

/// Runs `ck-jit build`.
pub fn run(ctx: &Context, args: &BuildArgs) -> Result<(), CliError> {
    let (rt, path) = ctx.runtime()?;
    let names = select::from_runtime(
        &rt,
        &path,
        &args.select,
        args.all,
        WhenEmpty::Refuse("build"),
    )?;
    // Open the cache up front: an unusable cache directory is one error,
    // not one per blob.
    let cache_root = rt.cache()?.root().display().to_string();
    let jobs = args
        .jobs
        .map(|j| j as usize)
        .unwrap_or(config().jobs())
        .max(1);
    ck_jit_rt::set_jobs(jobs);

    let t0 = Instant::now();
    let blobs = build_all(ctx, &rt, &names, jobs, args.force);
    let count = |o: &str| blobs.iter().filter(|b| b.outcome == o).count();
    let stats = ck_jit_rt::stats();
    let report = Report {
        manifest: path.display().to_string(),
        cache: cache_root,
        jobs,
        force: args.force,
        compiled: count("compiled"),
        cached: count("cached"),
        failed: count("failed"),
        seconds: t0.elapsed().as_secs_f64(),
        stats: StatsDoc {
            compiles: stats.compiles,
            cache_hits: stats.cache_hits,
            compile_seconds: stats.compile_time.as_secs_f64(),
        },
        blobs,
    };
    if !ctx.out.is_json() {
        // Each failure in full: the command to reproduce it and the tail
        // of the compiler's stderr.
        for b in &report.blobs {
            if let Some(e) = &b.error {
                ctx.out.warn(e);
            }
        }
    }
    ctx.out.result(&report, || {
        format!(
            "build: {} compiled, {} cached, {} failed ({} blobs in {}, {} jobs; cache {})",
            report.compiled,
            report.cached,
            report.failed,
            report.blobs.len(),
            output::seconds(Duration::from_secs_f64(report.seconds)),
            report.jobs,
            report.cache
        )
    });
    if report.failed > 0 {
        Err(CliError::Failed)
    } else {
        Ok(())
    }
}

/// Builds `names` on `jobs` threads, each blob through `Runtime::ensure`,
/// with a progress line per blob; the outcomes in `names`' order.
fn build_all(
    ctx: &Context,
    rt: &Runtime,
    names: &[String],
    jobs: usize,
    force: bool,
) -> Vec<BlobDoc> {
    let progress = ctx.out.progress(names.len() as u64);
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<BlobDoc>>> = Mutex::new((0..names.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..jobs.min(names.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(name) = names.get(i) else { break };
                let t = Instant::now();
                let r = rt.ensure(name, force);
                let dt = t.elapsed();
                let r = r.map(|(entry, _, outcome)| (entry.object, outcome));
                let doc = blob_doc(name, r, dt);
                let line = format!("{:<9} {name} ({})", doc.outcome, output::seconds(dt));
                if doc.error.is_some() {
                    progress.step_kept(&line);
                } else {
                    progress.step(&line);
                }
                results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(doc);
            });
        }
    });
    progress.finish();
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

/// What became of the blob `name`, built (or found) in `dt`.
fn blob_doc(name: &str, r: Result<(PathBuf, Outcome), ck_jit_rt::Error>, dt: Duration) -> BlobDoc {
    match r {
        Ok((object, outcome)) => BlobDoc {
            name: name.to_string(),
            outcome: match outcome {
                Outcome::Compiled => "compiled",
                Outcome::Cached => "cached",
            },
            object: Some(object.display().to_string()),
            seconds: dt.as_secs_f64(),
            error: None,
        },
        Err(e) => BlobDoc {
            name: name.to_string(),
            outcome: "failed",
            object: None,
            seconds: dt.as_secs_f64(),
            error: Some(output::message(&e)),
        },
    }
}
