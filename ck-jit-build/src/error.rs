//! The one error type of the crate, of the manifest builder and of the
//! `bindings` module alike: each variant names the step that failed and
//! carries the path, pattern or value it failed on, so a build script's
//! panic message alone says what to fix.
//!
//! Messages are lowercase, one line, and escape whatever came from the file
//! system, so a hostile file name cannot break the line it is printed on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::manifest::{escape, ManifestError};

/// How to get a libclang, for messages.
const HOW_TO_GET_LIBCLANG: &str = "install libclang 11 or newer, e.g. \
     `pip install libclang==18.1.1`, and set LIBCLANG_PATH to the directory holding \
     its libclang.so (`python3 -c 'import clang, os; print(os.path.dirname(clang.__file__))'`/native)";

/// Why a manifest could not be built or written, or (feature `bindgen`)
/// why bindings could not be generated or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Reading an environment variable: it is needed but unset, or it is not
    /// valid UTF-8.
    Env {
        /// The variable.
        var: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Resolving the tree root: it does not exist, is not a directory or
    /// cannot be read.
    Root {
        /// The root as given.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Checking the cache name: it is not a safe file name component.
    CacheName {
        /// The name, escaped.
        name: String,
        /// What is wrong with it.
        source: ManifestError,
    },
    /// Reading a `ck-jit.toml`.
    ReadConfig {
        /// The config file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Parsing a `ck-jit.toml`: bad syntax, an unknown key or a wrong type.
    ParseConfig {
        /// The config file.
        path: PathBuf,
        /// 1-based line of the problem, where known.
        line: Option<usize>,
        /// What the parser said, naming the key where there is one.
        message: String,
    },
    /// Collecting groups: there is none, so the manifest would be empty.
    NoGroups,
    /// Rendering a group: its settings cannot make a compile command.
    GroupSpec {
        /// The group.
        group: String,
        /// What is wrong.
        why: String,
    },
    /// Parsing a glob or exclude pattern.
    Glob {
        /// The group.
        group: String,
        /// The pattern, escaped.
        pattern: String,
        /// What is wrong with it.
        why: String,
    },
    /// Compiling a group's `meta_pattern`.
    MetaPattern {
        /// The group.
        group: String,
        /// The pattern, escaped.
        pattern: String,
        /// What is wrong with it.
        why: String,
    },
    /// Listing a directory while walking a glob.
    ReadDir {
        /// The directory.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Using a file a group names: it is missing, not a regular file, or a
    /// broken symlink.
    File {
        /// The group.
        group: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: FileProblem,
    },
    /// Naming a file: its path is not valid UTF-8.
    NonUtf8Path {
        /// The group.
        group: String,
        /// The path.
        path: PathBuf,
    },
    /// Resolving a file: it (or a directory symlink on its way) leads outside
    /// the root.
    OutsideRoot {
        /// The group.
        group: String,
        /// The path as found, relative to the root.
        path: String,
        /// Where it really is.
        target: PathBuf,
    },
    /// Naming a blob: the file's stem cannot be a blob name, or its path
    /// cannot be a source path.
    BlobName {
        /// The group.
        group: String,
        /// The file, relative to the root, escaped.
        path: String,
        /// What is wrong with it.
        source: ManifestError,
    },
    /// Naming a blob: two files have one stem.
    DuplicateBlob {
        /// The blob name.
        name: String,
        /// The first file with that stem.
        first: String,
        /// The second one.
        second: String,
    },
    /// Assigning files to groups: two groups found the same file.
    FileInTwoGroups {
        /// The file, relative to the root.
        path: String,
        /// The group that found it first.
        first: String,
        /// The other group.
        second: String,
    },
    /// Reading metadata: a file's stem does not match the group's
    /// `meta_pattern` while `require_meta_match(true)` is set.
    MetaMismatch {
        /// The group.
        group: String,
        /// The file, relative to the root.
        path: String,
        /// The pattern.
        pattern: String,
    },
    /// Finding files: a group found none (likely a wrong glob).
    EmptyGroup {
        /// The group.
        group: String,
        /// Its globs and explicit files.
        looked_for: Vec<String>,
    },
    /// Validating the assembled manifest.
    Manifest(ManifestError),
    /// Reporting a path to cargo: it cannot be written on one line.
    RerunPath {
        /// The path.
        path: PathBuf,
    },
    /// Writing the manifest file.
    WriteManifest {
        /// The manifest file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Writing `cargo:` lines.
    CargoOutput {
        /// The underlying error.
        source: io::Error,
    },
    /// Loading libclang for bindings: none was found, or it could not be
    /// loaded.
    Libclang {
        /// What clang-sys said, with where it looked.
        why: String,
    },
    /// Using an input of bindings: a header or a directory is missing or is
    /// not what it should be, or a setting does not fit the header.
    BindingsInput {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Parsing a header for bindings: clang reported errors.
    Clang {
        /// What was parsed (the header).
        input: String,
        /// The libclang that parsed it: its version and path.
        libclang: String,
        /// The first errors clang reported.
        errors: String,
    },
    /// Generating bindings: bindgen failed for another reason than a clang
    /// error.
    Bindgen {
        /// What was parsed.
        input: String,
        /// What bindgen said.
        message: String,
    },
    /// Reading the generated bindings: bindgen's output is not Rust that
    /// syn can read.
    BindingsOutput {
        /// What was parsed.
        input: String,
        /// What syn said.
        why: String,
    },
    /// Declaring a kernel: a declaration of the header cannot become a
    /// `#[lazy_kernel]` fn.
    NotAKernel {
        /// The header.
        header: PathBuf,
        /// The function or variable.
        name: String,
        /// Why it cannot.
        why: NotAKernel,
    },
    /// Finding kernels: the header declares no function to bind.
    NoFunctions {
        /// The header.
        header: PathBuf,
    },
    /// Writing the generated bindings.
    WriteBindings {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
}

/// What is wrong with a file a group names ([`Error::File`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum FileProblem {
    /// It does not exist.
    Missing,
    /// It cannot be read (for another reason than not existing).
    Unreadable(io::Error),
    /// Its real path cannot be found.
    Unresolvable(io::Error),
    /// It is named by a path that is absolute outside the root, or that
    /// climbs out of it (`..`).
    NotInRoot,
    /// It is not a regular file.
    NotRegular,
    /// It is a symlink to nothing.
    BrokenSymlink,
    /// The group's `meta_with` function refused it, with its message.
    Refused(String),
}

impl FileProblem {
    /// [`FileProblem::Missing`] for a file that is not found, else
    /// [`FileProblem::Unreadable`].
    pub(crate) fn reading(e: io::Error) -> FileProblem {
        if e.kind() == io::ErrorKind::NotFound {
            FileProblem::Missing
        } else {
            FileProblem::Unreadable(e)
        }
    }
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileProblem::Missing => f.write_str("does not exist"),
            FileProblem::Unreadable(e) => write!(f, "cannot be read: {e}"),
            FileProblem::Unresolvable(e) => write!(f, "cannot be resolved: {e}"),
            FileProblem::NotInRoot => {
                f.write_str("must be relative to the root and stay inside it")
            }
            FileProblem::NotRegular => f.write_str("is not a regular file"),
            FileProblem::BrokenSymlink => f.write_str("is a broken symlink"),
            FileProblem::Refused(why) => write!(f, "was refused by meta_with: {why}"),
        }
    }
}

/// Why a declaration of a launcher header cannot be a lazy kernel
/// ([`Error::NotAKernel`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotAKernel {
    /// A variadic function (`...`).
    Variadic,
    /// A variable: a lazily loaded blob exports functions only.
    Variable,
    /// Another item than a function declaration.
    NotAFunction,
}

impl fmt::Display for NotAKernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NotAKernel::Variadic => "it is variadic (`...`)",
            NotAKernel::Variable => "it is a variable; a lazily loaded blob exports functions only",
            NotAKernel::NotAFunction => "it is not a function declaration",
        })
    }
}

/// A path for a message: lossy UTF-8, control characters escaped.
pub(crate) fn shown(path: &Path) -> String {
    escape(&path.to_string_lossy())
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Env { var, why } => write!(f, "environment variable {var} {why}"),
            Error::Root { path, source } => {
                write!(f, "cannot use root '{}': {source}", shown(path))
            }
            Error::CacheName { name, source } => match source {
                // The checks are a blob name's; the message is about a cache
                // name.
                ManifestError::BadName { why, .. } => write!(f, "bad cache name '{name}': {why}"),
                other => write!(f, "bad cache name '{name}': {other}"),
            },
            Error::ReadConfig { path, source } => {
                write!(f, "cannot read config '{}': {source}", shown(path))
            }
            Error::ParseConfig {
                path,
                line: Some(line),
                message,
            } => write!(f, "config '{}' line {line}: {message}", shown(path)),
            Error::ParseConfig {
                path,
                line: None,
                message,
            } => write!(f, "config '{}': {message}", shown(path)),
            Error::NoGroups => write!(
                f,
                "no blob groups: add one with group() or a [[group]] table in ck-jit.toml"
            ),
            Error::GroupSpec { group, why } => write!(f, "group '{}': {why}", escape(group)),
            Error::Glob {
                group,
                pattern,
                why,
            } => write!(
                f,
                "group '{}': bad pattern '{pattern}': {why}",
                escape(group)
            ),
            Error::MetaPattern {
                group,
                pattern,
                why,
            } => write!(
                f,
                "group '{}': bad meta_pattern '{pattern}': {why}",
                escape(group)
            ),
            Error::ReadDir { path, source } => {
                write!(f, "cannot list directory '{}': {source}", shown(path))
            }
            Error::File { group, path, why } => {
                write!(f, "group '{}': file '{}' {why}", escape(group), shown(path))
            }
            Error::NonUtf8Path { group, path } => write!(
                f,
                "group '{}': path {path:?} is not valid UTF-8; rename it or exclude it",
                escape(group)
            ),
            Error::Manifest(e) => write!(f, "invalid manifest: {e}"),
            Error::RerunPath { path } => write!(
                f,
                "cannot report '{}' to cargo: the path is not UTF-8 or contains a line break",
                shown(path)
            ),
            Error::WriteManifest { path, source } => {
                write!(f, "cannot write manifest '{}': {source}", shown(path))
            }
            Error::CargoOutput { source } => write!(f, "cannot write cargo output: {source}"),
            Error::Libclang { .. }
            | Error::BindingsInput { .. }
            | Error::Clang { .. }
            | Error::Bindgen { .. }
            | Error::BindingsOutput { .. }
            | Error::NotAKernel { .. }
            | Error::NoFunctions { .. }
            | Error::WriteBindings { .. } => self.fmt_bindings(f),
            Error::OutsideRoot { .. }
            | Error::BlobName { .. }
            | Error::DuplicateBlob { .. }
            | Error::FileInTwoGroups { .. }
            | Error::MetaMismatch { .. }
            | Error::EmptyGroup { .. } => self.fmt_collecting(f),
        }
    }
}

impl Error {
    /// The message of an error met while collecting a group's files into
    /// blobs; `Display::fmt` names the variants it sends here, so a new
    /// variant is a compile error there, not a fall-through.
    fn fmt_collecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
                Error::OutsideRoot {
                    group,
                    path,
                    target,
                } => write!(
                    f,
                    "group '{}': '{}' leads outside the root (to '{}')",
                    escape(group),
                    escape(path),
                    shown(target)
                ),
                Error::BlobName {
                    group,
                    path,
                    source,
                } => write!(
                    f,
                    "group '{}': file '{path}' cannot be a blob: {source}; rename it or exclude it",
                    escape(group)
                ),
                Error::DuplicateBlob {
                    name,
                    first,
                    second,
                } => write!(
                    f,
                    "blob name '{}' is the stem of both '{}' and '{}'",
                    escape(name),
                    escape(first),
                    escape(second)
                ),
                Error::FileInTwoGroups {
                    path,
                    first,
                    second,
                } => write!(
                    f,
                    "file '{}' is in both group '{}' and group '{}'",
                    escape(path),
                    escape(first),
                    escape(second)
                ),
                Error::MetaMismatch {
                    group,
                    path,
                    pattern,
                } => write!(
                    f,
                    "group '{}': file '{}' does not match meta_pattern '{}'",
                    escape(group),
                    escape(path),
                    escape(pattern)
                ),
                Error::EmptyGroup { group, looked_for } => write!(
                    f,
                    "group '{}' found no files (looked for: {}); fix the pattern, or allow an empty group: \
                     `allow_empty(true)` on the BlobGroup, `allow_empty = true` in ck-jit.toml",
                    escape(group),
                    if looked_for.is_empty() {
                        "nothing: give glob() or file()".to_string()
                    } else {
                        escape(&looked_for.join(", "))
                    }
                ),
            _ => unreachable!("written by Display::fmt"),
        }
    }
}

impl Error {
    /// The message of an error of the `bindings` module; `Display::fmt`
    /// names the variants it sends here.
    fn fmt_bindings(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Libclang { why } => {
                write!(f, "cannot load libclang: {why}; {HOW_TO_GET_LIBCLANG}")
            }
            Error::BindingsInput { path, why } => write!(f, "input '{}' {why}", shown(path)),
            Error::Clang {
                input,
                libclang,
                errors,
            } => write!(
                f,
                "clang cannot parse {input} (libclang {libclang}): {errors}"
            ),
            Error::Bindgen { input, message } => write!(f, "bindgen failed on {input}: {message}"),
            Error::BindingsOutput { input, why } => write!(f, "bindings of {input}: {why}"),
            Error::NotAKernel { header, name, why } => write!(
                f,
                "header '{}': '{}' cannot be a lazy kernel: {why}",
                shown(header),
                escape(name)
            ),
            Error::NoFunctions { header } => write!(
                f,
                "header '{}' declares no function to bind (only functions declared in the \
                 header itself are taken, not those of the headers it includes)",
                shown(header)
            ),
            Error::WriteBindings { path, source } => {
                write!(f, "cannot write '{}': {source}", shown(path))
            }
            _ => unreachable!("written by Display::fmt"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Root { source, .. }
            | Error::ReadConfig { source, .. }
            | Error::ReadDir { source, .. }
            | Error::WriteManifest { source, .. }
            | Error::WriteBindings { source, .. }
            | Error::CargoOutput { source } => Some(source),
            Error::CacheName { source, .. } | Error::BlobName { source, .. } => Some(source),
            Error::Manifest(e) => Some(e),
            _ => None,
        }
    }
}

impl From<ManifestError> for Error {
    fn from(e: ManifestError) -> Error {
        Error::Manifest(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_can_cross_threads() {
        fn send_sync<T: Send + Sync + 'static>() {}
        send_sync::<Error>();
    }

    #[test]
    fn typed_reasons_read_as_the_text_they_replace() {
        let file = |why| {
            Error::File {
                group: "g".into(),
                path: "k/a.cpp".into(),
                why,
            }
            .to_string()
        };
        assert_eq!(
            file(FileProblem::Missing),
            "group 'g': file 'k/a.cpp' does not exist"
        );
        assert_eq!(
            file(FileProblem::NotInRoot),
            "group 'g': file 'k/a.cpp' must be relative to the root and stay inside it"
        );
        assert_eq!(
            file(FileProblem::Refused("no kind".into())),
            "group 'g': file 'k/a.cpp' was refused by meta_with: no kind"
        );
        let unreadable = FileProblem::reading(io::Error::other("denied"));
        assert_eq!(unreadable.to_string(), "cannot be read: denied");
        let kernel = Error::NotAKernel {
            header: "l.h".into(),
            name: "f".into(),
            why: NotAKernel::Variadic,
        };
        assert_eq!(
            kernel.to_string(),
            "header 'l.h': 'f' cannot be a lazy kernel: it is variadic (`...`)"
        );
    }

    #[test]
    fn messages_are_lowercase_single_lines() {
        let errors = [
            Error::NoGroups,
            Error::EmptyGroup {
                group: "g".into(),
                looked_for: vec!["k/*.cpp".into()],
            },
            Error::DuplicateBlob {
                name: "a".into(),
                first: "x/a.cpp".into(),
                second: "y/a.cu".into(),
            },
            Error::MetaMismatch {
                group: "g".into(),
                path: "a\nb.cpp".into(),
                pattern: "x".into(),
            },
            Error::Env {
                var: "OUT_DIR",
                why: "is not set",
            },
        ];
        for e in errors {
            let m = e.to_string();
            assert!(!m.contains('\n'), "{m}");
            let first = m.chars().next().unwrap_or('x');
            assert!(!first.is_uppercase(), "{m}");
            assert!(!m.ends_with('.'), "{m}");
        }
    }
}
