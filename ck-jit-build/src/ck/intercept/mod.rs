//! Interception of a foreign build: for trees whose compile commands only
//! their own build knows (aiter's `op_tests/cpp/mha/compile.py`, CK's
//! CMake), run that build with a fake ROCm home whose `bin/hipcc` is this
//! build script's own binary. Started under that name it runs in shim mode
//! ([`is_shim`], [`shim_main`]): blob compiles are recorded and answered
//! with empty stub objects, everything else goes to the real compiler. The
//! recorded commands become the manifest, one group per distinct command
//! shape (the command with its source and output replaced by `{src}` and
//! `{out}`).
//!
//! No blob is compiled: the foreign build sees stubs for them, and the
//! runtime compiles each blob with its recorded command on first call.
//!
//! # What is recorded
//!
//! A compile is a blob compile when it has exactly one source whose file
//! name matches a pattern given with [`Intercept::blobs`] (default: CK's
//! FMHA blob prefixes, `fmha_fwd_d[0-9]*` and so on) and none given with
//! [`Intercept::exclude`] (default `*_api.cpp`), and it produces an object
//! (not `-E`, `-fsyntax-only`, ...). Its stub is made by the host C
//! compiler (`cc -c -x c /dev/null`, or `-shared` for a shared object), and
//! a depfile naming the source is written when the command asks for one.
//!
//! In the manifest, the command keeps its arguments and working directory
//! (`{root}/...` when under the root); the source becomes `{src}`, the
//! output `-o {out}`, `-c` and dependency-file options (`-MD`, `-MF x`,
//! ...) are dropped and `-fPIC -shared` added. Blobs with equal commands
//! share a group: CK blobs are grouped under their [`Kind`](super::Kind)
//! name with its entry symbol prefix and traits as metadata, other blobs
//! under [`Intercept::group_name`] (numbered `_2`, `_3`, ... when shapes
//! differ).
//!
//! # The fake ROCm home
//!
//! `<work_dir>/rocm` mirrors the real ROCm home (`ROCM_PATH`, else
//! `/opt/rocm`) with symlinks, except `bin/hipcc` (and any other name given
//! with [`Intercept::compiler_name`]), a hard link to (or copy of) the
//! build script binary. The build runs with `ROCM_PATH` and `HIP_PATH` set
//! to the fake home and its `bin` first in `PATH`; the shim undoes these
//! changes before running the real compiler. A CMake build needs
//! `-DCMAKE_CXX_COMPILER=` [`Intercept::fake_compiler`] (or
//! `-DCMAKE_HIP_COMPILER=`) in its command, as CMake does not look up `PATH`
//! for a configured compiler.
//!
//! # The real compiler
//!
//! [`Intercept::real_compiler`], else `CK_JIT_REAL_HIPCC`, else
//! `$ROCM_PATH/bin/hipcc`, else `hipcc` from the original `PATH` (skipping
//! the fake home). Without one, host sources and link steps go to
//! `c++` with HIP-only flags (`--offload-arch=`, `-x hip`, `-fgpu-*`,
//! `-mllvm ...`, ...) removed, which builds host-only code and fails on
//! device code, with the compiler's own message.
//!
//! # Environment
//!
//! The interceptor reads `PATH`, `ROCM_PATH`, `HIP_PATH` and
//! `CK_JIT_REAL_HIPCC` (each announced with `cargo:rerun-if-env-changed`);
//! the shim reads the `CK_JIT_SHIM_*` variables the interceptor sets for
//! it, and `CK_JIT_REAL_HIPCC`.

mod args;
mod shim;

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use shim::{is_shim, shim_main, Record};

use super::error::{io_err, quoted, shown, tail, Error};
use super::name::BlobTraits;
use crate::cargo::CargoOutput;
use crate::env;
use crate::group::BlobGroup;
use crate::manifest::{self, escape, Blob, Manifest, SymbolSpec};
use crate::record::{self, Recorder, Refused};

/// Runs a foreign build with a fake `hipcc` and records its blob compiles.
///
/// # Example
///
/// ```no_run
/// // build.rs, in `main`
/// if ck_jit_build::intercept::is_shim() {
///     ck_jit_build::intercept::shim_main()
/// }
/// ck_jit_build::intercept::Intercept::new(["python3", "op_tests/cpp/mha/compile.py", "--api", "fwd"])
///     .current_dir("third_party/aiter")
///     .blobs("fmha_*.cpp")
///     .write();
/// ```
#[derive(Debug, Clone)]
pub struct Intercept {
    command: Vec<OsString>,
    cwd: Option<PathBuf>,
    root: Option<PathBuf>,
    blobs: Vec<String>,
    exclude: Vec<String>,
    names: Vec<String>,
    real: Option<PathBuf>,
    manifest_compiler: Option<String>,
    shim_program: Option<PathBuf>,
    work_dir: Option<PathBuf>,
    out_dir: Option<PathBuf>,
    envs: Vec<(OsString, OsString)>,
    name: Option<String>,
    group_name: String,
    symbol: SymbolSpec,
    cargo_metadata: bool,
    watch: Vec<PathBuf>,
}

/// What an interception produced.
#[derive(Debug, Clone)]
pub struct Intercepted {
    /// The recorded blob compiles, sorted by blob name.
    pub records: Vec<Record>,
    /// The manifest made from them.
    pub manifest: Manifest,
    /// Where the manifest was written, if it was.
    pub manifest_path: Option<PathBuf>,
    /// The fake ROCm home the build ran with.
    pub fake_home: PathBuf,
    /// The captured output of the build.
    pub build_log: PathBuf,
    /// The build's working directory.
    pub cwd: PathBuf,
}

impl Intercept {
    /// Intercepts the build run by `command` (program and arguments, no
    /// shell).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make", "-j8"]);
    /// ```
    pub fn new<I, S>(command: I) -> Intercept
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Intercept {
            command: command
                .into_iter()
                .map(|a| a.as_ref().to_os_string())
                .collect(),
            cwd: None,
            root: None,
            blobs: Vec::new(),
            exclude: vec!["*_api.cpp".into()],
            names: Vec::new(),
            real: None,
            manifest_compiler: None,
            shim_program: None,
            work_dir: None,
            out_dir: None,
            envs: Vec::new(),
            name: None,
            group_name: "blob".into(),
            symbol: SymbolSpec::Exact("{name}".into()),
            cargo_metadata: true,
            watch: Vec::new(),
        }
    }

    /// The build's working directory (default: the current one).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).current_dir("native");
    /// ```
    pub fn current_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Intercept {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The manifest root: every blob source must be under it. Default: the
    /// build's working directory.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).root("..");
    /// ```
    pub fn root<P: AsRef<Path>>(&mut self, dir: P) -> &mut Intercept {
        self.root = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Adds a file-name pattern (`*`, `?`, `[...]`) of blob sources: a
    /// compile of exactly one source matching it is recorded instead of
    /// run. Default, when none is given: CK's FMHA blob names
    /// (`fmha_fwd_d*`, `fmha_bwd_*`, ...).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).blobs("kernel_*.cu");
    /// ```
    pub fn blobs(&mut self, pattern: &str) -> &mut Intercept {
        self.blobs.push(pattern.to_string());
        self
    }

    /// Adds a file-name pattern of sources that are never blobs; default
    /// `*_api.cpp` (CK's dispatchers).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).exclude("*_host.cpp");
    /// ```
    pub fn exclude(&mut self, pattern: &str) -> &mut Intercept {
        self.exclude.push(pattern.to_string());
        self
    }

    /// Adds a compiler name to intercept (default just `hipcc`), e.g.
    /// `amdclang++`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).compiler_name("hipcc").compiler_name("amdclang++");
    /// ```
    pub fn compiler_name(&mut self, name: &str) -> &mut Intercept {
        self.names.push(name.to_string());
        self
    }

    /// The real compiler for host sources and links (see the module docs
    /// for the default).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).real_compiler("/opt/rocm/bin/hipcc");
    /// ```
    pub fn real_compiler<P: AsRef<Path>>(&mut self, program: P) -> &mut Intercept {
        self.real = Some(program.as_ref().to_path_buf());
        self
    }

    /// The compiler the manifest records for the runtime; default the name
    /// the build invoked (`hipcc`).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).manifest_compiler("/opt/rocm/bin/hipcc");
    /// ```
    pub fn manifest_compiler(&mut self, program: &str) -> &mut Intercept {
        self.manifest_compiler = Some(program.to_string());
        self
    }

    /// The binary installed as the fake compiler; default the running
    /// build script (`std::env::current_exe()`), which must call
    /// [`is_shim`]/[`shim_main`] first thing.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).shim_program("/path/to/build-script");
    /// ```
    pub fn shim_program<P: AsRef<Path>>(&mut self, program: P) -> &mut Intercept {
        self.shim_program = Some(program.as_ref().to_path_buf());
        self
    }

    /// Where the fake home, the log and the build output go; default
    /// `OUT_DIR/ck_jit_intercept`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).work_dir("target/intercept");
    /// ```
    pub fn work_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Intercept {
        self.work_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Where the manifest goes; default `OUT_DIR`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).out_dir("target/ck");
    /// ```
    pub fn out_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut Intercept {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Sets a variable for the build.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).env("GPU_ARCHS", "gfx942");
    /// ```
    pub fn env<K: AsRef<OsStr>, V: AsRef<OsStr>>(&mut self, key: K, value: V) -> &mut Intercept {
        self.envs
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// The cache name; default `CK_JIT_NAME`, else `ck_jit`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).name("aiter_mha");
    /// ```
    pub fn name(&mut self, name: &str) -> &mut Intercept {
        self.name = Some(name.to_string());
        self
    }

    /// The group name for blobs that are not CK FMHA blobs (default
    /// `blob`); CK blobs are grouped by their [`Kind`](super::Kind).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).group_name("kernels");
    /// ```
    pub fn group_name(&mut self, name: &str) -> &mut Intercept {
        self.group_name = name.to_string();
        self
    }

    /// The entry symbol of blobs that are not CK FMHA blobs: exactly this
    /// name (`{name}` is the blob name); the default is `{name}`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).symbol_exact("{name}_entry");
    /// ```
    pub fn symbol_exact(&mut self, symbol: &str) -> &mut Intercept {
        self.symbol = SymbolSpec::Exact(symbol.to_string());
        self
    }

    /// The entry symbol of blobs that are not CK FMHA blobs: the first
    /// function symbol starting with this.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).symbol_prefix("_Z6launch");
    /// ```
    pub fn symbol_prefix(&mut self, prefix: &str) -> &mut Intercept {
        self.symbol = SymbolSpec::Prefix(prefix.to_string());
        self
    }

    /// Adds a file or directory whose change reruns the build script (and so
    /// the intercepted build). Default, when none is given: the build's
    /// working directory. A build that writes its outputs inside a watched
    /// directory makes cargo rerun it on every build; watch its inputs
    /// (sources, generator scripts) instead.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"])
    ///     .watch("native/Makefile")
    ///     .watch("native/src");
    /// ```
    pub fn watch<P: AsRef<Path>>(&mut self, path: P) -> &mut Intercept {
        self.watch.push(path.as_ref().to_path_buf());
        self
    }

    /// Whether to print `cargo:` lines (default true).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).cargo_metadata(false);
    /// ```
    pub fn cargo_metadata(&mut self, print: bool) -> &mut Intercept {
        self.cargo_metadata = print;
        self
    }

    /// The fake compiler's absolute path (`<work_dir>/rocm/bin/hipcc`, the
    /// work directory created if needed), to pass to a build that names its
    /// compiler explicitly (CMake).
    ///
    /// # Example
    ///
    /// ```no_run
    /// use ck_jit_build::intercept::Intercept;
    /// let hipcc = Intercept::new(["true"]).work_dir("target/i").fake_compiler()?;
    /// let mut cmake = Intercept::new(["cmake", "-S", "ck", "-B", "build"]);
    /// cmake.work_dir("target/i").arg_os(format!("-DCMAKE_CXX_COMPILER={}", hipcc.display()));
    /// # Ok::<(), ck_jit_build::ck::Error>(())
    /// ```
    pub fn fake_compiler(&self) -> Result<PathBuf, Error> {
        let work = self.resolve_work_dir(&mut CargoOutput::silent())?;
        fs::create_dir_all(&work).map_err(io_err(&work))?;
        let work = fs::canonicalize(&work).map_err(io_err(&work))?;
        Ok(work.join("rocm").join("bin").join(self.names().remove(0)))
    }

    /// Appends an argument to the command.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).arg_os("-j4");
    /// ```
    pub fn arg_os<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Intercept {
        self.command.push(arg.as_ref().to_os_string());
        self
    }

    fn names(&self) -> Vec<String> {
        if self.names.is_empty() {
            vec![shim::DEFAULT_NAME.to_string()]
        } else {
            self.names.clone()
        }
    }

    fn blob_patterns(&self) -> Vec<String> {
        if self.blobs.is_empty() {
            super::Kind::ALL
                .iter()
                .map(|k| format!("{}[0-9]*", k.file_prefix()))
                .collect()
        } else {
            self.blobs.clone()
        }
    }

    fn resolve_work_dir(&self, cargo: &mut CargoOutput<'_>) -> Result<PathBuf, Error> {
        match &self.work_dir {
            Some(d) => Ok(d.clone()),
            None => Ok(self.resolve_out_dir(cargo)?.join("ck_jit_intercept")),
        }
    }

    fn resolve_out_dir(&self, cargo: &mut CargoOutput<'_>) -> Result<PathBuf, Error> {
        Ok(record::out_dir(
            self.out_dir.as_deref(),
            "is not set; call out_dir() or work_dir() when not running under cargo",
            cargo,
        )?)
    }

    /// Runs the build and makes the manifest, without writing it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let done = ck_jit_build::intercept::Intercept::new(["make"]).work_dir("w").try_run()?;
    /// println!("{} blob compiles recorded", done.records.len());
    /// # Ok::<(), ck_jit_build::ck::Error>(())
    /// ```
    pub fn try_run(&self) -> Result<Intercepted, Error> {
        self.run(&mut CargoOutput::silent())
    }

    /// [`try_run`](Intercept::try_run), then writes the manifest to
    /// `OUT_DIR/ck_jit_manifest.json` (when changed) and prints the
    /// `cargo:` lines.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).try_write()?;
    /// # Ok::<(), ck_jit_build::ck::Error>(())
    /// ```
    pub fn try_write(&self) -> Result<Intercepted, Error> {
        let stdout = io::stdout();
        let mut lock = stdout.lock();
        self.try_write_with_output(&mut lock)
    }

    /// [`try_write`](Intercept::try_write), sending the `cargo:` lines to
    /// `cargo_lines`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let mut lines = Vec::new();
    /// ck_jit_build::intercept::Intercept::new(["make"]).try_write_with_output(&mut lines)?;
    /// # Ok::<(), ck_jit_build::ck::Error>(())
    /// ```
    pub fn try_write_with_output(
        &self,
        cargo_lines: &mut dyn std::io::Write,
    ) -> Result<Intercepted, Error> {
        let mut cargo = if self.cargo_metadata {
            CargoOutput::to(cargo_lines)
        } else {
            CargoOutput::silent()
        };
        let mut done = self.run(&mut cargo)?;
        let watched = if self.watch.is_empty() {
            vec![done.cwd.clone()]
        } else {
            self.watch.clone()
        };
        for path in watched {
            match path.to_str() {
                Some(p) if !p.contains(['\n', '\r']) => cargo.rerun_if_changed(p),
                _ => return Err(crate::Error::RerunPath { path }.into()),
            }
        }
        let out_dir = self.resolve_out_dir(&mut cargo)?;
        let path = record::write(&done.manifest, &out_dir, cargo)?;
        done.manifest_path = Some(path);
        Ok(done)
    }

    /// [`try_write`](Intercept::try_write), panicking on error.
    ///
    /// # Panics
    ///
    /// When the build fails, the log cannot be read, or a recorded compile
    /// cannot become a manifest entry. The message is the [`Error`]'s.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_build::intercept::Intercept::new(["make"]).write();
    /// ```
    pub fn write(&self) -> Intercepted {
        match self.try_write() {
            Ok(done) => done,
            Err(e) => panic!("ck-jit-build: {e}"),
        }
    }

    fn run(&self, cargo: &mut CargoOutput<'_>) -> Result<Intercepted, Error> {
        let Some(program) = self.command.first() else {
            return Err(Error::Intercept {
                why: "empty build command".into(),
            });
        };
        let cwd = match &self.cwd {
            Some(d) => fs::canonicalize(d).map_err(io_err(d))?,
            None => fs::canonicalize(".").map_err(io_err(Path::new(".")))?,
        };
        let work = self.resolve_work_dir(cargo)?;
        fs::create_dir_all(&work).map_err(io_err(&work))?;
        let work = fs::canonicalize(&work).map_err(io_err(&work))?;
        let orig_path = env::var("PATH", cargo);
        let orig_rocm = env::var("ROCM_PATH", cargo);
        let orig_hip = env::var("HIP_PATH", cargo);
        let real = match &self.real {
            Some(r) => Some(r.clone()),
            None => env::var(shim::REAL_HIPCC, cargo)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        };

        let fake_home = work.join("rocm");
        let fake_bin = fake_home.join("bin");
        let names = self.names();
        let real = real.or_else(|| {
            find_real(
                &names[0],
                orig_path.as_deref(),
                orig_rocm.as_deref(),
                &fake_bin,
            )
        });
        self.make_fake_home(&fake_home, orig_rocm.as_deref(), &names)?;

        let log = work.join("compile_log.jsonl");
        File::create(&log).map_err(io_err(&log))?;
        let build_log = work.join("build.log");
        let out = File::create(&build_log).map_err(io_err(&build_log))?;
        let err = out.try_clone().map_err(io_err(&build_log))?;

        let mut path = OsString::from(&fake_bin);
        if let Some(p) = &orig_path {
            path.push(":");
            path.push(p);
        }
        let saved = |v: &Option<OsString>| match v {
            Some(v) => {
                let mut s = OsString::from("+");
                s.push(v);
                s
            }
            None => OsString::from("-"),
        };
        let mut cmd = Command::new(program);
        cmd.args(&self.command[1..])
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .env("PATH", &path)
            .env("ROCM_PATH", &fake_home)
            .env("HIP_PATH", &fake_home)
            .env(shim::SHIM_LOG, &log)
            .env(shim::SHIM_NAMES, names.join(":"))
            .env(shim::SHIM_BLOBS, self.blob_patterns().join("\n"))
            .env(shim::SHIM_EXCLUDE, self.exclude.join("\n"))
            .env(shim::SAVED[0].1, saved(&orig_path))
            .env(shim::SAVED[1].1, saved(&orig_rocm))
            .env(shim::SAVED[2].1, saved(&orig_hip));
        match &real {
            Some(r) => cmd.env(shim::REAL_HIPCC, r),
            None => cmd.env_remove(shim::REAL_HIPCC),
        };
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        let status = cmd.status().map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                Error::ProgramNotFound {
                    program: PathBuf::from(program),
                    purpose: "run the intercepted build",
                }
            } else {
                Error::Spawn {
                    program: PathBuf::from(program),
                    source: e,
                }
            }
        })?;
        if !status.success() {
            let text = fs::read(&build_log).unwrap_or_default();
            return Err(Error::ForeignBuild {
                command: quoted(&self.command),
                status: status.to_string(),
                log: build_log,
                tail: tail(&String::from_utf8_lossy(&text), 2000),
            });
        }

        let records = read_log(&log)?;
        let root = match &self.root {
            Some(r) => fs::canonicalize(r).map_err(|source| crate::Error::Root {
                path: r.clone(),
                source,
            })?,
            None => cwd.clone(),
        };
        let name = record::cache_name(self.name.as_deref(), cargo)?;
        let manifest = self.manifest(&records, &root, name)?;
        Ok(Intercepted {
            records,
            manifest,
            manifest_path: None,
            fake_home,
            build_log,
            cwd,
        })
    }

    /// Builds `<fake_home>`: the real home mirrored by symlinks, and the
    /// intercepted names in `bin` linked to the shim binary.
    fn make_fake_home(
        &self,
        fake_home: &Path,
        orig_rocm: Option<&OsStr>,
        names: &[String],
    ) -> Result<(), Error> {
        if fake_home.exists() {
            fs::remove_dir_all(fake_home).map_err(io_err(fake_home))?;
        }
        let bin = fake_home.join("bin");
        fs::create_dir_all(&bin).map_err(io_err(&bin))?;
        let real_home = orig_rocm
            .map(PathBuf::from)
            .or_else(|| Some(PathBuf::from("/opt/rocm")))
            .filter(|p| p.is_dir());
        if let Some(home) = &real_home {
            mirror(home, fake_home, &["bin"])?;
            let names_os: Vec<&str> = names.iter().map(String::as_str).collect();
            mirror(&home.join("bin"), &bin, &names_os)?;
        }
        let shim = match &self.shim_program {
            Some(p) => p.clone(),
            None => std::env::current_exe().map_err(|e| Error::Intercept {
                why: format!(
                    "cannot find this build script's binary to use as the fake compiler: {e}"
                ),
            })?,
        };
        for n in names {
            let link = bin.join(n);
            if fs::hard_link(&shim, &link).is_err() {
                fs::copy(&shim, &link).map_err(io_err(&link))?;
            }
        }
        Ok(())
    }

    /// The manifest of `records`, paths relative to `root`.
    fn manifest(&self, records: &[Record], root: &Path, name: String) -> Result<Manifest, Error> {
        let root_text = root.to_str().ok_or_else(|| Error::Intercept {
            why: format!("root '{}' is not valid UTF-8", shown(root)),
        })?;
        struct Entry {
            blob: Blob,
            key: GroupKey,
        }
        // (base name, compiler, args, cwd, symbol as (is prefix, text)).
        type GroupKey = (String, String, Vec<String>, String, (bool, String));
        let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
        for r in records {
            let bad = |why: String| Error::Intercept { why };
            let args = r.argv.get(1..).unwrap_or(&[]);
            let a = args::analyse(args);
            let Some(&(source_at, _)) = a.sources.first() else {
                return Err(bad(format!(
                    "recorded command has no source: {}",
                    quoted(&r.argv)
                )));
            };
            let cwd = PathBuf::from(&r.cwd);
            let src =
                fs::canonicalize(cwd.join(&r.source)).map_err(io_err(&cwd.join(&r.source)))?;
            let rel = src
                .strip_prefix(root)
                .ok()
                .and_then(Path::to_str)
                .map(|s| s.replace('\\', "/"))
                .ok_or_else(|| {
                    bad(format!(
                        "source '{}' is outside the root '{}'; set root() to a directory holding it",
                        shown(&src),
                        shown(root)
                    ))
                })?;
            let stem = src
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let compiler = match &self.manifest_compiler {
                Some(c) => c.clone(),
                None => Path::new(&r.argv[0])
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or(shim::DEFAULT_NAME)
                    .to_string(),
            };
            let cwd_template = match cwd.strip_prefix(root) {
                Ok(p) if p.as_os_str().is_empty() => "{root}".to_string(),
                Ok(p) => format!("{{root}}/{}", p.to_string_lossy().replace('\\', "/")),
                Err(_) => r.cwd.clone(),
            };
            let (base, symbol, meta) = match BlobTraits::parse(&stem) {
                Ok(t) => (
                    t.kind.as_str().to_string(),
                    SymbolSpec::Prefix(t.kind.symbol_prefix()),
                    t.meta(),
                ),
                Err(_) => (
                    self.group_name.clone(),
                    self.symbol.clone(),
                    BTreeMap::new(),
                ),
            };
            let symbol = match symbol {
                SymbolSpec::Prefix(p) => (true, p),
                SymbolSpec::Exact(e) => (false, e),
            };
            let key = (
                base,
                compiler,
                args::template(args, source_at),
                cwd_template,
                symbol,
            );
            if let Some(old) = entries.get(&stem) {
                if old.key != key || old.blob.source != rel {
                    return Err(bad(format!(
                        "blob '{}' was compiled twice with different commands (sources '{}' and '{}')",
                        escape(&stem),
                        escape(&old.blob.source),
                        escape(&rel)
                    )));
                }
                continue;
            }
            entries.insert(
                stem.clone(),
                Entry {
                    blob: Blob {
                        name: stem,
                        source: rel,
                        group: 0,
                        symbol: None,
                        meta,
                    },
                    key,
                },
            );
        }

        let mut recorder = Recorder::new(name, root_text);
        let mut groups: BTreeMap<&GroupKey, u32> = BTreeMap::new();
        let mut per_base: BTreeMap<&str, usize> = BTreeMap::new();
        let keys: std::collections::BTreeSet<&GroupKey> =
            entries.values().map(|e| &e.key).collect();
        for key in keys {
            let n = per_base.entry(key.0.as_str()).or_insert(0);
            *n += 1;
            let group_name = if *n == 1 {
                key.0.clone()
            } else {
                format!("{}_{n}", key.0)
            };
            let mut g = BlobGroup::new(&group_name);
            g.compiler(&key.1)
                .args_template(&key.2)
                .symbol(match &key.4 {
                    (true, p) => SymbolSpec::Prefix(p.clone()),
                    (false, e) => SymbolSpec::Exact(e.clone()),
                });
            let rendered = g.render()?;
            // The working directory is already a template (`{root}/...` or
            // absolute).
            let rendered = manifest::Group {
                cwd: Some(key.3.clone()),
                ..rendered
            };
            groups.insert(key, recorder.group(rendered));
        }
        for e in entries.values() {
            let mut blob = e.blob.clone();
            blob.group = groups.get(&e.key).copied().unwrap_or(0);
            recorder.blob(blob).map_err(|refused| match refused {
                Refused::Duplicate(e) => Error::from(e),
                Refused::Name(e) => Error::Intercept { why: e.to_string() },
            })?;
        }
        Ok(recorder.finish()?)
    }
}

/// Symlinks every entry of `from` into `to`, except the names in `skip`.
#[cfg(unix)]
fn mirror(from: &Path, to: &Path, skip: &[&str]) -> Result<(), Error> {
    let entries = match fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err(from)(e)),
    };
    for e in entries {
        let e = e.map_err(io_err(from))?;
        let name = e.file_name();
        if name.to_str().is_some_and(|n| skip.contains(&n)) {
            continue;
        }
        let link = to.join(&name);
        std::os::unix::fs::symlink(e.path(), &link).map_err(io_err(&link))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn mirror(_from: &Path, _to: &Path, _skip: &[&str]) -> Result<(), Error> {
    Ok(())
}

/// The real compiler named `name`: `$ROCM_PATH/bin/<name>`, else the first
/// in `PATH` outside the fake home.
fn find_real(
    name: &str,
    path: Option<&OsStr>,
    rocm: Option<&OsStr>,
    fake_bin: &Path,
) -> Option<PathBuf> {
    let executable = |p: &Path| {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        }
        #[cfg(not(unix))]
        {
            p.is_file()
        }
    };
    if let Some(rocm) = rocm {
        let p = Path::new(rocm).join("bin").join(name);
        if executable(&p) {
            return Some(p);
        }
    }
    for dir in std::env::split_paths(path?) {
        if dir == fake_bin || dir.as_os_str().is_empty() {
            continue;
        }
        let p = dir.join(name);
        if executable(&p) {
            return Some(p);
        }
    }
    None
}

/// The records of the log at `log`, sorted by blob source then argv.
fn read_log(log: &Path) -> Result<Vec<Record>, Error> {
    let text = fs::read_to_string(log).map_err(io_err(log))?;
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Record = serde_json::from_str(line).map_err(|e| Error::Record {
            log: log.to_path_buf(),
            line: i + 1,
            why: e.to_string(),
        })?;
        if r.argv.is_empty() {
            return Err(Error::Record {
                log: log.to_path_buf(),
                line: i + 1,
                why: "empty argv".into(),
            });
        }
        records.push(r);
    }
    records.sort_by(|a, b| {
        let stem = |r: &Record| {
            Path::new(&r.source)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        };
        stem(a)
            .cmp(&stem(b))
            .then_with(|| a.argv.cmp(&b.argv))
            .then_with(|| a.cwd.cmp(&b.cwd))
    });
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_a_record_line_round_trips() {
        let r = Record {
            argv: vec!["hipcc".into(), "-c".into(), "a \"b\".cpp".into()],
            cwd: "/w".into(),
            source: "a \"b\".cpp".into(),
            output: None,
        };
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Record>(&line).unwrap(), r);
    }

    #[test]
    fn default_blob_patterns_are_ck_prefixes() {
        let i = Intercept::new(["make"]);
        let p = i.blob_patterns();
        assert!(p.contains(&"fmha_fwd_d[0-9]*".to_string()));
        assert!(p.contains(&"fmha_bwd_dot_do_o_d[0-9]*".to_string()));
    }
}
