//! The compact manifest reader (`Compact::parse` and every accessor) on arbitrary bytes.
//!
//! The input format and the invariants are in `checks/compact.rs`, which
//! `tests/tests/fuzz_replay.rs` also runs, on a stable toolchain in CI, on
//! this target's corpus and on seeded mutations of it.
#![no_main]

#[path = "../checks/compact.rs"]
mod compact;

libfuzzer_sys::fuzz_target!(|data: &[u8]| compact::check(data));
