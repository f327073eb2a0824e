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
//! FMHA blobs, `fmha_*_d[0-9]*`) and none given with
//! [`Intercept::exclude`] (default `*_api.cpp`), and it produces an object
//! (not `-E`, `-fsyntax-only`, ...). It is answered with a copy of an
//! empty object made once per interception by the host C compiler (`cc -c
//! -x c /dev/null`, or `-shared` for a shared object: about 2 ms a blob), and
//! a depfile naming the source is written when the command asks for one.
//!
//! In the manifest, the command keeps its arguments and working directory
//! (`{root}/...` when under the root); the source becomes `{src}`, the
//! output `-o {out}`, `-c` and dependency-file options (`-MD`, `-MF x`,
//! ...) are dropped and `-fPIC -shared` added; every path under the root,
//! include directories too, is written `{root}/...`, so the manifest moves
//! with its tree. Blobs with equal commands share a group. A CK blob — one
//! whose command includes a directory with CK's `fmha_fwd.hpp` or
//! `fmha_bwd.hpp` and which specialises a template for a traits type those
//! headers declare — is described by its declarations, as the CK preset
//! does: its group is its kind and architecture family (`fwd_gfx9`,
//! `batch_prefill`), with the entry's symbol prefix, one family per kind,
//! CK's neutral values, and the traits as metadata. Other blobs go to
//! [`Intercept::group_name`] (numbered `_2`, `_3`, ... when shapes differ).
//!
//! A build that compiles no blob is an error, unless an earlier
//! interception in the same work directory recorded some: blobs this build
//! did not compile again (their objects were up to date, as on a rerun in
//! which CK's generator leaves unchanged files alone) keep their earlier
//! invocations while their sources exist ([`Intercepted::kept`]).
//!
//! # Lazy libraries
//!
//! With [`Intercept::lazy_libraries`], a link that takes blob objects is
//! made lazy instead of linking the empty ones (see [`Link`]): the blobs'
//! specialisations are stood in for by stubs that compile and load each
//! blob on its first call, through the manifest this interception writes.
//! aiter's `libmha_fwd.so` and `libmha_bwd.so` come out exporting aiter's
//! API, with CK's dispatchers compiled unchanged.
//!
//! # The fake ROCm home
//!
//! `<work_dir>/rocm` mirrors the real ROCm home (`ROCM_PATH`, else
//! `/opt/rocm`) with symlinks, except `bin/hipcc` (and any other name given
//! with [`Intercept::compiler_name`]), a hard link to (or copy of) the
//! build script binary. The build runs with `ROCM_PATH`, `ROCM_HOME` and
//! `HIP_PATH` set to the fake home and its `bin` first in `PATH` (with lazy
//! libraries also `CXX` and `c++`, the driver aiter links with); the shim
//! undoes these changes before running the real compiler. With
//! [`Intercept::hip_version`] (record-only mode, for machines without ROCm)
//! the home is made from nothing instead, for that HIP version. A CMake build needs
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
//! The interceptor reads `PATH`, `ROCM_PATH`, `ROCM_HOME`, `HIP_PATH`,
//! `CXX` and `CK_JIT_REAL_HIPCC` (each announced with
//! `cargo:rerun-if-env-changed`);
//! the shim reads the `CK_JIT_SHIM_*` variables the interceptor sets for
//! it, and `CK_JIT_REAL_HIPCC`.

mod args;
mod link;
mod probe;
mod protocol;
mod real;
mod shim;

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use link::Link;
pub use protocol::Invocation;
pub use shim::{is_shim, shim_main};

use super::error::{io_err, quoted, shown, tail, Error};
use super::generated::{describe_blob, describe_source};
use super::preset::{family_of, group_base, neutral_of};
use super::symbol::mangled_template_prefix;
use super::vocab::{BlobDecl, Vocabulary};
use ck_jit_build::manifest::{self, escape, Blob, Manifest, SymbolSpec};
use ck_jit_build::assemble::{self, Assembler, Refused};
use ck_jit_build::BlobGroup;
use ck_jit_build::CargoOutput;

/// The default blob file-name patterns: CK's FMHA blobs, which all name
/// their head dimension (`fmha_fwd_d128_...`, `fmha_batch_prefill_d64_...`,
/// `fmha_bwd_convert_dq_d256_...`).
const DEFAULT_BLOBS: &[&str] = &["fmha_*_d[0-9]*"];

/// Runs a foreign build with a fake `hipcc` and records its blob compiles.
///
/// # Example
///
/// ```no_run
/// // build.rs, in `main`
/// if ck_jit_ck::intercept::is_shim() {
///     ck_jit_ck::intercept::shim_main()
/// }
/// ck_jit_ck::intercept::Intercept::new(["python3", "op_tests/cpp/mha/compile.py", "--api", "fwd"])
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
    hip_version: Option<String>,
    drops: Vec<String>,
    runtime_lib: Option<PathBuf>,
}

/// What an interception produced.
#[derive(Debug, Clone)]
pub struct Intercepted {
    /// The recorded blob compiles, sorted by blob name.
    pub invocations: Vec<Invocation>,
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
    /// The links made lazy ([`Intercept::lazy_libraries`]), in the order
    /// the build ran them.
    pub links: Vec<Link>,
    /// Blobs of an earlier interception kept because this build did not
    /// compile them again (its objects were up to date).
    pub kept: usize,
}

impl Intercept {
    /// Intercepts the build run by `command` (program and arguments, no
    /// shell).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::intercept::Intercept::new(["make", "-j8"]);
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
            hip_version: None,
            drops: Vec::new(),
            runtime_lib: None,
        }
    }

    /// Record-only mode, for machines without ROCm: the fake ROCm home is
    /// made from nothing rather than mirrored from an installed one, and
    /// states HIP `version` (`6.4.43482`): `.info/version`,
    /// `bin/hipconfig` and `share/hip/version` give it, `lib/libamdhip64.so`
    /// is a stand-in, `bin/rocminfo` says there is no GPU (set the build's
    /// architecture, e.g. `.env("GPU_ARCHS", "gfx942")` for aiter), and the
    /// fake `hipcc` answers the build's flag probes and `--version` itself,
    /// as that version's compiler (see the module docs). The recorded
    /// commands are those a ROCm of that version would run.
    ///
    /// Host sources still need a compiler: [`real_compiler`](Intercept::real_compiler)
    /// or `CK_JIT_REAL_HIPCC`, else `c++` without HIP flags.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::intercept::Intercept::new(["python3", "compile.py"])
    ///     .hip_version("6.4.43482")
    ///     .env("GPU_ARCHS", "gfx942");
    /// ```
    pub fn hip_version(&mut self, version: &str) -> &mut Intercept {
        self.hip_version = Some(version.to_string());
        self
    }

    /// Drops an argument (or a sequence, `"-mllvm -some-option=1"`) from
    /// the commands given to the real compiler: for a flag the recorded
    /// ROCm version has and the compiler at hand lacks. The recorded blob
    /// commands keep it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::intercept::Intercept::new(["make"])
    ///     .real_compiler_drops("-mllvm -amdgpu-coerce-illegal-types=1");
    /// ```
    pub fn real_compiler_drops(&mut self, args: &str) -> &mut Intercept {
        self.drops
            .push(args.split_whitespace().collect::<Vec<_>>().join(" "));
        self
    }

    /// Lazy libraries: every link of the build that takes blob objects
    /// (a shared library, a program) is made lazy instead, see [`Link`]:
    /// the blobs are left out, stubs standing in for their specialisations
    /// are compiled with the real HIP compiler and linked, with `runtime`,
    /// the ck-jit C ABI library (`libck_jit_capi.a` from
    /// `cargo build --release -p ck-jit-capi`; a `.a` has its symbols kept
    /// inside the library). The stubs find their blobs in the manifest this
    /// interception writes (`OUT_DIR/ck_jit_manifest.json`), so each blob
    /// is compiled on its first call. The build's C++ driver is
    /// intercepted too (`CXX` and `c++` in `PATH`), as builds such as
    /// aiter's link with it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::intercept::Intercept::new(["make"])
    ///     .lazy_libraries("target/release/libck_jit_capi.a");
    /// ```
    pub fn lazy_libraries<P: AsRef<Path>>(&mut self, runtime: P) -> &mut Intercept {
        self.runtime_lib = Some(runtime.as_ref().to_path_buf());
        self
    }

    /// The build's working directory (default: the current one).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::intercept::Intercept::new(["make"]).current_dir("native");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).root("..");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).blobs("kernel_*.cu");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).exclude("*_host.cpp");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).compiler_name("hipcc").compiler_name("amdclang++");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).real_compiler("/opt/rocm/bin/hipcc");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).manifest_compiler("/opt/rocm/bin/hipcc");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).shim_program("/path/to/build-script");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).work_dir("target/intercept");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).out_dir("target/ck");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).env("GPU_ARCHS", "gfx942");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).name("aiter_mha");
    /// ```
    pub fn name(&mut self, name: &str) -> &mut Intercept {
        self.name = Some(name.to_string());
        self
    }

    /// The group name for blobs that are not CK FMHA blobs (default
    /// `blob`); CK blobs are grouped by their kind (what their specialised
    /// names share, `fwd` for `fmha_fwd_`).
    ///
    /// # Example
    ///
    /// ```no_run
    /// ck_jit_ck::intercept::Intercept::new(["make"]).group_name("kernels");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).symbol_exact("{name}_entry");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).symbol_prefix("_Z6launch");
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
    /// ck_jit_ck::intercept::Intercept::new(["make"])
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).cargo_metadata(false);
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
    /// use ck_jit_ck::intercept::Intercept;
    /// let hipcc = Intercept::new(["true"]).work_dir("target/i").fake_compiler()?;
    /// let mut cmake = Intercept::new(["cmake", "-S", "ck", "-B", "build"]);
    /// cmake.work_dir("target/i").arg_os(format!("-DCMAKE_CXX_COMPILER={}", hipcc.display()));
    /// # Ok::<(), ck_jit_ck::Error>(())
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).arg_os("-j4");
    /// ```
    pub fn arg_os<S: AsRef<OsStr>>(&mut self, arg: S) -> &mut Intercept {
        self.command.push(arg.as_ref().to_os_string());
        self
    }

    fn names(&self) -> Vec<String> {
        if self.names.is_empty() {
            vec![protocol::DEFAULT_NAME.to_string()]
        } else {
            self.names.clone()
        }
    }

    fn blob_patterns(&self) -> Vec<String> {
        if self.blobs.is_empty() {
            DEFAULT_BLOBS.iter().map(|p| p.to_string()).collect()
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
        Ok(assemble::out_dir(
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
    /// let done = ck_jit_ck::intercept::Intercept::new(["make"]).work_dir("w").try_run()?;
    /// println!("{} blob compiles recorded", done.invocations.len());
    /// # Ok::<(), ck_jit_ck::Error>(())
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).try_write()?;
    /// # Ok::<(), ck_jit_ck::Error>(())
    /// ```
    pub fn try_write(&self) -> Result<Intercepted, Error> {
        assemble::to_stdout(|lines| self.try_write_with_output(lines))
    }

    /// [`try_write`](Intercept::try_write), sending the `cargo:` lines to
    /// `cargo_lines`.
    ///
    /// # Example
    ///
    /// ```no_run
    /// let mut lines = Vec::new();
    /// ck_jit_ck::intercept::Intercept::new(["make"]).try_write_with_output(&mut lines)?;
    /// # Ok::<(), ck_jit_ck::Error>(())
    /// ```
    pub fn try_write_with_output(
        &self,
        cargo_lines: &mut dyn std::io::Write,
    ) -> Result<Intercepted, Error> {
        let mut cargo = CargoOutput::to_if(self.cargo_metadata, cargo_lines);
        let mut done = self.run(&mut cargo)?;
        let watched = if self.watch.is_empty() {
            vec![done.cwd.clone()]
        } else {
            self.watch.clone()
        };
        for path in watched {
            match path.to_str() {
                Some(p) if !p.contains(['\n', '\r']) => cargo.rerun_if_changed(p),
                _ => return Err(ck_jit_build::Error::RerunPath { path }.into()),
            }
        }
        let out_dir = self.resolve_out_dir(&mut cargo)?;
        let path = assemble::write(&done.manifest, &out_dir, cargo)?;
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
    /// ck_jit_ck::intercept::Intercept::new(["make"]).write();
    /// ```
    pub fn write(&self) -> Intercepted {
        assemble::or_panic("ck-jit-ck", self.try_write())
    }

    /// Runs the build under the fake compiler and turns what it recorded
    /// into a manifest: the steps below, in order.
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
        // The real compiler set explicitly is not looked up (nor announced).
        let orig = Original::read(cargo, self.real.is_none());
        let ws = self.prepare(&work, &orig)?;
        let cmd = self.build_command(program, &cwd, &ws, &orig, cargo)?;
        self.run_build(cmd, program, &ws.build_log)?;
        let (invocations, kept) = self.merge_invocations(&ws, &work, cargo)?;
        let links = read_links(&ws.links_log)?;
        let root = match &self.root {
            Some(r) => fs::canonicalize(r).map_err(|source| ck_jit_build::Error::Root {
                path: r.clone(),
                source,
            })?,
            None => cwd.clone(),
        };
        let name = assemble::cache_name(self.name.as_deref(), cargo)?;
        let read = read_sources(&ws.links_log);
        let mut manifest = self.manifest(&invocations, &root, name, &read)?;
        add_together(&mut manifest, &ws.links_log)?;
        Ok(Intercepted {
            invocations,
            manifest,
            manifest_path: None,
            fake_home: ws.fake_home,
            build_log: ws.build_log,
            cwd,
            links,
            kept,
        })
    }

    /// The fake ROCm home, the stub objects blob compiles are answered
    /// with, and fresh logs, in `work`; the real compiler found.
    fn prepare(&self, work: &Path, orig: &Original) -> Result<Workspace, Error> {
        let fake_home = work.join("rocm");
        let fake_bin = fake_home.join("bin");
        let names = self.names();
        let real = self.real.clone().or_else(|| orig.real.clone()).or_else(|| {
            // In record-only mode no ROCm home is looked at.
            let rocm = if self.hip_version.is_some() {
                None
            } else {
                orig.rocm.as_deref().or(orig.rocm_home.as_deref())
            };
            find_real(&names[0], orig.path.as_deref(), rocm, &fake_bin)
        });
        let mut shim_names = names;
        if self.runtime_lib.is_some() {
            shim_names.push("c++".into());
        }
        let real_home = match &self.hip_version {
            Some(_) => None,
            None => orig
                .rocm
                .as_deref()
                .or(orig.rocm_home.as_deref())
                .map(PathBuf::from)
                .or_else(|| Some(PathBuf::from("/opt/rocm")))
                .filter(|p| p.is_dir()),
        };
        self.make_fake_home(&fake_home, real_home.as_deref(), &shim_names)?;
        let stubs_dir = work.join("stub-objects");
        fs::create_dir_all(&stubs_dir).map_err(io_err(&stubs_dir))?;
        for (file, relocatable) in [(shim::STUB_OBJECT, true), (shim::STUB_SHARED, false)] {
            let path = stubs_dir.join(file);
            if !path.is_file() {
                shim::make_stub_object(&path, relocatable)
                    .map_err(|why| Error::Intercept { why })?;
            }
        }
        let log = work.join("compile_log.jsonl");
        File::create(&log).map_err(io_err(&log))?;
        let links_log = work.join("links.jsonl");
        File::create(&links_log).map_err(io_err(&links_log))?;
        Ok(Workspace {
            fake_home,
            fake_bin,
            stubs_dir,
            log,
            links_log,
            previous: work.join("records.jsonl"),
            build_log: work.join("build.log"),
            real,
            shim_names,
        })
    }

    /// The build's command: its output to the build log, `PATH` and the
    /// ROCm variables pointing at the fake home, and what the fake
    /// compiler needs to know (the protocol's variables), with the
    /// variables it changed saved for the real compiler.
    fn build_command(
        &self,
        program: &OsStr,
        cwd: &Path,
        ws: &Workspace,
        orig: &Original,
        cargo: &mut CargoOutput<'_>,
    ) -> Result<Command, Error> {
        let out = File::create(&ws.build_log).map_err(io_err(&ws.build_log))?;
        let err = out.try_clone().map_err(io_err(&ws.build_log))?;
        let mut path = OsString::from(&ws.fake_bin);
        if let Some(p) = &orig.path {
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
            .current_dir(cwd)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .env("PATH", &path)
            .env("ROCM_PATH", &ws.fake_home)
            .env("HIP_PATH", &ws.fake_home)
            .env("ROCM_HOME", &ws.fake_home)
            .env(protocol::SHIM_LOG, &ws.log)
            .env(protocol::SHIM_NAMES, ws.shim_names.join(":"))
            .env(protocol::SHIM_BLOBS, self.blob_patterns().join("\n"))
            .env(protocol::SHIM_EXCLUDE, self.exclude.join("\n"))
            .env(protocol::SHIM_STUBS, &ws.stubs_dir)
            .env(protocol::SHIM_DROP, self.drops.join("\n"))
            .env(protocol::SHIM_LINKS, &ws.links_log)
            .env(protocol::SHIM_PREVIOUS, &ws.previous);
        for ((_, var), value) in protocol::SAVED.iter().zip([
            &orig.path,
            &orig.rocm,
            &orig.hip,
            &orig.rocm_home,
            &orig.cxx,
        ]) {
            cmd.env(var, saved(value));
        }
        match &ws.real {
            Some(r) => cmd.env(protocol::REAL_HIPCC, r),
            None => cmd.env_remove(protocol::REAL_HIPCC),
        };
        match &self.hip_version {
            Some(v) => cmd.env(protocol::SHIM_HIP_VERSION, v),
            None => cmd.env_remove(protocol::SHIM_HIP_VERSION),
        };
        match &self.runtime_lib {
            Some(lib) => {
                let lib = fs::canonicalize(lib).map_err(|e| Error::Intercept {
                    why: format!(
                        "the ck-jit runtime library '{}' for lazy libraries: {e} (build it \
                         with `cargo build --release -p ck-jit-capi`)",
                        shown(lib)
                    ),
                })?;
                let manifest = self.resolve_out_dir(cargo)?.join(manifest::MANIFEST_FILE);
                let manifest = std::path::absolute(&manifest).map_err(io_err(&manifest))?;
                cmd.env(protocol::SHIM_RUNTIME_LIB, lib)
                    .env(protocol::SHIM_LAZY_MANIFEST, manifest)
                    .env("CXX", ws.fake_bin.join("c++"));
            }
            None => {
                cmd.env_remove(protocol::SHIM_RUNTIME_LIB)
                    .env_remove(protocol::SHIM_LAZY_MANIFEST);
            }
        }
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        Ok(cmd)
    }

    /// Runs the build; a failure is an error with the end of its log.
    fn run_build(&self, mut cmd: Command, program: &OsStr, build_log: &Path) -> Result<(), Error> {
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
        if status.success() {
            return Ok(());
        }
        let text = fs::read(build_log).unwrap_or_default();
        Err(Error::ForeignBuild {
            command: quoted(&self.command),
            status: status.to_string(),
            log: build_log.to_path_buf(),
            tail: tail(&String::from_utf8_lossy(&text), 2000),
        })
    }

    /// This build's invocations, plus the earlier interception's for blobs
    /// this build did not compile again (their objects were up to date)
    /// while their sources exist; kept for the next run. Returns them and
    /// how many came from the earlier run. No invocation at all is an error.
    fn merge_invocations(
        &self,
        ws: &Workspace,
        work: &Path,
        cargo: &mut CargoOutput<'_>,
    ) -> Result<(Vec<Invocation>, usize), Error> {
        let fresh = read_log(&ws.log)?;
        let mut by_stem: BTreeMap<String, Invocation> = BTreeMap::new();
        let earlier = if ws.previous.is_file() {
            read_log(&ws.previous)?
        } else {
            Vec::new()
        };
        for r in earlier {
            if Path::new(&r.cwd).join(&r.source).is_file() {
                by_stem.insert(stem_of(&r), r);
            }
        }
        let fresh_stems: std::collections::BTreeSet<String> = fresh.iter().map(stem_of).collect();
        let kept = by_stem.keys().filter(|k| !fresh_stems.contains(*k)).count();
        for r in fresh {
            by_stem.insert(stem_of(&r), r);
        }
        let invocations: Vec<Invocation> = by_stem.into_values().collect();
        if invocations.is_empty() {
            return Err(Error::Intercept {
                why: format!(
                    "the build `{}` compiled no blob: nothing was recorded, and no earlier \
                     interception is kept in '{}'. Did it use a compiler other than the fake \
                     one (a hard-coded path, a CMake cache from another run), or find every \
                     object up to date? Its output is in '{}'",
                    quoted(&self.command),
                    shown(work),
                    shown(&ws.build_log)
                ),
            });
        }
        if kept > 0 {
            cargo.warning_from(
                "ck-jit-ck",
                &format!(
                "the intercepted build compiled {} blob(s) again; {kept} more are kept from the \
                 earlier interception in '{}'",
                invocations.len() - kept,
                shown(work)
            ),
            );
        }
        let mut text = String::new();
        for r in &invocations {
            text.push_str(
                &serde_json::to_string(r).map_err(|e| Error::Intercept { why: e.to_string() })?,
            );
            text.push('\n');
        }
        assemble::write_if_changed(&ws.previous, &text).map_err(io_err(&ws.previous))?;
        Ok((invocations, kept))
    }

    /// Builds `<fake_home>`: the real home mirrored by symlinks, and the
    /// intercepted names in `bin` linked to the shim binary.
    fn make_fake_home(
        &self,
        fake_home: &Path,
        real_home: Option<&Path>,
        names: &[String],
    ) -> Result<(), Error> {
        if fake_home.exists() {
            fs::remove_dir_all(fake_home).map_err(io_err(fake_home))?;
        }
        let bin = fake_home.join("bin");
        fs::create_dir_all(&bin).map_err(io_err(&bin))?;
        if let Some(home) = real_home {
            mirror(home, fake_home, &["bin"])?;
            let names_os: Vec<&str> = names.iter().map(String::as_str).collect();
            mirror(&home.join("bin"), &bin, &names_os)?;
        }
        if let Some(version) = &self.hip_version {
            synthetic_home(fake_home, version)?;
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

    /// The manifest of `invocations`, paths relative to `root`.
    /// Blobs the lazy links already read (`read`, by canonical path) are
    /// described from what they read, not read again.
    fn manifest(
        &self,
        invocations: &[Invocation],
        root: &Path,
        name: String,
        read: &HashMap<PathBuf, protocol::ReadSource>,
    ) -> Result<Manifest, Error> {
        let root_text = root.to_str().ok_or_else(|| Error::Intercept {
            why: format!("root '{}' is not valid UTF-8", shown(root)),
        })?;
        // The vocabulary of each CK example directory the blobs include.
        let mut vocabs: BTreeMap<PathBuf, Option<Vocabulary>> = BTreeMap::new();
        let mut entries: BTreeMap<String, Entry> = BTreeMap::new();
        for r in invocations {
            let (stem, entry) = self.entry(r, root, root_text, read, &mut vocabs)?;
            let key = &entry.key;
            let rel = &entry.blob.source;
            if let Some(old) = entries.get(&stem) {
                if old.key != *key || old.blob.source != *rel {
                    return Err(Error::Intercept { why: format!(
                        "blob '{}' was compiled twice with different commands (sources '{}' and '{}')",
                        escape(&stem),
                        escape(&old.blob.source),
                        escape(rel)
                    ) });
                }
                continue;
            }
            entries.insert(stem, entry);
        }
        assemble(entries, name, root_text)
    }

    /// The blob of one recorded command, named by its source's stem, with
    /// the key of the group it belongs to and what it declares.
    fn entry(
        &self,
        r: &Invocation,
        root: &Path,
        root_text: &str,
        read: &HashMap<PathBuf, protocol::ReadSource>,
        vocabs: &mut BTreeMap<PathBuf, Option<Vocabulary>>,
    ) -> Result<(String, Entry), Error> {
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
                .unwrap_or(protocol::DEFAULT_NAME)
                .to_string(),
        };
        let cwd_template = match cwd.strip_prefix(root) {
            Ok(p) if p.as_os_str().is_empty() => "{root}".to_string(),
            Ok(p) => format!("{{root}}/{}", p.to_string_lossy().replace('\\', "/")),
            Err(_) => r.cwd.clone(),
        };
        // What the blob declares, read with the vocabulary of the CK
        // headers its command includes.
        let decl = blob_decl(args, &cwd, &src, read, vocabs)?;
        let (base, symbol, meta) = match &decl {
            Some(d) => (
                group_base(&d.kind, d.arch.as_deref()),
                SymbolSpec::Prefix(mangled_template_prefix(&d.entry)),
                d.meta.clone(),
            ),
            None => (
                self.group_name.clone(),
                self.symbol.clone(),
                BTreeMap::new(),
            ),
        };
        let symbol = match symbol {
            SymbolSpec::Prefix(p) => (true, p),
            SymbolSpec::Exact(e) => (false, e),
        };
        let template: Vec<String> = args::template(args, source_at)
            .iter()
            .map(|a| relocate(a, root_text))
            .collect();
        let key = (base, compiler, template, cwd_template, symbol);
        let entry = Entry {
            blob: Blob {
                name: stem.clone(),
                source: rel,
                group: 0,
                symbol: None,
                meta,
            },
            key,
            decl,
        };
        Ok((stem, entry))
    }
}

/// A blob of the manifest `Intercept::manifest` builds, with its
/// group's key and what it declares.
struct Entry {
    blob: Blob,
    key: GroupKey,
    decl: Option<BlobDecl>,
}

/// (base name, compiler, args, cwd, symbol as (is prefix, text)).
type GroupKey = (String, String, Vec<String>, String, (bool, String));

/// What the blob `src` declares, read with the vocabulary of the CK
/// headers its command includes (kept in `vocabs` per directory); what the
/// lazy links already read (`read`) is not read again.
fn blob_decl(
    args: &[String],
    cwd: &Path,
    src: &Path,
    read: &HashMap<PathBuf, protocol::ReadSource>,
    vocabs: &mut BTreeMap<PathBuf, Option<Vocabulary>>,
) -> Result<Option<BlobDecl>, Error> {
    Ok(match ck_example_dir(args, cwd) {
    Some(dir) => {
        if !vocabs.contains_key(&dir) {
            vocabs.insert(dir.clone(), Vocabulary::read(&dir).ok());
        }
        match vocabs.get(&dir).and_then(Option::as_ref) {
            Some(vocab) => match read.get(src).filter(|r| {
                protocol::file_stamp(src) == Some((r.len, r.mtime_ns))
            }) {
                Some(r) => describe_source(vocab, &r.source, src)?,
                None => {
                    let text = fs::read_to_string(src).map_err(io_err(src))?;
                    describe_blob(vocab, &text, src)?
                }
            },
            None => None,
        }
    }
    None => None,
})
}

/// The manifest of `entries`: one group per key, numbered when a base
/// name has several, each blob in its group.
fn assemble(entries: BTreeMap<String, Entry>, name: String, root_text: &str) -> Result<Manifest, Error> {
    let mut assembler = Assembler::new(name, root_text);
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
        g.compiler(&key.1).args_template(&key.2);
        match &key.4 {
            (true, p) => g.symbol_prefix(p),
            (false, e) => g.symbol_exact(e),
        };
        let rendered = g.render()?;
        // The working directory is already a template (`{root}/...` or
        // absolute).
        let decls: Vec<&BlobDecl> = entries
            .values()
            .filter(|e| &e.key == key)
            .filter_map(|e| e.decl.as_ref())
            .collect();
        // A CK kind is one family whatever the architecture or command,
        // and a query that leaves out a trait the blobs vary in gets
        // its neutral value, as with the CK preset.
        let family = decls.first().and_then(|d| family_of(&d.kind, &group_name));
        let rendered = manifest::Group {
            cwd: Some(key.3.clone()),
            family,
            neutral: neutral_of(decls.into_iter()),
            ..rendered
        };
        groups.insert(key, assembler.group(rendered));
    }
    for e in entries.values() {
        let mut blob = e.blob.clone();
        blob.group = groups.get(&e.key).copied().unwrap_or(0);
        assembler.blob(blob).map_err(|refused| match refused {
            Refused::Duplicate(e) => Error::from(e),
            Refused::Name(e) => Error::Intercept { why: e.to_string() },
        })?;
    }
    Ok(assembler.finish()?)
}

/// `arg` with the root's absolute path, where it starts the argument or
/// the value of an option (`-I/root/x`, `--flag=/root/x`), written as
/// `{root}`: a manifest that moves with its tree.
fn relocate(arg: &str, root: &str) -> String {
    let root = root.trim_end_matches('/');
    if root.is_empty() {
        return arg.to_string();
    }
    let at = |i: usize| {
        let rest = &arg[i..];
        rest.starts_with(root) && (rest.len() == root.len() || rest.as_bytes()[root.len()] == b'/')
    };
    if at(0) {
        return format!("{{root}}{}", &arg[root.len()..]);
    }
    if arg.starts_with('-') {
        let prefix_end = arg.find('=').map(|i| i + 1).or_else(|| {
            [
                "-isystem",
                "-iquote",
                "-idirafter",
                "-I",
                "-L",
                "-include",
                "-imacros",
            ]
            .iter()
            .find(|p| arg.starts_with(*p) && at(p.len()))
            .map(|p| p.len())
        });
        if let Some(i) = prefix_end.filter(|&i| at(i)) {
            return format!("{}{{root}}{}", &arg[..i], &arg[i + root.len()..]);
        }
    }
    arg.to_string()
}

/// The CK example directory (with `fmha_fwd.hpp` or `fmha_bwd.hpp`) among
/// the include directories of a compile run in `cwd`.
fn ck_example_dir(args: &[String], cwd: &Path) -> Option<PathBuf> {
    let mut i = 0;
    while i < args.len() {
        let dir = match args[i].as_str() {
            "-I" | "-isystem" | "-iquote" => {
                i += 1;
                args.get(i).map(String::as_str)
            }
            a => a.strip_prefix("-I").filter(|d| !d.is_empty()),
        };
        i += 1;
        if let Some(d) = dir {
            let d = cwd.join(d);
            if d.join("fmha_fwd.hpp").is_file() || d.join("fmha_bwd.hpp").is_file() {
                return Some(d);
            }
        }
    }
    None
}

/// The blob name of an invocation: its source's file stem.
/// The variables the interceptor changes for the build, as they were,
/// and the real compiler the environment names.
struct Original {
    path: Option<OsString>,
    rocm: Option<OsString>,
    hip: Option<OsString>,
    rocm_home: Option<OsString>,
    cxx: Option<OsString>,
    real: Option<PathBuf>,
}

impl Original {
    fn read(cargo: &mut CargoOutput<'_>, real_from_env: bool) -> Original {
        Original {
            path: cargo.var("PATH"),
            rocm: cargo.var("ROCM_PATH"),
            hip: cargo.var("HIP_PATH"),
            rocm_home: cargo.var("ROCM_HOME"),
            cxx: cargo.var("CXX"),
            real: if real_from_env {
                cargo
                    .var(protocol::REAL_HIPCC)
                    .filter(|v| !v.is_empty())
                    .map(PathBuf::from)
            } else {
                None
            },
        }
    }
}

/// Where an interception keeps its files, and what it runs the build with.
struct Workspace {
    fake_home: PathBuf,
    fake_bin: PathBuf,
    stubs_dir: PathBuf,
    /// The fake compiler's invocations of this run.
    log: PathBuf,
    /// The lazy links made (and, beside it, `.together`).
    links_log: PathBuf,
    /// The invocations kept from the run before.
    previous: PathBuf,
    build_log: PathBuf,
    real: Option<PathBuf>,
    shim_names: Vec<String>,
}

/// What the lazy links read of each blob (`<links log>.sources`), by
/// canonical path; nothing when no link read any (a line that does not
/// parse is skipped: the blob is read again).
fn read_sources(links_log: &Path) -> HashMap<PathBuf, protocol::ReadSource> {
    let Ok(text) = fs::read_to_string(protocol::sources_log(links_log)) else {
        return HashMap::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<protocol::ReadSource>(l).ok())
        .map(|r| (r.path.clone(), r))
        .collect()
}

/// Adds to `manifest` what the lazy links' dispatchers call together
/// (`<links log>.together`, one JSON list of sets a line), keeping the
/// blobs the manifest has.
fn add_together(manifest: &mut Manifest, links_log: &Path) -> Result<(), Error> {
    let Ok(text) = fs::read_to_string(format!("{}.together", links_log.display())) else {
        return Ok(());
    };
    let mut sets: Vec<Vec<String>> = Vec::new();
    for line in text.lines() {
        if let Ok(s) = serde_json::from_str::<Vec<Vec<String>>>(line) {
            sets.extend(s.into_iter().map(|set| {
                set.into_iter()
                    .filter(|n| manifest.blob(n).is_some())
                    .collect::<Vec<_>>()
            }));
        }
    }
    sets.retain(|s| !s.is_empty());
    manifest
        .set_together(sets)
        .map_err(|e| Error::Intercept { why: e.to_string() })
}

fn stem_of(r: &Invocation) -> String {
    Path::new(&r.source)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The links made lazy, from the link log.
fn read_links(log: &Path) -> Result<Vec<Link>, Error> {
    let text = fs::read_to_string(log).map_err(io_err(log))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(serde_json::from_str(line).map_err(|e| Error::InterceptLog {
            log: log.to_path_buf(),
            line: i + 1,
            why: e.to_string(),
        })?);
    }
    Ok(out)
}

/// Writes what a ROCm home of HIP `version` has that builds read, without
/// ROCm: version files, `hipconfig`, `rocminfo` and a stand-in
/// `libamdhip64.so`.
fn synthetic_home(home: &Path, version: &str) -> Result<(), Error> {
    if version.is_empty()
        || !version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '+'))
    {
        return Err(Error::Intercept {
            why: format!(
                "HIP version '{}' is not a version (digits, letters, '.', '-', '_', '+')",
                escape(version)
            ),
        });
    }
    let mut parts = version.split(['.', '-']);
    let major = parts.next().unwrap_or("0");
    let minor = parts.next().unwrap_or("0");
    let patch = parts.next().unwrap_or("0");
    let write = |rel: &str, text: String, exec: bool| -> Result<(), Error> {
        let path = home.join(rel);
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        fs::write(&path, text).map_err(io_err(&path))?;
        #[cfg(unix)]
        if exec {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).map_err(io_err(&path))?;
        }
        #[cfg(not(unix))]
        let _ = exec;
        Ok(())
    };
    let home_text = home.to_string_lossy();
    write(".info/version", format!("{version}\n"), false)?;
    write(
        "share/hip/version",
        format!(
            "HIP_VERSION_MAJOR={major}\nHIP_VERSION_MINOR={minor}\nHIP_VERSION_PATCH={patch}\n"
        ),
        false,
    )?;
    write(
        "bin/hipconfig",
        format!(
            "#!/bin/sh\n# ck-jit record-only mode: a ROCm home of HIP {version}, without ROCm.\n\
             case \"$1\" in\n\
             --version|-v) printf '%s' '{version}' ;;\n\
             --path|-p|--rocmpath|-R) printf '%s' '{home_text}' ;;\n\
             --platform|-P) printf amd ;;\n\
             --compiler|-c) printf clang ;;\n\
             --runtime|-r) printf rocclr ;;\n\
             *) echo 'HIP version: {version}' ;;\n\
             esac\n"
        ),
        true,
    )?;
    write(
        "bin/rocminfo",
        "#!/bin/sh\necho 'ck-jit record-only mode: no GPU and no ROCm here; name the target \
         architecture to the build (aiter: GPU_ARCHS=gfx942)' >&2\nexit 1\n"
            .to_string(),
        true,
    )?;
    let lib = home.join("lib").join("libamdhip64.so");
    fs::create_dir_all(home.join("lib")).map_err(io_err(&home.join("lib")))?;
    shim::make_stub_object(&lib, false).map_err(|why| Error::Intercept { why })?;
    Ok(())
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

/// The invocations in the log at `log`, sorted by blob source then argv.
fn read_log(log: &Path) -> Result<Vec<Invocation>, Error> {
    let text = fs::read_to_string(log).map_err(io_err(log))?;
    let mut invocations = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Invocation = serde_json::from_str(line).map_err(|e| Error::InterceptLog {
            log: log.to_path_buf(),
            line: i + 1,
            why: e.to_string(),
        })?;
        if r.argv.is_empty() {
            return Err(Error::InterceptLog {
                log: log.to_path_buf(),
                line: i + 1,
                why: "empty argv".into(),
            });
        }
        invocations.push(r);
    }
    invocations.sort_by(|a, b| {
        let stem = |r: &Invocation| {
            Path::new(&r.source)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
        };
        stem(a)
            .cmp(&stem(b))
            .then_with(|| a.argv.cmp(&b.argv))
            .then_with(|| a.cwd.cmp(&b.cwd))
    });
    Ok(invocations)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writing_an_invocation_line_round_trips() {
        let r = Invocation {
            argv: vec!["hipcc".into(), "-c".into(), "a \"b\".cpp".into()],
            cwd: "/w".into(),
            source: "a \"b\".cpp".into(),
            output: None,
        };
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains('\n'));
        assert_eq!(serde_json::from_str::<Invocation>(&line).unwrap(), r);
    }

    #[test]
    fn default_blob_patterns_are_ck_prefixes() {
        let i = Intercept::new(["make"]);
        let p = i.blob_patterns();
        assert_eq!(p, ["fmha_*_d[0-9]*"]);
    }
}
