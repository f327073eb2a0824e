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

use ck_jit_rt::config::config;
use ck_jit_rt::maintenance::Limits;
use serde::Serialize;

use crate::args::GcArgs;
use crate::commands::removal::EntryDoc;
use crate::context::Context;
use crate::error::CliError;
use crate::output;

#[derive(Debug, Serialize)]
struct Usage {
    entries: u64,
    bytes: u64,
}

#[derive(Debug, Serialize)]
struct LimitsDoc {
    max_size: Option<u64>,
    max_entries: Option<u64>,
}

#[derive(Debug, Serialize)]
struct Report {
    cache: String,
    dry_run: bool,
    limits: LimitsDoc,
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
    let ev = cache.evict(&limits, None, args.dry_run)?;
    if !args.dry_run {
        // Header sets no remaining record names, also when no entry went.
        cache.sweep_depsets(ck_jit_rt::maintenance::DEPSET_GRACE);
    }
    let report = Report {
        cache: cache.root().display().to_string(),
        dry_run: args.dry_run,
        within_limits: ev.within(&limits),
        limits: LimitsDoc {
            max_size: limits.max_size,
            max_entries: limits.max_entries,
        },
        before: Usage {
            entries: ev.entries_before,
            bytes: ev.bytes_before,
        },
        after: Usage {
            entries: ev.entries_after,
            bytes: ev.bytes_after,
        },
        removed: ev
            .removed
            .iter()
            .map(|(e, bytes)| EntryDoc::new(e, *bytes))
            .collect(),
        busy: ev.busy,
    };
    ctx.out.result(&report, || text(&report));
    Ok(())
}

/// The limits given on the command line, else those of the environment
/// (`CK_JIT_CACHE_MAX_SIZE`, `CK_JIT_CACHE_MAX_ENTRIES`).
fn limits(args: &GcArgs) -> Result<Limits, CliError> {
    if args.max_size.is_some() || args.max_entries.is_some() {
        return Ok(Limits {
            max_size: args.max_size,
            max_entries: args.max_entries,
        });
    }
    let env = config().cache_limits;
    if env.any() {
        return Ok(env);
    }
    Err(CliError::Usage(
        "gc needs a limit: expected --max-size SIZE (e.g. 2G), --max-entries N, \
         or CK_JIT_CACHE_MAX_SIZE / CK_JIT_CACHE_MAX_ENTRIES in the environment"
            .into(),
    ))
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
