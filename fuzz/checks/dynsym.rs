//! The ELF `.dynsym` reader on arbitrary bytes: a compiler (or a damaged
//! cache entry) may hand it anything. It must never panic, and what it
//! returns must be consistent across its entry points.

use ck_jit_rt::__internals::{
    check_header, dynamic_symbols, find_prefix, function_names, pick_prefix, HOST_MACHINE,
};

/// Checks the invariants above on one input; panics on a broken one.
pub fn check(data: &[u8]) {
    let header = check_header(data, Some(HOST_MACHINE));
    let _ = check_header(data, None);
    let syms = dynamic_symbols(data);
    if let Ok(syms) = &syms {
        assert!(syms.iter().all(|s| !s.name.is_empty()));
        // The prefix search agrees with the full listing.
        for prefix in ["", "_Z", "k", "fmha_fwd_"] {
            let found = find_prefix(data, prefix).expect("listed, so searchable");
            let want = syms
                .iter()
                .find(|s| s.is_function && s.name.starts_with(prefix))
                .map(|s| s.name.clone());
            assert_eq!(found, want);
            // The loader's lookup is the same one.
            assert_eq!(pick_prefix(syms, prefix).map(|s| s.name.clone()), want);
        }
        let names = function_names(data, 5);
        assert!(names.len() <= 5);
    } else {
        assert!(find_prefix(data, "").is_err());
        assert!(function_names(data, 5).is_empty());
    }
    // A file that is not ELF at all fails both checks the same way.
    if data.len() < 16 || !data.starts_with(b"\x7fELF") {
        assert!(header.is_err() && syms.is_err());
    }
}
