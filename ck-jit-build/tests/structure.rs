//! Properties of the source itself that keep the crate what it promises:
//! it never starts a process, and reads the environment in one place.

use std::fs;
use std::path::PathBuf;

fn sources() -> Vec<(String, String)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "rs") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, fs::read_to_string(&path).unwrap()));
        }
    }
    out.sort();
    assert!(
        out.len() >= 8,
        "expected the crate's modules, found {out:?}"
    );
    out
}

#[test]
fn the_crate_never_starts_a_process() {
    for (name, text) in sources() {
        for banned in ["std::process", "process::", "Command", "libc::", "dlopen"] {
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
