//! `Manifest::from_json` on arbitrary text. A manifest it accepts must obey
//! every invariant the runtime relies on, and `to_json` must give a text
//! that parses back to the same manifest and serialises byte-identically.

use ck_jit_build::manifest::{check_name, check_source, Manifest};

/// Checks the invariants above on one input; panics on a broken one.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let m = match Manifest::from_json(text) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    for (i, b) in m.blobs.iter().enumerate() {
        assert!(
            check_name(&b.name).is_ok(),
            "accepted bad name {:?}",
            b.name
        );
        assert!(
            check_source(&b.name, &b.source).is_ok(),
            "accepted bad source {:?}",
            b.source
        );
        assert!((b.group as usize) < m.groups.len());
        assert!(
            i == 0 || m.blobs[i - 1].name < b.name,
            "not sorted or not unique"
        );
        assert_eq!(m.blob(&b.name).map(|f| &f.name), Some(&b.name));
        let _ = m.symbol_of(b);
    }
    let _ = m.closest_names("fmha_fwd_d128_bf16", 3);
    let json = m.to_json();
    let back = Manifest::from_json(&json)
        .unwrap_or_else(|e| panic!("to_json output refused: {e}\n{json}"));
    assert_eq!(back, m);
    assert_eq!(back.to_json(), json);
}
