//! Properties of the source itself that keep the crate what it promises:
//! it never compiles a blob, starts a program only where it must (CK's
//! code generator, and an intercepted foreign build with its fake
//! compiler), and reads the environment only through
//! `ck_jit_build::CargoOutput::var`.

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
                // Unit tests may start programs and read the environment to
                // set up their fixtures; what is checked is the library.
                let code = code.join("\n");
                let code = code.split("#[cfg(test)]").next().unwrap_or_default();
                out.push((rel, code.to_string()));
            }
        }
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&dir, &dir, &mut out);
    out.sort();
    assert!(
        out.len() >= 10,
        "expected the crate's modules, found {out:?}"
    );
    out
}

/// The one module that runs CK's code generator.
const CODEGEN: &str = "codegen.rs";
/// The interceptor: runs a foreign build, and as its fake compiler runs the
/// real compiler for host code and `cc` for stub objects.
const INTERCEPT_DIR: &str = "intercept/";

const PROCESS: &[&str] = &["std::process", "process::", "Command"];

#[test]
fn only_the_generator_and_the_interceptor_start_programs() {
    let sources = sources();
    for allowed in [CODEGEN, "intercept/mod.rs", "intercept/shim.rs"] {
        assert!(
            sources.iter().any(|(n, _)| n == allowed),
            "src/{allowed} is gone: update this test with where programs are started now"
        );
    }
    for (name, text) in &sources {
        // The one use of libc: lowering the priority of the threads that
        // read what the generator writes (it starts and loads nothing).
        let mut text = text.clone();
        for allowed in [
            "libc::syscall(libc::SYS_gettid)",
            "libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10)",
        ] {
            text = text.replace(allowed, "");
        }
        for banned in ["libc::", "dlopen"] {
            assert!(!text.contains(banned), "src/{name} mentions `{banned}`");
        }
        if name == CODEGEN || name.starts_with(INTERCEPT_DIR) {
            continue;
        }
        // A process id names a private temporary file; it starts nothing.
        let text = text.replace("std::process::id()", "");
        for banned in PROCESS {
            assert!(!text.contains(banned), "src/{name} mentions `{banned}`");
        }
    }
}

#[test]
fn the_generator_module_starts_python_and_never_a_compiler() {
    let text = sources()
        .into_iter()
        .find(|(n, _)| n == CODEGEN)
        .map(|(_, t)| t)
        .unwrap();
    // One program, the configured Python interpreter, started once.
    assert_eq!(text.matches("Command::new(").count(), 1, "src/{CODEGEN}");
    assert!(text.contains("Command::new(self.python)"), "src/{CODEGEN}");
    for compiler in [
        "\"hipcc", "\"cc\"", "\"c++\"", "\"clang", "\"gcc", "\"g++", "\"nvcc", "amdclang",
    ] {
        assert!(
            !text.contains(compiler),
            "src/{CODEGEN} names a compiler ({compiler})"
        );
    }
}

#[test]
fn the_environment_is_read_only_through_cargo_output() {
    // What the fake compiler needs to know about its own process: its argv,
    // its binary and its working directory. Not variables.
    const PROCESS_IDENTITY: &[&str] = &[
        "std::env::args_os()",
        "std::env::current_exe()",
        "std::env::current_dir()",
        "std::env::split_paths(",
    ];
    for (name, text) in sources() {
        // Splitting a PATH value read through CargoOutput reads no variable.
        let mut text = text.replace("std::env::split_paths(", "");
        // The running program's own file (what a stamp of outputs it made
        // records) is no variable either.
        text = text.replace("std::env::current_exe()", "");
        // The crate's own version, fixed when it is compiled.
        text = text.replace("env!(\"CARGO_PKG_VERSION\")", "");
        if name.starts_with(INTERCEPT_DIR) {
            for allowed in PROCESS_IDENTITY {
                text = text.replace(allowed, "");
            }
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
