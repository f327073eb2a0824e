//! `ck-jit clean`: removes the cache entries of the selected blobs (every
//! entry of theirs, whatever inputs it was built from), or with `--all`
//! every entry in the cache plus quarantined files and compile logs (and,
//! either way, the header sets no remaining record names).
//! Entries whose compile is running are left alone and reported.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde::Serialize;

use crate::args::CleanArgs;
use crate::commands::removal::{entry_bytes, remove_unless_busy, EntryDoc, Removal};
use crate::context::Context;
use crate::error::CliError;
use crate::output;
use crate::select::{self, WhenEmpty};

#[derive(Debug, Serialize)]
struct Report {
    cache: String,
    dry_run: bool,
    removed: Vec<EntryDoc>,
    bytes: u64,
    /// Entries left because a compile of them was running.
    busy: Vec<EntryDoc>,
    /// Quarantined files and logs removed (`--all`).
    other_files: usize,
}

/// Runs `ck-jit clean`.
pub fn run(ctx: &Context, args: &CleanArgs) -> Result<(), CliError> {
    let (cache, blobs) = if args.all {
        (ctx.cache()?, None)
    } else {
        let (rt, path) = ctx.runtime()?;
        let names =
            select::from_runtime(&rt, &path, &args.select, false, WhenEmpty::Refuse("clean"))?;
        (
            rt.cache()?.clone(),
            Some(names.into_iter().collect::<BTreeSet<_>>()),
        )
    };
    let mut report = Report {
        cache: cache.root().display().to_string(),
        dry_run: args.dry_run,
        removed: Vec::new(),
        bytes: 0,
        busy: Vec::new(),
        other_files: 0,
    };
    for e in cache.entries() {
        if blobs.as_ref().is_some_and(|b| !b.contains(&e.record.blob)) {
            continue;
        }
        let bytes = entry_bytes(&e);
        let outcome = if args.dry_run {
            Removal::Removed
        } else {
            remove_unless_busy(&cache, &e)?
        };
        match outcome {
            Removal::Removed => {
                report.bytes += bytes;
                report.removed.push(EntryDoc::new(&e, bytes));
            }
            Removal::Busy => report.busy.push(EntryDoc::new(&e, bytes)),
            Removal::Gone => {}
        }
    }
    if args.all {
        for sub in ["bad", "logs"] {
            report.other_files += remove_files_in(&cache.root().join(sub), args.dry_run);
        }
    }
    if !args.dry_run {
        // Header sets no record names any more: all of them after `--all`
        // (a publish racing with it loses its set and is simply a miss
        // next time), else only those old enough that no publish in
        // progress is about to name them.
        let grace = if args.all {
            std::time::Duration::ZERO
        } else {
            ck_jit_rt::maintenance::DEPSET_GRACE
        };
        cache.sweep_depsets(grace);
    }
    for b in &report.busy {
        ctx.out.warn(&format!(
            "ck-jit: left {} of blob '{}': a compile of it is running",
            b.object, b.blob
        ));
    }
    ctx.out.result(&report, || {
        let mut s = format!(
            "clean: {} {} entries ({}){}",
            if report.dry_run {
                "would remove"
            } else {
                "removed"
            },
            report.removed.len(),
            output::size(report.bytes),
            if report.busy.is_empty() {
                String::new()
            } else {
                format!(", left {} being compiled", report.busy.len())
            }
        );
        if args.all {
            s.push_str(&format!(
                ", and {} quarantined files and logs",
                report.other_files
            ));
        }
        s.push_str(&format!(" (cache {})", report.cache));
        s
    });
    Ok(())
}

/// Removes the plain files directly in `dir`; returns how many (would be)
/// removed.
fn remove_files_in(dir: &Path, dry_run: bool) -> usize {
    let Ok(rd) = fs::read_dir(dir) else { return 0 };
    rd.flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter(|e| dry_run || fs::remove_file(e.path()).is_ok())
        .count()
}
