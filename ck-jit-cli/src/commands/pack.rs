//! `ck-jit pack` and `ck-jit unpack`: the cache entries of a selection as
//! one file to ship, and that file checked and installed into another
//! cache. Both are the runtime's (`ck_jit_rt::pack`): the entries are the
//! ones a lazy call finds, and an unpack publishes each as a compile does.

use ck_jit_rt::arch::ArchChoice;
use ck_jit_rt::pack;
use serde::Serialize;

use crate::args::{PackArgs, UnpackArgs};
use crate::context::{self, Context};
use crate::error::CliError;
use crate::output;
use crate::select::{self, WhenEmpty};

#[derive(Debug, Serialize)]
struct PackReport {
    manifest: String,
    pack: String,
    bytes: u64,
    arch: Option<String>,
    /// The GPU targets it serves (empty: host code only).
    targets: Vec<String>,
    compilers: Vec<pack::PackCompiler>,
    entries: usize,
    blobs: Vec<String>,
}

/// What a pack of host code only is for, in both commands' words.
const NO_GPU: &str = "the host (no GPU code)";

/// Runs `ck-jit pack`.
pub fn run(ctx: &Context, args: &PackArgs) -> Result<(), CliError> {
    let (rt, path) = ctx.runtime()?;
    let rt = match &args.arch {
        Some(a) => {
            let mut c = rt.config().clone();
            c.arch = ArchChoice::Fixed(vec![a.clone()]);
            rt.with_config(c)
        }
        None => rt,
    };
    let names = select::from_runtime(
        &rt,
        &path,
        &args.select,
        args.all,
        WhenEmpty::Refuse("pack"),
    )?;
    let packed = pack::write(&rt, &names, &args.out)?;
    let report = PackReport {
        manifest: path.display().to_string(),
        pack: packed.path.display().to_string(),
        bytes: packed.bytes,
        arch: packed.index.arch.clone(),
        targets: packed.index.targets(),
        compilers: packed.index.compilers.clone(),
        entries: packed.index.entries.len(),
        blobs: packed
            .index
            .entries
            .iter()
            .map(|e| e.blob.clone())
            .collect(),
    };
    ctx.out.result(&report, || {
        let compilers: Vec<String> = report
            .compilers
            .iter()
            .map(|c| format!("{} ({})", c.program, c.version))
            .collect();
        format!(
            "pack: {} entries for {}, built by {}; {} written to {}",
            report.entries,
            if report.targets.is_empty() {
                NO_GPU.to_string()
            } else {
                report.targets.join(", ")
            },
            if compilers.is_empty() {
                "no compiler".to_string()
            } else {
                compilers.join(", ")
            },
            output::size(report.bytes),
            report.pack
        )
    });
    Ok(())
}

/// Runs `ck-jit unpack`.
pub fn run_unpack(ctx: &Context, args: &UnpackArgs) -> Result<(), CliError> {
    // Every pack is there and is a pack before a cache is made or opened.
    for p in &args.packs {
        pack::read_index(p)?;
    }
    let cache = match &args.cache {
        Some(dir) => context::open(dir)?,
        None => ctx.cache()?,
    };
    let config = ck_jit_rt::config::config();
    let done = pack::unpack(&args.packs, &cache, args.arch.as_ref(), config)?;
    if !ctx.out.is_json() {
        for n in &done.notes {
            ctx.out.warn(&output::message(n));
        }
        for s in &done.skipped {
            ctx.out.warn(&format!(
                "ck-jit: skipped {} of {}: {}",
                s.blob,
                s.pack.display(),
                s.why
            ));
        }
    }
    ctx.out.result(&done, || {
        let new = done.installed.iter().filter(|i| !i.present).count();
        let family = done
            .installed
            .iter()
            .filter(|i| i.fit == pack::Fit::Family)
            .count();
        format!(
            "unpack: {new} installed, {} already there, {} skipped{} (for {}; cache {})",
            done.installed.len() - new,
            done.skipped.len(),
            if family > 0 {
                format!(", {family} of the device's family")
            } else {
                String::new()
            },
            done.arch.as_deref().unwrap_or(NO_GPU),
            done.cache.display()
        )
    });
    Ok(())
}
