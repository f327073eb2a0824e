//! `ck-jit list`: the manifest's blobs with whether their source is there
//! and whether a verified entry for their current inputs is cached (asked
//! of the runtime with `Runtime::cached`, the lookup a lazy call makes).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::args::ListArgs;
use crate::context::Context;
use crate::error::CliError;
use crate::output;
use crate::select::{self, WhenEmpty};

#[derive(Debug, Serialize)]
struct Row {
    name: String,
    family: String,
    compiler: String,
    source: String,
    source_found: bool,
    /// `None` when it cannot be told (no source to compute the key from).
    cached: Option<bool>,
    object: Option<String>,
    /// Entries of this blob in the cache, for any inputs.
    entries: usize,
    arch: Option<String>,
    meta: BTreeMap<String, String>,
    problem: Option<String>,
}

#[derive(Debug, Serialize)]
struct Report {
    manifest: String,
    root: String,
    cache: String,
    blobs: Vec<Row>,
}

/// Runs `ck-jit list`.
pub fn run(ctx: &Context, args: &ListArgs) -> Result<(), CliError> {
    let (rt, path) = ctx.runtime()?;
    let names = select::from_runtime(&rt, &path, &args.select, args.all, WhenEmpty::All)?;
    let cache = rt.cache()?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for e in cache.entries() {
        *counts.entry(e.record.blob).or_default() += 1;
    }
    let m = rt.manifest();
    let mut rows = Vec::with_capacity(names.len());
    for name in &names {
        let Some(blob) = m.blob(name) else { continue };
        let source = rt.root().join(&blob.source);
        let (cached, object, problem) = match rt.cached(name) {
            Ok(Some(entry)) => (Some(true), Some(entry.object.display().to_string()), None),
            Ok(None) => (Some(false), None, None),
            Err(e) => (None, None, Some(output::message(&e))),
        };
        rows.push(Row {
            name: name.clone(),
            family: m.group_of(blob).name.clone(),
            compiler: m.group_of(blob).compiler.clone(),
            source_found: source.is_file(),
            source: source.display().to_string(),
            cached,
            object,
            entries: counts.get(name).copied().unwrap_or(0),
            arch: blob.meta.get("arch").cloned(),
            meta: blob.meta.clone(),
            problem,
        });
    }
    let report = Report {
        manifest: path.display().to_string(),
        root: rt.root().display().to_string(),
        cache: cache.root().display().to_string(),
        blobs: rows,
    };
    ctx.out.result(&report, || text(&report));
    Ok(())
}

fn state(r: &Row) -> &'static str {
    match (r.source_found, r.cached) {
        (false, _) => "source missing",
        (true, Some(true)) => "cached",
        (true, Some(false)) => "not cached",
        (true, None) => "unknown",
    }
}

fn text(report: &Report) -> String {
    let mut rows = vec![vec![
        "NAME".to_string(),
        "FAMILY".into(),
        "STATE".into(),
        "ARCH".into(),
        "META".into(),
    ]];
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &report.blobs {
        *tally.entry(state(r)).or_default() += 1;
        rows.push(vec![
            r.name.clone(),
            r.family.clone(),
            state(r).into(),
            r.arch.clone().unwrap_or_else(|| "-".into()),
            r.meta
                .iter()
                .filter(|(k, _)| k.as_str() != "arch")
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        ]);
    }
    let mut out = output::table(&rows);
    for r in &report.blobs {
        if let (true, Some(p)) = (r.source_found, &r.problem) {
            out.push_str(&format!("{}: {p}\n", r.name));
        }
    }
    out.push_str(&format!(
        "{} blobs: {} (cache {})\n",
        report.blobs.len(),
        tally
            .iter()
            .map(|(s, n)| format!("{n} {s}"))
            .collect::<Vec<_>>()
            .join(", "),
        report.cache
    ));
    out
}
