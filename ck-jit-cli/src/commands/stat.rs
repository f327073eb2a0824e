//! `ck-jit stat`: what the cache holds: entries, bytes, the oldest and
//! newest, least and most recently used, entries per blob, and what sits
//! in `bad/`, `logs/` and `tmp/`; and the hits, misses, compiles and
//! failures its processes counted (`counters.json`), and the memory one
//! compile of each group was learnt to take (`memory.json`); and each
//! read-only tier of `CK_JIT_CACHE_PATH`, with the hits it served. Reads
//! only.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use ck_jit_rt::maintenance::{Cache, Entry};
use serde::Serialize;

use crate::commands::removal::entry_bytes;
use crate::context::Context;
use crate::error::CliError;
use crate::output;

#[derive(Debug, Serialize)]
struct When {
    blob: String,
    object: String,
    /// Seconds since the epoch.
    epoch: u64,
    utc: String,
}

#[derive(Debug, Serialize, Default)]
struct Files {
    files: u64,
    bytes: u64,
}

/// A read-only tier (`CK_JIT_CACHE_PATH`).
#[derive(Debug, Serialize)]
struct Tier {
    path: String,
    /// Why it is not looked in, when it is not.
    error: Option<String>,
    entries: usize,
    bytes: u64,
    /// Requests it served (counted in the writable cache's counters).
    hits: u64,
}

#[derive(Debug, Serialize)]
struct Report {
    cache: String,
    entries: usize,
    bytes: u64,
    blobs: usize,
    oldest: Option<When>,
    newest: Option<When>,
    least_recently_used: Option<When>,
    most_recently_used: Option<When>,
    /// Entries per blob.
    per_blob: BTreeMap<String, usize>,
    quarantined: Files,
    logs: Files,
    temp: Files,
    /// What the cache's processes counted (`counters.json`), if any wrote.
    /// `hits` counts those of the tiers too.
    hits: Option<u64>,
    /// Of `hits`, those the writable cache served.
    hits_here: Option<u64>,
    /// The read-only caches looked in first, in order.
    tiers: Vec<Tier>,
    misses: Option<u64>,
    compiles: Option<u64>,
    failures: Option<u64>,
    /// When counting started.
    counted_since: Option<String>,
    /// What one compile of each group (`<manifest>/<group>`) is counted
    /// at, learnt from the peak resident size of its compiles.
    memory: BTreeMap<String, ck_jit_rt::maintenance::LearntMemory>,
}

/// Runs `ck-jit stat`.
pub fn run(ctx: &Context) -> Result<(), CliError> {
    let cache = ctx.cache()?;
    let entries = cache.entries();
    let when = |e: &Entry, epoch: u64| When {
        blob: e.record.blob.clone(),
        object: e.object.display().to_string(),
        epoch,
        utc: output::time(epoch),
    };
    let created = |e: &&Entry| e.record.created;
    let used = |e: &&Entry| cache.last_used(e).map(output::epoch).unwrap_or(0);
    let counters = ck_jit_rt::maintenance::read_counters(cache.root());
    let counters = counters.as_ref();
    let tier_hits = |path: &str| {
        counters
            .and_then(|c| c.tier_hits.get(path).copied())
            .unwrap_or(0)
    };
    let mut tiers: Vec<Tier> = ck_jit_rt::config::config()
        .cache_path
        .iter()
        .map(|dir| {
            let path = dir.display().to_string();
            match Cache::open_read_only(dir) {
                Ok(t) => {
                    let entries = t.entries();
                    Tier {
                        hits: tier_hits(&path),
                        path,
                        error: None,
                        entries: entries.len(),
                        bytes: entries.iter().map(entry_bytes).sum(),
                    }
                }
                Err(e) => Tier {
                    hits: tier_hits(&path),
                    path,
                    error: Some(e.to_string()),
                    entries: 0,
                    bytes: 0,
                },
            }
        })
        .collect();
    // Tiers that served hits and are no longer in the path.
    if let Some(c) = counters {
        for (path, hits) in &c.tier_hits {
            if !tiers.iter().any(|t| &t.path == path) {
                tiers.push(Tier {
                    path: path.clone(),
                    error: Some("not in CK_JIT_CACHE_PATH now".into()),
                    entries: 0,
                    bytes: 0,
                    hits: *hits,
                });
            }
        }
    }
    let mut per_blob = BTreeMap::new();
    for e in &entries {
        *per_blob.entry(e.record.blob.clone()).or_default() += 1;
    }
    let report = Report {
        cache: cache.root().display().to_string(),
        entries: entries.len(),
        bytes: entries.iter().map(entry_bytes).sum(),
        blobs: per_blob.len(),
        oldest: entries
            .iter()
            .min_by_key(created)
            .map(|e| when(e, e.record.created)),
        newest: entries
            .iter()
            .max_by_key(created)
            .map(|e| when(e, e.record.created)),
        least_recently_used: entries.iter().min_by_key(used).map(|e| when(e, used(&e))),
        most_recently_used: entries.iter().max_by_key(used).map(|e| when(e, used(&e))),
        per_blob,
        quarantined: files_in(&cache.root().join("bad")),
        logs: files_in(&cache.root().join("logs")),
        temp: files_in(&cache.root().join("tmp")),
        hits: counters.map(|c| c.hits),
        hits_here: counters.map(|c| c.hits - c.tier_hits.values().sum::<u64>().min(c.hits)),
        tiers,
        misses: counters.map(|c| c.misses),
        compiles: counters.map(|c| c.compiles),
        failures: counters.map(|c| c.failures),
        counted_since: counters.map(|c| output::time(c.since)),
        memory: ck_jit_rt::maintenance::read_memory_estimates(cache.root()).groups,
    };
    ctx.out.result(&report, || text(&report));
    Ok(())
}

fn files_in(dir: &Path) -> Files {
    let mut f = Files::default();
    let Ok(rd) = fs::read_dir(dir) else { return f };
    for e in rd.flatten() {
        if let Ok(m) = e.metadata() {
            if m.is_file() {
                f.files += 1;
                f.bytes += m.len();
            }
        }
    }
    f
}

fn text(r: &Report) -> String {
    let mut s = format!("cache:        {}\n", r.cache);
    s.push_str(&format!(
        "entries:      {} ({} blobs), {}\n",
        r.entries,
        r.blobs,
        output::size(r.bytes)
    ));
    let line = |label: &str, w: &Option<When>| match w {
        Some(w) => format!("{label:<13} {} ({})\n", w.utc, w.blob),
        None => format!("{label:<13} -\n"),
    };
    s.push_str(&line("oldest:", &r.oldest));
    s.push_str(&line("newest:", &r.newest));
    s.push_str(&line("least used:", &r.least_recently_used));
    s.push_str(&line("last used:", &r.most_recently_used));
    s.push_str(&format!(
        "quarantined:  {} files, {} (bad/)\n",
        r.quarantined.files,
        output::size(r.quarantined.bytes)
    ));
    s.push_str(&format!(
        "logs:         {} files, {}\n",
        r.logs.files,
        output::size(r.logs.bytes)
    ));
    if r.temp.files > 0 {
        s.push_str(&format!(
            "temp:         {} files, {} (compiles running or killed)\n",
            r.temp.files,
            output::size(r.temp.bytes)
        ));
    }
    match (r.hits, r.misses, r.compiles, r.failures, &r.counted_since) {
        (Some(h), Some(m), Some(c), Some(f), Some(since)) => {
            let rate = if h + m > 0 {
                format!(" ({:.1}% hits)", 100.0 * h as f64 / (h + m) as f64)
            } else {
                String::new()
            };
            s.push_str(&format!(
                "requests:     {h} hits, {m} misses{rate}; {c} compiles, {f} failures (since {since})\n"
            ));
        }
        _ => s.push_str("requests:     none counted yet\n"),
    }
    if !r.tiers.is_empty() {
        s.push_str("read-only tiers (CK_JIT_CACHE_PATH, looked in first):\n");
        for t in &r.tiers {
            match &t.error {
                Some(e) if t.entries == 0 => {
                    s.push_str(&format!("  {}: {} hits; {e}\n", t.path, t.hits))
                }
                _ => s.push_str(&format!(
                    "  {}: {} entries, {}, {} hits\n",
                    t.path,
                    t.entries,
                    output::size(t.bytes),
                    t.hits
                )),
            }
        }
        if let Some(h) = r.hits_here {
            s.push_str(&format!("  (this cache served {h} hits)\n"));
        }
    }
    if !r.memory.is_empty() {
        s.push_str("memory per compile (learnt from peak resident size):\n");
        for (group, l) in &r.memory {
            s.push_str(&format!(
                "  {group}: {} (last {}, {} compiles)\n",
                output::size(l.estimate),
                output::size(l.last_peak),
                l.compiles
            ));
        }
    }
    if !r.per_blob.is_empty() {
        let mut counts: Vec<(&String, &usize)> = r.per_blob.iter().collect();
        counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        s.push_str("entries per blob (most first):\n");
        let shown = 10;
        for (blob, n) in counts.iter().take(shown) {
            s.push_str(&format!("  {n:>5}  {blob}\n"));
        }
        if counts.len() > shown {
            s.push_str(&format!(
                "  ... and {} more blobs (--json lists all)\n",
                counts.len() - shown
            ));
        }
    }
    s
}
