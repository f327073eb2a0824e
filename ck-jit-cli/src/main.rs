//! `ck-jit`: inspect, pre-build and maintain the ck-jit disk cache. Run
//! `ck-jit --help` for the commands; install with
//! `cargo install --path ck-jit-cli`.
//!
//! In pipeline order: parse the command
//! line ([`args`]), find the manifest and the cache ([`context`]), pick the
//! blobs ([`select`]), run one command ([`commands`]), report ([`output`]).
//!
//! The tool is a client of the runtime's public API and nothing more: it
//! builds with `Runtime::ensure`, asks `Runtime::cached` what is cached, and changes the cache only through `ck_jit_rt::maintenance`
//! (locks, verify, quarantine, remove). It must never compute a key or write an entry
//! itself, or a pre-built entry could differ from what a lazy call loads.

mod args;
mod cargo;
mod commands;
mod context;
mod error;
mod output;
mod select;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use context::Context;
use output::Output;

/// Parses the command line, runs the command and maps the result to the
/// exit status: 0 done, 1 some of the work failed, 2 the request was wrong.
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        // Prints help, the version, or the usage error (exit 2) itself.
        Err(e) => e.exit(),
    };
    let out = Output::new(cli.global.json);
    // A variable that cannot be read would silently change what a build
    // does (how many compiles, whether it compiles at all): refuse.
    let problems = ck_jit_rt::config::Config::from_env().problems;
    if !problems.is_empty() {
        let e = error::CliError::Usage(format!(
            "fix the environment first: {}",
            problems.join("; ")
        ));
        out.error(&e);
        return ExitCode::from(e.exit_status());
    }
    let ctx = Context::new(&cli.global, out);
    let result = match &cli.command {
        Command::List(a) => commands::list::run(&ctx, a),
        Command::Build(a) => commands::build::run(&ctx, a),
        Command::Clean(a) => commands::clean::run(&ctx, a),
        Command::Gc(a) => commands::gc::run(&ctx, a),
        Command::Stat(_) => commands::stat::run(&ctx),
        Command::Verify(_) => commands::verify::run(&ctx),
        Command::Pack(a) => commands::pack::run(&ctx, a),
        Command::Unpack(a) => commands::pack::run_unpack(&ctx, a),
        Command::ExportManifest(a) => commands::export::run(&ctx, a),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            ctx.out.error(&e);
            ExitCode::from(e.exit_status())
        }
    }
}
