//! `ck-jit verify`: checks every entry's object against its record (size
//! and checksum, `Cache::verify`, the runtime's own check) and moves the bad
//! ones to `bad/` (`Cache::quarantine`, never deleted in place). Entries
//! being compiled right now are skipped: their lock is held.

use serde::Serialize;

use crate::context::Context;
use crate::error::CliError;

#[derive(Debug, Serialize)]
struct Bad {
    blob: String,
    object: String,
    why: String,
}

#[derive(Debug, Serialize)]
struct Report {
    cache: String,
    checked: usize,
    good: usize,
    bad: Vec<Bad>,
    /// Entries skipped because a compile of them was running.
    busy: usize,
    /// Where bad entries were moved.
    quarantine: String,
}

/// Runs `ck-jit verify`.
pub fn run(ctx: &Context) -> Result<(), CliError> {
    let cache = ctx.cache()?;
    let mut report = Report {
        cache: cache.root().display().to_string(),
        checked: 0,
        good: 0,
        bad: Vec::new(),
        busy: 0,
        quarantine: cache.root().join("bad").display().to_string(),
    };
    for e in cache.entries() {
        let Some(_lock) = cache.try_lock(&e.record.blob, &e.record.prekey)? else {
            report.busy += 1;
            continue;
        };
        // Removed since it was listed (by gc, clean or a forced rebuild):
        // nothing to judge.
        if !e.record_path.exists() {
            continue;
        }
        report.checked += 1;
        match cache.verify(&e) {
            Ok(_) => report.good += 1,
            Err(why) => {
                cache.quarantine(&e);
                report.bad.push(Bad {
                    blob: e.record.blob.clone(),
                    object: e.object.display().to_string(),
                    why,
                });
            }
        }
    }
    for b in &report.bad {
        ctx.out.warn(&format!(
            "ck-jit: bad entry of blob '{}': {}: {}; moved to {}",
            b.blob, b.object, b.why, report.quarantine
        ));
    }
    ctx.out.result(&report, || {
        let mut s = format!(
            "verify: {} entries checked, {} good, {} bad",
            report.checked,
            report.good,
            report.bad.len()
        );
        if !report.bad.is_empty() {
            s.push_str(&format!(" (moved to {})", report.quarantine));
        }
        if report.busy > 0 {
            s.push_str(&format!(", {} skipped (being compiled)", report.busy));
        }
        s.push_str(&format!(" (cache {})", report.cache));
        s
    });
    if report.bad.is_empty() {
        Ok(())
    } else {
        Err(CliError::Failed)
    }
}
