//! `ck-jit gc`: shrinks the cache to a size and/or entry limit, removing
//! the least recently used entries first. Last use is the record's
//! modification time, which the runtime refreshes on a cache hit when it
//! is more than an hour old. Header sets (`deps/`) that no record names
//! any more are removed too, once an hour old.
//!
//! Safe under concurrent use: an entry whose compile lock is held is
//! skipped, removal unlinks (a process that has an object loaded keeps a
//! valid mapping) and never truncates, and the record goes first so no
//! lookup finds a half-removed entry.

use std::time::SystemTime;

use ck_jit_rt::config::config;
use serde::Serialize;

use crate::args::{parse_size, GcArgs};
use crate::commands::removal::{entry_bytes, remove_unless_busy, EntryDoc, Removal};
use crate::context::Context;
use crate::error::CliError;
use crate::output;

#[derive(Debug, Serialize)]
struct Usage {
    entries: u64,
    bytes: u64,
}

#[derive(Debug, Serialize)]
struct Limits {
    max_size: Option<u64>,
    max_entries: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Report {
    cache: String,
    dry_run: bool,
    limits: Limits,
    before: Usage,
    after: Usage,
    removed: Vec<EntryDoc>,
    /// Entries that would have gone but a compile of them was running.
    busy: usize,
    /// Whether the cache is within the limits now.
    within_limits: bool,
}

/// Runs `ck-jit gc`.
pub fn run(ctx: &Context, args: &GcArgs) -> Result<(), CliError> {
    let limits = limits(args)?;
    let cache = ctx.cache()?;
    // Least recently used first; ties broken by path so runs are repeatable.
    let mut entries: Vec<_> = cache
        .entries()
        .into_iter()
        .map(|e| {
            let used = cache.last_used(&e).unwrap_or(SystemTime::UNIX_EPOCH);
            let bytes = entry_bytes(&e);
            (used, bytes, e)
        })
        .collect();
    entries.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| a.2.record_path.cmp(&b.2.record_path))
    });
    let before = Usage {
        entries: entries.len() as u64,
        bytes: entries.iter().map(|e| e.1).sum(),
    };
    let mut count = before.entries;
    let mut bytes = before.bytes;
    let over = |count: u64, bytes: u64| {
        limits.max_entries.is_some_and(|n| count > n) || limits.max_size.is_some_and(|s| bytes > s)
    };
    let mut removed = Vec::new();
    let mut busy = 0;
    for (_, size, e) in &entries {
        if !over(count, bytes) {
            break;
        }
        let outcome = if args.dry_run {
            Removal::Removed
        } else {
            remove_unless_busy(&cache, e)?
        };
        match outcome {
            Removal::Removed => removed.push(EntryDoc::new(e, *size)),
            Removal::Busy => {
                busy += 1;
                continue;
            }
            // Someone else removed it: it no longer counts either way.
            Removal::Gone => {}
        }
        count -= 1;
        bytes -= size;
    }
    if !args.dry_run {
        // Header sets no remaining record names (old enough that no
        // publish in progress is about to name one).
        cache.sweep_depsets(ck_jit_rt::maintenance::DEPSET_GRACE);
    }
    let within_limits = !over(count, bytes);
    let report = Report {
        cache: cache.root().display().to_string(),
        dry_run: args.dry_run,
        within_limits,
        limits,
        before,
        after: Usage {
            entries: count,
            bytes,
        },
        removed,
        busy,
    };
    ctx.out.result(&report, || text(&report));
    Ok(())
}

fn limits(args: &GcArgs) -> Result<Limits, CliError> {
    if args.max_size.is_some() || args.max_entries.is_some() {
        return Ok(Limits {
            max_size: args.max_size,
            max_entries: args.max_entries,
        });
    }
    match &config().cache_max_size {
        Some(v) => parse_size(v)
            .map(|s| Limits {
                max_size: Some(s),
                max_entries: None,
            })
            .map_err(|e| CliError::Usage(format!("CK_JIT_CACHE_MAX_SIZE: {e}"))),
        None => Err(CliError::Usage(
            "gc needs a limit: expected --max-size SIZE (e.g. 2G), --max-entries N, \
             or CK_JIT_CACHE_MAX_SIZE in the environment"
                .into(),
        )),
    }
}

fn text(r: &Report) -> String {
    let mut limit = Vec::new();
    if let Some(s) = r.limits.max_size {
        limit.push(format!("at most {}", output::size(s)));
    }
    if let Some(n) = r.limits.max_entries {
        limit.push(format!("at most {n} entries"));
    }
    let mut s = format!(
        "gc: {} {} entries ({}); {} entries ({}) left, limit {}",
        if r.dry_run { "would remove" } else { "removed" },
        r.removed.len(),
        output::size(r.removed.iter().map(|e| e.bytes).sum()),
        r.after.entries,
        output::size(r.after.bytes),
        limit.join(" and ")
    );
    if r.busy > 0 {
        s.push_str(&format!("; skipped {} being compiled", r.busy));
    }
    if !r.within_limits {
        s.push_str("; still over the limit");
    }
    s.push_str(&format!(" (cache {})", r.cache));
    s
}
