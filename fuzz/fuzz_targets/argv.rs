//! The compile-command helpers on arbitrary argument vectors and paths.
//!
//! The input format and the invariants are in `checks/argv.rs`, which
//! `tests/tests/fuzz_replay.rs` also runs, on a stable toolchain in CI, on
//! this target's corpus and on seeded mutations of it.
#![no_main]

#[path = "../checks/argv.rs"]
mod argv;

libfuzzer_sys::fuzz_target!(|data: &[u8]| argv::check(data));
