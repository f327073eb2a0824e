//! The runtime's one error type: a variant per step that can fail, each
//! carrying what a user needs to act (the blob, the path, the exact command).
//! Family selection ([`NoMatch`], [`Conflict`], in `select`) and packs
//! report through it as well.
//!
//! Owns: every message the runtime gives, and the payloads of family
//! selection's errors.
//!
//! May use: nothing of the crate. It is the bottom room, and every other
//! room reports through it.
//!
//! Errors are `Clone` (I/O errors are shared behind an `Arc`) because a
//! failed compile is remembered and handed to every later caller.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use ck_jit_manifest::{escape, ManifestError, SymbolSpec};

mod select;

pub(crate) use select::Report;
pub use select::{Conflict, NoMatch};

/// The accepted forms of `CK_JIT_ARCH`, as error messages list them.
pub const ARCH_FORMS: &str = "gfx<id> (gfx942, gfx90a, gfx1100), sm_<cc> (sm_80, sm_90, sm_100; \
     sm_90a names the same device as sm_90), one of each separated by a comma (gfx942,sm_90), \
     or all (compile the recorded targets unchanged)";

/// How a compile was killed ([`Error::CompileKilled`]): the signal, and
/// the memory figures that tell whether memory ran out.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Kill {
    /// The signal's number (9: SIGKILL).
    pub signal: i32,
    /// The exit code when a wrapper reported its compiler killed (137 for
    /// SIGKILL) rather than being killed itself.
    pub exit_code: Option<i32>,
    /// The compiler's peak resident size in bytes, when measured.
    pub peak_rss: Option<u64>,
    /// The memory one compile of its group is counted at, in bytes, when
    /// compiles are bounded by memory.
    pub estimate: Option<u64>,
    /// The memory compiles could use when it started, in bytes, when
    /// known.
    pub budget: Option<u64>,
    /// Whether the retry was killed too (the error is the retry's).
    pub retried: bool,
}

impl Kill {
    /// A kill by `signal`, of which nothing else is known yet.
    pub fn by(signal: i32) -> Kill {
        Kill {
            signal,
            ..Kill::default()
        }
    }
}

/// Everything that can go wrong between a call and a filled slot.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Error {
    /// A manifest could not be read or was refused.
    Manifest {
        /// Where it came from (a path, or "embedded").
        origin: String,
        /// Why it was refused.
        error: ManifestError,
    },
    /// The blob is in no manifest this process knows.
    UnknownBlob {
        /// The name asked for.
        blob: String,
        /// Close names that do exist.
        suggestions: Vec<String>,
    },
    /// The blob's source file is missing or unreadable.
    Source {
        /// The blob.
        blob: String,
        /// The path looked at.
        path: PathBuf,
        /// The underlying error.
        error: Arc<io::Error>,
    },
    /// The source resolves (through a symlink) to a place outside the root.
    SourceOutsideRoot {
        /// The blob.
        blob: String,
        /// The resolved path.
        path: PathBuf,
        /// The root it must stay in.
        root: PathBuf,
    },
    /// The source kept changing while it was compiled.
    SourceChanged {
        /// The blob.
        blob: String,
        /// The source path.
        path: PathBuf,
    },
    /// The compiler program could not be found or started.
    CompilerNotFound {
        /// The blob being compiled.
        blob: String,
        /// The program looked for.
        program: String,
        /// The variable that overrides it.
        env_var: String,
        /// Details (the search, or the error from starting it).
        detail: String,
    },
    /// The launcher (`CK_JIT_LAUNCHER`) could not be started.
    LauncherNotFound {
        /// The blob being compiled.
        blob: String,
        /// The launcher program.
        launcher: String,
        /// The error from starting it.
        detail: String,
    },
    /// The compiler ran and failed.
    CompileFailed {
        /// The blob.
        blob: String,
        /// The exact command, quoted so it can be pasted into a shell.
        command: String,
        /// How it ended (exit status or signal).
        status: String,
        /// Its standard error: all of it when short (at most
        /// `TAIL_BYTES`), else its first lines and its last ones with the
        /// number of lines left out between.
        stderr_tail: String,
        /// The full log.
        log: PathBuf,
    },
    /// The compiler was killed by a signal: most often SIGKILL from the
    /// kernel's out-of-memory killer (a host or a cgroup out of memory),
    /// which says nothing about the source. It was retried once, alone;
    /// this is the error when the retry was killed too (or could not be
    /// made). Never remembered as the blob's failure: the next call
    /// compiles again.
    CompileKilled {
        /// The blob.
        blob: String,
        /// The exact command, quoted so it can be pasted into a shell.
        command: String,
        /// The signal, and the memory figures of the compile.
        kill: Box<Kill>,
        /// Its output, as [`Error::CompileFailed`] keeps it.
        stderr_tail: String,
        /// The full log.
        log: PathBuf,
    },
    /// The compiler ran longer than `CK_JIT_COMPILE_TIMEOUT` and was killed.
    CompileTimeout {
        /// The blob.
        blob: String,
        /// The exact command.
        command: String,
        /// The limit, in seconds.
        seconds: u64,
        /// The full log.
        log: PathBuf,
    },
    /// The compiler claimed success but its output is not a usable object.
    BadObject {
        /// The blob.
        blob: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// `dlopen` refused the object.
    DlOpen {
        /// The blob.
        blob: String,
        /// The file.
        path: PathBuf,
        /// The loader's message.
        desc: String,
    },
    /// The entry symbol is not in the object.
    SymbolNotFound {
        /// The blob.
        blob: String,
        /// The file.
        path: PathBuf,
        /// What was looked for.
        spec: SymbolSpec,
        /// Function symbols the object does export (first few).
        candidates: Vec<String>,
    },
    /// The cache directory cannot be used.
    Cache {
        /// The directory.
        dir: PathBuf,
        /// Why, and how to fix it.
        why: String,
    },
    /// Another process held the compile lock longer than allowed.
    LockTimeout {
        /// The blob.
        blob: String,
        /// The lock file.
        lock: PathBuf,
        /// Seconds waited.
        seconds: u64,
    },
    /// The compile of another process that this call waited for was
    /// killed at `CK_JIT_COMPILE_TIMEOUT`: the waiters are released with
    /// this error rather than each compiling again until its own timeout.
    WaitedForTimeout {
        /// The blob.
        blob: String,
        /// The process whose compile it was.
        pid: u32,
        /// Its limit, in seconds.
        seconds: u64,
        /// The compile's log.
        log: PathBuf,
    },
    /// A compile was needed but compiling is switched off.
    Offline {
        /// The blob.
        blob: String,
        /// What switched it off, with the value as it was set
        /// (`CK_JIT_OFFLINE=yes`, `ck_jit_rt::freeze() was called`).
        reason: String,
        /// The cache directory that was looked in, when known.
        cache: Option<PathBuf>,
    },
    /// The device compiles are for runs none of the architectures the
    /// blob is recorded for (it is never compiled for a foreign target).
    ForeignDevice {
        /// The blob.
        blob: String,
        /// The device's architecture (`gfx1100`, `sm_80`).
        device: String,
        /// How the device was found (`CK_JIT_ARCH`, `KFD topology node 1`).
        found_by: String,
        /// The architectures the blob's command names.
        recorded: Vec<String>,
    },
    /// `CK_JIT_ARCH` is set to something that names no architecture.
    ArchVariable {
        /// The blob that needed it.
        blob: String,
        /// The value as set.
        value: String,
    },
    /// [`runtime`](crate::runtime) found no manifest embedded in the
    /// program, or several, so no one runtime is the program's.
    ProgramManifest {
        /// The names of the manifests the program embeds (none, or
        /// several).
        manifests: Vec<String>,
    },
    /// A file operation in the cache failed.
    Io {
        /// What was being done.
        op: &'static str,
        /// On which path.
        path: PathBuf,
        /// The underlying error.
        error: Arc<io::Error>,
    },
    /// No member of a family meets a query.
    NoMatch(NoMatch),
    /// A blob asked for by name is not a member of the family.
    NotMember {
        /// The family.
        family: String,
        /// The name asked for.
        blob: String,
        /// The family the blob belongs to, when it is in the manifest.
        family_of_blob: Option<String>,
        /// Members with close names.
        suggestions: Vec<String>,
    },
    /// Two of a query's constraints cannot hold together (`dtype = fp16`
    /// and `dtype = bf16`): a mistake in the query, whatever the family
    /// has.
    Conflict(Conflict),
    /// A query names a key no member of the family has.
    UnknownKey {
        /// The family.
        family: String,
        /// The key.
        key: String,
        /// Keys the members have with close names.
        suggestions: Vec<String>,
    },
    /// A condition of a query's text is not one of the forms a query is
    /// written in (`hdim>=big`).
    BadQuery {
        /// The condition as written.
        condition: String,
        /// What is wrong with it, and the forms accepted.
        why: String,
    },
    /// A pack file does not exist.
    PackMissing {
        /// The path given.
        path: PathBuf,
    },
    /// A file is not a pack (not zstd, not tar, no index first).
    NotAPack {
        /// The file.
        path: PathBuf,
        /// What was found instead.
        why: String,
    },
    /// A pack is for another machine, architecture or compiler.
    PackRefused {
        /// The pack.
        path: PathBuf,
        /// Which, with the pack's value and ours.
        why: String,
    },
    /// A pack is damaged: a checksum, size or member that does not match
    /// its index, or an archive cut short. Nothing was installed.
    PackDamaged {
        /// The pack.
        path: PathBuf,
        /// What did not match.
        why: String,
    },
    /// Blobs selected for a pack have no verified entry in the cache.
    NotCached {
        /// The blobs.
        blobs: Vec<String>,
    },
    /// A selection cannot go into one pack as it stands: blobs for several
    /// architectures, a compiler that changed while packing, a cached
    /// entry that does not match its record.
    Unpackable {
        /// What is wrong, and what to do.
        why: String,
    },
}

impl Error {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, error: io::Error) -> Error {
        Error::Io {
            op,
            path: path.into(),
            error: Arc::new(error),
        }
    }

    /// The blob this error is about, where there is one.
    pub fn blob(&self) -> Option<&str> {
        match self {
            Error::UnknownBlob { blob, .. }
            | Error::Source { blob, .. }
            | Error::SourceOutsideRoot { blob, .. }
            | Error::SourceChanged { blob, .. }
            | Error::CompilerNotFound { blob, .. }
            | Error::LauncherNotFound { blob, .. }
            | Error::CompileFailed { blob, .. }
            | Error::CompileKilled { blob, .. }
            | Error::CompileTimeout { blob, .. }
            | Error::BadObject { blob, .. }
            | Error::DlOpen { blob, .. }
            | Error::SymbolNotFound { blob, .. }
            | Error::LockTimeout { blob, .. }
            | Error::WaitedForTimeout { blob, .. }
            | Error::Offline { blob, .. }
            | Error::ForeignDevice { blob, .. }
            | Error::ArchVariable { blob, .. }
            | Error::NotMember { blob, .. } => Some(blob),
            Error::Manifest { .. }
            | Error::Cache { .. }
            | Error::ProgramManifest { .. }
            | Error::Io { .. }
            | Error::NoMatch(_)
            | Error::Conflict(_)
            | Error::UnknownKey { .. }
            | Error::BadQuery { .. }
            | Error::PackMissing { .. }
            | Error::NotAPack { .. }
            | Error::PackRefused { .. }
            | Error::PackDamaged { .. }
            | Error::NotCached { .. }
            | Error::Unpackable { .. } => None,
        }
    }

    /// Whether the failure should be remembered for the process, so a loop
    /// calling a broken blob does not run the compiler in a loop. A killed
    /// compile ([`Error::CompileKilled`]) is not: the machine ran out of
    /// something, the source may well be fine.
    pub(crate) fn is_sticky(&self) -> bool {
        matches!(
            self,
            Error::CompileFailed { .. } | Error::BadObject { .. } | Error::SymbolNotFound { .. }
        )
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Manifest { .. }
            | Error::UnknownBlob { .. }
            | Error::Source { .. }
            | Error::SourceOutsideRoot { .. }
            | Error::SourceChanged { .. }
            | Error::ProgramManifest { .. } => self.fmt_inputs(f),
            Error::CompilerNotFound { .. }
            | Error::LauncherNotFound { .. }
            | Error::CompileFailed { .. }
            | Error::CompileKilled { .. }
            | Error::CompileTimeout { .. } => self.fmt_compile(f),
            Error::BadObject { .. } | Error::DlOpen { .. } | Error::SymbolNotFound { .. } => {
                self.fmt_load(f)
            }
            Error::Cache { .. }
            | Error::LockTimeout { .. }
            | Error::WaitedForTimeout { .. }
            | Error::Offline { .. } => self.fmt_cache(f),
            Error::ForeignDevice { .. } | Error::ArchVariable { .. } => self.fmt_device(f),
            Error::Io { op, path, error } => {
                write!(f, "{op} {}: {error}", path.display())
            }
            Error::NoMatch(_)
            | Error::NotMember { .. }
            | Error::Conflict(_)
            | Error::UnknownKey { .. }
            | Error::BadQuery { .. } => self.fmt_family(f),
            Error::PackMissing { .. }
            | Error::NotAPack { .. }
            | Error::PackRefused { .. }
            | Error::PackDamaged { .. }
            | Error::NotCached { .. }
            | Error::Unpackable { .. } => self.fmt_pack(f),
        }
    }
}

/// The messages, a helper per group of variants, which `fmt` dispatches
/// to.
impl Error {
    /// The messages of failures of what a blob is compiled from:
    /// the manifests, the blob, its source.
    fn fmt_inputs(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Manifest { origin, error } => write!(f, "manifest {origin}: {error}"),
            Error::UnknownBlob { blob, suggestions } => {
                write!(f, "blob '{}' is in no manifest", escape(blob))?;
                if !suggestions.is_empty() {
                    write!(f, "; did you mean '{}'?", suggestions.join("', '"))?;
                } else {
                    write!(f, " (set CK_JIT_MANIFEST to add one)")?;
                }
                Ok(())
            }
            Error::Source { blob, path, error } => write!(
                f,
                "blob '{blob}': cannot read source {}: {error} \
                 (is the tree installed? CK_JIT_ROOT relocates it)",
                path.display()
            ),
            Error::SourceOutsideRoot { blob, path, root } => write!(
                f,
                "blob '{blob}': source resolves to {}, outside the root {}; refusing to compile it",
                path.display(),
                root.display()
            ),
            Error::SourceChanged { blob, path } => write!(
                f,
                "blob '{blob}': source {} changed while it was being compiled; try again",
                path.display()
            ),
            Error::ProgramManifest { manifests } if manifests.is_empty() => write!(
                f,
                "this program embeds no manifest: ck_jit_rt::embed_manifest!() at the root of \
                 the crate that declares the kernels embeds one"
            ),
            Error::ProgramManifest { manifests } => write!(
                f,
                "this program embeds {} manifests ({}), so none is the program's; \
                 ck_jit_runtime() of the crate that embeds one gives its runtime",
                manifests.len(),
                manifests.join(", ")
            ),
            _ => unreachable!("Display::fmt sends fmt_inputs its variants only"),
        }
    }

    /// The messages of failures of the compiler: finding it and
    /// running it.
    fn fmt_compile(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::CompilerNotFound {
                blob,
                program,
                env_var,
                detail,
            } => write!(
                f,
                "blob '{blob}': compiler '{program}' not found ({detail}); \
                 install it or add it to PATH, or set {env_var}=/path/to/{base}",
                base = program.rsplit('/').next().unwrap_or(program)
            ),
            Error::LauncherNotFound {
                blob,
                launcher,
                detail,
            } => write!(
                f,
                "blob '{blob}': the compile launcher '{launcher}' (from CK_JIT_LAUNCHER) \
                 could not be started ({detail}); install it, or unset CK_JIT_LAUNCHER to run \
                 the compiler directly"
            ),
            Error::CompileFailed {
                blob,
                command,
                status,
                stderr_tail,
                log,
            } => {
                write!(
                    f,
                    "blob '{blob}': compile failed ({status})\n  command: {command}\n  full log: {}",
                    log.display()
                )?;
                if !stderr_tail.is_empty() {
                    write!(f, "\n  stderr:\n{}", indent(stderr_tail))?;
                }
                Ok(())
            }
            Error::CompileKilled {
                blob,
                command,
                kill,
                stderr_tail,
                log,
            } => {
                write!(
                    f,
                    "blob '{blob}': compiler killed by signal {} ({})",
                    kill.signal,
                    signal_name(kill.signal)
                )?;
                if let Some(c) = kill.exit_code {
                    write!(f, " (it exited with {c}, as a wrapper does whose compiler was)")?;
                }
                if kill.retried {
                    write!(f, ", and again when retried alone")?;
                }
                write!(
                    f,
                    "; {}",
                    memory_figures(kill.peak_rss, kill.estimate, kill.budget)
                )?;
                if kill.signal == libc::SIGKILL {
                    write!(
                        f,
                        " (the out-of-memory killer sends SIGKILL: lower CK_JIT_JOBS, or set \
                         CK_JIT_JOB_MEMORY to what one compile takes)"
                    )?;
                }
                write!(f, "\n  command: {command}\n  full log: {}", log.display())?;
                if !stderr_tail.is_empty() {
                    write!(f, "\n  stderr:\n{}", indent(stderr_tail))?;
                }
                Ok(())
            }
            Error::CompileTimeout {
                blob,
                command,
                seconds,
                log,
            } => write!(
                f,
                "blob '{blob}': compiler killed after {seconds} s (CK_JIT_COMPILE_TIMEOUT)\n  command: {command}\n  full log: {}",
                log.display()
            ),
            _ => unreachable!("Display::fmt sends fmt_compile its variants only"),
        }
    }

    /// The messages of failures of the object: loading it and
    /// finding its entry point.
    fn fmt_load(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::BadObject { blob, path, why } => write!(
                f,
                "blob '{blob}': compiler output {} is unusable: {why}",
                path.display()
            ),
            Error::DlOpen { blob, path, desc } => {
                write!(f, "blob '{blob}': dlopen {} failed: {desc}", path.display())
            }
            Error::SymbolNotFound {
                blob,
                path,
                spec,
                candidates,
            } => {
                write!(f, "blob '{blob}': no {spec} in {}", path.display())?;
                if candidates.is_empty() {
                    write!(
                        f,
                        " (it exports no function symbols; was it built with -fvisibility=hidden?)"
                    )
                } else {
                    write!(f, "; exported functions: {}", candidates.join(", "))
                }
            }
            _ => unreachable!("Display::fmt sends fmt_load its variants only"),
        }
    }

    /// The messages of failures of the cache: its directory, its
    /// locks, and a miss when compiling is off.
    fn fmt_cache(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Cache { dir, why } => {
                write!(f, "cache directory {}: {why}", dir.display())
            }
            Error::LockTimeout {
                blob,
                lock,
                seconds,
            } => write!(
                f,
                "blob '{blob}': waited {seconds} s for another process compiling it (lock {}); \
                 raise CK_JIT_LOCK_TIMEOUT or check that process",
                lock.display()
            ),
            Error::WaitedForTimeout {
                blob,
                pid,
                seconds,
                log,
            } => write!(
                f,
                "blob '{blob}': the compile this call waited for (process {pid}) was killed after \
                 {seconds} s (CK_JIT_COMPILE_TIMEOUT); not compiled again by each waiter, the next \
                 call tries again (raise CK_JIT_COMPILE_TIMEOUT, or warm the blob up ahead); full \
                 log: {}",
                log.display()
            ),
            Error::Offline {
                blob,
                reason,
                cache,
            } => {
                let (looked, dir) = match cache {
                    Some(c) => (
                        format!(" {}", c.display()),
                        format!(" --cache-dir {}", c.display()),
                    ),
                    None => (String::new(), String::new()),
                };
                write!(
                    f,
                    "blob '{blob}' is not in the cache{looked} and compiling is off \
                     ({reason}); fill the cache where compiling is allowed: \
                     `ck-jit build --manifest MANIFEST{dir} {blob}` (a program's embedded \
                     manifest: `ck-jit export-manifest`)"
                )
            }
            _ => unreachable!("Display::fmt sends fmt_cache its variants only"),
        }
    }

    /// The messages of a family selection and of a query's text.
    fn fmt_family(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoMatch(e) => fmt::Display::fmt(e, f),
            Error::Conflict(e) => fmt::Display::fmt(e, f),
            Error::NotMember {
                family,
                blob,
                family_of_blob,
                suggestions,
            } => {
                write!(
                    f,
                    "blob '{}' is not in family '{}'",
                    escape(blob),
                    escape(family)
                )?;
                match family_of_blob {
                    Some(other) => write!(f, " (it belongs to family '{}')", escape(other)),
                    None if !suggestions.is_empty() => {
                        write!(f, "; did you mean '{}'?", suggestions.join("', '"))
                    }
                    None => Ok(()),
                }
            }
            Error::UnknownKey {
                family,
                key,
                suggestions,
            } => {
                write!(
                    f,
                    "no member of family '{}' has the key '{}'",
                    escape(family),
                    escape(key)
                )?;
                if !suggestions.is_empty() {
                    write!(f, "; did you mean '{}'?", suggestions.join("', '"))?;
                }
                Ok(())
            }
            Error::BadQuery { condition, why } => {
                write!(
                    f,
                    "cannot read the condition '{}': {why}",
                    escape(condition)
                )
            }
            _ => unreachable!("fmt_family called for {self:?}"),
        }
    }

    /// The messages of packs.
    fn fmt_pack(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::PackMissing { path } => write!(f, "pack {}: no such file", path.display()),
            Error::NotAPack { path, why } => {
                write!(f, "{} is not a ck-jit pack: {why}", path.display())
            }
            Error::PackRefused { path, why } => {
                write!(f, "pack {} refused: {why}", path.display())
            }
            Error::PackDamaged { path, why } => write!(
                f,
                "pack {} is damaged: {why}; nothing was installed",
                path.display()
            ),
            Error::NotCached { blobs } => write!(
                f,
                "{} blob{} not in the cache: {}; build {} first (ck-jit build, with the same \
                 CK_JIT_ARCH), or leave {} out",
                blobs.len(),
                if blobs.len() == 1 { " is" } else { "s are" },
                blobs.join(", "),
                if blobs.len() == 1 { "it" } else { "them" },
                if blobs.len() == 1 { "it" } else { "them" },
            ),
            Error::Unpackable { why } => f.write_str(why),
            _ => unreachable!("fmt_pack called for {self:?}"),
        }
    }

    /// The messages of failures of the device compiles are for.
    fn fmt_device(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ForeignDevice {
                blob,
                device,
                found_by,
                recorded,
            } => write!(
                f,
                "blob '{blob}': the device is {device} (from {found_by}), but the blob is \
                 recorded for {} only, none of which runs on it; record it for {device}, or set \
                 CK_JIT_ARCH to the device the cache is for (CK_JIT_ARCH=all compiles the \
                 recorded targets as they are)",
                recorded.join(", ")
            ),
            Error::ArchVariable { blob, value } => write!(
                f,
                "blob '{blob}': CK_JIT_ARCH='{value}' names no architecture; accepted \
                 forms: {}",
                ARCH_FORMS
            ),
            _ => unreachable!("Display::fmt sends fmt_device its variants only"),
        }
    }
}

impl From<NoMatch> for Error {
    fn from(e: NoMatch) -> Error {
        Error::NoMatch(e)
    }
}

impl From<Conflict> for Error {
    fn from(e: Conflict) -> Error {
        Error::Conflict(e)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Manifest { error, .. } => Some(error),
            Error::Source { error, .. } | Error::Io { error, .. } => Some(&**error),
            _ => None,
        }
    }
}

/// The usual name of a signal (`SIGKILL`), or `an unnamed signal`.
pub fn signal_name(signal: i32) -> &'static str {
    const NAMES: [(i32, &str); 15] = [
        (libc::SIGHUP, "SIGHUP"),
        (libc::SIGINT, "SIGINT"),
        (libc::SIGQUIT, "SIGQUIT"),
        (libc::SIGILL, "SIGILL"),
        (libc::SIGTRAP, "SIGTRAP"),
        (libc::SIGABRT, "SIGABRT"),
        (libc::SIGBUS, "SIGBUS"),
        (libc::SIGFPE, "SIGFPE"),
        (libc::SIGKILL, "SIGKILL"),
        (libc::SIGSEGV, "SIGSEGV"),
        (libc::SIGPIPE, "SIGPIPE"),
        (libc::SIGALRM, "SIGALRM"),
        (libc::SIGTERM, "SIGTERM"),
        (libc::SIGXCPU, "SIGXCPU"),
        (libc::SIGXFSZ, "SIGXFSZ"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| *n == signal)
        .map_or("an unnamed signal", |(_, name)| name)
}

/// The memory figures of a killed compile, those that are known.
fn memory_figures(peak: Option<u64>, estimate: Option<u64>, budget: Option<u64>) -> String {
    let peak = match peak {
        Some(p) => format!("peak resident size {}", human(p)),
        None => "peak resident size not measured".to_string(),
    };
    let estimate = match estimate {
        Some(e) => format!(", counted at {}", human(e)),
        None => ", not bounded by memory".to_string(),
    };
    let budget = match budget {
        Some(b) => format!(", {} available to compiles when it started", human(b)),
        None => String::new(),
    };
    format!("{peak}{estimate}{budget}")
}

fn indent(s: &str) -> String {
    s.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Quotes an argv so it can be pasted into a POSIX shell to reproduce a
/// compile. Used only for messages; commands are always run from an argv.
///
/// Braces are quoted too: bash expands an unquoted `-DX={a,b}` into two
/// arguments.
pub fn shell_quote(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-./=:,+@%".contains(&b))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A size for messages: `812 MiB`, `2.4 GiB`.
pub(crate) fn human(bytes: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    const MIB: f64 = (1u64 << 20) as f64;
    let b = bytes as f64;
    if b >= GIB {
        format!("{:.1} GiB", b / GIB)
    } else {
        format!("{:.0} MiB", b / MIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_quotes_metacharacters() {
        let argv = vec![
            "cc".to_string(),
            "a b".into(),
            "$(rm -rf)".into(),
            "it's".into(),
        ];
        assert_eq!(shell_quote(&argv), "cc 'a b' '$(rm -rf)' 'it'\\''s'");
    }

    #[test]
    fn shell_quote_quotes_braces_against_brace_expansion() {
        let argv = vec!["-DX={a,b}".to_string(), "{root}".into(), "-O2".into()];
        assert_eq!(shell_quote(&argv), "'-DX={a,b}' '{root}' -O2");
    }

    /// Every variant's message, and those of the family's errors, as the
    /// Rust API guidelines have them: no program name in front (whoever
    /// shows the message adds that), lowercase, no full stop, one line (a
    /// compile's command and log follow on indented lines).
    #[test]
    fn messages_are_bare_lowercase_lines() {
        let io = || Arc::new(io::Error::new(io::ErrorKind::NotFound, "gone"));
        let errors = [
            Error::Manifest {
                origin: "embedded".into(),
                error: ManifestError::Parse("expected a value".into()),
            },
            Error::UnknownBlob {
                blob: "k".into(),
                suggestions: vec!["kk".into()],
            },
            Error::UnknownBlob {
                blob: "k".into(),
                suggestions: vec![],
            },
            Error::Source {
                blob: "k".into(),
                path: "/t/k.c".into(),
                error: io(),
            },
            Error::SourceOutsideRoot {
                blob: "k".into(),
                path: "/elsewhere/k.c".into(),
                root: "/t".into(),
            },
            Error::SourceChanged {
                blob: "k".into(),
                path: "/t/k.c".into(),
            },
            Error::CompilerNotFound {
                blob: "k".into(),
                program: "nvcc".into(),
                env_var: "CK_JIT_NVCC".into(),
                detail: "not in PATH".into(),
            },
            Error::LauncherNotFound {
                blob: "k".into(),
                launcher: "ccache".into(),
                detail: "not in PATH".into(),
            },
            Error::CompileFailed {
                blob: "k".into(),
                command: "cc -c k.c".into(),
                status: "exit status: 1".into(),
                stderr_tail: "k.c:1: error: expected ';'\n1 error generated.".into(),
                log: "/c/k.log".into(),
            },
            killed_with_figures(),
            Error::CompileKilled {
                blob: "k".into(),
                command: "cc -c k.c".into(),
                kill: Box::new(Kill {
                    exit_code: Some(137),
                    ..Kill::by(9)
                }),
                stderr_tail: "Killed".into(),
                log: "/c/k.log".into(),
            },
            Error::CompileTimeout {
                blob: "k".into(),
                command: "cc -c k.c".into(),
                seconds: 600,
                log: "/c/k.log".into(),
            },
            Error::BadObject {
                blob: "k".into(),
                path: "/c/k.so".into(),
                why: "not an ELF file".into(),
            },
            Error::DlOpen {
                blob: "k".into(),
                path: "/c/k.so".into(),
                desc: "undefined symbol: f".into(),
            },
            Error::SymbolNotFound {
                blob: "k".into(),
                path: "/c/k.so".into(),
                spec: SymbolSpec::Exact("k".into()),
                candidates: vec!["k2".into()],
            },
            Error::SymbolNotFound {
                blob: "k".into(),
                path: "/c/k.so".into(),
                spec: SymbolSpec::Exact("k".into()),
                candidates: vec![],
            },
            Error::Cache {
                dir: "/c".into(),
                why: "it is not a directory".into(),
            },
            Error::LockTimeout {
                blob: "k".into(),
                lock: "/c/k.lock".into(),
                seconds: 30,
            },
            Error::WaitedForTimeout {
                blob: "k".into(),
                pid: 42,
                seconds: 600,
                log: "/c/logs/k.log".into(),
            },
            Error::Offline {
                blob: "k".into(),
                reason: "CK_JIT_OFFLINE=1".into(),
                cache: Some("/c".into()),
            },
            Error::ForeignDevice {
                blob: "k".into(),
                device: "gfx1100".into(),
                found_by: "CK_JIT_ARCH".into(),
                recorded: vec!["gfx942".into()],
            },
            Error::ArchVariable {
                blob: "k".into(),
                value: "x".into(),
            },
            Error::ProgramManifest { manifests: vec![] },
            Error::ProgramManifest {
                manifests: vec!["a".into(), "b".into()],
            },
            Error::io("publishing", "/c/k.so", io::Error::other("disk full")),
        ];
        let family = [
            Error::NotMember {
                family: "attn".into(),
                blob: "k".into(),
                family_of_blob: Some("other".into()),
                suggestions: vec![],
            },
            Error::UnknownKey {
                family: "attn".into(),
                key: "dtyp".into(),
                suggestions: vec!["dtype".into()],
            },
            crate::Query::new()
                .eq("dtype", "fp16")
                .and(&crate::Query::new().eq("dtype", "bf16"))
                .unwrap_err(),
        ];
        let parse = "hdim>=big"
            .parse::<crate::Query>()
            .expect_err("not a condition");
        let messages = errors
            .iter()
            .map(Error::to_string)
            .chain(family.iter().map(|e| e.to_string()))
            .chain([parse.to_string()]);
        for m in messages {
            let (first, rest) = m.split_once('\n').unwrap_or((&m, ""));
            assert!(!first.starts_with("ck-jit"), "{m}");
            assert!(first.starts_with(|c: char| c.is_lowercase()), "{m}");
            assert!(!first.ends_with('.'), "{m}");
            assert!(
                rest.is_empty() || rest.lines().all(|l| l.starts_with("  ")),
                "{m}"
            );
        }
    }

    /// A compile killed by SIGKILL after a retry, with every memory figure.
    fn killed_with_figures() -> Error {
        Error::CompileKilled {
            blob: "k".into(),
            command: "cc -c k.c".into(),
            kill: Box::new(Kill {
                signal: 9,
                exit_code: None,
                peak_rss: Some(800 << 20),
                estimate: Some(700 << 20),
                budget: Some(2 << 30),
                retried: true,
            }),
            stderr_tail: String::new(),
            log: "/c/k.log".into(),
        }
    }

    #[test]
    fn a_killed_compile_names_its_signal_and_memory_and_is_not_remembered() {
        let e = killed_with_figures();
        let s = e.to_string();
        for part in [
            "killed by signal 9 (SIGKILL)",
            "again when retried alone",
            "peak resident size 800 MiB",
            "counted at 700 MiB",
            "2.0 GiB available",
            "command: cc -c k.c",
        ] {
            assert!(s.contains(part), "{part}: {s}");
        }
        assert!(!e.is_sticky());
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(200), "an unnamed signal");
    }

    #[test]
    fn compiler_not_found_names_program_and_variable() {
        let e = Error::CompilerNotFound {
            blob: "k".into(),
            program: "nvcc".into(),
            env_var: "CK_JIT_NVCC".into(),
            detail: "not in PATH".into(),
        };
        let s = e.to_string();
        assert!(
            s.contains("'nvcc'") && s.contains("CK_JIT_NVCC=/path/to/nvcc"),
            "{s}"
        );
    }
}
