//! `ck-jit.toml` on arbitrary text, through `from_config(..).try_manifest()`.
//!
//! The input format and the invariants are in `checks/config.rs`, which
//! `tests/tests/fuzz_replay.rs` also runs, on a stable toolchain in CI, on
//! this target's corpus and on seeded mutations of it.
#![no_main]

#[path = "../checks/config.rs"]
mod config;

libfuzzer_sys::fuzz_target!(|data: &[u8]| config::check(data));
