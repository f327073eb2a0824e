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
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use glob::{MatchOptions, Pattern};

use super::args::{analyse, Analysed};
use super::protocol::{
    append_line, dispatcher_log, var, Invocation, DEFAULT_NAME, SHIM_BLOBS, SHIM_EXCLUDE,
    SHIM_HIP_VERSION, SHIM_LAZY_MANIFEST, SHIM_LOG, SHIM_NAMES, SHIM_STUBS,
};
use super::real::{real_command, restored};
use super::{link, probe};

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
    let invocation = Invocation {
        argv: argv.to_vec(),
        cwd: cwd_text,
        source,
        output,
    };
    let log = var(SHIM_LOG).ok_or("CK_JIT_SHIM_LOG is not set")?;
    append_line(Path::new(&log), &invocation)?;
    Ok(0)
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
