//! The fake compiler: the build script's own binary, started under the
//! fake ROCm home as `bin/hipcc`. A compile of one blob source is recorded
//! (its exact argv and working directory, one JSON line appended to the
//! log) and answered with an empty object at its `-o` path; anything else
//! (host sources, links, preprocessing) runs the real compiler.
//!
//! The stub object comes from the host C compiler (`cc -c -x c /dev/null`,
//! or `-shared` for a shared object) so it is valid for whatever links it
//! next; a depfile is written when the command asks for one, so
//! make/ninja dependency tracking keeps working.

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use glob::{MatchOptions, Pattern};
use serde::{Deserialize, Serialize};

use super::args::{analyse, strip_hip_flags, Analysed};
use super::{link, probe};
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
/// Lazy libraries: records of an earlier interception, for objects this
/// build links without compiling them again.
pub(crate) const SHIM_PREVIOUS: &str = "CK_JIT_SHIM_PREVIOUS";
/// Lazy libraries: the log of links made lazy, one JSON line each.
pub(crate) const SHIM_LINKS: &str = "CK_JIT_SHIM_LINKS";

/// The default intercepted compiler name.
pub(crate) const DEFAULT_NAME: &str = "hipcc";

/// One recorded blob compile: a line of the interception log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Record {
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

fn var(name: &str) -> Option<OsString> {
    CargoOutput::silent().var(name).filter(|v| !v.is_empty())
}

/// Whether this process was started as the fake compiler: the interceptor
/// set `CK_JIT_SHIM_LOG` and argv\[0\]'s file name is an intercepted
/// compiler name. Call it first thing in `build.rs`'s `main`:
///
/// ```no_run
/// // build.rs, the start of `main`
/// if ck_jit_ck::intercept::is_shim() {
///     ck_jit_ck::intercept::shim_main()
/// }
/// // ... the build script proper
/// ```
pub fn is_shim() -> bool {
    if var(SHIM_LOG).is_none() {
        return false;
    }
    let Some(arg0) = std::env::args_os().next() else {
        return false;
    };
    let Some(name) = Path::new(&arg0).file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    shim_names().iter().any(|n| n == name)
}

pub(crate) fn shim_names() -> Vec<String> {
    match var(SHIM_NAMES).and_then(|v| v.into_string().ok()) {
        Some(v) => v
            .split(':')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect(),
        None => vec![DEFAULT_NAME.to_string()],
    }
}

/// Runs the fake compiler and exits with its status; never returns. Only
/// meaningful when [`is_shim`] is true.
pub fn shim_main() -> ! {
    match run() {
        Ok(code) => std::process::exit(code),
        Err(why) => {
            eprintln!("ck-jit shim: {why}");
            std::process::exit(1)
        }
    }
}

fn patterns(var_name: &str) -> Result<Vec<Pattern>, String> {
    let Some(v) = var(var_name) else {
        return Ok(Vec::new());
    };
    let v = v
        .into_string()
        .map_err(|_| format!("{var_name} is not valid UTF-8"))?;
    v.lines()
        .filter(|l| !l.is_empty())
        .map(|l| Pattern::new(l).map_err(|e| format!("{var_name}: bad pattern '{l}': {}", e.msg)))
        .collect()
}

/// Whether the source argument `source` is a blob by its file name.
fn is_blob(source: &str, blobs: &[Pattern], exclude: &[Pattern]) -> bool {
    let opts = MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let name = source.rsplit('/').next().unwrap_or(source);
    blobs.iter().any(|p| p.matches_with(name, opts)) && !is_dispatcher(source, exclude)
}

fn run() -> Result<i32, String> {
    let mut argv = Vec::new();
    for a in std::env::args_os() {
        argv.push(
            a.into_string()
                .map_err(|a| format!("argument {a:?} is not valid UTF-8; cannot record it"))?,
        );
    }
    let args = argv.get(1..).unwrap_or(&[]);
    let analysed = analyse(args);
    if let Some(version) = var(SHIM_HIP_VERSION).and_then(|v| v.into_string().ok()) {
        if let Some(code) = probe::answer(&argv, &analysed, &version) {
            return Ok(code);
        }
    }
    let blobs = patterns(SHIM_BLOBS)?;
    let exclude = patterns(SHIM_EXCLUDE)?;
    let blob_source = match analysed.sources.as_slice() {
        [(_, source)] if !analysed.no_object && is_blob(source, &blobs, &exclude) => {
            Some(source.clone())
        }
        _ => None,
    };
    if let Some(source) = blob_source {
        return record_blob(&argv, &analysed, source);
    }
    // A dispatcher (a source the blob patterns exclude, `*_api.cpp`)
    // compiled for a lazy library: noted, so the lazy link can read which
    // blobs each of its calls runs together.
    if var(SHIM_LAZY_MANIFEST).is_some() && analysed.compile_only && !analysed.no_object {
        if let [(_, source)] = analysed.sources.as_slice() {
            if is_dispatcher(source, &exclude) {
                note_dispatcher(&analysed, source)?;
            }
        }
    }
    if var(SHIM_LAZY_MANIFEST).is_some() && !analysed.compile_only {
        if let Some(code) = link::lazy_link(&argv)? {
            return Ok(code);
        }
    }
    real_compiler(&argv)
}

/// Whether `source` is one the exclude patterns name (CK's dispatchers).
fn is_dispatcher(source: &str, exclude: &[Pattern]) -> bool {
    let opts = MatchOptions {
        case_sensitive: true,
        require_literal_separator: true,
        require_literal_leading_dot: false,
    };
    let name = source.rsplit('/').next().unwrap_or(source);
    exclude.iter().any(|p| p.matches_with(name, opts))
}

/// The log of dispatcher compiles beside the blob log.
pub(crate) fn dispatcher_log(blob_log: &str) -> PathBuf {
    PathBuf::from(format!("{blob_log}.dispatchers"))
}

/// Appends a dispatcher compile (absolute source and object) to the
/// dispatcher log.
fn note_dispatcher(a: &Analysed, source: &str) -> Result<(), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let out = match &a.output {
        Some((_, o)) => cwd.join(o),
        None => cwd.join(
            Path::new(source)
                .with_extension("o")
                .file_name()
                .unwrap_or_default(),
        ),
    };
    let Some(log) = var(SHIM_LOG).and_then(|v| v.into_string().ok()) else {
        return Ok(());
    };
    append_line(
        &dispatcher_log(&log),
        &(
            cwd.join(source).to_string_lossy().into_owned(),
            out.to_string_lossy().into_owned(),
        ),
    )
}

fn record_blob(argv: &[String], a: &Analysed, source: String) -> Result<i32, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
    let cwd_text = cwd
        .to_str()
        .ok_or("the working directory is not valid UTF-8")?
        .to_string();
    let output = a.output.as_ref().map(|(_, o)| o.clone());
    let out_path: PathBuf = match &output {
        Some(o) => cwd.join(o),
        None if a.compile_only => {
            let stem = Path::new(&source)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "a".into());
            cwd.join(format!("{stem}.o"))
        }
        None => cwd.join("a.out"),
    };
    stub_object(&out_path, a.compile_only)?;
    if a.deps || a.depfile.is_some() {
        let depfile = match &a.depfile {
            Some(d) => cwd.join(d),
            None => out_path.with_extension("d"),
        };
        let target = a
            .dep_target
            .clone()
            .or_else(|| output.clone())
            .unwrap_or_else(|| out_path.to_string_lossy().into_owned());
        fs::write(&depfile, format!("{target}: {source}\n"))
            .map_err(|e| format!("cannot write depfile '{}': {e}", depfile.display()))?;
    }
    let record = Record {
        argv: argv.to_vec(),
        cwd: cwd_text,
        source,
        output,
    };
    let log = var(SHIM_LOG).ok_or("CK_JIT_SHIM_LOG is not set")?;
    append_line(Path::new(&log), &record)?;
    Ok(0)
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

/// The names of the empty objects in a [`SHIM_STUBS`] directory.
pub(crate) const STUB_OBJECT: &str = "stub.o";
pub(crate) const STUB_SHARED: &str = "stub.so";

/// An empty object at `out`: relocatable for `-c`, else a shared object.
/// A copy of the one made for the whole interception ([`SHIM_STUBS`]),
/// else made by the host C compiler.
fn stub_object(out: &Path, relocatable: bool) -> Result<(), String> {
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    }
    if let Some(dir) = var(SHIM_STUBS) {
        let template = Path::new(&dir).join(if relocatable {
            STUB_OBJECT
        } else {
            STUB_SHARED
        });
        // A copy, not a link: the build may write to its objects.
        let _ = fs::remove_file(out);
        return fs::copy(&template, out).map(|_| ()).map_err(|e| {
            format!(
                "cannot copy the stub object '{}' to '{}': {e}",
                template.display(),
                out.display()
            )
        });
    }
    make_stub_object(out, relocatable)
}

/// An empty object at `out`, made by the host C compiler (`cc`).
pub(crate) fn make_stub_object(out: &Path, relocatable: bool) -> Result<(), String> {
    let mut cmd = Command::new("cc");
    cmd.arg(if relocatable { "-c" } else { "-shared" })
        .args(["-fPIC", "-x", "c", "/dev/null", "-o"])
        .arg(out)
        .stdin(Stdio::null());
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run the host C compiler 'cc' for a stub object: {e}"))?;
    if !status.success() {
        return Err(format!(
            "'cc' failed to write a stub object '{}' ({status})",
            out.display()
        ));
    }
    Ok(())
}

/// Whether the shim was started as a C++ compiler driver (`c++`, `g++`,
/// `clang++`, the build's `CXX`) rather than as a HIP compiler.
fn is_host_driver(arg0: &str) -> bool {
    let name = Path::new(arg0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(arg0);
    matches!(name, "c++" | "g++" | "clang++" | "cc" | "gcc" | "clang")
}

/// The real program for `argv` and its arguments: for a C++ driver name,
/// the build's original `CXX`, else `c++`; for a HIP compiler name,
/// `CK_JIT_REAL_HIPCC` if set, else `c++` without the HIP-only flags.
/// Arguments given with [`SHIM_DROP`] are removed.
pub(crate) fn real_command(argv: &[String]) -> (OsString, Vec<String>) {
    let args = argv.get(1..).unwrap_or(&[]);
    let (program, args): (OsString, Vec<String>) = if is_host_driver(&argv[0]) {
        let saved_cxx = var(SAVED[4].1)
            .and_then(|v| v.into_string().ok())
            .and_then(|v| v.strip_prefix('+').map(String::from))
            .filter(|v| !v.is_empty());
        match saved_cxx {
            Some(cxx) => (cxx.into(), args.to_vec()),
            None => ("c++".into(), args.to_vec()),
        }
    } else {
        match var(REAL_HIPCC) {
            Some(real) => (real, args.to_vec()),
            None => ("c++".into(), strip_hip_flags(args)),
        }
    };
    (program, drop_args(&args))
}

/// `args` without the [`SHIM_DROP`] arguments.
fn drop_args(args: &[String]) -> Vec<String> {
    let dropped: Vec<Vec<String>> = var(SHIM_DROP)
        .and_then(|v| v.into_string().ok())
        .map(|v| {
            v.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.split_whitespace().map(String::from).collect())
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    'next: while i < args.len() {
        for d in &dropped {
            if !d.is_empty() && args[i..].starts_with(d) {
                i += d.len();
                continue 'next;
            }
        }
        out.push(args[i].clone());
        i += 1;
    }
    out
}

/// `program` with the interceptor's changes to the environment undone.
pub(crate) fn restored(program: &OsString) -> Command {
    let mut cmd = Command::new(program);
    for (name, saved) in SAVED {
        // A variable not saved is left as it is.
        if let Some(v) = var(saved) {
            let v = v.into_string().unwrap_or_default();
            match v.strip_prefix('+') {
                Some(value) => cmd.env(name, value),
                None => cmd.env_remove(name),
            };
        }
    }
    for (_, saved) in SAVED {
        cmd.env_remove(saved);
    }
    cmd.env_remove(SHIM_LOG);
    cmd
}

/// Runs the real compiler for `argv` (replacing this process on Unix; see
/// [`real_command`]), with the interceptor's changes to the environment
/// undone.
fn real_compiler(argv: &[String]) -> Result<i32, String> {
    let (program, args) = real_command(argv);
    let mut cmd = restored(&program);
    cmd.args(&args);
    exec(cmd, &program)
}

#[cfg(unix)]
fn exec(mut cmd: Command, program: &OsString) -> Result<i32, String> {
    use std::os::unix::process::CommandExt;
    let e = cmd.exec();
    Err(format!("cannot run the real compiler {program:?}: {e}"))
}

#[cfg(not(unix))]
fn exec(mut cmd: Command, program: &OsString) -> Result<i32, String> {
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run the real compiler {program:?}: {e}"))?;
    Ok(status.code().unwrap_or(1))
}
