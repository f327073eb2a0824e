//! Record-only mode: with no ROCm installed, the fake `hipcc` answers what
//! a build asks the compiler about itself (its version, whether it accepts
//! a flag) as the HIP version the user named would, so the build chooses
//! the flags it would choose on a machine with that ROCm.
//!
//! A flag probe is a preprocess-only run on an empty input
//! (`hipcc FLAG -x hip -E -P /dev/null -o /dev/null`, as aiter and CMake's
//! `check_cxx_compiler_flag` do); it succeeds. The flags a build picks by
//! HIP version are picked by the version stated, so a probe of one of them
//! is a probe of a flag that version's compiler has.

use std::fs;
use std::path::Path;

use super::args::Analysed;

/// The answer to `argv` when it is a question about the compiler, with the
/// process's exit code; `None` for a real compile or link.
pub(crate) fn answer(argv: &[String], a: &Analysed, version: &str) -> Option<i32> {
    let args = argv.get(1..).unwrap_or(&[]);
    if args.iter().any(|x| x == "--version") {
        println!("HIP version: {version}");
        println!("clang version (ck-jit record-only mode, no compiler installed)");
        return Some(0);
    }
    let empty_input = args.iter().any(|x| x == "/dev/null");
    let preprocess = args
        .iter()
        .any(|x| x == "-E" || x == "-fsyntax-only" || x == "-M" || x == "-MM");
    if empty_input && preprocess && a.sources.is_empty() {
        if let Some((_, out)) = &a.output {
            if out != "/dev/null" && out != "-" {
                let _ = fs::write(Path::new(out), "");
            }
        }
        return Some(0);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::args::analyse;
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn flag_probes_and_version_queries_are_answered_and_compiles_are_not() {
        let probe = v(&[
            "hipcc",
            "-mllvm",
            "--lsr-drop-solution=1",
            "-x",
            "hip",
            "-E",
            "-P",
            "/dev/null",
            "-o",
            "/dev/null",
        ]);
        assert_eq!(answer(&probe, &analyse(&probe[1..]), "6.4.43482"), Some(0));
        let version = v(&["hipcc", "--version"]);
        assert_eq!(
            answer(&version, &analyse(&version[1..]), "6.4.43482"),
            Some(0)
        );
        let compile = v(&["hipcc", "-x", "hip", "-c", "a.cpp", "-o", "a.o"]);
        assert_eq!(answer(&compile, &analyse(&compile[1..]), "6.4.43482"), None);
        let preprocess = v(&["hipcc", "-E", "a.cpp"]);
        assert_eq!(
            answer(&preprocess, &analyse(&preprocess[1..]), "6.4.43482"),
            None
        );
    }
}
