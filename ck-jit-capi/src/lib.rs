//! The ck-jit runtime's C ABI, for C and C++ programs and for C++ code such
//! as CK's dispatchers: resolve a blob's entry point by name. The
//! declarations, with their documentation, are in `include/ck_jit.h`; the
//! crate builds `libck_jit_capi.a` and `libck_jit_capi.so`.
//!
//! ```sh
//! cargo build --release -p ck-jit-capi
//! c++ -I ck-jit-capi/include main.cpp target/release/libck_jit_capi.a \
//!     -lpthread -ldl -lm -lrt -lutil -lgcc_s
//! CK_JIT_MANIFEST=/path/to/ck_jit_manifest.json ./a.out
//! ```
//!
//! (`rustc --print native-static-libs` lists the system libraries the
//! static library needs on a given target.)
//!
//! The `#[no_mangle]` functions live in this crate only, so a program that
//! links `ck-jit-rt` alone exports none of them, and two libraries that
//! both embed the runtime do not clash.
//!
//! ```c
//! typedef void (*ck_jit_fn)(void);
//! ck_jit_fn   ck_jit_resolve(const char* blob);
//! ck_jit_fn   ck_jit_resolve_prefix(const char* blob, const char* symbol_prefix);
//! ck_jit_fn   ck_jit_resolve_symbol(const char* blob, const char* symbol);
//! ck_jit_fn   ck_jit_resolve_with(const char* manifest, const char* blob,
//!                                 const char* symbol_prefix);
//! int         ck_jit_set_cache_dir(const char* dir);
//! const char* ck_jit_last_error(void);
//! void        ck_jit_set_last_error(const char* message);
//! int         ck_jit_warmup(const char* const* blobs, size_t n);
//! int         ck_jit_stub_failed(const char* blob);
//! uint64_t    ck_jit_thread_failures(void);
//! ```
//!
//! # The host process is never taken down
//!
//! Every function catches panics and turns NULL pointers, non-UTF-8 names
//! and runtime failures into an error result with a message in
//! [`ck_jit_last_error`]; none of them unwinds into C or aborts the
//! process that loaded the library. A message that cannot be written
//! (stderr a pipe whose reader is gone, in a process that ignores
//! SIGPIPE, as Python does) is lost, the result is not. The one abort is
//! the one asked for: a lazy stub aborts when [`ck_jit_stub_failed`]
//! returns 1 (`CK_JIT_ON_FAILURE=abort`).
//!
//! C++ code between a caller and the runtime keeps the same promise: the C
//! glue over CK's dispatchers (`ck_jit_ck::ffi`) catches every exception a
//! dispatcher throws and returns -1, the message left with
//! [`ck_jit_set_last_error`].
//!
//! # The process-wide runtime
//!
//! Fixed by the first [`ck_jit_resolve`] or [`ck_jit_warmup`] (or by
//! [`register`]), in this order:
//!
//! 1. a runtime registered from Rust with [`register`];
//! 2. the manifest named by `CK_JIT_MANIFEST`;
//! 3. `$CK_JIT_ROOT/ck_jit_manifest.json`.
//!
//! [`ck_jit_set_cache_dir`] overrides the cache directory of 2 and 3 and
//! must come before the first resolve; a registered runtime keeps its own
//! (set it with [`Runtime::with_cache_dir`] before registering).
//!
//! # Linking
//!
//! The functions are `#[no_mangle]` items of this crate, so they are in
//! any static library or shared object built from it or from a crate that
//! depends on it. C++ code
//! linked into a Rust program calls them directly. Code loaded later with
//! `dlopen` (a blob, a plugin) finds them only if the Rust program exports
//! them: link it with `-C link-args=-rdynamic`, or hand the code the
//! function pointers instead (`ck_jit_resolve` has a plain C type).
//!
//! A resolved pointer stays valid for the life of the process. Keep it
//! (a function-local `static` in C++): each resolve looks the name up in a
//! table behind a lock, which is cheap but not free.

#![deny(missing_docs)]

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, CStr, CString, OsStr};
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, RwLock};

use ck_jit_rt::manifest::{escape, SymbolSpec, MANIFEST_FILE};
use once_cell::sync::{Lazy, OnceCell};

use ck_jit_rt::config::config;
use ck_jit_rt::maintenance::Cache;
use ck_jit_rt::{fallback, Runtime};

/// `ck_jit_fn`: an entry point as C sees it, to be cast to its real type;
/// `None` is C's NULL.
pub type CkJitFn = Option<unsafe extern "C" fn()>;

/// What may still change before the runtime is fixed. Every change of the
/// runtime or of this happens under its lock, so a cache directory set
/// while another thread resolves either applies or is refused, never lost.
struct Setup {
    cache_dir: Option<PathBuf>,
}

static SETUP: Mutex<Setup> = Mutex::new(Setup { cache_dir: None });
static RUNTIME: OnceCell<&'static Runtime> = OnceCell::new();
/// Entry points already resolved, by blob name.
static RESOLVED: Lazy<RwLock<HashMap<String, usize>>> = Lazy::new(Default::default);

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn setup() -> MutexGuard<'static, Setup> {
    SETUP.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes `runtime` the one the C ABI resolves blobs with, for code that
/// embeds its manifest (`ck_jit_runtime()` of `embed_manifest!`) or builds
/// a runtime itself. Blobs it does not know are still looked up in
/// `CK_JIT_MANIFEST`.
///
/// # Errors
///
/// The runtime already in use, when one was registered or a resolve
/// already fixed it.
pub fn register(runtime: &'static Runtime) -> Result<(), &'static Runtime> {
    let setup = setup();
    if let Err((current, _)) = RUNTIME.try_insert(runtime) {
        return Err(current);
    }
    if let Some(dir) = &setup.cache_dir {
        log::warn!(
            "ck-jit: ck_jit_set_cache_dir({}) does not apply to a runtime registered from Rust",
            dir.display()
        );
    }
    Ok(())
}

/// The runtime of the C ABI, fixing it on first use.
fn runtime() -> Result<&'static Runtime, String> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let setup = setup();
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt);
    }
    let config = config();
    let path = match (&config.manifest, &config.root) {
        (Some(path), _) => path.clone(),
        (None, Some(root)) => root.join(MANIFEST_FILE),
        (None, None) => {
            return Err(String::from(
                "the C API has no manifest: set CK_JIT_MANIFEST to a \
                 ck_jit_manifest.json, or CK_JIT_ROOT to the tree that holds one, or \
                 register a runtime from Rust (ck_jit_capi::register)",
            ))
        }
    };
    let shared = match (&setup.cache_dir, &config.manifest) {
        // The runtime embedded manifests already share, when nothing differs.
        (None, Some(_)) => fallback(),
        _ => None,
    };
    let rt: &'static Runtime = match shared {
        Some(shared) => shared.map_err(|e| e.to_string())?,
        None => {
            let mut rt = Runtime::from_file(&path).map_err(|e| e.to_string())?;
            if let Some(dir) = &setup.cache_dir {
                rt = rt.with_cache_dir(dir);
            }
            Box::leak(Box::new(rt))
        }
    };
    // Cannot fail: only this function and `register` set it, under the lock.
    let _ = RUNTIME.set(rt);
    Ok(rt)
}

/// Stores `message` as this thread's last error, as C reads it.
fn set_error(message: String) {
    let message = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // During thread teardown the slot may be gone; the message is then lost.
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = Some(message));
}

/// A message as C callers read it: after the library's name, which the
/// messages of errors (the runtime's, this crate's) leave out.
fn for_c(message: impl std::fmt::Display) -> String {
    format!("ck-jit: {message}")
}

/// Runs one C entry point: clears the thread's last error, then turns an
/// `Err` or a panic into `failed` with the message stored.
fn boundary<T>(failed: T, body: impl FnOnce() -> Result<T, String>) -> T {
    let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = None);
    guard(failed, body)
}

/// [`boundary`] for an entry point that keeps the thread's last error
/// unless it fails itself: an `Err` or a panic becomes `failed` with the
/// message stored.
fn guard<T>(failed: T, body: impl FnOnce() -> Result<T, String>) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value,
        Ok(Err(message)) => {
            set_error(for_c(message));
            failed
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_string());
            set_error(for_c(format_args!("internal error: {what}")));
            failed
        }
    }
}

/// Reads a C string argument.
///
/// # Safety
///
/// `ptr` is NULL or points to a NUL-terminated string.
unsafe fn c_str<'a>(ptr: *const c_char, what: &str) -> Result<&'a CStr, String> {
    if ptr.is_null() {
        return Err(format!("{what} is NULL"));
    }
    // SAFETY: non-NULL, and the caller promises a NUL-terminated string.
    Ok(unsafe { CStr::from_ptr(ptr) })
}

/// Reads a blob name argument.
///
/// # Safety
///
/// As [`c_str`].
unsafe fn blob_name<'a>(ptr: *const c_char) -> Result<&'a str, String> {
    // SAFETY: passed through from the caller's contract.
    let name = unsafe { c_str(ptr, "the blob name") }?;
    name.to_str().map_err(|_| {
        format!(
            "blob name '{}' is not UTF-8",
            escape(&name.to_string_lossy())
        )
    })
}

/// Resolves `blob`'s entry (`prefix` `None`) or the first function whose
/// mangled name starts with `prefix`, remembering the pointer.
fn resolve(blob: &str, symbol: Option<SymbolSpec>) -> Result<usize, String> {
    let key = match &symbol {
        Some(SymbolSpec::Prefix(p)) => format!("{blob}\0prefix\0{p}"),
        Some(SymbolSpec::Exact(e)) => format!("{blob}\0exact\0{e}"),
        None => blob.to_string(),
    };
    let known = RESOLVED
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key)
        .copied();
    if let Some(p) = known {
        return Ok(p);
    }
    let p = runtime()?
        .resolve(blob, symbol.as_ref())
        .map_err(|e| e.to_string())? as usize;
    RESOLVED
        .write()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, p);
    Ok(p)
}

/// A symbol name or prefix argument (`what` names it in errors): not
/// NULL, UTF-8, not empty.
///
/// # Safety
///
/// `p` is NULL or a NUL-terminated string.
unsafe fn symbol_arg(p: *const c_char, what: &str) -> Result<String, String> {
    // SAFETY: the caller's contract.
    let s = unsafe { c_str(p, what) }?;
    let s = s.to_str().map_err(|_| format!("{what} is not UTF-8"))?;
    if s.is_empty() {
        return Err(format!("{what} is empty"));
    }
    Ok(s.to_string())
}

/// The function pointer C sees for an address `resolve` returned.
fn entry(p: usize) -> CkJitFn {
    // SAFETY: a non-null address of a function in a loaded object that
    // stays loaded; C casts it back to its real type before calling.
    Some(unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(p) })
}

/// Compiles (unless cached) and loads `blob`, returning its entry point,
/// or NULL with the reason in [`ck_jit_last_error`].
///
/// # Safety
///
/// `blob` is NULL or a NUL-terminated string. Calling the returned pointer
/// requires casting it to the entry point's real type.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_resolve(blob: *const c_char) -> CkJitFn {
    boundary(None, || {
        // SAFETY: the caller's contract.
        let name = unsafe { blob_name(blob) }?;
        Ok(entry(resolve(name, None)?))
    })
}

/// Compiles (unless cached) and loads `blob`, returning the function it
/// exports under exactly `symbol` (not the manifest's entry symbol), or
/// NULL with the reason in [`ck_jit_last_error`]: what
/// `#[lazy_kernel(symbol = "...")]` does from Rust.
///
/// # Safety
///
/// `blob` and `symbol` are NULL or NUL-terminated strings. Calling the
/// returned pointer requires casting it to the function's real type.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_resolve_symbol(
    blob: *const c_char,
    symbol: *const c_char,
) -> CkJitFn {
    boundary(None, || {
        // SAFETY: the caller's contract.
        let name = unsafe { blob_name(blob) }?;
        // SAFETY: the caller's contract.
        let symbol = unsafe { symbol_arg(symbol, "the symbol") }?;
        Ok(entry(resolve(name, Some(SymbolSpec::Exact(symbol)))?))
    })
}

/// Compiles (unless cached) and loads `blob`, returning the first exported
/// function whose (mangled) name starts with `symbol_prefix`, or NULL with
/// the reason in [`ck_jit_last_error`]: for a blob that defines more than
/// its entry (CK's `_oneshot_`, `_get_name_` siblings).
///
/// # Safety
///
/// `blob` and `symbol_prefix` are NULL or NUL-terminated strings. Calling
/// the returned pointer requires casting it to the function's real type.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_resolve_prefix(
    blob: *const c_char,
    symbol_prefix: *const c_char,
) -> CkJitFn {
    boundary(None, || {
        // SAFETY: the caller's contract.
        let name = unsafe { blob_name(blob) }?;
        // SAFETY: the caller's contract.
        let prefix = unsafe { symbol_arg(symbol_prefix, "the symbol prefix") }?;
        Ok(entry(resolve(name, Some(SymbolSpec::Prefix(prefix)))?))
    })
}

/// Runtimes of [`ck_jit_resolve_with`], by manifest path: each library
/// that names its own manifest gets its own runtime, kept for the process.
static BY_MANIFEST: Lazy<Mutex<HashMap<PathBuf, &'static Runtime>>> = Lazy::new(Default::default);
/// Entry points resolved through [`ck_jit_resolve_with`], by manifest,
/// blob and prefix.
static RESOLVED_WITH: Lazy<RwLock<HashMap<String, usize>>> = Lazy::new(Default::default);

/// The runtime of the manifest at `path`, made on first use. A failure is
/// not remembered: the next call tries again.
fn runtime_of(path: &std::path::Path) -> Result<&'static Runtime, String> {
    let mut map = BY_MANIFEST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(rt) = map.get(path) {
        return Ok(rt);
    }
    // Kept for the process: the compact form beside the JSON is read in
    // place rather than 6,000 blobs of JSON parsed at the first call.
    let mut rt = Runtime::from_file_for_process(path).map_err(|e| e.to_string())?;
    if let Some(dir) = &setup().cache_dir {
        rt = rt.with_cache_dir(dir);
    }
    let rt: &'static Runtime = Box::leak(Box::new(rt));
    map.insert(path.to_path_buf(), rt);
    Ok(rt)
}

/// As [`ck_jit_resolve_prefix`], with the blob looked up in the manifest
/// at `manifest` (a path) instead of the process-wide one: for a library
/// that carries its own manifest, such as an FMHA library whose
/// dispatchers were made lazy at its link step. Each manifest gets its own
/// runtime, kept for the process; `CK_JIT_*` variables apply to it as to
/// any other. NULL on failure, with the reason in [`ck_jit_last_error`].
///
/// # Safety
///
/// `manifest`, `blob` and `symbol_prefix` are NULL or NUL-terminated
/// strings. Calling the returned pointer requires casting it to the
/// function's real type.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_resolve_with(
    manifest: *const c_char,
    blob: *const c_char,
    symbol_prefix: *const c_char,
) -> CkJitFn {
    boundary(None, || {
        // SAFETY: the caller's contract.
        let path = unsafe { c_str(manifest, "the manifest path") }?;
        if path.is_empty() {
            return Err("the manifest path is an empty string".to_string());
        }
        // SAFETY: the caller's contract.
        let name = unsafe { blob_name(blob) }?;
        // SAFETY: the caller's contract.
        let prefix = unsafe { c_str(symbol_prefix, "the symbol prefix") }?;
        let prefix = prefix
            .to_str()
            .map_err(|_| "the symbol prefix is not UTF-8".to_string())?;
        let path = PathBuf::from(OsStr::from_bytes(path.to_bytes()));
        let key = format!("{}\0{name}\0{prefix}", path.display());
        let known = RESOLVED_WITH
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
            .copied();
        if let Some(p) = known {
            return Ok(entry(p));
        }
        let spec = (!prefix.is_empty()).then(|| SymbolSpec::Prefix(prefix.to_string()));
        let p = runtime_of(&path)?
            .resolve(name, spec.as_ref())
            .map_err(|e| e.to_string())? as usize;
        RESOLVED_WITH
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, p);
        Ok(entry(p))
    })
}

/// Sets the cache directory, before the first resolve. The directory is
/// created (mode 0700) and checked now. Returns 0, or -1 with the reason in
/// [`ck_jit_last_error`] (NULL, refused directory, too late).
///
/// # Safety
///
/// `dir` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_set_cache_dir(dir: *const c_char) -> c_int {
    boundary(-1, || {
        // SAFETY: the caller's contract.
        let raw = unsafe { c_str(dir, "the cache directory") }?;
        if raw.is_empty() {
            return Err("the cache directory is an empty string".to_string());
        }
        let dir = std::path::absolute(OsStr::from_bytes(raw.to_bytes()))
            .map_err(|e| format!("cache directory {}: {e}", raw.to_string_lossy()))?;
        let mut setup = setup();
        if RUNTIME.get().is_some() {
            return Err(format!(
                "ck_jit_set_cache_dir({}) comes too late: the runtime is already in use \
                 (call it before the first ck_jit_resolve or ck_jit_warmup; a runtime registered \
                 from Rust keeps its own cache directory)",
                dir.display()
            ));
        }
        Cache::open(&dir, config().shared_cache).map_err(|e| e.to_string())?;
        setup.cache_dir = Some(dir);
        Ok(0)
    })
}

/// The message of the last failed call on this thread, or NULL when the
/// last call succeeded. The string stays valid until the next ck_jit call
/// on this thread.
#[no_mangle]
pub extern "C" fn ck_jit_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|e| {
            e.try_borrow()
                .ok()
                .and_then(|m| m.as_ref().map(|m| m.as_ptr()))
                .unwrap_or(std::ptr::null())
        })
        .unwrap_or(std::ptr::null())
}

/// Makes `message` this thread's last error, as [`ck_jit_last_error`]
/// returns it (a copy; NULL clears it): for C++ code between the caller
/// and the runtime, such as the C glue of CK's dispatchers (`ck-jit-ck`),
/// that turns a failure of its own (a caught exception) into a ck-jit
/// error result.
///
/// # Safety
///
/// `message` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_set_last_error(message: *const c_char) {
    guard((), || {
        let message = if message.is_null() {
            None
        } else {
            // SAFETY: non-NULL, and the caller promises a NUL-terminated
            // string.
            Some(unsafe { CStr::from_ptr(message) }.to_owned())
        };
        let _ = LAST_ERROR.try_with(|e| *e.borrow_mut() = message);
        Ok(())
    })
}

thread_local! {
    static STUB_FAILURES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Blobs whose failure a stub has said on stderr, once each.
static SAID: Lazy<Mutex<std::collections::HashSet<String>>> = Lazy::new(Default::default);

/// What a lazy stub calls when its blob cannot be had (the resolve that
/// failed left the reason in [`ck_jit_last_error`], which this keeps):
/// counts a failure for this thread ([`ck_jit_thread_failures`]), says the
/// reason on stderr once per blob and process, and returns 1 when the
/// process is to abort (`CK_JIT_ON_FAILURE=abort`), else 0, the stub then
/// returning CK's "no kernel" value (a negative time).
///
/// A stderr that cannot be written (a pipe whose reader is gone, in a
/// process that ignores SIGPIPE) loses the message, not the return value;
/// an internal failure returns 0 with its message in [`ck_jit_last_error`].
///
/// # Safety
///
/// `blob` is NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_stub_failed(blob: *const c_char) -> c_int {
    let _ = STUB_FAILURES.try_with(|n| n.set(n.get().wrapping_add(1)));
    guard(0, || {
        // SAFETY: the caller's contract.
        Ok(unsafe { stub_failed(blob) })
    })
}

/// The body of [`ck_jit_stub_failed`] after the count.
///
/// # Safety
///
/// As [`ck_jit_stub_failed`].
unsafe fn stub_failed(blob: *const c_char) -> c_int {
    let abort = config().abort_on_failure;
    let name = if blob.is_null() {
        String::from("?")
    } else {
        // SAFETY: the caller's contract.
        unsafe { CStr::from_ptr(blob) }
            .to_string_lossy()
            .into_owned()
    };
    let first = SAID
        .lock()
        .map(|mut s| s.insert(name.clone()))
        .unwrap_or(true);
    if first || abort {
        let why = LAST_ERROR
            .try_with(|e| {
                e.borrow()
                    .as_ref()
                    .map(|m| m.to_string_lossy().into_owned())
            })
            .ok()
            .flatten()
            .unwrap_or_else(|| for_c(format!("blob '{}' cannot be loaded", escape(&name))));
        let then = if abort {
            "aborting (CK_JIT_ON_FAILURE=abort)"
        } else {
            "its calls return CK's \"no kernel\" value (-1) until it can be had \
             (said once; CK_JIT_ON_FAILURE=abort to abort)"
        };
        // Not `eprintln!`, which panics when the write fails.
        let _ = writeln!(std::io::stderr().lock(), "{why}\nck-jit: {then}");
    }
    c_int::from(abort)
}

/// How many times a lazy stub of this thread found its blob could not be
/// had ([`ck_jit_stub_failed`]), since the thread started: a caller
/// compares it before and after a dispatcher call, whose `void` launches
/// return nothing that could say so.
#[no_mangle]
pub extern "C" fn ck_jit_thread_failures() -> u64 {
    STUB_FAILURES.try_with(|n| n.get()).unwrap_or(0)
}

/// Compiles and loads `n` blobs in parallel (at most `CK_JIT_JOBS`
/// compiles at once). Returns how many failed; their messages, one per
/// line, are in [`ck_jit_last_error`]. NULL or non-UTF-8 entries count as
/// failed.
///
/// # Safety
///
/// `blobs` is NULL (with `n == 0`) or points to `n` pointers, each NULL or
/// a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_warmup(blobs: *const *const c_char, n: usize) -> c_int {
    let all_failed = c_int::try_from(n).unwrap_or(c_int::MAX);
    boundary(all_failed, || {
        if n == 0 {
            return Ok(0);
        }
        if blobs.is_null() {
            return Err(format!("ck_jit_warmup: the list of {n} blobs is NULL"));
        }
        // SAFETY: the caller promises `n` readable pointers.
        let ptrs = unsafe { std::slice::from_raw_parts(blobs, n) };
        let mut errors = Vec::new();
        let mut names = Vec::new();
        for (i, &p) in ptrs.iter().enumerate() {
            // SAFETY: the caller's contract, for each entry.
            match unsafe { blob_name(p) } {
                Ok(name) => names.push(name),
                Err(e) => errors.push(for_c(format_args!("{e} (entry {i})"))),
            }
        }
        let rt = runtime()?;
        for (_, result) in rt.warmup(&names) {
            if let Err(e) = result {
                errors.push(for_c(e));
            }
        }
        if !errors.is_empty() {
            // Each failure on its own line, as a failed resolve reports it.
            set_error(for_c(format_args!(
                "{} of {n} blobs failed to warm up:\n{}",
                errors.len(),
                errors.join("\n")
            )));
        }
        Ok(c_int::try_from(errors.len()).unwrap_or(c_int::MAX))
    })
}

/// The runtime a stub names: the manifest at `manifest`, or the process's
/// when it is NULL.
///
/// # Safety
///
/// `manifest` is NULL or a NUL-terminated string.
unsafe fn stub_runtime(manifest: *const c_char) -> Result<&'static Runtime, String> {
    if manifest.is_null() {
        return runtime();
    }
    // SAFETY: the caller's contract.
    let path = unsafe { c_str(manifest, "the manifest path") }?;
    if path.is_empty() {
        return Err("the manifest path is an empty string".to_string());
    }
    runtime_of(Path::new(OsStr::from_bytes(path.to_bytes())))
}

/// For a lazy dispatcher's stub whose call is always followed by another
/// blob's in the same operation: 1 when the call should wait for that
/// blob's name ([`Runtime::may_defer`]: `blob` would be compiled now, and
/// its `together` sets disagree on what comes with it), then
/// [`ck_jit_prepare_after`] compiles them together; 0 to resolve it now
/// (also on any error, which the resolve then reports). `manifest` is
/// NULL for the process's manifest, or a path as in
/// [`ck_jit_resolve_with`].
///
/// # Safety
///
/// `manifest` and `blob` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_may_defer(manifest: *const c_char, blob: *const c_char) -> c_int {
    boundary(0, || {
        // SAFETY: the caller's contract.
        let rt = unsafe { stub_runtime(manifest) }?;
        // SAFETY: the caller's contract.
        let name = unsafe { blob_name(blob) }?;
        Ok(c_int::from(rt.may_defer(name)))
    })
}

/// Compiles and loads `earlier` (a blob whose call waited, see
/// [`ck_jit_may_defer`]), `blob` (the call after it) and every blob
/// certain to run with both, in parallel ([`Runtime::prepare_after`]).
/// Returns 0, or -1 with the first failure in [`ck_jit_last_error`]; the
/// caller resolves each blob afterwards as usual.
///
/// # Safety
///
/// `manifest`, `earlier` and `blob` are NULL or NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn ck_jit_prepare_after(
    manifest: *const c_char,
    earlier: *const c_char,
    blob: *const c_char,
) -> c_int {
    boundary(-1, || {
        // SAFETY: the caller's contract.
        let rt = unsafe { stub_runtime(manifest) }?;
        // SAFETY: the caller's contract.
        let first = unsafe { blob_name(earlier) }?;
        // SAFETY: the caller's contract.
        let name = unsafe { blob_name(blob) }?;
        rt.prepare_after(&[first], name)
            .map_err(|e| e.to_string())?;
        Ok(0)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> Option<String> {
        let p = ck_jit_last_error();
        // SAFETY: NULL or this thread's NUL-terminated message.
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }

    #[test]
    fn null_and_non_utf8_names_are_errors_not_crashes() {
        // SAFETY: NULL and a NUL-terminated string are allowed.
        assert!(unsafe { ck_jit_resolve(std::ptr::null()) }.is_none());
        assert_eq!(
            last_error().as_deref(),
            Some("ck-jit: the blob name is NULL")
        );
        let bad = b"k\xff\0";
        // SAFETY: NUL-terminated.
        assert!(unsafe { ck_jit_resolve(bad.as_ptr().cast()) }.is_none());
        assert!(last_error().unwrap().contains("is not UTF-8"));
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { ck_jit_set_cache_dir(std::ptr::null()) }, -1);
        assert_eq!(
            last_error().as_deref(),
            Some("ck-jit: the cache directory is NULL")
        );
        // SAFETY: NULL with n > 0 is reported, not read.
        assert_eq!(unsafe { ck_jit_warmup(std::ptr::null(), 3) }, 3);
        assert!(last_error().unwrap().contains("NULL"));
        // SAFETY: nothing is read for n == 0.
        assert_eq!(unsafe { ck_jit_warmup(std::ptr::null(), 0) }, 0);
        assert_eq!(last_error(), None, "a successful call clears the error");
        // The stubs' calls: any error means "resolve now" / -1, with why.
        // SAFETY: NUL-terminated strings and NULL are allowed.
        assert_eq!(unsafe { ck_jit_may_defer(c"".as_ptr(), c"b".as_ptr()) }, 0);
        assert_eq!(
            last_error().as_deref(),
            Some("ck-jit: the manifest path is an empty string")
        );
        let missing = c"/nonexistent/ck_jit_manifest.json";
        // SAFETY: as above.
        assert_eq!(
            unsafe { ck_jit_prepare_after(missing.as_ptr(), c"a".as_ptr(), std::ptr::null()) },
            -1
        );
        assert!(
            last_error().unwrap().contains("/nonexistent/"),
            "{:?}",
            last_error()
        );
    }

    #[test]
    fn a_panic_becomes_an_error_result() {
        let r = boundary(-1, || -> Result<i32, String> { panic!("boom") });
        assert_eq!(r, -1);
        assert_eq!(
            last_error().as_deref(),
            Some("ck-jit: internal error: boom")
        );
    }

    #[test]
    fn an_error_set_from_c_is_the_last_error_until_cleared() {
        // SAFETY: a NUL-terminated string, then NULL.
        unsafe { ck_jit_set_last_error(c"ck-jit: fmha_fwd: HIP Function Failed".as_ptr()) };
        assert_eq!(
            last_error().as_deref(),
            Some("ck-jit: fmha_fwd: HIP Function Failed")
        );
        // SAFETY: NULL is allowed.
        unsafe { ck_jit_set_last_error(std::ptr::null()) };
        assert_eq!(last_error(), None);
    }

    #[test]
    fn messages_with_nul_are_kept() {
        set_error("a\0b".into());
        assert_eq!(last_error().as_deref(), Some("a\\0b"));
    }
}
