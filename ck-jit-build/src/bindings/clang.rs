//! libclang: loading it, finding the resource directory (clang's own
//! `stddef.h` and HIP wrapper headers) that a parse needs, and running
//! bindgen over one translation unit into syn items.
//!
//! libclang is loaded at run time through clang-sys, which looks at
//! `LIBCLANG_PATH` first; a missing one is an [`Error::Libclang`] that says
//! how to get one, never a panic. The only program started here is a
//! `clang` asked for its resource directory, and only when none lies beside
//! libclang (a libclang from a Python wheel has none).

use std::cell::RefCell;
use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::rc::Rc;

use crate::cargo::CargoOutput;
use crate::Error;

/// The libclang this thread parses with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Libclang {
    path: PathBuf,
    version: String,
}

impl Libclang {
    /// The shared library loaded.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it says it is (`clang version 18.1.1`).
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The major version, where the version string has one.
    pub fn major(&self) -> Option<u32> {
        let rest = self.version.split("version ").nth(1)?;
        rest.split(['.', ' ']).next()?.parse().ok()
    }
}

/// Loads libclang for this thread (where `LIBCLANG_PATH` says, else where
/// clang-sys looks: `llvm-config`, the system's library directories) and
/// says which one it is.
///
/// # Errors
///
/// [`Error::Libclang`] when none can be loaded; its message says how to get
/// one.
pub fn libclang() -> Result<Libclang, Error> {
    if !clang_sys::is_loaded() {
        clang_sys::load().map_err(|why| Error::Libclang { why })?;
    }
    let lib = clang_sys::get_library().ok_or_else(|| Error::Libclang {
        why: "loaded, then not found on this thread".into(),
    })?;
    // SAFETY: libclang is loaded on this thread (above); the CXString it
    // returns is read once and disposed of once, as libclang asks.
    let version = unsafe {
        let s = clang_sys::clang_getClangVersion();
        let text = clang_sys::clang_getCString(s);
        let version = if text.is_null() {
            String::new()
        } else {
            CStr::from_ptr(text).to_string_lossy().into_owned()
        };
        clang_sys::clang_disposeString(s);
        version
    };
    Ok(Libclang {
        path: lib.path().to_path_buf(),
        version,
    })
}

/// Loads libclang, announcing to cargo the variables that choose it.
pub(crate) fn load(cargo: &mut CargoOutput<'_>) -> Result<Libclang, Error> {
    for var in ["LIBCLANG_PATH", "LLVM_CONFIG_PATH"] {
        let _ = cargo.var(var);
    }
    libclang()
}

/// The resource directory to parse with: `explicit`, else one beside
/// libclang (`lib/clang/<version>`, where a full LLVM installation keeps
/// it), else the one a `clang` program reports (`CLANG_PATH`, else `clang`
/// or `clang-<N>` on `PATH`, the libclang's own major version first).
/// `None` when there is none: libclang then looks for itself, and a parse
/// that includes `<stddef.h>` fails saying so.
pub(crate) fn resource_dir(
    explicit: Option<&Path>,
    lib: &Libclang,
    cargo: &mut CargoOutput<'_>,
) -> Option<PathBuf> {
    if let Some(dir) = explicit {
        return Some(dir.to_path_buf());
    }
    if let Some(dir) = beside(lib) {
        return Some(dir);
    }
    clang_programs(lib.major(), cargo)
        .into_iter()
        .find_map(|clang| reported_by(&clang))
}

/// Whether `dir` is a resource directory: clang's `stddef.h` is there.
fn is_resource_dir(dir: &Path) -> bool {
    dir.join("include/stddef.h").is_file()
}

/// `lib/clang/<version>` beside libclang, the libclang's own version first.
fn beside(lib: &Libclang) -> Option<PathBuf> {
    let dir = lib.path.parent()?;
    let major = lib.major();
    for base in [dir.join("clang"), dir.join("../lib/clang")] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        let mut found: Vec<(Option<u32>, PathBuf)> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| is_resource_dir(p))
            .map(|p| {
                let v = p
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.split('.').next())
                    .and_then(|n| n.parse().ok());
                (v, p)
            })
            .collect();
        // The libclang's own version, else the newest.
        found.sort_by_key(|(v, _)| (*v == major && major.is_some(), *v));
        if let Some((_, p)) = found.pop() {
            return Some(p);
        }
    }
    None
}

/// Candidate `clang` programs, best first.
fn clang_programs(major: Option<u32>, cargo: &mut CargoOutput<'_>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = cargo.var("CLANG_PATH").filter(|p| !p.is_empty()) {
        out.push(PathBuf::from(p));
    }
    let Some(path) = cargo.var("PATH") else {
        return out;
    };
    let mut versioned: Vec<(u32, PathBuf)> = Vec::new();
    let mut plain = Vec::new();
    for dir in std::env::split_paths(&path) {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(name) = name.to_str() else { continue };
            if name == "clang" {
                plain.push(e.path());
            } else if let Some(v) = name.strip_prefix("clang-").and_then(|v| v.parse().ok()) {
                versioned.push((v, e.path()));
            }
        }
    }
    versioned.sort_by_key(|(v, _)| *v);
    if let Some(pos) = versioned.iter().position(|(v, _)| Some(*v) == major) {
        out.push(versioned.remove(pos).1);
    }
    out.extend(plain);
    out.extend(versioned.into_iter().rev().map(|(_, p)| p));
    out
}

/// `clang -print-resource-dir`, if it runs and names a resource directory.
fn reported_by(clang: &Path) -> Option<PathBuf> {
    let out = Command::new(clang)
        .arg("-print-resource-dir")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    is_resource_dir(&dir).then_some(dir)
}

/// Every file clang read and every variable bindgen read, for rerun lines.
#[derive(Debug, Default)]
struct Reads {
    files: Vec<String>,
    vars: Vec<String>,
}

#[derive(Debug)]
struct Collector(Rc<RefCell<Reads>>);

impl bindgen::callbacks::ParseCallbacks for Collector {
    fn header_file(&self, filename: &str) {
        self.0.borrow_mut().files.push(filename.to_string());
    }

    fn include_file(&self, filename: &str) {
        self.0.borrow_mut().files.push(filename.to_string());
    }

    fn read_env_var(&self, key: &str) {
        self.0.borrow_mut().vars.push(key.to_string());
    }

    fn process_comment(&self, comment: &str) -> Option<String> {
        Some(comment_as_doc(comment))
    }
}

/// A C comment as Rust documentation: brackets escaped, so `out[i]` in a
/// kernel's comment stays text instead of becoming a broken intra-doc
/// link (which `-D warnings` makes a documentation error).
fn comment_as_doc(comment: &str) -> String {
    let mut out = String::with_capacity(comment.len());
    for c in comment.chars() {
        if matches!(c, '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One translation unit's bindings.
pub(crate) struct Parsed {
    /// bindgen's output.
    pub file: syn::File,
    /// Every file clang read, in order.
    pub files: Vec<PathBuf>,
}

/// A bindgen builder with what every parse here shares: no formatting
/// (the output is formatted once, after merging), no include paths taken
/// from another clang (libclang's own driver finds the system's), layout
/// tests, `Default` and comments.
pub(crate) fn builder(args: &[String]) -> bindgen::Builder {
    bindgen::Builder::default()
        .formatter(bindgen::Formatter::None)
        .detect_include_paths(false)
        .layout_tests(true)
        .derive_default(true)
        .generate_comments(true)
        .clang_args(args)
}

/// Runs `builder` over `input` (a name for messages) with `lib` loaded.
pub(crate) fn generate(
    builder: bindgen::Builder,
    input: &str,
    lib: &Libclang,
    cargo: &mut CargoOutput<'_>,
) -> Result<Parsed, Error> {
    let reads = Rc::new(RefCell::new(Reads::default()));
    let result = builder
        .parse_callbacks(Box::new(Collector(Rc::clone(&reads))))
        .generate();
    let reads = std::mem::take(&mut *reads.borrow_mut());
    for var in &reads.vars {
        cargo.rerun_if_env_changed(var);
    }
    let bindings = result.map_err(|e| match e {
        bindgen::BindgenError::ClangDiagnostic(message) => Error::Clang {
            input: input.to_string(),
            libclang: format!("'{}' at '{}'", lib.version, lib.path.display()),
            errors: first_errors(&message),
        },
        other => Error::Bindgen {
            input: input.to_string(),
            message: other.to_string(),
        },
    })?;
    let text = bindings.to_string();
    let file = syn::parse_file(&text).map_err(|e| Error::BindingsOutput {
        input: input.to_string(),
        why: format!("bindgen's output is not Rust syn can read: {e}"),
    })?;
    let mut files: Vec<PathBuf> = Vec::new();
    for f in reads.files {
        let p = PathBuf::from(f);
        if !files.contains(&p) {
            files.push(p);
        }
    }
    Ok(Parsed { file, files })
}

/// At most three of clang's error lines, on one line, with a hint where
/// the cause is known.
fn first_errors(message: &str) -> String {
    let errors: Vec<&str> = message
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("error:"))
        .collect();
    let mut out = errors
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join("; ");
    if errors.len() > 3 {
        out.push_str(&format!("; ({} more)", errors.len() - 3));
    }
    if out.is_empty() {
        out = message.lines().next().unwrap_or("").trim().to_string();
    }
    if message.contains("stddef.h' file not found")
        || message.contains("__clang_hip_runtime_wrapper.h' file not found")
    {
        out.push_str(
            "; clang's resource directory is missing: give it with resource_dir() \
             (`clang -print-resource-dir` prints one) or put a clang on PATH",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_in_c_comments_stay_text_in_rust_docs() {
        assert_eq!(comment_as_doc("out[i] = a[i]"), "out\\[i\\] = a\\[i\\]");
        assert_eq!(comment_as_doc("no brackets"), "no brackets");
    }

    fn lib(version: &str) -> Libclang {
        Libclang {
            path: PathBuf::from("/nonexistent/libclang.so"),
            version: version.into(),
        }
    }

    #[test]
    fn the_major_version_is_read_from_the_version_string() {
        assert_eq!(lib("clang version 18.1.1").major(), Some(18));
        assert_eq!(
            lib("Debian clang version 14.0.6 (+deb12u1)").major(),
            Some(14)
        );
        assert_eq!(lib("").major(), None);
    }

    #[test]
    fn clang_errors_are_cut_to_three_and_a_missing_resource_dir_is_named() {
        let msg = "a.hpp:1:1: error: one\na.hpp:2:1: warning: w\n\
                   a.hpp:3:1: error: two\na.hpp:4:1: error: three\na.hpp:5:1: error: four\n";
        let got = first_errors(msg);
        assert!(got.starts_with("a.hpp:1:1: error: one; a.hpp:3:1: error: two; "));
        assert!(got.contains("(1 more)"), "{got}");
        let got = first_errors("x.h:1:10: fatal error: 'stddef.h' file not found");
        assert!(got.contains("resource_dir()"), "{got}");
    }
}
