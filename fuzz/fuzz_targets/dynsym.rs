//! The ELF `.dynsym` reader on arbitrary bytes.
//!
//! The input format and the invariants are in `checks/dynsym.rs`, which
//! `tests/tests/fuzz_replay.rs` also runs, on a stable toolchain in CI, on
//! this target's corpus and on seeded mutations of it.
#![no_main]

#[path = "../checks/dynsym.rs"]
mod dynsym;

libfuzzer_sys::fuzz_target!(|data: &[u8]| dynsym::check(data));
