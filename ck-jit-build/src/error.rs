//! The one error type of the crate: each variant names the step that failed
//! and carries the path, pattern or value it failed on, so a build script's
//! panic message alone says what to fix.
//!
//! Messages are lowercase, one line, and escape whatever came from the file
//! system, so a hostile file name cannot break the line it is printed on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::manifest::{escape, ManifestError};

/// Why a manifest could not be built or written.
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
        why: String,
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

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Root { source, .. }
            | Error::ReadConfig { source, .. }
            | Error::ReadDir { source, .. }
            | Error::WriteManifest { source, .. }
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
