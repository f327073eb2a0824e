//! Kernels declared from a manifest file rather than an embedded manifest
//! (`#[lazy_kernel(manifest_file = "...")]`): a blob that the crate's own
//! manifest does not record, known to the program at run time through the
//! fallback manifest (`CK_JIT_MANIFEST`), and checked at build time against
//! a copy of it.
//!
//! A lookup asks the fallback manifest first, when it is set and records the
//! blob (the deployment decides where the tree and the manifest are), then
//! the file the build checked against, read at its first use. One runtime
//! per file and process, kept for the program's life like an embedded one.
//! Nothing here runs on the warm path: a filled slot never reaches it.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

use once_cell::sync::Lazy;

use crate::config::config;
use crate::error::Error;
use crate::runtime::{fallback, Runtime};

/// Runtimes over manifest files, by the path the build recorded. Few
/// (one per file named in the program's source), and never freed: slots
/// keep pointers into them.
static RUNTIMES: Lazy<
    Mutex<HashMap<&'static str, &'static Runtime, crate::fixed_hash::FixedState>>,
> = Lazy::new(|| Mutex::new(HashMap::default()));

/// The runtime that resolves `blob`, declared from the manifest file at
/// `path`: the fallback manifest when it records the blob, else a runtime
/// over `path` (which reports an unknown blob itself, with close names).
pub(crate) fn runtime_for(path: &'static str, blob: &str) -> Result<&'static Runtime, Error> {
    if let Some(fb) = fallback() {
        let fb = fb?;
        if fb.contains(blob)? {
            return Ok(fb);
        }
    }
    let mut runtimes = RUNTIMES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = runtimes.get(path) {
        return Ok(rt);
    }
    // A failure is not remembered: the next call reads the file again.
    let rt = Runtime::from_file_for_process(Path::new(path)).map_err(|e| explained(e, path))?;
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    runtimes.insert(path, rt);
    Ok(rt)
}

/// `error` (from reading `path`) with where the path came from and the
/// variable that replaces it in a deployment.
fn explained(error: Error, path: &str) -> Error {
    match error {
        Error::Manifest { error, .. } => {
            let state = match &config().manifest {
                Some(fallback) => format!(
                    "CK_JIT_MANIFEST ({}) does not record the blob",
                    fallback.display()
                ),
                None => "CK_JIT_MANIFEST is not set".to_string(),
            };
            Error::Manifest {
                origin: format!(
                    "{path} (named by #[lazy_kernel(manifest_file = ...)] at build time; \
                     {state}; set it to the deployed manifest)"
                ),
                error,
            }
        }
        other => other,
    }
}
