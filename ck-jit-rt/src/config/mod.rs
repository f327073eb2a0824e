//! Every environment variable the runtime reads, read in this one place,
//! once per process.
//!
//! | variable | meaning |
//! |---|---|
//! | `CK_JIT_CACHE_DIR` | cache root (default `$XDG_CACHE_HOME/<name>`, else `~/.cache/<name>`) |
//! | `CK_JIT_CACHE_PATH` | read-only caches looked in before the cache root, `:`-separated (`/opt/ck-jit/gfx942:/mnt/team-cache`); never written or locked, every object hashed before it is loaded |
//! | `CK_JIT_ROOT` | relocates the tree root of every manifest (`CK_JIT_ROOT_<NAME>` for one) |
//! | `CK_JIT_MANIFEST` | fallback manifest for blobs the embedded one does not know |
//! | `CK_JIT_VERBOSE` | `1`: one line on stderr per compile and load |
//! | `CK_JIT_OFFLINE` | `1`: never compile; a miss is an error |
//! | `CK_JIT_JOBS` | most compiles at once (default: available cores) |
//! | `CK_JIT_JOB_MEMORY` | the memory one compile is taken to need, for every group, e.g. `800M`, `2G` (default: learnt per group from the peak resident size of its compiles, kept in `<cache>/memory.json`; 1 GiB before any is measured); `0`: compiles are not bounded by memory |
//! | `CK_JIT_MEMORY_BUDGET` | the memory compiles may use at once, e.g. `12G` (default: `MemAvailable`, or less under a cgroup v2 `memory.max`) |
//! | `CK_JIT_SHARED_CACHE` | `1`: accept a group-writable or foreign-owned cache root (every load then hashes the whole object) |
//! | `CK_JIT_VERIFY` | `full`: hash the whole object on every load, also in a private cache (default: hash it only when its size, mtime, ctime or inode differ from those recorded at publish) |
//! | `CK_JIT_LAUNCHER` | compiler launcher, e.g. `ccache`, `sccache`, `distcc` |
//! | `CK_JIT_ON_FAILURE` | `return` (default): a lazy stub whose blob cannot be had returns CK's "no kernel" value; `abort` |
//! | `CK_JIT_DROP_FLAGS` | flag sequences taken out of every compile, `;`-separated (`-mllvm -amdgpu-function-calls=false`); part of the key |
//! | `CK_JIT_EXTRA_FLAGS` | flags added to every compile before the source (`-g -O0`); part of the key |
//! | `CK_JIT_COMPILE_TIMEOUT` | seconds before a compile is killed (default 3600) |
//! | `CK_JIT_LOCK_TIMEOUT` | seconds to wait for another process's compile (default: compile timeout + 60) |
//! | `CK_JIT_CACHE_MAX_SIZE` | size limit kept after every publish (least recently used entries go) and by `ck-jit gc` given no limit, e.g. `2G` |
//! | `CK_JIT_CACHE_MAX_ENTRIES` | entry limit, kept the same way |
//! | `CK_JIT_<PROGRAM>` | path of a compiler, e.g. `CK_JIT_HIPCC`, `CK_JIT_NVCC`, `CK_JIT_CXX` |
//! | `CK_JIT_COMPILER_CHECK` | how a compiler is identified: `content` (default: its files by content and its `--version` output, worked out once per set of compiler files and kept in the cache; `mtime` is read as this), `command` (`--version` in every process), `string:<text>` |
//! | `CK_JIT_KEY_ENV` | more variables whose values enter the cache key |
//! | `CK_JIT_RECORD` | file the name of every blob a process loads is added to (each name once), for `ck-jit build --blob-list` |
//! | `MAKEFLAGS`, `CARGO_MAKEFLAGS` | the jobserver of `make -jN` or cargo: compiles also take its slots (read by the `jobserver` crate when the first compile starts) |
//! | `CK_JIT_ARCH` | the GPU architecture compiles are for: `gfx942`, `sm_90`, one of each (`gfx942,sm_90`), or `all` (the recorded targets); default: the device this process uses, for blobs recorded for several |
//!
//! Detection reads the GPU runtimes' own variables that choose a device
//! ([`DeviceEnv`]): `HIP_VISIBLE_DEVICES`, `ROCR_VISIBLE_DEVICES`,
//! `CUDA_VISIBLE_DEVICES`, `CUDA_DEVICE_ORDER`, `HSA_OVERRIDE_GFX_VERSION`.
//!
//! A value that cannot be read (`CK_JIT_JOBS=four`, `CK_JIT_OFFLINE=maybe`)
//! is not ignored silently: [`Config::problems`] says what was wrong and
//! what is used instead, the process configuration prints that on stderr
//! once, and the `ck-jit` tool refuses to run.
//!
//! The settings' own types and parsers ([`CompilerCheck`], [`Limits`],
//! [`parse_size`], the key's variables [`KEY_ENV`]) live here as well:
//! this module is the bottom layer, and reads none of the modules that
//! act on its settings.
//!
//! # The room
//!
//! Owns: every variable's name, its parsing, and the problems reported
//! for it.
//!
//! May use: [`error`](crate::Error) only (its message texts).

pub(crate) mod arch_name;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use once_cell::sync::Lazy;

/// The runtime's settings from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// `CK_JIT_CACHE_DIR`.
    pub cache_dir: Option<PathBuf>,
    /// `CK_JIT_CACHE_PATH`: read-only cache tiers, looked in (in this
    /// order) before the writable cache; absolute paths only.
    pub cache_path: Vec<PathBuf>,
    /// `CK_JIT_ROOT`.
    pub root: Option<PathBuf>,
    /// `CK_JIT_MANIFEST`.
    pub manifest: Option<PathBuf>,
    /// `CK_JIT_VERBOSE`.
    pub verbose: bool,
    /// `CK_JIT_OFFLINE`.
    pub offline: bool,
    /// `CK_JIT_JOBS`; 0 (the default): the number of cores this process
    /// may use, counted when first needed ([`Config::jobs`]), so that a
    /// process that only loads cached kernels never counts them.
    pub jobs: usize,
    /// `CK_JIT_JOB_MEMORY`: what one compile is taken to need, in bytes,
    /// whatever its group (`None`: learnt per group; `Some(0)`: compiles
    /// are not bounded by memory).
    pub job_memory: Option<u64>,
    /// `CK_JIT_MEMORY_BUDGET`: the memory compiles may use at once, in
    /// bytes, instead of what is available now.
    pub memory_budget: Option<u64>,
    /// `CK_JIT_SHARED_CACHE`.
    pub shared_cache: bool,
    /// `CK_JIT_VERIFY=full`: hash every object on load.
    pub verify_full: bool,
    /// `CK_JIT_LAUNCHER`, split on whitespace.
    pub launcher: Vec<String>,
    /// `CK_JIT_EXTRA_FLAGS`, split on whitespace: flags added to every
    /// blob's compile, before its source (`-g -O0` to debug a kernel);
    /// part of the cache key.
    pub extra_flags: Vec<String>,
    /// `CK_JIT_DROP_FLAGS`: flags taken out of every blob's compile, each
    /// a sequence of words (`-mllvm -amdgpu-function-calls=false`),
    /// sequences separated by `;`: for a compiler other than the one a
    /// recorded command was written for. Part of the cache key.
    pub drop_flags: Vec<Vec<String>>,
    /// `CK_JIT_COMPILE_TIMEOUT`.
    pub compile_timeout: Duration,
    /// `CK_JIT_LOCK_TIMEOUT`.
    pub lock_timeout: Duration,
    /// `CK_JIT_CACHE_MAX_SIZE`, as written.
    pub cache_max_size: Option<String>,
    /// `CK_JIT_CACHE_MAX_SIZE` and `CK_JIT_CACHE_MAX_ENTRIES`: the limits
    /// every publish keeps the cache within.
    pub cache_limits: Limits,
    /// `CK_JIT_COMPILER_CHECK`: how a compiler is identified.
    pub compiler_check: CompilerCheck,
    /// `CK_JIT_KEY_ENV`: variables whose values enter the cache key besides
    /// [`KEY_ENV`].
    pub key_env: Vec<String>,
    /// `CK_JIT_ON_FAILURE=abort`: a lazy stub whose blob cannot be had
    /// aborts the process (as it once did) instead of returning CK's "no
    /// kernel" value.
    pub abort_on_failure: bool,
    /// `CK_JIT_RECORD`: the file every loaded blob's name is added to.
    pub record: Option<PathBuf>,
    /// `CK_JIT_ARCH`: which GPU architecture compiles of blobs recorded
    /// for several are for.
    pub arch: arch_name::ArchChoice,
    /// Variables whose values could not be read, each a sentence naming
    /// the variable, the value and what is used instead.
    pub problems: Vec<String>,
}

static CONFIG: Lazy<Config> = Lazy::new(|| {
    let c = Config::from_env();
    for p in &c.problems {
        log::warn!("ck-jit: {p}");
        eprintln!("ck-jit: {p}");
    }
    c
});

/// The process's configuration (read from the environment on first use).
pub fn config() -> &'static Config {
    &CONFIG
}

fn var(name: &str) -> Option<OsString> {
    std::env::var_os(name).filter(|v| !v.is_empty())
}

/// A variable's value split on whitespace; empty when it is not set.
fn words(name: &str) -> Vec<String> {
    var(name)
        .map(|v| {
            v.to_string_lossy()
                .split_whitespace()
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Reads variables, noting each value that cannot be read.
#[derive(Default)]
struct Reader {
    problems: Vec<String>,
}

impl Reader {
    /// A switch: `1`/`true`/`yes`/`on` or `0`/`false`/`no`/`off` (any
    /// case); another value is a problem and counts as on (the direction
    /// that was meant by setting it).
    fn flag(&mut self, name: &str) -> bool {
        let Some(v) = var(name) else { return false };
        let text = v.to_string_lossy().trim().to_ascii_lowercase();
        match text.as_str() {
            "1" | "true" | "yes" | "on" => true,
            "0" | "false" | "no" | "off" | "" => false,
            _ => {
                self.problems.push(format!(
                    "{name}='{}' is not a switch (1/true/yes/on or 0/false/no/off); taken as on",
                    v.to_string_lossy()
                ));
                true
            }
        }
    }

    /// `CK_JIT_COMPILER_CHECK`: a policy; another value is a problem and
    /// the default applies.
    fn compiler_check(&mut self) -> CompilerCheck {
        let v = var("CK_JIT_COMPILER_CHECK").map(|v| v.to_string_lossy().into_owned());
        match CompilerCheck::parse(v.as_deref()) {
            CompilerCheck::Invalid(bad) => {
                self.problems.push(format!(
                    "CK_JIT_COMPILER_CHECK='{bad}' is not a policy (content, command or \
                     string:<text>); using content"
                ));
                CompilerCheck::Content
            }
            check => check,
        }
    }

    /// `CK_JIT_ON_FAILURE`: `return` (the default) or `abort`; another
    /// value is a problem and the default applies.
    fn abort_on_failure(&mut self) -> bool {
        let Some(v) = var("CK_JIT_ON_FAILURE") else {
            return false;
        };
        match v.to_string_lossy().trim() {
            "abort" => true,
            "return" => false,
            other => {
                self.problems.push(format!(
                    "CK_JIT_ON_FAILURE='{other}' is not a choice (return or abort); using return"
                ));
                false
            }
        }
    }

    /// `CK_JIT_CACHE_PATH`: directories separated by `:`, empty parts
    /// skipped; a relative one is a problem and left out (it would change
    /// with the working directory).
    fn cache_path(&mut self) -> Vec<PathBuf> {
        let Some(v) = var("CK_JIT_CACHE_PATH") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for part in v.to_string_lossy().split(':').filter(|p| !p.is_empty()) {
            let p = PathBuf::from(part);
            if p.is_absolute() {
                out.push(p);
            } else {
                self.problems.push(format!(
                    "CK_JIT_CACHE_PATH: '{part}' is not an absolute path; it is not looked in"
                ));
            }
        }
        out
    }

    /// Seconds, a positive number (fractions allowed).
    fn seconds(&mut self, name: &str, default: &str) -> Option<Duration> {
        let v = var(name)?;
        let parsed = v
            .to_str()
            .and_then(|t| t.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(Duration::from_secs_f64);
        if parsed.is_none() {
            self.problems.push(format!(
                "{name}='{}' is not a positive number of seconds; using {default}",
                v.to_string_lossy()
            ));
        }
        parsed
    }

    /// A size in bytes, with an optional `K`, `M`, `G` or `T` suffix
    /// (powers of 1024).
    fn size(&mut self, name: &str, default: &str) -> Option<u64> {
        let v = var(name)?;
        let parsed = parse_size(&v.to_string_lossy());
        if let Err(e) = &parsed {
            self.problems.push(format!("{name}: {e}; using {default}"));
        }
        parsed.ok()
    }

    /// A positive whole number.
    fn count(&mut self, name: &str, default: &str) -> Option<usize> {
        let v = var(name)?;
        let parsed = v
            .to_str()
            .and_then(|t| t.trim().parse::<usize>().ok())
            .filter(|n| *n > 0);
        if parsed.is_none() {
            self.problems.push(format!(
                "{name}='{}' is not a positive whole number; using {default}",
                v.to_string_lossy()
            ));
        }
        parsed
    }
}

impl Config {
    /// Reads every variable now (tests and the CLI build their own).
    pub fn from_env() -> Config {
        let mut r = Reader::default();
        let jobs = r.count("CK_JIT_JOBS", "the available cores").unwrap_or(0);
        let job_memory = r.size("CK_JIT_JOB_MEMORY", "the estimate learnt per group");
        let memory_budget = r.size("CK_JIT_MEMORY_BUDGET", "the available memory");
        let compile_timeout = r
            .seconds("CK_JIT_COMPILE_TIMEOUT", "3600 seconds")
            .unwrap_or(Duration::from_secs(3600));
        let lock_timeout = r
            .seconds("CK_JIT_LOCK_TIMEOUT", "the compile timeout + 60 seconds")
            .unwrap_or(compile_timeout + Duration::from_secs(60));
        let verify_full = match var("CK_JIT_VERIFY") {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("full") => true,
            Some(v) if v.eq_ignore_ascii_case("default") => false,
            Some(v) => {
                r.problems.push(format!(
                    "CK_JIT_VERIFY='{}' is not a verification mode (full, or default); \
                     using the default",
                    v.to_string_lossy()
                ));
                false
            }
        };
        let cache_max_size = var("CK_JIT_CACHE_MAX_SIZE").map(|v| v.to_string_lossy().into_owned());
        let cache_limits = Limits {
            max_size: cache_max_size.as_deref().and_then(|v| {
                parse_size(v)
                    .map_err(|e| {
                        r.problems.push(format!(
                            "CK_JIT_CACHE_MAX_SIZE: {e}; the cache is not limited"
                        ))
                    })
                    .ok()
            }),
            max_entries: r
                .count("CK_JIT_CACHE_MAX_ENTRIES", "no limit")
                .map(|n| n as u64),
        };
        let verbose = r.flag("CK_JIT_VERBOSE");
        let offline = r.flag("CK_JIT_OFFLINE");
        let shared_cache = r.flag("CK_JIT_SHARED_CACHE");
        let arch = arch_name::ArchChoice::parse(
            var("CK_JIT_ARCH")
                .map(|v| v.to_string_lossy().into_owned())
                .as_deref(),
        );
        if let arch_name::ArchChoice::Invalid(v) = &arch {
            r.problems.push(format!(
                "CK_JIT_ARCH='{v}' names no architecture (accepted: {}); blobs recorded for GPU \
                 targets fail to compile until it is fixed",
                crate::error::ARCH_FORMS
            ));
        }
        let cache_path = r.cache_path();
        Config {
            cache_dir: var("CK_JIT_CACHE_DIR").map(PathBuf::from),
            cache_path,
            root: var("CK_JIT_ROOT").map(PathBuf::from),
            manifest: var("CK_JIT_MANIFEST").map(PathBuf::from),
            verbose,
            offline,
            jobs,
            job_memory,
            memory_budget,
            shared_cache,
            verify_full,
            launcher: words("CK_JIT_LAUNCHER"),
            extra_flags: words("CK_JIT_EXTRA_FLAGS"),
            drop_flags: var("CK_JIT_DROP_FLAGS")
                .map(|v| {
                    v.to_string_lossy()
                        .split(';')
                        .map(|seq| seq.split_whitespace().map(str::to_string).collect())
                        .filter(|seq: &Vec<String>| !seq.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            compile_timeout,
            lock_timeout,
            cache_max_size,
            cache_limits,
            key_env: var("CK_JIT_KEY_ENV")
                .map(|v| {
                    v.to_string_lossy()
                        .split(|c: char| c == ',' || c.is_whitespace())
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default(),
            compiler_check: r.compiler_check(),
            abort_on_failure: r.abort_on_failure(),
            record: var("CK_JIT_RECORD").map(PathBuf::from),
            arch,
            problems: r.problems,
        }
    }

    /// The most compiles at once: `jobs`, or the available cores when it
    /// is 0.
    pub fn jobs(&self) -> usize {
        match self.jobs {
            0 => default_jobs(),
            n => n,
        }
    }

    /// The tree root for a manifest named `name`: `CK_JIT_ROOT_<NAME>`, else
    /// `CK_JIT_ROOT`, else `None` (use the recorded root).
    pub fn root_for(&self, name: &str) -> Option<PathBuf> {
        var(&format!("CK_JIT_ROOT_{}", env_suffix(name)))
            .map(PathBuf::from)
            .or_else(|| self.root.clone())
    }
}

/// The GPU runtimes' variables that decide which device a process uses,
/// as set (an empty value is kept: it hides every device).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceEnv {
    /// `HIP_VISIBLE_DEVICES`.
    pub hip_visible: Option<String>,
    /// `ROCR_VISIBLE_DEVICES`.
    pub rocr_visible: Option<String>,
    /// `CUDA_VISIBLE_DEVICES` (read by CUDA, and by HIP without its own).
    pub cuda_visible: Option<String>,
    /// `CUDA_DEVICE_ORDER` (`PCI_BUS_ID` or CUDA's default, fastest first).
    pub cuda_device_order: Option<String>,
    /// `HSA_OVERRIDE_GFX_VERSION` (`9.4.2`): the architecture ROCr reports.
    pub hsa_override_gfx: Option<String>,
}

/// Reads the variables of [`DeviceEnv`] now (detection does, once per
/// process and platform).
pub fn device_env() -> DeviceEnv {
    let get = |name: &str| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
    DeviceEnv {
        hip_visible: get("HIP_VISIBLE_DEVICES"),
        rocr_visible: get("ROCR_VISIBLE_DEVICES"),
        cuda_visible: get("CUDA_VISIBLE_DEVICES"),
        cuda_device_order: get("CUDA_DEVICE_ORDER"),
        hsa_override_gfx: get("HSA_OVERRIDE_GFX_VERSION").filter(|v| !v.trim().is_empty()),
    }
}

/// The variable that overrides a compiler program: `CK_JIT_<PROGRAM>` with
/// the program's file name upper-cased and other characters turned to `_`
/// (`hipcc` → `CK_JIT_HIPCC`, `c++` → `CK_JIT_CXX` (the one exception: `c++` is
/// spelt `cxx`), `g++-12` → `CK_JIT_G___12`).
pub fn compiler_var(program: &str) -> String {
    let base = program.rsplit('/').next().unwrap_or(program);
    let base = if base == "c++" { "cxx" } else { base };
    let mut name = String::with_capacity("CK_JIT_".len() + base.len());
    name.push_str("CK_JIT_");
    name.extend(base.chars().map(|c| {
        if c.is_ascii_alphanumeric() {
            c.to_ascii_uppercase()
        } else {
            '_'
        }
    }));
    name
}

/// The override for a compiler program, where set.
pub fn compiler_override(program: &str) -> Option<PathBuf> {
    var(&compiler_var(program)).map(PathBuf::from)
}

fn env_suffix(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

fn default_jobs() -> usize {
    static CORES: once_cell::sync::Lazy<usize> = once_cell::sync::Lazy::new(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    *CORES
}

/// Variables, besides the arguments, that change what a compiler produces:
/// include and library search paths the driver reads, the ROCm/HIP and
/// CUDA installation a wrapper picks, and flags a wrapper appends. Their
/// values (set or not) are part of every cache key; `CK_JIT_KEY_ENV` adds
/// more (comma- or space-separated names).
pub const KEY_ENV: &[&str] = &[
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "LIBRARY_PATH",
    "GCC_EXEC_PREFIX",
    "COMPILER_PATH",
    "CCC_OVERRIDE_OPTIONS",
    "SOURCE_DATE_EPOCH",
    "HIP_PATH",
    "ROCM_PATH",
    "HIP_CLANG_PATH",
    "HIP_PLATFORM",
    "HIP_COMPILER",
    "HIP_RUNTIME",
    "HIP_DEVICE_LIB_PATH",
    "DEVICE_LIB_PATH",
    "HIPCC_COMPILE_FLAGS_APPEND",
    "HIPCC_LINK_FLAGS_APPEND",
    "HSA_PATH",
    "CUDA_HOME",
    "CUDA_PATH",
    "NVCC_PREPEND_FLAGS",
    "NVCC_APPEND_FLAGS",
    "NVCC_CCBIN",
];

/// The values of [`KEY_ENV`] and of `extra` as they are now, in a form
/// for the key: `NAME=value` for each variable that is set.
pub(crate) fn key_env(extra: &[String]) -> String {
    let mut out = String::new();
    for name in KEY_ENV
        .iter()
        .copied()
        .chain(extra.iter().map(String::as_str))
    {
        if let Some(v) = std::env::var_os(name) {
            out.push_str(name);
            out.push('=');
            out.push_str(&v.to_string_lossy());
            out.push('\0');
        }
    }
    out
}

/// How a compiler is identified for the cache key (`CK_JIT_COMPILER_CHECK`),
/// after the policies users of ccache know as `compiler_check`. Whatever
/// the policy, the identity is computed at most once per process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompilerCheck {
    /// `content` (the default; `mtime`, the name of an earlier default, is
    /// read as this): the compiler's files by content and its `--version`
    /// output ([`CompilerId`](crate::compile::CompilerId)). Both are worked out once per set of files
    /// (resolved path, size, modification and change time, inode) and kept
    /// in the cache directory, so a later process with a cache hit starts
    /// no compiler and hashes nothing. A wrapper is followed to the files
    /// behind it ([`wrapped_files`](crate::compile::wrapped_files)), so upgrading the compiler behind an
    /// unchanged wrapper is a new identity.
    Content,
    /// `command`: runs `--version` in every process; the identity is its
    /// output alone.
    Command,
    /// `string:<text>`: the identity is `<text>`; the compiler is never run
    /// to identify it.
    String(String),
    /// A value none of the above: identifying a compiler is an error.
    Invalid(String),
}

impl CompilerCheck {
    /// Reads a `CK_JIT_COMPILER_CHECK` value (`None`: the default).
    pub fn parse(value: Option<&str>) -> CompilerCheck {
        match value.map(str::trim) {
            None | Some("") | Some("content") | Some("mtime") => CompilerCheck::Content,
            Some("command") => CompilerCheck::Command,
            Some(v) => match v.strip_prefix("string:") {
                Some(text) => CompilerCheck::String(text.to_string()),
                None => CompilerCheck::Invalid(v.to_string()),
            },
        }
    }
}

/// How big a cache may grow; `None` is no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of objects and records.
    pub max_size: Option<u64>,
    /// Entries.
    pub max_entries: Option<u64>,
}

impl Limits {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_size.is_some() || self.max_entries.is_some()
    }

    /// Whether `entries` entries of `bytes` in all exceed a limit.
    pub fn exceeded(&self, entries: u64, bytes: u64) -> bool {
        self.max_entries.is_some_and(|n| entries > n) || self.max_size.is_some_and(|s| bytes > s)
    }
}

/// Parses a size: a number with an optional `K`, `M`, `G` or `T` suffix
/// (powers of 1024; `B`, `KB`, `KiB`, ... are accepted too).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let expected = || {
        format!(
            "expected a size such as 500M or 2G (a number with an optional K, M, G or T \
             suffix, powers of 1024), got '{}'",
            text.escape_debug()
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().map_err(|_| expected())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(expected()),
    };
    let bytes = number * (1u64 << shift) as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes >= u64::MAX as f64 {
        return Err(expected());
    }
    Ok(bytes.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_variables() {
        assert_eq!(compiler_var("hipcc"), "CK_JIT_HIPCC");
        assert_eq!(compiler_var("/usr/local/cuda/bin/nvcc"), "CK_JIT_NVCC");
        assert_eq!(compiler_var("c++"), "CK_JIT_CXX");
        assert_eq!(compiler_var("g++-12"), "CK_JIT_G___12");
    }

    /// A size that cannot be read is a problem naming the variable, the
    /// value and what is used instead, as any unreadable value is.
    #[test]
    fn sizes_are_read_with_suffixes_and_nonsense_is_a_problem() {
        // A name no other test reads.
        const NAME: &str = "CK_JIT_TEST_ONLY_SIZE";
        let mut r = Reader::default();
        std::env::set_var(NAME, "800M");
        assert_eq!(r.size(NAME, "x"), Some(800 << 20));
        std::env::set_var(NAME, "2G");
        assert_eq!(r.size(NAME, "x"), Some(2 << 30));
        std::env::set_var(NAME, "123456");
        assert_eq!(r.size(NAME, "x"), Some(123456));
        assert!(r.problems.is_empty());
        std::env::set_var(NAME, "lots");
        assert_eq!(r.size(NAME, "the estimate learnt per group"), None);
        std::env::remove_var(NAME);
        assert_eq!(r.problems.len(), 1);
        let p = &r.problems[0];
        assert!(
            p.contains(NAME) && p.contains("'lots'") && p.contains("the estimate learnt"),
            "{p}"
        );
    }
}
