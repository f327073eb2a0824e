//! `ck-jit export-manifest`: copies the manifest a crate's build wrote into
//! its `OUT_DIR` (named, or found as every command finds a cargo build's)
//! to where a deployment will read it (beside the installed blobs, for
//! `CK_JIT_ROOT`, or anywhere for `CK_JIT_MANIFEST`), refusing a manifest
//! the runtime would refuse. The copy is written to a temp file
//! and renamed, so a reader never sees half of it.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use ck_jit_rt::manifest::{Manifest, MANIFEST_FILE};
use serde::Serialize;

use crate::args::ExportArgs;
use crate::context::Context;
use crate::error::CliError;

#[derive(Debug, Serialize)]
struct Report {
    from: String,
    to: String,
    name: String,
    root: String,
    blobs: usize,
    groups: usize,
    /// Blobs whose source is not under the recorded root here.
    missing_sources: usize,
}

/// Runs `ck-jit export-manifest`.
pub fn run(ctx: &Context, args: &ExportArgs) -> Result<(), CliError> {
    let from = match (&args.out_dir, &args.from) {
        (Some(dir), _) => dir.join(MANIFEST_FILE),
        (None, Some(f)) => f.clone(),
        (None, None) => ctx.build_manifest_path(
            "export-manifest: expected --out-dir DIR, --from FILE or --manifest PATH",
        )?,
    };
    let text = fs::read_to_string(&from).map_err(|e| {
        CliError::Usage(format!(
            "cannot read manifest {}: {e}; expected the ck_jit_manifest.json that \
             ck-jit-build wrote into the crate's OUT_DIR",
            from.display()
        ))
    })?;
    let mut manifest = Manifest::from_json(&text)
        .map_err(|e| CliError::Usage(format!("manifest {}: {e}", from.display())))?;
    let mut bytes = text.into_bytes();
    if let Some(root) = &args.root {
        if !root.is_absolute() {
            return Err(CliError::Usage(format!(
                "--root {}: expected an absolute path (the manifest records where the tree is)",
                root.display()
            )));
        }
        manifest.root = root.to_string_lossy().into_owned();
        bytes = manifest.to_json().into_bytes();
    }
    let to = if args.to.is_dir() {
        args.to.join(MANIFEST_FILE)
    } else {
        args.to.clone()
    };
    write_atomically(&to, &bytes)?;
    let root = Path::new(&manifest.root);
    let missing = manifest
        .blobs
        .iter()
        .filter(|b| !root.join(&b.source).is_file())
        .count();
    if missing > 0 {
        ctx.out.warn(&format!(
            "ck-jit: {missing} of {} blob sources are not under the recorded root {} on this \
             machine; install the tree there, pass --root, or set CK_JIT_ROOT where it runs",
            manifest.blobs.len(),
            manifest.root
        ));
    }
    let report = Report {
        from: from.display().to_string(),
        to: to.display().to_string(),
        name: manifest.name.clone(),
        root: manifest.root.clone(),
        blobs: manifest.blobs.len(),
        groups: manifest.groups.len(),
        missing_sources: missing,
    };
    ctx.out.result(&report, || {
        format!(
            "exported manifest '{}' ({} blobs, {} families, root {}) from {} to {}",
            report.name, report.blobs, report.groups, report.root, report.from, report.to
        )
    });
    Ok(())
}

fn write_atomically(to: &Path, bytes: &[u8]) -> Result<(), CliError> {
    let failed = |what: &str, p: &Path, e: std::io::Error| {
        CliError::Io(format!("{what} {}: {e}", p.display()))
    };
    let dir = match to.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = to
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| MANIFEST_FILE.to_string());
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .map_err(|e| failed("creating a temp file", &tmp, e))?;
    let written = f.write_all(bytes).and_then(|()| f.sync_all());
    drop(f);
    if let Err(e) = written.and_then(|()| fs::rename(&tmp, to)) {
        let _ = fs::remove_file(&tmp);
        return Err(failed("publishing", to, e));
    }
    Ok(())
}
