//! `Manifest::from_json` on arbitrary text.
//!
//! The input format and the invariants are in `checks/manifest.rs`, which
//! `tests/tests/fuzz_replay.rs` also runs, on a stable toolchain in CI, on
//! this target's corpus and on seeded mutations of it.
#![no_main]

#[path = "../checks/manifest.rs"]
mod manifest;

libfuzzer_sys::fuzz_target!(|data: &[u8]| manifest::check(data));
