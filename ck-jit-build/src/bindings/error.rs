//! The error of the `bindings` module: each variant names the step that
//! failed and carries the file, function or value it failed on.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::manifest::escape;

/// How to get a libclang, for messages.
const HOW_TO_GET_LIBCLANG: &str = "install libclang 11 or newer, e.g. \
     `pip install libclang==18.1.1`, and set LIBCLANG_PATH to the directory holding \
     its libclang.so (`python3 -c 'import clang, os; print(os.path.dirname(clang.__file__))'`/native)";

/// Why bindings could not be generated or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Loading libclang: none was found, or it could not be loaded.
    Libclang {
        /// What clang-sys said, with where it looked.
        why: String,
    },
    /// Using an input: a header or a directory is missing or is not what
    /// it should be.
    Input {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Parsing: clang reported errors.
    Clang {
        /// What was parsed (the header).
        input: String,
        /// The libclang that parsed it: its version and path.
        libclang: String,
        /// The first errors clang reported.
        errors: String,
    },
    /// Generating: bindgen failed for another reason than a clang error.
    Bindgen {
        /// What was parsed.
        input: String,
        /// What bindgen said.
        message: String,
    },
    /// Reading the generated items: bindgen's output is not Rust that syn
    /// can read.
    Output {
        /// What was parsed.
        input: String,
        /// What is wrong.
        why: String,
    },
    /// Declaring a kernel: a declaration of the header cannot become a
    /// `#[lazy_kernel]` fn (a variadic function, a variable).
    Unsupported {
        /// The header.
        header: PathBuf,
        /// The function or variable.
        name: String,
        /// Why it cannot.
        why: String,
    },
    /// Finding kernels: the header declares no function to bind.
    NoFunctions {
        /// The header.
        header: PathBuf,
    },
    /// Reading an environment variable that is needed (`OUT_DIR`).
    Env {
        /// The variable.
        var: &'static str,
        /// What is wrong with it.
        why: &'static str,
    },
    /// Writing the generated file.
    Write {
        /// The file.
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
            Error::Libclang { why } => {
                write!(f, "cannot load libclang: {why}; {HOW_TO_GET_LIBCLANG}")
            }
            Error::Input { path, why } => write!(f, "input '{}' {why}", shown(path)),
            Error::Clang {
                input,
                libclang,
                errors,
            } => write!(
                f,
                "clang cannot parse {input} (libclang {libclang}): {errors}"
            ),
            Error::Bindgen { input, message } => write!(f, "bindgen failed on {input}: {message}"),
            Error::Output { input, why } => write!(f, "bindings of {input}: {why}"),
            Error::Unsupported { header, name, why } => write!(
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
            Error::Env { var, why } => write!(f, "environment variable {var} {why}"),
            Error::Write { path, source } => {
                write!(f, "cannot write '{}': {source}", shown(path))
            }
            Error::CargoOutput { source } => write!(f, "cannot write cargo output: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Write { source, .. } | Error::CargoOutput { source } => Some(source),
            _ => None,
        }
    }
}
