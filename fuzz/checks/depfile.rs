//! The depfile parser on arbitrary bytes: compilers write these, so it must
//! accept anything without panicking and return each prerequisite once.

use std::collections::HashSet;

use ck_jit_rt::__internals::parse_depfile;

/// Checks the invariants above on one input; panics on a broken one.
pub fn check(data: &[u8]) {
    // The runtime reads depfiles with `read_to_string` and treats a
    // non-UTF-8 one as empty; lossy decoding reaches more of the parser.
    let text = String::from_utf8_lossy(data);
    let deps = parse_depfile(&text);
    let mut seen = HashSet::new();
    for d in &deps {
        assert!(!d.is_empty(), "empty prerequisite");
        assert!(d.len() <= text.len(), "prerequisite longer than the input");
        assert!(seen.insert(d), "{d:?} returned twice");
    }
    assert!(deps.len() <= text.len());
}
