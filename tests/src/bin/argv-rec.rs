//! A stand-in compiler launcher (in the place of ccache or distcc) that
//! proves what it was given: it appends its argv, as one JSON array per
//! line, to the file its first argument names (`--rec-log=<file>`), then
//! runs the command that starts at the first argument naming an existing
//! file by absolute path (the compiler) and exits with its status.
//!
//! `argv-rec --rec-log=<file> [launcher args...] /path/to/compiler [args...]`

use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::process::{exit, Command};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(log) = args.first().and_then(|a| a.strip_prefix("--rec-log=")) else {
        eprintln!("usage: argv-rec --rec-log=<file> [args...] /path/to/compiler [args...]");
        exit(2);
    };
    if let Ok(mut f) = OpenOptions::new().create(true).append(true).open(log) {
        let _ = writeln!(f, "{}", serde_json::Value::from(args.clone()));
    }
    let Some(at) = args
        .iter()
        .skip(1)
        .position(|a| a.starts_with('/') && Path::new(a).is_file())
    else {
        eprintln!("argv-rec: no compiler (an absolute path to a file) in {args:?}");
        exit(2);
    };
    let status = Command::new(&args[at + 1]).args(&args[at + 2..]).status();
    match status {
        Ok(s) => exit(s.code().unwrap_or(1)),
        Err(e) => {
            eprintln!("argv-rec: cannot run {}: {e}", args[at + 1]);
            exit(127);
        }
    }
}
