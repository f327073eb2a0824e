//! Running CK's FMHA code generator (`example/ck_tile/01_fmha/generate.py`)
//! for each direction, unless a stamp says its inputs are unchanged. The
//! directions are independent Python processes, run side by side.
//!
//! This is the only place the build helper starts a program of its own
//! accord, and that program is CK's generator run by Python: it writes C++
//! sources, it never compiles anything, and neither does this module.

use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use super::error::{io_err, last_lines, quoted, Error};

/// First line of a stamp file; a change of format invalidates old stamps.
const STAMP_HEADER: &str = "ck-jit-build codegen stamp 1";

/// One `generate.py` run.
pub(crate) struct Codegen<'a> {
    /// The Python interpreter.
    pub python: &'a Path,
    /// `<ck>/example/ck_tile/01_fmha/generate.py`.
    pub generate_py: &'a Path,
    /// What to generate (`generate.py -d`).
    pub direction: &'a str,
    /// `--receipt`.
    pub receipt: u32,
    /// `--filter`, passed through.
    pub filter: Option<&'a str>,
    /// `--targets`, for a generator that takes it.
    pub targets: Option<&'a str>,
    /// The output directory (emptied before a run).
    pub out: &'a Path,
    /// The stamp file recording the inputs of the last successful run.
    pub stamp: &'a Path,
    /// Set when the generator starts writing into an emptied `out`.
    pub started: &'a AtomicBool,
}

/// What [`Codegen::run`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The stamp matched: nothing ran.
    UpToDate,
    /// The generator ran.
    Generated,
}

impl Codegen<'_> {
    /// The generator's arguments after the interpreter.
    fn args(&self) -> Vec<OsString> {
        // -B: no __pycache__ written into the CK tree, which would also make
        // the watched codegen directory look changed after every run.
        let mut args: Vec<OsString> = vec![
            "-B".into(),
            self.generate_py.into(),
            "--direction".into(),
            self.direction.into(),
            "--receipt".into(),
            self.receipt.to_string().into(),
            "--output_dir".into(),
            self.out.into(),
        ];
        if let Some(f) = self.filter {
            args.push("--filter".into());
            args.push(f.into());
        }
        if let Some(t) = self.targets {
            args.push("--targets".into());
            args.push(t.into());
        }
        args
    }

    /// The stamp's content for the current inputs: the command, and the
    /// size and modification time of `generate.py` and of every file under
    /// the `codegen/` directory beside it.
    fn fingerprint(&self) -> Result<String, Error> {
        let mut s = String::from(STAMP_HEADER);
        s.push('\n');
        s.push_str(&format!("python {}\n", self.python.to_string_lossy()));
        for a in self.args() {
            s.push_str(&format!("arg {}\n", a.to_string_lossy()));
        }
        let mut inputs = vec![self.generate_py.to_path_buf()];
        if let Some(dir) = self.generate_py.parent() {
            walk(&dir.join("codegen"), &mut |path, _| {
                inputs.push(path);
                Ok(())
            })?;
        }
        inputs[1..].sort();
        for path in inputs {
            let m = fs::metadata(&path).map_err(io_err(&path))?;
            let mtime = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| format!("{}.{:09}", d.as_secs(), d.subsec_nanos()))
                .unwrap_or_else(|| "?".into());
            s.push_str(&format!(
                "input {} {} {}\n",
                path.to_string_lossy(),
                m.len(),
                mtime
            ));
        }
        Ok(s)
    }

    /// Runs the generator unless the stamp matches and the output exists.
    pub(crate) fn run(&self) -> Result<Outcome, Error> {
        let fingerprint = self.fingerprint()?;
        if self.out.is_dir() && fs::read_to_string(self.stamp).is_ok_and(|old| old == fingerprint) {
            return Ok(Outcome::UpToDate);
        }
        // No stamp while the output is incomplete: a run cut short reruns.
        match fs::remove_file(self.stamp) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err(self.stamp)(e)),
        }
        // Files of an earlier run (another filter, another receipt) must not
        // become blobs of this one.
        if self.out.exists() {
            fs::remove_dir_all(self.out).map_err(io_err(self.out))?;
        }
        fs::create_dir_all(self.out).map_err(io_err(self.out))?;

        let args = self.args();
        self.started.store(true, Ordering::SeqCst);
        let output = Command::new(self.python)
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                if e.kind() == io::ErrorKind::NotFound {
                    Error::ProgramNotFound {
                        program: self.python.to_path_buf(),
                        purpose: "run CK's code generator",
                    }
                } else {
                    Error::Spawn {
                        program: self.python.to_path_buf(),
                        source: e,
                    }
                }
            })?;
        if !output.status.success() {
            let mut argv: Vec<OsString> = vec![self.python.into()];
            argv.extend(args);
            return Err(Error::Codegen {
                command: quoted(&argv),
                status: output.status.to_string(),
                stderr_tail: last_lines(&String::from_utf8_lossy(&output.stderr), 12, 2000),
            });
        }
        fs::write(self.stamp, fingerprint).map_err(io_err(self.stamp))?;
        Ok(Outcome::Generated)
    }
}

/// Runs `runs` (each [`Codegen::run`]), up to `jobs` at once, taken in
/// order; `generated(i)` is called on this thread as soon as `runs[i]`
/// has run its generator, while the others go on. After a failure no
/// further run starts, and the error returned is that of the first failed
/// run in list order.
pub(crate) fn run_all(
    runs: &[Codegen<'_>],
    jobs: usize,
    mut generated: impl FnMut(usize),
) -> Result<Vec<Outcome>, Error> {
    let jobs = jobs.clamp(1, runs.len().max(1));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let mut outcomes: Vec<Option<Result<Outcome, Error>>> = runs.iter().map(|_| None).collect();
    std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel();
        for _ in 0..jobs {
            let tx = tx.clone();
            let (next, failed) = (&next, &failed);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                if i >= runs.len() || failed.load(Ordering::SeqCst) {
                    break;
                }
                let outcome = runs[i].run();
                if outcome.is_err() {
                    failed.store(true, Ordering::SeqCst);
                }
                if tx.send((i, outcome)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, outcome) in rx {
            if matches!(outcome, Ok(Outcome::Generated)) {
                generated(i);
            }
            outcomes[i] = Some(outcome);
        }
    });
    let mut done = Vec::with_capacity(runs.len());
    let mut first_error = None;
    for outcome in outcomes.into_iter().flatten() {
        match outcome {
            Ok(o) => done.push(o),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

/// Every file under `dir` (recursively; nothing when `dir` does not
/// exist), hidden entries and `__pycache__` skipped, a link to a file
/// counted as a file: `visit` gets each one's path and name. The one walk
/// over the generator's inputs and its output.
pub(crate) fn walk(
    dir: &Path,
    visit: &mut dyn FnMut(PathBuf, &str) -> Result<(), Error>,
) -> Result<(), Error> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(dir)(e)),
    };
    for e in entries {
        let e = e.map_err(io_err(dir))?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "__pycache__" {
            continue;
        }
        let path = e.path();
        let ft = e.file_type().map_err(io_err(&path))?;
        if ft.is_dir() {
            walk(&path, visit)?;
        } else if ft.is_file() || (ft.is_symlink() && path.is_file()) {
            visit(path, &name)?;
        }
    }
    Ok(())
}
