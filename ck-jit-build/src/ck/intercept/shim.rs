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
use crate::cargo::CargoOutput;
use crate::env;

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
];

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
    env::var(name, &mut CargoOutput::silent()).filter(|v| !v.is_empty())
}

/// Whether this process was started as the fake compiler: the interceptor
/// set `CK_JIT_SHIM_LOG` and argv\[0\]'s file name is an intercepted
/// compiler name. Call it first thing in `build.rs`'s `main`:
///
/// ```no_run
/// // build.rs, the start of `main`
/// if ck_jit_build::intercept::is_shim() {
///     ck_jit_build::intercept::shim_main()
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
    blobs.iter().any(|p| p.matches_with(name, opts))
        && !exclude.iter().any(|p| p.matches_with(name, opts))
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
    let blobs = patterns(SHIM_BLOBS)?;
    let exclude = patterns(SHIM_EXCLUDE)?;
    let blob_source = match analysed.sources.as_slice() {
        [(_, source)] if !analysed.no_object && is_blob(source, &blobs, &exclude) => {
            Some(source.clone())
        }
        _ => None,
    };
    match blob_source {
        Some(source) => record_blob(&argv, &analysed, source),
        None => real_compiler(args),
    }
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
fn append_line(log: &Path, record: &Record) -> Result<(), String> {
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

/// An empty object at `out`: relocatable for `-c`, else a shared object.
fn stub_object(out: &Path, relocatable: bool) -> Result<(), String> {
    if let Some(dir) = out.parent() {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create '{}': {e}", dir.display()))?;
    }
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

/// Runs the real compiler with `args` (replacing this process on Unix):
/// `CK_JIT_REAL_HIPCC` if set, else `c++` without the HIP-only flags, with
/// the interceptor's changes to `PATH`, `ROCM_PATH` and `HIP_PATH` undone.
fn real_compiler(args: &[String]) -> Result<i32, String> {
    let (program, args): (OsString, Vec<String>) = match var(REAL_HIPCC) {
        Some(real) => (real, args.to_vec()),
        None => ("c++".into(), strip_hip_flags(args)),
    };
    let mut cmd = Command::new(&program);
    cmd.args(&args);
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
