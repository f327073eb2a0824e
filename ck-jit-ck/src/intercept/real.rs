//! Running the real program behind the fake compiler: the build's own
//! C++ compiler or the real HIP compiler, with the arguments the user asked
//! to drop removed and the interceptor's changes to the environment undone.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use super::args::strip_hip_flags;
use super::protocol::{var, REAL_HIPCC, SAVED, SHIM_DROP, SHIM_LOG};

/// Whether the shim was started as a C++ compiler driver (`c++`, `g++`,
/// `clang++`, the build's `CXX`) rather than as a HIP compiler.
fn is_host_driver(arg0: &str) -> bool {
    let name = Path::new(arg0)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(arg0);
    matches!(name, "c++" | "g++" | "clang++" | "cc" | "gcc" | "clang")
}

/// The real program for `argv` and its arguments: for a C++ driver name,
/// the build's original `CXX`, else `c++`; for a HIP compiler name,
/// `CK_JIT_REAL_HIPCC` if set, else `c++` without the HIP-only flags.
/// Arguments given with [`SHIM_DROP`] are removed.
pub(crate) fn real_command(argv: &[String]) -> (OsString, Vec<String>) {
    let args = argv.get(1..).unwrap_or(&[]);
    let (program, args): (OsString, Vec<String>) = if is_host_driver(&argv[0]) {
        let saved_cxx = var(SAVED[4].1)
            .and_then(|v| v.into_string().ok())
            .and_then(|v| v.strip_prefix('+').map(String::from))
            .filter(|v| !v.is_empty());
        match saved_cxx {
            Some(cxx) => (cxx.into(), args.to_vec()),
            None => ("c++".into(), args.to_vec()),
        }
    } else {
        match var(REAL_HIPCC) {
            Some(real) => (real, args.to_vec()),
            None => ("c++".into(), strip_hip_flags(args)),
        }
    };
    (program, drop_args(&args))
}

/// `args` without the [`SHIM_DROP`] arguments.
fn drop_args(args: &[String]) -> Vec<String> {
    let dropped: Vec<Vec<String>> = var(SHIM_DROP)
        .and_then(|v| v.into_string().ok())
        .map(|v| {
            v.lines()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.split_whitespace().map(String::from).collect())
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    'next: while i < args.len() {
        for d in &dropped {
            if !d.is_empty() && args[i..].starts_with(d) {
                i += d.len();
                continue 'next;
            }
        }
        out.push(args[i].clone());
        i += 1;
    }
    out
}

/// `program` with the interceptor's changes to the environment undone.
pub(crate) fn restored(program: &OsString) -> Command {
    let mut cmd = Command::new(program);
    for (name, saved) in SAVED {
        // A variable not saved is left as it is.
        if let Some(v) = var(saved) {
            let v = v.into_string().unwrap_or_default();
            match v.strip_prefix('+') {
                Some(value) => cmd.env(name, value),
                None => cmd.env_remove(name),
            };
        }
    }
    for (_, saved) in SAVED {
        cmd.env_remove(saved);
    }
    cmd.env_remove(SHIM_LOG);
    cmd
}
