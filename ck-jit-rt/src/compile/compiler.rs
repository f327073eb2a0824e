//! Runs the compiler: finds it, identifies it (its files by content and
//! its `--version` output, once per process, and with the default
//! [`CompilerCheck::Content`] once per set of compiler files and cache),
//! builds the argv of each step from the group's template ([`jobs`]: flags in [`STRIPPED_FLAGS`] dropped,
//! placeholders filled in, split for a launcher, `-MD -MF` added), runs them
//! with a time limit, keeps the full output in a log file and a bounded
//! tail in memory, and reads back what the compiler wrote.
//!
//! Never runs a shell: every command is an argv handed to `execve`.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use ck_jit_manifest::{Group, STRIPPED_FLAGS};
use once_cell::sync::{Lazy, OnceCell};

use crate::config::{compiler_override, compiler_var, CompilerCheck};
use crate::error::{shell_quote, Error, Kill};
use crate::object::symbol;
use crate::object::text::keep_text;

/// Most bytes of compiler output kept in memory for an error message.
pub const TAIL_BYTES: usize = 8 * 1024;

/// Who a compiler is, as a cache key sees it: what decides the object
/// code it writes, never where it lives or when its files were written, so
/// the same compiler bytes on another host, at another path or installed
/// at another time (pip keeps no file times) give the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompilerId {
    /// The program as found (what goes in argv: resolving links would turn
    /// `clang++` into `clang`, which is a different driver mode).
    pub path: PathBuf,
    /// The fully resolved file (for messages; not part of the identity).
    pub real: PathBuf,
    /// Its `--version` output, less what names where it is installed
    /// (`version_text`).
    pub version: String,
    /// The compiler's files by content: a BLAKE3 of each, over the
    /// compiler and the files behind a wrapper ([`wrapped_files`]), in a
    /// fixed order; a script's with the paths it names made neutral
    /// (`script_text`). Empty for `command` and `string:`. An upgrade in
    /// place that prints the same `--version` text is still a new key.
    pub files: String,
    /// Where the compiler is installed (`install_prefixes`), as the
    /// spellings of one directory, the resolved one first: headers under
    /// it are recorded as `{compiler}/...`, so a toolchain at another path
    /// reads its own copies. Empty when it has no installation of its own.
    pub prefix: Vec<PathBuf>,
    /// The files' local identity (path, size, times, inode) when they
    /// were identified: what the memo in the cache is kept under and what
    /// `identity_changed` compares. Never part of a key.
    pub stat: String,
}

/// The identities this process worked out, each under the program, its
/// override and the policy it was identified by: a few, looked through in
/// order (nothing to format or hash on a call).
type Identities = Vec<(String, Option<PathBuf>, CompilerCheck, Arc<CompilerId>)>;
static IDS: Lazy<Mutex<Identities>> = Lazy::new(|| Mutex::new(Vec::new()));

/// How many times identities were forgotten ([`forget_identities`], or one
/// found changed): an identity kept elsewhere stands while this is what it
/// was when the identity was found.
static FORGOTTEN: AtomicU64 = AtomicU64::new(0);

/// The process's count of forgotten identities (see [`FORGOTTEN`]).
pub fn identities_forgotten() -> u64 {
    FORGOTTEN.load(Ordering::Acquire)
}

/// Looks a program up in `PATH` (or takes it as a path when it has a `/`).
pub fn find_program(program: &str) -> Option<PathBuf> {
    let is_exe = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return is_exe(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    // `split_paths`, but a directory listed twice is looked in once.
    let mut seen: Vec<&[u8]> = Vec::new();
    for dir in path.as_encoded_bytes().split(|&b| b == b':') {
        if !dir.starts_with(b"/") || seen.contains(&dir) {
            continue;
        }
        seen.push(dir);
        // SAFETY: split from an `OsStr` at an ASCII byte.
        let dir = Path::new(unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(dir) });
        let p = dir.join(program);
        if is_exe(&p) {
            return Some(p);
        }
    }
    None
}

/// The path with every symbolic link, `.` and `..` resolved, as
/// `fs::canonicalize` gives it, in three system calls whatever its depth:
/// the path opened (`O_PATH`, nothing read) and the kernel asked which
/// file that is. `fs::canonicalize` reads every component's link (15 for
/// a header under a CK tree); without `/proc`, or for a file removed
/// meanwhile, that is what answers.
pub(crate) fn real_path(p: &Path) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
        .open(p)?;
    match fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())) {
        Ok(r) if r.is_absolute() && !r.as_os_str().as_encoded_bytes().ends_with(b" (deleted)") => {
            Ok(r)
        }
        _ => fs::canonicalize(p),
    }
}

/// Resolves and identifies a compiler (cached per process; `CK_JIT_<PROG>`
/// overrides the program), by `check`; `store` is where identities are kept
/// between processes (the cache directory's `compilers/`), when there is
/// one.
pub fn identify(
    program: &str,
    blob: &str,
    check: &CompilerCheck,
    store: Option<&Path>,
) -> Result<Arc<CompilerId>, Error> {
    let overridden = compiler_override(program);
    let known = IDS.lock().ok().and_then(|m| {
        m.iter()
            .find(|(p, o, c, _)| p == program && *o == overridden && c == check)
            .map(|(.., id)| id.clone())
    });
    if let Some(id) = known {
        return Ok(id);
    }
    let r = identify_uncached(program, overridden.clone(), check, store);
    // Only an identity is kept: a compiler that is missing now may be
    // installed before the next call.
    if let (Ok(id), Ok(mut m)) = (&r, IDS.lock()) {
        m.push((program.to_string(), overridden, check.clone(), id.clone()));
    }
    r.map_err(|detail| not_found(program, blob, detail))
}

/// Whether `id`, identified under `check`, no longer describes the
/// compiler's files: one was replaced or changed in place since (an
/// upgrade a long-running process would otherwise not see until its
/// restart). Then it is forgotten, and the next [`identify`] looks again.
/// Checked before a compile: a `stat` of each file for `content`, nothing
/// for `command` and `string:`.
pub fn identity_changed(id: &CompilerId, check: &CompilerCheck) -> bool {
    if *check != CompilerCheck::Content {
        return false;
    }
    if files_stat(&compiler_files(&id.real)).is_ok_and(|s| s == id.stat) {
        return false;
    }
    if let Ok(mut m) = IDS.lock() {
        m.retain(|(.., kept)| !std::ptr::eq(&**kept, id));
    }
    FORGOTTEN.fetch_add(1, Ordering::AcqRel);
    true
}

/// Forgets compiler identities (after `PATH` or a compiler changed).
pub fn forget_identities() {
    if let Ok(mut m) = IDS.lock() {
        m.clear();
    }
    FORGOTTEN.fetch_add(1, Ordering::AcqRel);
}

fn not_found(program: &str, blob: &str, detail: String) -> Error {
    Error::CompilerNotFound {
        blob: blob.to_string(),
        program: program.to_string(),
        env_var: compiler_var(program),
        detail,
    }
}

fn identify_uncached(
    program: &str,
    overridden: Option<PathBuf>,
    check: &CompilerCheck,
    store: Option<&Path>,
) -> Result<Arc<CompilerId>, String> {
    let path = match &overridden {
        Some(p) => find_program(&p.to_string_lossy()).ok_or_else(|| {
            format!(
                "{}={} is not an executable file",
                compiler_var(program),
                p.display()
            )
        })?,
        None => find_program(program).ok_or_else(|| {
            if program.contains('/') {
                "no executable file at that path".to_string()
            } else {
                "not in PATH".to_string()
            }
        })?,
    };
    let real = real_path(&path).unwrap_or_else(|_| path.clone());
    let prefix = install_prefixes(&path, &real);
    let id = |version: String, files: String, stat: String| {
        Arc::new(CompilerId {
            path: path.clone(),
            real: real.clone(),
            version,
            files,
            prefix: prefix.clone(),
            stat,
        })
    };
    match check {
        CompilerCheck::String(text) => {
            return Ok(id(format!("string:{text}"), String::new(), String::new()))
        }
        CompilerCheck::Invalid(v) => {
            return Err(format!(
                "CK_JIT_COMPILER_CHECK='{v}' is not a policy: use content (the default), \
                 command or string:<text>"
            ))
        }
        CompilerCheck::Command => {
            let version = run_version(&path, &prefix)?;
            return Ok(id(version, String::new(), String::new()));
        }
        CompilerCheck::Content => {}
    }
    let files = compiler_files(&real);
    let stat = files_stat(&files)?;
    // What an earlier process worked out for these very files.
    let memo = store.map(|dir| {
        let name = blake3::hash(format!("{MEMO_MAGIC}\0{prefix:?}\0{stat}").as_bytes());
        dir.join(name.to_hex().as_str())
    });
    if let Some((digests, version)) = memo.as_ref().and_then(|m| read_memo(m)) {
        return Ok(id(version, digests, stat));
    }
    let digests = files_content(&files, &prefix)?;
    let version = run_version(&path, &prefix)?;
    // The files changed while they were read: nothing is kept, and the
    // next process looks again.
    if files_stat(&files).is_ok_and(|now| now == stat) {
        if let Some(m) = &memo {
            keep_text(m, &format!("{MEMO_MAGIC}\n{digests}\n{version}"));
        }
    }
    Ok(id(version, digests, stat))
}

/// The first line of a memo file in a cache's `compilers/`; a file
/// without it (an earlier identity's, kept under another name) is never
/// read as one.
const MEMO_MAGIC: &str = "ck-jit compiler identity 2";

/// A memo's file digests and version text, when it is one.
fn read_memo(path: &Path) -> Option<(String, String)> {
    let text = fs::read_to_string(path).ok()?;
    let rest = text.strip_prefix(MEMO_MAGIC)?.strip_prefix('\n')?;
    let (digests, version) = rest.split_once('\n')?;
    let well_formed = digests
        .split(',')
        .all(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
    well_formed.then(|| (digests.to_string(), version.to_string()))
}

/// The compiler file and the files behind it, in a fixed order.
fn compiler_files(real: &Path) -> Vec<PathBuf> {
    std::iter::once(real.to_path_buf())
        .chain(wrapped_files(real))
        .collect()
}

/// The local identity of `files`: path, size, modification and change
/// time, inode and device of each. Equal while none was written (a change
/// time moves on every write and cannot be set back).
fn files_stat(files: &[PathBuf]) -> Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = String::new();
    for f in files {
        let m = fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
        out.push_str(&format!(
            "{}\0{}\0{}.{}\0{}.{}\0{}\0{}\0",
            f.display(),
            m.size(),
            m.mtime(),
            m.mtime_nsec(),
            m.ctime(),
            m.ctime_nsec(),
            m.ino(),
            m.dev()
        ));
    }
    Ok(out)
}

/// The content identity of `files`: one BLAKE3 each, comma-separated; a
/// script's over [`script_text`].
fn files_content(files: &[PathBuf], prefix: &[PathBuf]) -> Result<String, String> {
    let mut out = Vec::with_capacity(files.len());
    for f in files {
        let bytes = fs::read(f).map_err(|e| format!("{}: {e}", f.display()))?;
        let digest = match script_text(f, &bytes, prefix) {
            Some(text) => blake3::hash(text.as_bytes()),
            None => blake3::hash(&bytes),
        };
        out.push(digest.to_hex().to_string());
    }
    Ok(out.join(","))
}

/// What of a wrapper script counts for the identity: its text with each
/// executable it names by absolute path ([`script_targets`], whose own
/// contents are part of the identity in their place) written `{exe}`, and
/// then its installation prefix and the compiler's
/// ([`install_prefix`]) written `{prefix}`. Everything else counts as
/// written: flags, variables, the interpreter. So two wrappers that run
/// the same compiler with the same arguments are the same compiler
/// wherever each lives, and any other change to one is another compiler.
/// `None` for a file that is not a script (`#!`, at most 64 KiB, UTF-8).
pub fn script_text(file: &Path, bytes: &[u8], prefix: &[PathBuf]) -> Option<String> {
    if !bytes.starts_with(b"#!") || bytes.len() > SCRIPT_MOST as usize {
        return None;
    }
    let mut text = std::str::from_utf8(bytes).ok()?.to_string();
    let mut targets: Vec<String> = script_targets(file)
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    // The longest first, so a path that extends another is replaced whole.
    targets.sort_by_key(|t| std::cmp::Reverse(t.len()));
    for t in &targets {
        text = text.replace(t.as_str(), "{exe}");
    }
    let own = install_prefix(file);
    Some(neutral_prefix(text, own.iter().chain(prefix)))
}

/// Where the program at `path` (as found, links not followed) is
/// installed: the directory above the `bin` it is in, else its own
/// directory. `None` for the system's own directories (`/`, `/usr`,
/// `/usr/local`): a compiler there is part of the system, which does not
/// move, and the system's headers keep their absolute paths.
pub fn install_prefix(path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    let prefix = if dir.file_name().is_some_and(|n| n == "bin") {
        dir.parent()?
    } else {
        dir
    };
    let system = ["/", "/usr", "/usr/local", ""];
    (!system.iter().any(|s| prefix == Path::new(s))).then(|| prefix.to_path_buf())
}

/// The installation prefixes of a program found at `path` that resolves
/// to `real`: [`install_prefix`] of `real`, then that of `path` when it is
/// the same directory through a link (`/usr/local/cuda` to
/// `/usr/local/cuda-13.0`), as a compiler may write either in a depfile.
pub fn install_prefixes(path: &Path, real: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = install_prefix(real).into_iter().collect();
    if let Some(found) = install_prefix(path) {
        let same = match out.first() {
            Some(r) => *r != found && real_path(&found).is_ok_and(|f| f == *r),
            None => false,
        };
        if same {
            out.push(found);
        }
    }
    out
}

/// `text` with every spelling of `prefixes` written `{prefix}`, the
/// longest first so that one that extends another is replaced whole.
fn neutral_prefix<'a>(mut text: String, prefixes: impl Iterator<Item = &'a PathBuf>) -> String {
    let mut all: Vec<String> = prefixes.map(|p| p.display().to_string()).collect();
    all.sort_by_key(|p| std::cmp::Reverse(p.len()));
    for p in &all {
        text = text.replace(p.as_str(), "{prefix}");
    }
    text
}

/// Starts a program through `run`, again (after 1, 2, 4 ... 128 ms) while
/// the system answers ETXTBSY: a program written moments ago is refused
/// while any process still holds it open for writing, and a child another
/// thread has forked but not yet exec'd holds every descriptor of its
/// parent, the writer's included. The answer passes within microseconds.
pub(crate) fn start<T>(mut run: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    let mut nap = Duration::from_millis(1);
    for _ in 0..8 {
        match run() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(nap);
                nap *= 2;
            }
            done => return done,
        }
    }
    run()
}

/// Runs `path --version` and returns its identifying text.
fn run_version(path: &Path, prefix: &[PathBuf]) -> Result<String, String> {
    let mut cmd = Command::new(path);
    cmd.arg("--version").stdin(Stdio::null());
    let out = start(|| cmd.output())
        .map_err(|e| format!("{} could not be started: {e}", path.display()))?;
    Ok(version_text(&out, prefix))
}

/// What identifies a compiler by its `--version` run: standard output when
/// the run succeeded and printed something there, else both streams. Noise
/// a wrapper prints on standard error (Debian's `hipcc` prints a Python
/// traceback when no GPU driver is loaded) never enters the key, so the
/// same installation has the same identity with and without a GPU. Where
/// it is installed does not either: clang's `InstalledDir:` and
/// `Configuration file:` lines are left out, and the installation prefix
/// is written `{prefix}`.
fn version_text(out: &std::process::Output, prefix: &[PathBuf]) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut text = if out.status.success() && !stdout.trim().is_empty() {
        stdout.into_owned()
    } else {
        let mut text = stdout.into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        text
    };
    if text.contains("InstalledDir:") || text.contains("Configuration file:") {
        text = text
            .split_inclusive('\n')
            .filter(|l| !l.starts_with("InstalledDir:") && !l.starts_with("Configuration file:"))
            .collect();
    }
    neutral_prefix(text, prefix.iter())
}

/// The largest script read as one: a wrapper is a few lines; a larger
/// file that starts with `#!` is a program of its own.
const SCRIPT_MOST: u64 = 64 * 1024;

/// Program names of wrappers whose real compiler is a clang found beside
/// them or under the ROCm tree (`hipcc` in its Perl, binary and script
/// forms).
const HIP_WRAPPERS: [&str; 3] = ["hipcc", "hipcc.pl", "hipcc.bin"];

/// The files a wrapper's output depends on besides the wrapper itself, so
/// that an upgrade of the compiler behind it is a new identity although
/// the wrapper did not change (ccache follows `hipcc` the same way):
///
/// - `hipcc`: its sibling scripts (`hipcc.pl`, `hipvars.pm`, `hipcc.bin`)
///   and the clang it runs: `$HIP_CLANG_PATH`, `$ROCM_PATH/llvm/bin`,
///   `<hipcc's dir>/../llvm/bin`, then `hipcc`'s own directory, each
///   searched for `clang++`, `clang`, then a versioned `clang++-N` (Debian);
/// - any small script (`#!`): the executable files it names by absolute
///   path (a shell wrapper that `exec`s a compiler), and theirs, up to
///   `WRAPPER_DEPTH` scripts deep.
///
/// Resolved to real files, without duplicates, in a fixed order.
pub fn wrapped_files(real: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let add = |out: &mut Vec<PathBuf>, p: PathBuf| {
        if let Ok(r) = real_path(&p) {
            if r != real && fs::metadata(&r).is_ok_and(|m| m.is_file()) && !out.contains(&r) {
                out.push(r);
            }
        }
    };
    let name = real.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = real.parent().unwrap_or(Path::new("/"));
    if HIP_WRAPPERS.contains(&name) {
        for sibling in ["hipcc.pl", "hipvars.pm", "hipcc.bin"] {
            add(&mut out, dir.join(sibling));
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Some(d) = std::env::var_os("HIP_CLANG_PATH") {
            dirs.push(PathBuf::from(d));
        }
        if let Some(d) = std::env::var_os("ROCM_PATH") {
            dirs.push(PathBuf::from(d).join("llvm/bin"));
        }
        dirs.push(dir.join("../llvm/bin"));
        dirs.push(dir.to_path_buf());
        if let Some(clang) = dirs.iter().find_map(|d| find_clang(d)) {
            add(&mut out, clang);
        }
    }
    // A script's targets, and theirs in turn (a `hipcc` script that runs a
    // `clang` script that runs the compiler), a few levels deep.
    let mut scripts = vec![real.to_path_buf()];
    for _ in 0..WRAPPER_DEPTH {
        let mut next = Vec::new();
        for script in &scripts {
            for target in script_targets(script) {
                let before = out.len();
                add(&mut out, target);
                next.extend(out[before..].iter().cloned());
            }
        }
        if next.is_empty() {
            break;
        }
        scripts = next;
    }
    out
}

/// How many wrapper scripts deep [`wrapped_files`] follows.
const WRAPPER_DEPTH: usize = 4;

/// `clang++`, `clang` or the highest versioned `clang++-N` in `dir`
/// (probed by name: listing a directory like `/usr/bin` costs more; a
/// directory that is not there costs one look, not 36).
fn find_clang(dir: &Path) -> Option<PathBuf> {
    if !dir.is_dir() {
        return None;
    }
    let versioned = (7..=40).rev().map(|v| format!("clang++-{v}"));
    ["clang++".to_string(), "clang".to_string()]
        .into_iter()
        .chain(versioned)
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
}

/// Executable files a small script names by absolute path, as written.
fn script_targets(file: &Path) -> Vec<PathBuf> {
    let Ok(m) = fs::metadata(file) else {
        return Vec::new();
    };
    if m.len() > SCRIPT_MOST {
        return Vec::new();
    }
    let Ok(bytes) = fs::read(file) else {
        return Vec::new();
    };
    if !bytes.starts_with(b"#!") {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || "\"'`;|&()=".contains(c)) {
        if word.starts_with('/') && word.len() > 1 && !word.contains('$') {
            let p = PathBuf::from(word);
            let exe =
                fs::metadata(&p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
            // The interpreter line names the shell, not the compiler.
            let first_line = text.lines().next().unwrap_or("");
            if exe && !first_line.contains(word) && !out.contains(&p) {
                out.push(p);
            }
        }
    }
    out
}

/// Bounds concurrent compiles three times over: at most a local limit
/// (`CK_JIT_JOBS`, `ck-jit build -j`; it can change while compiles run);
/// when the process runs under `make -jN` or from a cargo build script, at
/// most the slots of the jobserver they pass down in
/// `MAKEFLAGS`/`CARGO_MAKEFLAGS`; and at most as many as the memory
/// budget holds, each compile counted at its group's estimate
/// ([`Memory`], [`Budget`]). As in make, the process owns one slot of its
/// own (the one it was started with) and takes a token from the
/// jobserver for every further compile running beside it.
///
/// Compiles are admitted in the order they asked: one waiting for memory
/// is not passed by smaller ones, which could otherwise keep it waiting
/// for ever. One compile is always admitted when none of this process's
/// runs, whatever its estimate, so a budget smaller than one compile
/// makes compiles run one at a time, never wait for ever.
///
/// The jobserver is looked up when the first compile starts, never on a
/// cache hit. One that cannot be used (make names it but closed its
/// descriptors: a recipe without `+`) is reported once; the local limit
/// alone applies then. Compilers inherit `MAKEFLAGS` and make's
/// descriptors as this process got them, as cc-rs leaves them: one that
/// runs make itself counts the slot its compile holds as its own and takes
/// further ones from the same jobserver.
pub struct Jobs {
    state: Mutex<Slots>,
    cv: Condvar,
    jobserver: OnceCell<Option<jobserver::Client>>,
    /// Set when reading or writing the jobserver failed mid-run.
    jobserver_broken: AtomicBool,
    /// Set once a compile's estimate was said to exceed the whole budget.
    said_too_big: AtomicBool,
}

struct Slots {
    /// Compiles holding a local slot.
    running: usize,
    /// The local limit.
    limit: usize,
    /// Whether this process's own slot is free (with a jobserver).
    own_free: bool,
    /// The memory the running compiles are counted at (saturating: one
    /// running [`Memory::Alone`] counts as all there is).
    reserved: u64,
    /// The memory available when this process last had no compile running
    /// (with [`Budget::Detect`]); see [`Jobs::budget`].
    base: Option<u64>,
    /// The ticket the next compile to ask gets.
    next_ticket: u64,
    /// The ticket admitted next: compiles are admitted in ticket order.
    admitting: u64,
}

/// The memory a compile is counted at while it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Memory {
    /// Not counted: compiles are bounded by slots alone
    /// (`CK_JIT_JOB_MEMORY=0`).
    Unbounded,
    /// This many bytes (the estimate of its group), counted against the
    /// budget while it runs.
    Estimate(u64),
    /// All of the budget: admitted only once no other compile of this
    /// process runs, and none is admitted beside it (the retry of a
    /// compile that was killed, most likely for want of memory).
    Alone,
}

impl Memory {
    /// What it adds to the memory counted for running compiles.
    fn counted(self) -> u64 {
        match self {
            Memory::Unbounded => 0,
            Memory::Estimate(e) => e,
            Memory::Alone => u64::MAX,
        }
    }
}

/// The memory compiles may use at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// What is available now ([`crate::compile::memory::available`]), read each
    /// time a compile is admitted.
    Detect,
    /// This many bytes (`CK_JIT_MEMORY_BUDGET`).
    Fixed(u64),
}

/// What a compile was admitted with, for a message about it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Admitted {
    /// The memory it was counted at (`None`: not counted; `u64::MAX`: all).
    pub estimate: Option<u64>,
    /// The memory compiles could use when it started, when known.
    pub budget: Option<u64>,
}

/// What a compile holds besides its local slot.
enum Token {
    /// No jobserver: the local slot is all.
    Local,
    /// The process's own slot.
    Own,
    /// A token read from the jobserver, written back when dropped (never
    /// read: holding it is the point).
    Acquired(#[allow(dead_code)] jobserver::Acquired),
}

/// A held compile slot.
pub struct JobPermit<'a> {
    jobs: &'a Jobs,
    token: Token,
    /// What it adds to [`Slots::reserved`].
    counted: u64,
    admitted: Admitted,
}

impl JobPermit<'_> {
    /// The memory the compile was counted at and the budget when it
    /// started.
    pub fn admitted(&self) -> Admitted {
        self.admitted
    }
}

/// How often a compile waiting for a jobserver token looks for one (it is
/// woken at once when this process's own slot comes free).
const JOBSERVER_POLL: Duration = Duration::from_millis(20);

impl Jobs {
    /// `n` local slots, and the environment's jobserver if there is one.
    pub fn new(n: usize) -> Jobs {
        Jobs {
            state: Mutex::new(Slots {
                running: 0,
                limit: n.max(1),
                own_free: true,
                reserved: 0,
                base: None,
                next_ticket: 0,
                admitting: 0,
            }),
            cv: Condvar::new(),
            jobserver: OnceCell::new(),
            jobserver_broken: AtomicBool::new(false),
            said_too_big: AtomicBool::new(false),
        }
    }

    /// `n` local slots and `client` as the jobserver, whatever the
    /// environment says.
    #[cfg(test)]
    fn with_jobserver(n: usize, client: jobserver::Client) -> Jobs {
        let jobs = Jobs::new(n);
        let _ = jobs.jobserver.set(Some(client));
        jobs
    }

    /// Changes the number of local slots (at least 1).
    pub fn set_limit(&self, n: usize) {
        let mut st = self.lock();
        st.limit = n.max(1);
        self.cv.notify_all();
    }

    /// The number of local slots.
    pub fn limit(&self) -> usize {
        self.lock().limit
    }

    /// Waits for a free local slot, then for a jobserver token; not
    /// bounded by memory.
    #[cfg(test)]
    fn acquire(&self) -> JobPermit<'_> {
        self.acquire_with(Memory::Unbounded, Budget::Detect)
    }

    /// Waits for this compile's turn, a free local slot and room for
    /// `memory` in `budget`, then for a jobserver token.
    pub fn acquire_with(&self, memory: Memory, budget: Budget) -> JobPermit<'_> {
        let mut st = self.lock();
        let ticket = st.next_ticket;
        st.next_ticket += 1;
        let admitted = loop {
            if st.admitting == ticket && st.running < st.limit {
                if let Some(a) = self.room_for(&mut st, memory, budget) {
                    break a;
                }
            }
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        };
        st.admitting += 1;
        st.running += 1;
        let counted = memory.counted();
        st.reserved = st.reserved.saturating_add(counted);
        // The next ticket's turn: it may fit beside this one.
        self.cv.notify_all();
        drop(st);
        let token = match self.jobserver() {
            Some(client) => self.token(client),
            None => Token::Local,
        };
        JobPermit {
            jobs: self,
            token,
            counted,
            admitted,
        }
    }

    /// Whether a compile counted at `memory` fits now (`Some`, with the
    /// figures it starts with), given what the running ones are counted
    /// at. With nothing of this process running, it always does.
    fn room_for(&self, st: &mut Slots, memory: Memory, budget: Budget) -> Option<Admitted> {
        if memory == Memory::Unbounded {
            return Some(Admitted::default());
        }
        let total = Jobs::budget(st, budget);
        let admitted = Admitted {
            estimate: Some(memory.counted()),
            budget: total,
        };
        if st.running == 0 {
            if let (Memory::Estimate(e), Some(t)) = (memory, total) {
                if e > t {
                    self.say_too_big(e, t);
                }
            }
            return Some(admitted);
        }
        let alone_running = st.reserved == u64::MAX;
        let fits = match (memory, total) {
            (Memory::Alone, _) => false,
            _ if alone_running => false,
            // Nothing to count against: slots alone bound compiles.
            (_, None) => true,
            (_, Some(total)) => st.reserved.saturating_add(memory.counted()) <= total,
        };
        fits.then_some(admitted)
    }

    /// The memory compiles may use, running ones included. Detected, it is
    /// what is available now plus what the running compiles are counted
    /// at (they may not have grown to it yet), but never more than was
    /// available when none of them ran: memory they have taken already is
    /// missing from what is available now, and counting it there and in
    /// their estimates would count it twice. What other programs take
    /// meanwhile lowers it.
    fn budget(st: &mut Slots, budget: Budget) -> Option<u64> {
        let now = match budget {
            Budget::Fixed(b) => return Some(b),
            Budget::Detect => crate::compile::memory::available(),
        };
        if st.running == 0 {
            st.base = now;
            return now;
        }
        match (st.base, now) {
            (Some(base), Some(now)) => Some(base.min(now.saturating_add(st.reserved))),
            (base, now) => base.or(now),
        }
    }

    /// Says, once per process, that one compile is estimated at more than
    /// compiles may use at all, so they run one at a time.
    fn say_too_big(&self, estimate: u64, budget: u64) {
        if self.said_too_big.swap(true, Ordering::Relaxed) {
            return;
        }
        let msg = format!(
            "ck-jit: one compile is estimated at {} but compiles may use {} of memory; \
             compiling one at a time while that lasts (CK_JIT_JOB_MEMORY sets the estimate, \
             CK_JIT_MEMORY_BUDGET the budget)",
            crate::compile::memory::human(estimate),
            crate::compile::memory::human(budget)
        );
        log::warn!("{msg}");
        eprintln!("{msg}");
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Slots> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn jobserver(&self) -> Option<&jobserver::Client> {
        if self.jobserver_broken.load(Ordering::Relaxed) {
            return None;
        }
        self.jobserver
            .get_or_init(|| jobserver_from_env(self.limit()))
            .as_ref()
    }

    /// The process's own slot if it is free, else a jobserver token. Waits
    /// on both at once: a token others release is found by polling the
    /// jobserver, this process's own slot by being woken.
    fn token(&self, client: &jobserver::Client) -> Token {
        let mut st = self.lock();
        loop {
            if st.own_free {
                st.own_free = false;
                return Token::Own;
            }
            drop(st);
            match client.try_acquire() {
                Ok(Some(t)) => return Token::Acquired(t),
                Ok(None) => {}
                // A pipe this process cannot read without blocking (no
                // `/dev/fd` to open a description of its own): read it only
                // when a token is waiting in it, so that a wait for one never
                // keeps this process's own slot unused. (Another process may
                // take that token first; the read then waits for the next.)
                Err(e) if e.kind() == std::io::ErrorKind::Unsupported => match client.available() {
                    Ok(0) => {}
                    Ok(_) => {
                        return match client.acquire() {
                            Ok(t) => Token::Acquired(t),
                            Err(e) => self.jobserver_failed(&e),
                        }
                    }
                    Err(e) => return self.jobserver_failed(&e),
                },
                Err(e) => return self.jobserver_failed(&e),
            }
            st = self.lock();
            if !st.own_free {
                st = self
                    .cv
                    .wait_timeout(st, JOBSERVER_POLL)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }

    /// Stops using a jobserver that failed (make went away, or the pipe
    /// is not what `MAKEFLAGS` said): the local limit alone applies from
    /// then on, which is said once.
    fn jobserver_failed(&self, e: &std::io::Error) -> Token {
        if !self.jobserver_broken.swap(true, Ordering::Relaxed) {
            let msg = format!(
                "ck-jit: the jobserver stopped answering ({e}); compiling with the local limit of {} from now on",
                self.limit()
            );
            log::warn!("{msg}");
            eprintln!("{msg}");
        }
        Token::Local
    }
}

/// The jobserver make or cargo passed down, when there is one this process
/// can use; one that is named but unusable is reported (once: the caller
/// keeps the answer).
fn jobserver_from_env(limit: usize) -> Option<jobserver::Client> {
    // SAFETY: `from_env_ext` takes over the descriptors `MAKEFLAGS` names.
    // make closes them for a recipe without `+` while still naming them,
    // so by now they may be files this process opened itself; with
    // `check_pipe` anything but an open pipe is refused. The client only
    // reads and writes single token bytes through its own duplicates.
    let found = unsafe { jobserver::Client::from_env_ext(true) };
    let e = match found.client {
        Ok(client) => {
            log::debug!(
                "ck-jit: compiles take their slots from the jobserver in {}",
                found.var.as_ref().map_or("MAKEFLAGS", |v| v.0)
            );
            return Some(client);
        }
        Err(e) => e,
    };
    use jobserver::FromEnvErrorKind as K;
    match e.kind() {
        // No jobserver, or make disabled it for this process on purpose.
        K::NoEnvVar | K::NoJobserver | K::NegativeFd | K::Unsupported => {}
        _ => {
            let var = found.var.as_ref().map_or("MAKEFLAGS", |v| v.0);
            let msg = format!(
                "ck-jit: the jobserver named in {var} cannot be used ({e}); compiling with the local limit of {limit} (a make rule shares its job slots only when its recipe starts with '+' or names $(MAKE))"
            );
            log::warn!("{msg}");
            eprintln!("{msg}");
        }
    }
    None
}

impl Drop for JobPermit<'_> {
    fn drop(&mut self) {
        let mut st = self.jobs.lock();
        if let Token::Own = self.token {
            st.own_free = true;
        }
        // An `Acquired` token goes back to the jobserver when the permit's
        // fields drop, after this.
        st.running -= 1;
        st.reserved = st.reserved.saturating_sub(self.counted);
        self.jobs.cv.notify_all();
    }
}

/// One compile to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Blob name (for errors).
    pub blob: String,
    /// Full argv: launcher (if any), compiler, arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Where the full output goes.
    pub log: PathBuf,
    /// Kill after this long.
    pub timeout: Duration,
    /// Append to the log instead of starting it (second step of a job).
    pub append_log: bool,
    /// `argv` starts with the launcher's words (`CK_JIT_LAUNCHER`), not
    /// with the compiler.
    pub launched: bool,
    /// The directory the compile writes into, removed once it is over
    /// (see [`Files::dir`]).
    pub scratch: Option<PathBuf>,
}

impl Job {
    /// The command as a string a user can paste into a shell (messages
    /// only): the directory the compile wrote into is gone by the time
    /// anyone reads it, so its paths are spelt under a fresh one,
    /// `d=$(mktemp -d) && cd CWD && cc ... -o "$d"/out.so`.
    pub fn command_line(&self) -> String {
        let scratch = self
            .scratch
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned())
            .filter(|d| !d.is_empty() && self.argv.iter().any(|a| a.contains(d.as_str())));
        let mut s = String::new();
        if scratch.is_some() {
            s.push_str("d=$(mktemp -d) && ");
        }
        if self.cwd != Path::new("") {
            s.push_str(&format!(
                "cd {} && ",
                shell_quote(&[self.cwd.display().to_string()])
            ));
        }
        let words: Vec<String> = self
            .argv
            .iter()
            .map(|a| match &scratch {
                Some(d) if a.contains(d.as_str()) => a
                    .split(d.as_str())
                    .map(|part| {
                        if part.is_empty() {
                            String::new()
                        } else {
                            shell_quote(&[part.to_string()])
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("\"$d\""),
                _ => shell_quote(std::slice::from_ref(a)),
            })
            .collect();
        s.push_str(&words.join(" "));
        s
    }

    /// Runs the compiler; stdout and stderr go to the log file.
    pub fn run(&self) -> Result<Ran, Error> {
        let Some((program, args)) = self.argv.split_first() else {
            return Err(not_found("", &self.blob, "empty command".into()));
        };
        let log = OpenOptions::new()
            .create(true)
            .write(true)
            .append(self.append_log)
            .truncate(!self.append_log)
            .open(&self.log)
            .map_err(|e| Error::io("creating the log", &self.log, e))?;
        let log_err = log
            .try_clone()
            .map_err(|e| Error::io("creating the log", &self.log, e))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            // Its own process group, so a timeout kills the driver and
            // everything it started (hipcc runs clang, nvcc runs cicc...).
            .process_group(0);
        let mut child = start(|| cmd.spawn()).map_err(|e| {
            if self.launched {
                Error::LauncherNotFound {
                    blob: self.blob.clone(),
                    launcher: program.clone(),
                    detail: e.to_string(),
                }
            } else {
                not_found(program, &self.blob, format!("could not be started: {e}"))
            }
        })?;
        let start = Instant::now();
        let mut nap = Duration::from_micros(100);
        let pid = child.id() as i32;
        let (status, peak_rss) = loop {
            match reap(pid) {
                Ok(Some(done)) => break done,
                Ok(None) => {}
                Err(e) => return Err(Error::io("waiting for the compiler of", &self.log, e)),
            }
            if start.elapsed() >= self.timeout {
                // SAFETY: kill(2) on the child's process group id (its pid,
                // set by process_group(0)); no memory is involved.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                }
                let _ = child.kill();
                let _ = child.wait();
                return Err(Error::CompileTimeout {
                    blob: self.blob.clone(),
                    command: self.command_line(),
                    seconds: self.timeout.as_secs(),
                    log: self.log.clone(),
                });
            }
            std::thread::sleep(nap);
            // Capped low: the time between the compiler's exit and our
            // noticing it is added to every compile (a wait4 a
            // millisecond costs nothing next to a compiler).
            nap = (nap * 2).min(Duration::from_millis(1));
        };
        if status.success() {
            return Ok(Ran { peak_rss });
        }
        if let Some((signal, exit_code)) = killed_by(status) {
            return Err(Error::CompileKilled {
                blob: self.blob.clone(),
                command: self.command_line(),
                kill: Box::new(Kill {
                    exit_code,
                    peak_rss,
                    ..Kill::by(signal)
                }),
                stderr_tail: excerpt(&self.log, TAIL_BYTES),
                log: self.log.clone(),
            });
        }
        let status = match status.code() {
            Some(c) => format!("exit status {c}"),
            None => status.to_string(),
        };
        Err(Error::CompileFailed {
            blob: self.blob.clone(),
            command: self.command_line(),
            status,
            stderr_tail: excerpt(&self.log, TAIL_BYTES),
            log: self.log.clone(),
        })
    }
}

/// What a compile that finished measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ran {
    /// The peak resident size of the compiler, in bytes, when the system
    /// reported one: the largest of the process started and of the
    /// processes it waited for (a driver's `clang`, `cicc`).
    pub peak_rss: Option<u64>,
}

/// Reaps the child `pid` once it has exited, with its peak resident size.
/// `wait4` rather than `Child::try_wait`: it reports the child's own
/// resource use (Linux gives the largest of the child and of the children
/// it waited for), where `getrusage(RUSAGE_CHILDREN)` gives the largest
/// of every child this process ever waited for, other threads' compiles
/// among them.
fn reap(pid: i32) -> std::io::Result<Option<(ExitStatus, Option<u64>)>> {
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain integers, for which all zeroes is valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: wait4 writes only into the two locals. `pid` is a child
        // of this process that nothing else waits for (its `Child` is only
        // waited on after a timeout kill, when this is no longer called).
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == 0 {
            return Ok(None);
        }
        if r == pid {
            // Kilobytes on Linux.
            let kib = u64::try_from(usage.ru_maxrss).unwrap_or(0);
            let peak = (kib > 0).then(|| kib.saturating_mul(1024));
            return Ok(Some((ExitStatus::from_raw(status), peak)));
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The signal a compile died of, when it did: the signal that ended the
/// process started, or SIGKILL when it exited with 137 (128 + 9), the code
/// a shell or wrapper script gives when the compiler it ran was killed
/// (the kernel's out-of-memory killer picks the largest process: the
/// compiler, not its wrapper). The exit code is returned in that case.
fn killed_by(status: ExitStatus) -> Option<(i32, Option<i32>)> {
    if let Some(signal) = status.signal() {
        return Some((signal, None));
    }
    match status.code() {
        Some(c) if c == 128 + libc::SIGKILL => Some((libc::SIGKILL, Some(c))),
        _ => None,
    }
}

/// What a failed compile's error shows of its log, in at most `max`
/// bytes: all of it when it fits; else its first lines, where a compiler
/// reports the root cause (the later errors and `note:` lines often
/// follow from it), and its last ones, with the number of lines left out
/// between, as build tools show a long log.
pub fn excerpt(path: &Path, max: usize) -> String {
    let Ok(len) = fs::metadata(path).map(|m| m.len()) else {
        return String::new();
    };
    if len <= max as u64 {
        return tail(path, max);
    }
    let head_max = max / 3;
    let mut head = Vec::with_capacity(head_max);
    let Ok(f) = File::open(path) else {
        return String::new();
    };
    let mut f = f.take(head_max as u64);
    let _ = f.read_to_end(&mut head);
    // Whole lines only, unless the first line alone is longer.
    if let Some(nl) = head.iter().rposition(|&b| b == b'\n') {
        head.truncate(nl);
    }
    let head = String::from_utf8_lossy(&head).trim_end().to_string();
    // The marker's own bytes come out of the tail's share.
    let end = tail(path, max - head_max - 64);
    let total = count_lines(path);
    let omitted = total.saturating_sub(head.lines().count() + end.lines().count());
    format!("{head}\n… {omitted} lines omitted …\n{end}")
}

/// The lines of a file, counted in chunks.
fn count_lines(path: &Path) -> usize {
    let Ok(mut f) = File::open(path) else {
        return 0;
    };
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = 0;
    let mut last = b'\n';
    loop {
        match f.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                lines += buf[..n].iter().filter(|&&b| b == b'\n').count();
                last = buf[n - 1];
            }
        }
    }
    lines + usize::from(last != b'\n')
}

/// The last `max` bytes of a file (starting at a line), lossily decoded.
pub fn tail(path: &Path, max: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(max as u64);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::with_capacity(max.min(len as usize));
    let _ = f.take(max as u64).read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let text = if start > 0 {
        text.split_once('\n').map(|(_, rest)| rest).unwrap_or(&text)
    } else {
        &text
    };
    text.trim_end().to_string()
}

/// Whether the runtime drops `arg` from every compile
/// ([`STRIPPED_FLAGS`]: flags that would hide the entry point from
/// `dlsym`).
fn is_stripped(arg: &str) -> bool {
    STRIPPED_FLAGS.contains(&arg)
}

/// Normalises a compile argv for hashing: flags that only name where the
/// output and dependency files go are dropped, [`STRIPPED_FLAGS`] are
/// dropped (no compile gets them), and placeholders stay unexpanded so that
/// relocating the tree does not change the key.
pub fn normalise_args(args: &[String]) -> Vec<String> {
    normalised(args).map(str::to_string).collect()
}

/// [`normalise_args`] without copying: the arguments kept, in order.
pub(crate) fn normalised(args: &[String]) -> impl Iterator<Item = &str> {
    let mut skip_next = false;
    args.iter().filter_map(move |a| {
        if skip_next {
            skip_next = false;
            return None;
        }
        match a.as_str() {
            "-MF" | "-MT" | "-MQ" => {
                skip_next = true;
                None
            }
            "-MD" | "-MMD" => None,
            a if is_stripped(a) => None,
            a => Some(a),
        }
    })
}

/// Where one compile's files go: the shared object (`{out}`), the object
/// of a split compile (`{obj}`) and the dependency file, all in one
/// private directory.
#[derive(Debug, Clone)]
pub struct Files {
    /// The directory they are in, removed once the compile is over.
    pub dir: PathBuf,
    /// The shared object the blob's command writes.
    pub out: PathBuf,
    /// The object file between compile and link when split for a launcher.
    pub obj: PathBuf,
    /// The Make-style dependency file (`-MD -MF`).
    pub dep: PathBuf,
}

impl Files {
    /// The files of a compile in `dir`.
    pub fn in_dir(dir: &Path) -> Files {
        Files {
            dir: dir.to_path_buf(),
            out: dir.join("out.so"),
            obj: dir.join("out.o"),
            dep: dir.join("out.d"),
        }
    }
}

/// Everything that decides the commands of one blob's compile.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The blob's name (`{name}`, and messages).
    pub blob: &'a str,
    /// Its group: the argument template and whether headers are recorded.
    pub group: &'a Group,
    /// The compiler found for the group's program.
    pub compiler: &'a CompilerId,
    /// `CK_JIT_LAUNCHER`, split into words (empty: none).
    pub launcher: &'a [String],
    /// The tree root (`{root}`).
    pub root: &'a Path,
    /// The absolute source path (`{src}`).
    pub source: &'a Path,
    /// The working directory of every step.
    pub cwd: &'a Path,
    /// The log all steps write to.
    pub log: &'a Path,
    /// Limit of each step.
    pub timeout: Duration,
}

/// The jobs that compile one blob into `files.out`, in order.
///
/// With a launcher, a template that links a shared object is split into a
/// compile step (which the launcher runs, and can cache or distribute) and
/// a link step ([`split_for_launcher`]); otherwise it runs as one step.
/// [`STRIPPED_FLAGS`] are dropped, placeholders expanded, and `-MD -MF`
/// added to the compiling step when the group records headers.
pub fn jobs(req: &Request, files: &Files) -> Vec<Job> {
    let expand_all = |args: &[String]| -> Vec<String> {
        args.iter()
            .filter(|a| !is_stripped(a))
            .map(|a| {
                expand(a, req.root, req.source, &files.out, req.blob)
                    .replace("{obj}", &files.obj.to_string_lossy())
            })
            .collect()
    };
    let steps: Vec<(Vec<String>, bool)> =
        match (req.launcher.is_empty(), split_for_launcher(&req.group.args)) {
            (false, Some((c, l))) => vec![(expand_all(&c), true), (expand_all(&l), false)],
            _ => vec![(expand_all(&req.group.args), true)],
        };
    let program = req.compiler.path.to_string_lossy().into_owned();
    steps
        .into_iter()
        .enumerate()
        .map(|(i, (args, compiles))| {
            let mut argv: Vec<String> = Vec::new();
            if compiles {
                argv.extend(req.launcher.iter().cloned());
            }
            argv.push(program.clone());
            argv.extend(args);
            if compiles && req.group.depfile {
                argv.push("-MD".into());
                argv.push("-MF".into());
                argv.push(files.dep.to_string_lossy().into_owned());
            }
            Job {
                blob: req.blob.to_string(),
                argv,
                cwd: req.cwd.to_path_buf(),
                log: req.log.to_path_buf(),
                timeout: req.timeout,
                // The link step adds to the compile's log.
                append_log: i > 0,
                launched: compiles && !req.launcher.is_empty(),
                scratch: Some(files.dir.clone()),
            }
        })
        .collect()
}

/// Runs `jobs` in order, stopping at the first that fails; the peak
/// resident size is the largest of theirs.
pub fn run(jobs: &[Job]) -> Result<Ran, Error> {
    let mut all = Ran::default();
    for job in jobs {
        log::info!(
            "ck-jit: compiling blob '{}': {}",
            job.blob,
            job.command_line()
        );
        let ran = job.run()?;
        all.peak_rss = all.peak_rss.max(ran.peak_rss);
    }
    Ok(all)
}

/// Reads the shared object a successful compile wrote and checks it is
/// one this process can load (ELF, shared, host machine).
pub fn read_output(blob: &str, out: &Path) -> Result<Vec<u8>, Error> {
    let bad = |why: String| Error::BadObject {
        blob: blob.to_string(),
        path: out.to_path_buf(),
        why,
    };
    let bytes = match fs::read(out) {
        Ok(b) if b.is_empty() => {
            return Err(bad("the compiler exited 0 but wrote an empty file".into()))
        }
        Ok(b) => b,
        Err(_) => return Err(bad("the compiler exited 0 but wrote no output".into())),
    };
    symbol::check_header(&bytes, Some(symbol::HOST_MACHINE)).map_err(|e| bad(e.to_string()))?;
    Ok(bytes)
}

/// Splits a one-step "compile and link a shared object" template into a
/// compile step (`-c`, output `{obj}`) and a link step, so that a launcher
/// (ccache, sccache, distcc) sees a plain compile it can cache or send
/// away — launchers pass link steps through uncached. Link-only arguments
/// (`-shared`, `-l..`, `-L..`, `-Wl,..`, `-static..`) go to the link step;
/// `-fPIC` and `-o {out}` to both. `None` when the template does not link a
/// shared object.
pub fn split_for_launcher(args: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    if !args.iter().any(|a| a == "-shared") {
        return None;
    }
    let is_link_only = |a: &str| {
        a == "-shared"
            || a.starts_with("-l")
            || a.starts_with("-L")
            || a.starts_with("-Wl,")
            || a.starts_with("-static")
    };
    let mut compile = vec!["-c".to_string()];
    let mut link = vec!["-shared".to_string()];
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        if a == "-o" {
            // The output: the object for the compile, {out} for the link.
            let _ = it.next();
            compile.push("-o".into());
            compile.push("{obj}".into());
            continue;
        }
        if is_link_only(a) {
            if a != "-shared" {
                link.push(a.clone());
            }
            continue;
        }
        if a == "-fPIC" || a == "-fpic" {
            link.push(a.clone());
        }
        if a.starts_with("--offload-arch")
            || a == "-arch"
            || a.starts_with("-arch=")
            || a.starts_with("--gpu-architecture")
        {
            // GPU drivers want the target on the link line too.
            link.push(a.clone());
            if a == "-arch" {
                if let Some(v) = it.peek() {
                    link.push((*v).clone());
                }
            }
        }
        compile.push(a.clone());
    }
    link.push("{obj}".into());
    link.push("-o".into());
    link.push("{out}".into());
    Some((compile, link))
}

/// Substitutes the placeholders of an argument template, in one pass: the
/// text a placeholder becomes is never scanned again, so a path holding a
/// directory named `{name}` or `{out}` stays that path.
pub fn expand(arg: &str, root: &Path, src: &Path, out: &Path, name: &str) -> String {
    if !arg.contains('{') {
        return arg.to_string();
    }
    let mut expanded = String::with_capacity(arg.len() + 64);
    let mut rest = arg;
    while let Some(at) = rest.find('{') {
        expanded.push_str(&rest[..at]);
        rest = &rest[at..];
        let (value, len) = if rest.starts_with("{root}") {
            (root.to_string_lossy(), "{root}".len())
        } else if rest.starts_with("{src}") {
            (src.to_string_lossy(), "{src}".len())
        } else if rest.starts_with("{out}") {
            (out.to_string_lossy(), "{out}".len())
        } else if rest.starts_with("{name}") {
            (name.into(), "{name}".len())
        } else {
            ("{".into(), 1)
        };
        expanded.push_str(&value);
        rest = &rest[len..];
    }
    expanded.push_str(rest);
    expanded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_start_refused_as_text_file_busy_is_tried_again_and_other_errors_are_not() {
        let mut calls = 0;
        let got = start(|| {
            calls += 1;
            if calls < 3 {
                Err(std::io::Error::from_raw_os_error(libc::ETXTBSY))
            } else {
                Ok(calls)
            }
        });
        assert_eq!(got.unwrap(), 3);
        let mut calls = 0;
        let got: std::io::Result<()> = start(|| {
            calls += 1;
            Err(std::io::Error::from_raw_os_error(libc::ENOENT))
        });
        assert_eq!(got.unwrap_err().raw_os_error(), Some(libc::ENOENT));
        assert_eq!(calls, 1);
        let mut calls = 0;
        let got: std::io::Result<()> = start(|| {
            calls += 1;
            Err(std::io::Error::from_raw_os_error(libc::ETXTBSY))
        });
        assert!(got.is_err());
        assert_eq!(calls, 9);
    }

    /// `real_path` names the file `fs::canonicalize` names, through links
    /// to directories and files, `..` and a relative path, and fails
    /// where it fails.
    #[test]
    fn the_real_path_is_the_canonical_path() {
        let base = tempfile::tempdir().unwrap();
        let b = base.path();
        fs::create_dir_all(b.join("real/deep/er")).unwrap();
        fs::write(b.join("real/deep/er/f.h"), "x").unwrap();
        std::os::unix::fs::symlink(b.join("real/deep"), b.join("dirlink")).unwrap();
        std::os::unix::fs::symlink("er/f.h", b.join("real/deep/filelink")).unwrap();
        std::os::unix::fs::symlink(b.join("nowhere"), b.join("dangling")).unwrap();
        for p in [
            b.join("real/deep/er/f.h"),
            b.join("dirlink/er/f.h"),
            b.join("dirlink/filelink"),
            b.join("dirlink/er/../er/./f.h"),
            b.join("dirlink"),
            b.to_path_buf(),
        ] {
            assert_eq!(
                real_path(&p).unwrap(),
                fs::canonicalize(&p).unwrap(),
                "{}",
                p.display()
            );
        }
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            real_path(Path::new(".")).unwrap(),
            fs::canonicalize(&cwd).unwrap()
        );
        for p in [
            b.join("dangling"),
            b.join("real/none.h"),
            b.join("real/deep/er/f.h/x"),
        ] {
            assert!(real_path(&p).is_err(), "{}", p.display());
            assert!(fs::canonicalize(&p).is_err());
        }
    }

    /// Three errors: the first is the cause, the rest and the notes
    /// follow from it. The error keeps the first lines and the last ones.
    #[test]
    fn an_install_prefix_is_above_bin_and_never_the_systems() {
        let prefix = |p: &str| install_prefix(Path::new(p));
        assert_eq!(prefix("/opt/rocm/bin/hipcc"), Some("/opt/rocm".into()));
        assert_eq!(prefix("/venv/lib/zig/zig"), Some("/venv/lib/zig".into()));
        assert_eq!(prefix("/usr/bin/cc"), None);
        assert_eq!(prefix("/usr/local/bin/nvcc"), None);
        assert_eq!(prefix("/bin/cc"), None);
        assert_eq!(prefix("cc"), None);
        // A toolkit reached through a link to its versioned directory has
        // both spellings, the resolved one first.
        let base = tempfile::tempdir().unwrap();
        let b = real_path(base.path()).unwrap();
        fs::create_dir_all(b.join("cuda-13.0/bin")).unwrap();
        fs::write(b.join("cuda-13.0/bin/nvcc"), "").unwrap();
        std::os::unix::fs::symlink(b.join("cuda-13.0"), b.join("cuda")).unwrap();
        let found = b.join("cuda/bin/nvcc");
        assert_eq!(
            install_prefixes(&found, &real_path(&found).unwrap()),
            [b.join("cuda-13.0"), b.join("cuda")]
        );
        let plain = b.join("cuda-13.0/bin/nvcc");
        assert_eq!(install_prefixes(&plain, &plain), [b.join("cuda-13.0")]);
    }

    #[test]
    fn the_version_text_leaves_out_where_the_compiler_is_installed() {
        let out = |stdout: &str| std::process::Output {
            status: ExitStatus::from_raw(0),
            stdout: stdout.as_bytes().to_vec(),
            stderr: b"noise".to_vec(),
        };
        let a = "clang version 20.1.2\nTarget: x86_64-unknown-linux-musl\nThread model: \
                 posix\nInstalledDir: /opt/a/zig\nConfiguration file: /opt/a/bin/x.cfg\n";
        let b = a.replace("/opt/a", "/srv/other/b");
        let prefix_a = &[PathBuf::from("/opt/a")];
        let text = version_text(&out(a), prefix_a);
        assert_eq!(
            text,
            "clang version 20.1.2\nTarget: x86_64-unknown-linux-musl\nThread model: posix\n"
        );
        assert_eq!(text, version_text(&out(&b), &["/srv/other/b".into()]));
        // The prefix written elsewhere in it is written `{prefix}`.
        assert_eq!(
            version_text(&out("tc 1 (/opt/a/share)\n"), prefix_a),
            "tc 1 ({prefix}/share)\n"
        );
        // Another version is another text.
        assert_ne!(
            text,
            version_text(&out(&a.replace("20.1.2", "20.1.3")), prefix_a)
        );
    }

    #[test]
    fn a_scripts_text_counts_less_its_paths_and_a_binary_is_no_script() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path();
        let write = |prefix: &str, exe: &str, flags: &str| {
            let p = dir.join(prefix);
            fs::create_dir_all(p.join("bin")).unwrap();
            fs::create_dir_all(p.join("libexec")).unwrap();
            let target = p.join(exe);
            fs::write(&target, "\x7fELF").unwrap();
            fs::set_permissions(&target, fs::Permissions::from_mode(0o755)).unwrap();
            let text = format!(
                "#!/bin/sh\nexec \"{}\" {flags} -I{}/include \"$@\"\n",
                target.display(),
                p.display()
            );
            let script = p.join("bin/cc");
            fs::write(&script, &text).unwrap();
            script_text(&script, text.as_bytes(), &[]).unwrap()
        };
        let one = write("one", "libexec/cc1", "-O2");
        assert_eq!(
            one,
            "#!/bin/sh\nexec \"{exe}\" -O2 -I{prefix}/include \"$@\"\n"
        );
        assert_eq!(one, write("two/three", "libexec/cc1", "-O2"));
        assert_ne!(one, write("four", "libexec/cc1", "-O3"));
        assert_eq!(script_text(Path::new("/x"), b"\x7fELF\x02", &[]), None);
    }

    #[test]
    fn a_long_log_keeps_its_first_error_and_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("k.log");
        let mut text = String::from("k.c:2:5: error: use of undeclared identifier 'nope'\n");
        for i in 0..2000 {
            text.push_str(&format!("k.c:{i}:1: note: candidate function not viable\n"));
        }
        text.push_str("k.c:9:1: error: no matching function\n3 errors generated.\n");
        fs::write(&log, &text).unwrap();
        let shown = excerpt(&log, 4096);
        assert!(shown.len() <= 4096, "{}", shown.len());
        assert!(shown.starts_with("k.c:2:5: error: use of undeclared identifier"));
        assert!(shown.ends_with("3 errors generated."), "{shown}");
        let omitted: usize = shown
            .split("… ")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("a count of the lines left out");
        let kept = shown.lines().count() - 1;
        assert_eq!(omitted + kept, text.lines().count());
        // A short log is shown whole.
        fs::write(&log, "k.c:1: error: x\n").unwrap();
        assert_eq!(excerpt(&log, 4096), "k.c:1: error: x");
    }

    #[test]
    fn normalise_drops_output_locations_and_visibility() {
        let args: Vec<String> = [
            "-O2",
            "-MD",
            "-MF",
            "/tmp/x.d",
            "-fvisibility=hidden",
            "-fvisibility=internal",
            "{src}",
            "-o",
            "{out}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(normalise_args(&args), vec!["-O2", "{src}", "-o", "{out}"]);
    }

    #[test]
    fn expand_substitutes_once_and_never_inside_a_substituted_value() {
        let (root, src, out) = (
            Path::new("/t/{out}"),
            Path::new("/t/{out}/k/{name}/a.c"),
            Path::new("/c/a.so"),
        );
        assert_eq!(expand("-O2", root, src, out, "a"), "-O2");
        assert_eq!(
            expand("{src}", root, src, out, "a"),
            "/t/{out}/k/{name}/a.c"
        );
        assert_eq!(
            expand("-I{root}/inc", root, src, out, "a"),
            "-I/t/{out}/inc"
        );
        assert_eq!(
            expand("{{name}}{out}{x}{", root, src, out, "a"),
            "{a}/c/a.so{x}{"
        );
        assert_eq!(expand("-DN={name}", root, src, out, "{src}"), "-DN={src}");
    }

    #[test]
    fn missing_program_is_not_found() {
        let e = identify(
            "ck-jit-no-such-compiler",
            "b",
            &CompilerCheck::Content,
            None,
        )
        .unwrap_err();
        assert!(matches!(e, Error::CompilerNotFound { .. }), "{e}");
        assert!(
            e.to_string().contains("CK_JIT_CK_JIT_NO_SUCH_COMPILER"),
            "{e}"
        );
    }

    fn request_jobs(launcher: &[String], depfile: bool) -> Vec<Job> {
        let group = Group {
            name: "g".into(),
            compiler: "c++".into(),
            args: [
                "-O2",
                "-fvisibility=hidden",
                "-fvisibility=internal",
                "-fPIC",
                "-shared",
                "{src}",
                "-o",
                "{out}",
            ]
            .map(String::from)
            .to_vec(),
            cwd: None,
            symbol: ck_jit_manifest::SymbolSpec::Exact("{name}".into()),
            depfile,
            family: None,
            neutral: Default::default(),
        };
        let id = CompilerId {
            path: "/usr/bin/c++".into(),
            real: "/usr/bin/g++".into(),
            version: "1".into(),
            files: String::new(),
            prefix: Vec::new(),
            stat: String::new(),
        };
        let req = Request {
            blob: "k",
            group: &group,
            compiler: &id,
            launcher,
            root: Path::new("/r"),
            source: Path::new("/r/k.cpp"),
            cwd: Path::new("/r"),
            log: Path::new("/c/k.log"),
            timeout: Duration::from_secs(1),
        };
        jobs(&req, &Files::in_dir(Path::new("/c/tmp/w")))
    }

    #[test]
    fn the_command_shown_writes_into_a_fresh_directory_not_the_removed_one() {
        let job = &request_jobs(&[], true)[0];
        assert_eq!(
            job.command_line(),
            "d=$(mktemp -d) && cd /r && /usr/bin/c++ -O2 -fPIC -shared /r/k.cpp \
             -o \"$d\"/out.so -MD -MF \"$d\"/out.d"
        );
        // A path inside a word, with characters the shell would take.
        let mut job = job.clone();
        job.scratch = Some("/c/tmp/a b".into());
        job.argv = vec!["cc".into(), "-Wl,-o,/c/tmp/a b/x y.so".into()];
        assert_eq!(
            job.command_line(),
            "d=$(mktemp -d) && cd /r && cc -Wl,-o,\"$d\"'/x y.so'"
        );
        // Nothing under it: the command as it ran.
        job.argv = vec!["cc".into(), "-v".into()];
        assert_eq!(job.command_line(), "cd /r && cc -v");
    }

    #[test]
    fn jobs_drop_stripped_flags_and_add_the_depfile() {
        let jobs = request_jobs(&[], true);
        assert_eq!(jobs.len(), 1);
        assert_eq!(
            jobs[0].argv,
            [
                "/usr/bin/c++",
                "-O2",
                "-fPIC",
                "-shared",
                "/r/k.cpp",
                "-o",
                "/c/tmp/w/out.so",
                "-MD",
                "-MF",
                "/c/tmp/w/out.d"
            ]
        );
        assert!(!jobs[0].append_log);
        assert!(!request_jobs(&[], false)[0].argv.iter().any(|a| a == "-MD"));
    }

    #[test]
    fn a_launcher_runs_the_compile_step_and_the_link_appends_to_its_log() {
        let jobs = request_jobs(&["ccache".to_string()], true);
        assert_eq!(jobs.len(), 2);
        assert_eq!(&jobs[0].argv[..3], ["ccache", "/usr/bin/c++", "-c"]);
        assert!(jobs[0]
            .argv
            .ends_with(&["-MF".into(), "/c/tmp/w/out.d".into()]));
        assert!(jobs[0].argv.contains(&"/c/tmp/w/out.o".to_string()));
        assert_eq!(jobs[1].argv[0], "/usr/bin/c++");
        assert!(jobs[1]
            .argv
            .ends_with(&["-o".into(), "/c/tmp/w/out.so".into()]));
        for job in &jobs {
            assert!(!job
                .argv
                .iter()
                .any(|a| STRIPPED_FLAGS.contains(&a.as_str())));
        }
        assert!(!jobs[0].append_log && jobs[1].append_log);
    }

    /// Checks that one more `acquire` (on another thread) waits while the
    /// slots are taken, and gets through once `after` frees one.
    fn blocks_until(jobs: &'static Jobs, after: impl FnOnce()) {
        blocks_until_with(jobs, Memory::Unbounded, Budget::Detect, after)
    }

    /// [`blocks_until`] for a compile counted at `memory` in `budget`.
    fn blocks_until_with(
        jobs: &'static Jobs,
        memory: Memory,
        budget: Budget,
        after: impl FnOnce(),
    ) {
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let p = jobs.acquire_with(memory, budget);
            let _ = tx.send(());
            drop(p);
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "a compile started beyond the limit"
        );
        after();
        assert!(
            rx.recv_timeout(Duration::from_secs(30)).is_ok(),
            "a freed slot was never handed on"
        );
        waiter.join().expect("waiter");
    }

    #[test]
    fn a_jobserver_of_two_tokens_allows_three_compiles_with_the_own_slot() {
        let client = jobserver::Client::new(2).expect("jobserver pipe");
        let jobs: &'static Jobs = Box::leak(Box::new(Jobs::with_jobserver(8, client.clone())));
        let a = jobs.acquire();
        let b = jobs.acquire();
        let c = jobs.acquire();
        assert!(matches!(a.token, Token::Own));
        assert_eq!(client.available().expect("available"), 0);
        blocks_until(jobs, || drop(b));
        drop((a, c));
        assert_eq!(client.available().expect("available"), 2, "tokens returned");
    }

    #[test]
    fn the_own_slot_is_handed_on_without_any_jobserver_token() {
        let client = jobserver::Client::new(0).expect("jobserver pipe");
        let jobs: &'static Jobs = Box::leak(Box::new(Jobs::with_jobserver(8, client)));
        let a = jobs.acquire();
        blocks_until(jobs, || drop(a));
    }

    #[test]
    fn the_local_limit_applies_under_a_larger_jobserver() {
        let client = jobserver::Client::new(8).expect("jobserver pipe");
        let jobs: &'static Jobs = Box::leak(Box::new(Jobs::with_jobserver(2, client.clone())));
        let a = jobs.acquire();
        let b = jobs.acquire();
        assert_eq!(client.available().expect("available"), 7);
        blocks_until(jobs, || drop(a));
        drop(b);
        assert_eq!(client.available().expect("available"), 8, "tokens returned");
    }

    const MIB: u64 = 1 << 20;

    fn leaked(n: usize) -> &'static Jobs {
        Box::leak(Box::new(Jobs::new(n)))
    }

    #[test]
    fn a_budget_holds_as_many_compiles_as_their_estimates_fit() {
        let jobs = leaked(8);
        let budget = Budget::Fixed(100 * MIB);
        let a = jobs.acquire_with(Memory::Estimate(40 * MIB), budget);
        let b = jobs.acquire_with(Memory::Estimate(40 * MIB), budget);
        assert_eq!(
            a.admitted(),
            Admitted {
                estimate: Some(40 * MIB),
                budget: Some(100 * MIB)
            }
        );
        blocks_until_with(jobs, Memory::Estimate(40 * MIB), budget, || drop(a));
        // A smaller one fits beside the one left.
        let c = jobs.acquire_with(Memory::Estimate(20 * MIB), budget);
        drop((b, c));
        assert_eq!(jobs.lock().reserved, 0);
    }

    #[test]
    fn one_compile_larger_than_the_budget_runs_alone_rather_than_never() {
        let jobs = leaked(8);
        let budget = Budget::Fixed(100 * MIB);
        let a = jobs.acquire_with(Memory::Estimate(300 * MIB), budget);
        blocks_until_with(jobs, Memory::Estimate(300 * MIB), budget, || drop(a));
        assert!(jobs.said_too_big.load(Ordering::Relaxed));
    }

    #[test]
    fn a_compile_alone_waits_for_the_others_and_keeps_later_ones_out() {
        let jobs = leaked(8);
        let budget = Budget::Fixed(100 * MIB);
        let a = jobs.acquire_with(Memory::Estimate(10 * MIB), budget);
        blocks_until_with(jobs, Memory::Alone, budget, || drop(a));
        let alone = jobs.acquire_with(Memory::Alone, budget);
        blocks_until_with(jobs, Memory::Estimate(MIB), budget, || drop(alone));
        // Without any budget known, alone still means alone.
        let a = jobs.acquire_with(Memory::Estimate(10 * MIB), Budget::Detect);
        blocks_until_with(jobs, Memory::Alone, Budget::Detect, || drop(a));
    }

    /// Compiles are admitted in the order they asked: a small one that
    /// would fit waits behind a large one that does not yet (and, here,
    /// until the large one is done: they do not fit together).
    #[test]
    fn a_large_compile_waiting_for_memory_is_not_passed_by_small_ones() {
        let jobs = leaked(8);
        let budget = Budget::Fixed(100 * MIB);
        let a = jobs.acquire_with(Memory::Estimate(60 * MIB), budget);
        let (tx, rx) = std::sync::mpsc::channel();
        let large = {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let p = jobs.acquire_with(Memory::Estimate(80 * MIB), budget);
                let _ = tx.send("large");
                std::thread::sleep(Duration::from_millis(50));
                drop(p);
            })
        };
        // The large one has its ticket before the small one asks.
        while jobs.lock().next_ticket < 2 {
            std::thread::yield_now();
        }
        let small = std::thread::spawn(move || {
            let p = jobs.acquire_with(Memory::Estimate(30 * MIB), budget);
            let _ = tx.send("small");
            drop(p);
        });
        assert!(
            rx.recv_timeout(Duration::from_millis(300)).is_err(),
            "a compile started beyond the budget, or out of turn"
        );
        drop(a);
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok("large"));
        assert_eq!(rx.recv_timeout(Duration::from_secs(30)), Ok("small"));
        large.join().expect("large");
        small.join().expect("small");
    }
}
