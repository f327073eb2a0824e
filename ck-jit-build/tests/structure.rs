//! Properties of the source itself that keep the crate what it promises:
//! it never compiles anything, starts a program only where it must (the
//! clang probe of the `bindgen` feature), and reads the environment in one
//! place.

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `src/`, as (path relative to `src/`, text),
/// without doc comments: their examples run as doctests, in a process of
/// their own that sets up files and variables the way cargo does for a
/// build script, which the library itself must never do.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = fs::read_to_string(&path).unwrap();
                let code: Vec<&str> = text
                    .lines()
                    .filter(|l| {
                        let l = l.trim_start();
                        !l.starts_with("///") && !l.starts_with("//!")
                    })
                    .collect();
                out.push((rel, code.join("\n")));
            }
        }
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&dir, &dir, &mut out);
    out.sort();
    assert!(
        out.len() >= 8,
        "expected the crate's modules, found {out:?}"
    );
    out
}

/// Asks a clang for its resource directory (`clang -print-resource-dir`)
/// when bindgen's libclang comes without one.
const CLANG_PROBE: &str = "bindings/clang.rs";

const PROCESS: &[&str] = &["std::process", "process::", "Command"];

#[test]
fn only_the_clang_probe_starts_programs() {
    let sources = sources();
    assert!(
        sources.iter().any(|(n, _)| n == CLANG_PROBE),
        "src/{CLANG_PROBE} is gone: update this test with where programs are started now"
    );
    for (name, text) in &sources {
        for banned in ["libc::", "dlopen"] {
            assert!(!text.contains(banned), "src/{name} mentions `{banned}`");
        }
        if name == CLANG_PROBE {
            continue;
        }
        for banned in PROCESS {
            assert!(!text.contains(banned), "src/{name} mentions `{banned}`");
        }
    }
}

#[test]
fn no_module_knows_ck_s_generator_or_dispatchers() {
    // CK's half is the ck-jit-ck crate, Rust copies of CK's structs
    // included.
    for (name, text) in sources() {
        // Unit tests may use CK-like file names as sample data.
        let text = text.split("#[cfg(test)]").next().unwrap_or_default();
        for banned in ["generate.py", "fmha_", "_api.cpp", "composable_kernel"] {
            assert!(!text.contains(banned), "src/{name} mentions `{banned}`");
        }
    }
}

#[test]
fn the_environment_is_read_only_in_env_rs() {
    for (name, text) in sources() {
        if name == "env.rs" {
            assert!(text.contains("std::env::var_os"));
            continue;
        }
        // Splitting a PATH value read through env.rs reads no variable.
        let text = text.replace("std::env::split_paths(", "");
        for banned in [
            "std::env",
            "var_os(",
            "vars_os(",
            "vars()",
            "env!(",
            "option_env!(",
        ] {
            assert!(
                !text.contains(banned),
                "src/{name} reads the environment (`{banned}`)"
            );
        }
    }
}
