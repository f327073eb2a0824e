//! The compact manifest reader on arbitrary bytes: a program reads the
//! compact form in place from its own binary or from a file beside a
//! library, so damaged bytes must give errors, never a panic.
//!
//! Invariants: nothing panics, whatever accessor is asked; when every
//! blob's entry decodes, `get`, `names`, `names_at` and `groups_at` agree
//! with `entries`, and `find` finds each entry when the names are in order;
//! an index past the end is an error; bytes that decode into a manifest
//! give one that is valid and that the writer writes back into bytes that
//! decode into the same manifest.

use ck_jit_build::manifest::compact::Compact;

/// Enough to reach every accessor without letting a forged count turn one
/// input into minutes.
const AT_MOST: usize = 256;

/// Checks the invariants above on one input; panics on a broken one.
pub fn check(data: &[u8]) {
    let c = match Compact::parse(data) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let n = c.len();
    let _ = (c.name(), c.root(), c.format(), c.is_empty(), c.bytes());
    for i in 0..c.group_count().min(AT_MOST) {
        assert!(c.group_family(i).is_some());
        if let Err(e) = c.group(i) {
            let _ = e.to_string();
        }
    }
    assert!(c.group(c.group_count()).is_err());
    assert!(c.group_family(c.group_count()).is_none());
    for f in c.families() {
        let Ok(Some(t)) = c.table(f) else { continue };
        for m in 0..t.len().min(AT_MOST) {
            let _ = t.member(m);
            for k in 0..t.keys.len() {
                let _ = (t.code(m, k), t.value(m, k));
            }
            let _ = t.meta(m);
        }
    }
    assert!(c.table("\0 not a family").is_ok_and(|t| t.is_none()));
    let _ = c.together();
    assert!(c.get(n).is_err(), "blob {n} of {n} read");
    for probe in ["", "a", "fmha_fwd_d128_fp16", "\u{10ffff}"] {
        let _ = c.find(probe);
    }

    let entries = c.entries();
    if let Ok(entries) = &entries {
        assert_eq!(entries.len(), n);
        let names = c.names().expect("entries decode, so names do");
        assert_eq!(names.len(), n);
        let all: Vec<usize> = (0..n).collect();
        let at = c.names_at(&all).expect("entries decode, so names_at does");
        let groups = c
            .groups_at(&all)
            .expect("entries decode, so groups_at does");
        let sorted = names.windows(2).all(|w| w[0] < w[1]);
        for (i, r) in entries.iter().enumerate() {
            assert_eq!(r.index, i);
            assert_eq!(names[i], r.name);
            assert_eq!(at.get(i), Some(r.name.as_str()));
            assert_eq!(groups[i], r.group);
            if i < AT_MOST {
                assert_eq!(c.get(i).as_ref().ok(), Some(r), "get({i})");
            }
            if sorted && i < AT_MOST {
                assert_eq!(c.find(&r.name).ok().flatten().as_ref(), Some(r));
            }
        }
    }

    let Ok(m) = c.to_manifest() else { return };
    assert!(
        entries.is_ok(),
        "a manifest from entries that do not decode"
    );
    m.validate().expect("to_manifest validates");
    let written = m.to_compact();
    let back = Compact::parse(&written)
        .and_then(|b| b.to_manifest())
        .unwrap_or_else(|e| panic!("the writer's bytes refused: {e}"));
    assert_eq!(back, m);
    assert_eq!(back.to_compact(), written, "the writer is deterministic");
}
