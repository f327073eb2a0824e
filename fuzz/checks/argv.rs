//! The compile-command helpers on arbitrary argument vectors and paths.
//!
//! Input: NUL-separated fields, decoded lossily: the tree root, the source
//! path, the output path, the blob name, then one argument per field (so an
//! argument may hold a newline or any other byte).
//!
//! Invariants: nothing panics; `normalise_args` never grows the vector and
//! only drops arguments; `split_for_launcher` splits exactly the templates
//! that contain `-shared`, its compile step has `-c` and writes `{obj}`,
//! its link step takes `{obj}` and writes `{out}`; `expand` leaves an
//! argument without `{` alone, substitutes each value verbatim (never
//! scanning a substituted value again) and, given non-empty values without
//! braces, leaves no placeholder behind.

use std::path::Path;

use ck_jit_rt::__internals::{expand, normalise_args, split_for_launcher};

const PLACEHOLDERS: [&str; 4] = ["{root}", "{src}", "{out}", "{name}"];

/// Checks every invariant above on one input; panics on a broken one.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.split('\0');
    let root = fields.next().unwrap_or_default();
    let src = fields.next().unwrap_or_default();
    let out = fields.next().unwrap_or_default();
    let name = fields.next().unwrap_or_default();
    let args: Vec<String> = fields.map(str::to_string).collect();

    let norm = normalise_args(&args);
    assert!(norm.len() <= args.len(), "normalise grew {args:?}");
    // Only drops: the result is a subsequence of the input.
    let mut rest = args.iter();
    for a in &norm {
        assert!(
            rest.any(|b| b == a),
            "normalise invented {a:?} from {args:?}"
        );
    }
    assert!(!norm.iter().any(|a| a == "-fvisibility=hidden"));

    match split_for_launcher(&args) {
        None => assert!(!args.iter().any(|a| a == "-shared")),
        Some((compile, link)) => {
            assert!(args.iter().any(|a| a == "-shared"));
            assert_eq!(compile.first().map(String::as_str), Some("-c"));
            assert!(!compile.iter().any(|a| a == "-shared"), "{compile:?}");
            assert_eq!(link.first().map(String::as_str), Some("-shared"));
            assert!(link.iter().any(|a| a == "{obj}"), "{link:?}");
            assert!(
                link.ends_with(&["-o".to_string(), "{out}".to_string()]),
                "{link:?}"
            );
            // Every `-o` of the compile step writes the object.
            for w in compile.windows(2) {
                if w[0] == "-o" {
                    assert_eq!(w[1], "{obj}", "{compile:?}");
                }
            }
        }
    }

    // Values go in verbatim, whatever they contain.
    let all = expand(
        "{root}|{src}|{out}|{name}",
        Path::new(root),
        Path::new(src),
        Path::new(out),
        name,
    );
    assert_eq!(all, format!("{root}|{src}|{out}|{name}"));

    let clean = |v: &str| !v.is_empty() && !v.contains(['{', '}']);
    let all_clean = [root, src, out, name].iter().all(|v| clean(v));
    for a in args
        .iter()
        .chain([root, src, out, name].map(str::to_string).iter())
    {
        let e = expand(a, Path::new(root), Path::new(src), Path::new(out), name);
        if !a.contains('{') {
            assert_eq!(&e, a);
        }
        if all_clean {
            for p in PLACEHOLDERS {
                assert!(!e.contains(p), "{p} left in {e:?} from {a:?}");
            }
        }
    }
}
