//! Why a command stopped, and the exit status each reason gets.

use std::fmt;

/// A command that did not finish cleanly.
#[derive(Debug)]
pub enum CliError {
    /// The request was wrong: unknown blob, conflicting or missing flags, an
    /// unreadable list file or manifest (exit 2).
    Usage(String),
    /// The runtime refused something the command needs, such as the cache
    /// directory (exit 1).
    Runtime(ck_jit_rt::Error),
    /// A file the command writes could not be written, or one it reads
    /// was refused (a pack for another device or compiler, a damaged one)
    /// (exit 1).
    Io(String),
    /// The command ran and some of its work failed; the report saying what
    /// has been printed already (exit 1).
    Failed,
}

impl CliError {
    /// The process exit status for this error.
    pub fn exit_status(&self) -> u8 {
        match self {
            CliError::Usage(_) => 2,
            CliError::Runtime(_) | CliError::Io(_) | CliError::Failed => 1,
        }
    }
}

/// The message alone: `Output::error` puts the program's name in front.
impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Io(m) => f.write_str(m),
            CliError::Runtime(e) => e.fmt(f),
            CliError::Failed => Ok(()),
        }
    }
}

impl From<ck_jit_rt::Error> for CliError {
    fn from(e: ck_jit_rt::Error) -> CliError {
        match e {
            // A manifest that cannot be used is a wrong request, like a
            // wrong path.
            ck_jit_rt::Error::Manifest { .. } => CliError::Usage(e.to_string()),
            // A pack that is not there, or a file that is not a pack.
            ck_jit_rt::Error::PackMissing { .. } | ck_jit_rt::Error::NotAPack { .. } => {
                CliError::Usage(e.to_string())
            }
            e => CliError::Runtime(e),
        }
    }
}
