//! `#if` conditions: the CK preset's evaluator (`ck_jit_ck::cond`)
//! against gcc's `cpp` on expressions generated from the input bytes by
//! the grammar the seeded test uses (`ck-jit-ck/tests/cond_gen`): every
//! operator, literals of every base and suffix, character literals,
//! `defined`, `true`/`false`, object-like macros and undefined names.
//!
//! Invariants: nothing panics; the evaluator rejects exactly what `cpp`
//! rejects, and where it accepts, `cpp` agrees on the truth, the value
//! and the signedness. One `cpp` process per input: slow (hundreds of
//! inputs a second), which the differential nature is worth.
#![no_main]

use std::collections::HashSet;
use std::io::Write;
use std::process::{Command, Stdio};

use ck_jit_ck::cond::evaluate;
use ck_jit_ck::macros::Macros;
use libfuzzer_sys::fuzz_target;

#[path = "../../ck-jit-ck/tests/cond_gen/mod.rs"]
mod cond_gen;

fuzz_target!(|data: &[u8]| {
    let mut bytes = data.iter().copied();
    let depth = u32::from(bytes.next().unwrap_or(0) % 7);
    let mut next = move || {
        let b: [u8; 4] = std::array::from_fn(|_| bytes.next().unwrap_or(0));
        u32::from_le_bytes(b)
    };
    let expr = cond_gen::expression(&mut next, depth);
    let mut macros = Macros::new();
    for (name, body) in cond_gen::MACROS {
        macros.define(name, body);
    }
    let value = evaluate(&expr, &macros).ok().map(|v| (v.bits, v.unsigned));
    let src = cond_gen::blocks(0, &expr, value);
    let mut child = Command::new("cpp")
        .args(["-x", "c++", "-P", "-undef"])
        .args(cond_gen::MACROS.iter().map(|(n, b)| format!("-D{n}={b}")))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("gcc's cpp runs");
    child
        .stdin
        .take()
        .expect("a pipe")
        .write_all(src.as_bytes())
        .expect("cpp reads its input");
    let out = child.wait_with_output().expect("cpp ends");
    let kept: HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let failed = String::from_utf8_lossy(&out.stderr).contains("error");
    if let Err(why) = cond_gen::agrees(0, &expr, value, &kept, failed) {
        panic!("{why}");
    }
});
