//! `ck-jit`: inspect, pre-build and maintain the ck-jit disk cache.
//!
//! Everything it builds goes through [`ck_jit_rt::Runtime::ensure`], the
//! path a lazy kernel call takes, so an entry made here is exactly the one
//! a program would load. Run `ck-jit --help` for the commands.

#[path = "../cli/mod.rs"]
mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
