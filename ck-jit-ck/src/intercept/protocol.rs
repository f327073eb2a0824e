//! The protocol between the interceptor, its fake compiler and the lazy
//! link: the variables the interceptor sets for the build, the lines
//! the fake compiler appends to its logs (an [`Invocation`] per blob
//! compile), and how a log line is written.
//! The fake compiler ([`super::shim`]) and the lazy link ([`super::link`])
//! both stand on it; neither needs the other's internals.

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use ck_jit_build::CargoOutput;

/// The interception log (presence, together with a compiler name as
/// argv[0], means shim mode).
pub(crate) const SHIM_LOG: &str = "CK_JIT_SHIM_LOG";
/// The compiler names intercepted, `:`-separated (default `hipcc`).
pub(crate) const SHIM_NAMES: &str = "CK_JIT_SHIM_NAMES";
/// Blob file-name patterns, one per line.
pub(crate) const SHIM_BLOBS: &str = "CK_JIT_SHIM_BLOBS";
/// Excluded file-name patterns, one per line.
pub(crate) const SHIM_EXCLUDE: &str = "CK_JIT_SHIM_EXCLUDE";
/// The real compiler for everything that is not a blob compile.
pub(crate) const REAL_HIPCC: &str = "CK_JIT_REAL_HIPCC";
/// The variables the interceptor changed, saved for the real compiler:
/// each holds `+<value>` when the variable was set, `-` when it was not.
pub(crate) const SAVED: &[(&str, &str)] = &[
    ("PATH", "CK_JIT_SHIM_SAVED_PATH"),
    ("ROCM_PATH", "CK_JIT_SHIM_SAVED_ROCM_PATH"),
    ("HIP_PATH", "CK_JIT_SHIM_SAVED_HIP_PATH"),
    ("ROCM_HOME", "CK_JIT_SHIM_SAVED_ROCM_HOME"),
    ("CXX", "CK_JIT_SHIM_SAVED_CXX"),
];
/// A directory holding `stub.o` and `stub.so`, the empty objects blob
/// compiles are answered with (made once per interception).
pub(crate) const SHIM_STUBS: &str = "CK_JIT_SHIM_STUBS";
/// Record-only mode: the HIP version the fake ROCm home states; the shim
/// answers the build's flag probes itself, as that version's `hipcc`.
pub(crate) const SHIM_HIP_VERSION: &str = "CK_JIT_SHIM_HIP_VERSION";
/// Arguments dropped from commands given to the real compiler, one per
/// line (`-mllvm X` as one line).
pub(crate) const SHIM_DROP: &str = "CK_JIT_SHIM_DROP";
/// Lazy libraries: the manifest path the linked stubs resolve blobs with.
pub(crate) const SHIM_LAZY_MANIFEST: &str = "CK_JIT_SHIM_LAZY_MANIFEST";
/// Lazy libraries: the ck-jit C ABI library linked into them.
pub(crate) const SHIM_RUNTIME_LIB: &str = "CK_JIT_SHIM_RUNTIME_LIB";
/// Lazy libraries: the invocations of an earlier interception, for
/// objects this build links without compiling them again.
pub(crate) const SHIM_PREVIOUS: &str = "CK_JIT_SHIM_PREVIOUS";
/// Lazy libraries: the log of links made lazy, one JSON line each.
pub(crate) const SHIM_LINKS: &str = "CK_JIT_SHIM_LINKS";

/// The default intercepted compiler name.
pub(crate) const DEFAULT_NAME: &str = "hipcc";

/// One blob compile the intercepted build ran, which the fake compiler
/// recorded instead of running: a line of the interception log (its JSON
/// field names are that log's format).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invocation {
    /// The exact argv, program name first (as invoked, e.g. a path into the
    /// fake ROCm home).
    pub argv: Vec<String>,
    /// The working directory of the compile.
    pub cwd: String,
    /// The source argument, as given.
    pub source: String,
    /// The `-o` argument, as given.
    pub output: Option<String>,
}

/// A protocol variable, unset when empty.
pub(crate) fn var(name: &str) -> Option<OsString> {
    CargoOutput::silent().var(name).filter(|v| !v.is_empty())
}

/// The log of dispatcher compiles beside the blob log.
pub(crate) fn dispatcher_log(blob_log: &str) -> PathBuf {
    PathBuf::from(format!("{blob_log}.dispatchers"))
}

/// Appends `record` as one JSON line with a single write, so lines from
/// parallel compiles never interleave.
pub(crate) fn append_line<T: Serialize>(log: &Path, record: &T) -> Result<(), String> {
    let mut line = serde_json::to_vec(record).map_err(|e| e.to_string())?;
    line.push(b'\n');
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("cannot open log '{}': {e}", log.display()))?;
    let n = f
        .write(&line)
        .map_err(|e| format!("cannot append to log '{}': {e}", log.display()))?;
    if n != line.len() {
        return Err(format!("short write to log '{}'", log.display()));
    }
    Ok(())
}

/// A blob source as the lazy link read it, appended to `<links
/// log>.sources` so that the manifest step describes the blob without
/// reading and lexing it again: its canonical path, the size and
/// modification time it had (a file changed since is read again), and
/// what it declares.
#[derive(Debug, Serialize, serde::Deserialize)]
pub(crate) struct ReadSource {
    pub path: std::path::PathBuf,
    pub len: u64,
    pub mtime_ns: u128,
    pub source: crate::decl::BlobSource,
}

/// The size and modification time (ns since the epoch) of `path`, as
/// [`ReadSource`] records them.
pub(crate) fn file_stamp(path: &Path) -> Option<(u64, u128)> {
    let m = std::fs::metadata(path).ok()?;
    let mtime = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((m.len(), mtime))
}

/// Where the lazy links record the blob sources they read.
pub(crate) fn sources_log(links_log: &Path) -> std::path::PathBuf {
    let mut name = links_log.as_os_str().to_owned();
    name.push(".sources");
    std::path::PathBuf::from(name)
}
