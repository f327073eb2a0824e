//! The one error type of the crate: of the CK preset, the lazy
//! dispatchers, the build interceptor, the `#if` evaluator and the
//! dispatch rules. Each variant names the step that failed and carries the
//! path, program, command, call site or function it failed on.
//!
//! It is separate from [`ck_jit_build::Error`] because these steps run programs and
//! read C++ sources, which the plain manifest builder never does; a failure
//! of the manifest assembly itself is wrapped unchanged in
//! [`Error::Build`].
//!
//! It is defined without the `build` feature too, for the dispatch rules'
//! evaluator; only [`Error::Build`] needs that feature.
// Without the `build` feature only the rules' variants are made.
#![cfg_attr(not(feature = "build"), allow(dead_code))]

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

#[cfg(not(feature = "build"))]
use self::escape_without_build as escape;
#[cfg(feature = "build")]
use ck_jit_build::manifest::escape;

/// `ck_jit_build::manifest::escape`, for a build without the `build`
/// feature, which does not link ck-jit-build: control characters and
/// quotes escaped, at most 200 characters kept.
#[cfg(any(test, not(feature = "build")))]
fn escape_without_build(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().take(200) {
        out.extend(c.escape_debug());
    }
    if s.chars().count() > 200 {
        out.push_str("...");
    }
    out
}

/// Why the CK preset, the lazy stubs, the compile of CK's dispatchers or
/// an interception failed. CK's dispatchers are compiled unchanged: the
/// stubs define every specialisation the blobs define, each resolving its
/// blob on first call, after every dispatcher call has been checked to
/// have a blob.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Assembling or writing the manifest (cache name, root, write, ...).
    #[cfg(feature = "build")]
    Build(ck_jit_build::Error),
    /// Finding the CK tree: the path is missing or holds no CK FMHA example.
    SourceTree {
        /// The tree as given.
        path: PathBuf,
        /// What is missing.
        why: String,
    },
    /// Reading the HIP version given to the preset: it is not
    /// `MAJOR.MINOR.PATCH`.
    HipVersion {
        /// The version as given.
        version: String,
    },
    /// Finding CK's code generator: `generate.py` is not where CK keeps it.
    Generator {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Starting a program: it was not found.
    ProgramNotFound {
        /// The program as given.
        program: PathBuf,
        /// What it was needed for.
        purpose: &'static str,
    },
    /// Starting a program: it exists but could not be run.
    Spawn {
        /// The program.
        program: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Running CK's code generator: it exited with an error.
    Codegen {
        /// The command, shell-quoted for copying.
        command: String,
        /// How it ended.
        status: String,
        /// The end of its standard error.
        stderr_tail: String,
    },
    /// Reading or writing a file or directory.
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// Collecting blobs: the generated directory holds none of the requested
    /// directions (a filter that matches nothing, a wrong directory).
    NoBlobs {
        /// The generated directory.
        dir: PathBuf,
    },
    /// Reading a generated file name: it is not UTF-8 or cannot be a blob
    /// name.
    FileName {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Parsing C++ (a blob or a dispatcher).
    Parse {
        /// The file, where known.
        file: Option<PathBuf>,
        /// 1-based line.
        line: usize,
        /// What was expected.
        why: String,
    },
    /// Dispatcher calls of blob specialisations that no recorded blob
    /// defines, all of them: file, line, specialisation.
    UnresolvedCalls {
        /// Every such call.
        calls: Vec<(PathBuf, usize, String)>,
    },
    /// Dispatcher calls of blob specialisations that only blobs left out
    /// for the requested targets define ([`CkFmhaFiles::left_out`]): the
    /// library would miss those kernels at the user's call.
    ///
    /// [`CkFmhaFiles::left_out`]: crate::CkFmhaFiles::left_out
    LeftOutCalls {
        /// Per kind of the left-out blobs: the kind, how many calls, and
        /// the first (file, line, specialisation).
        kinds: Vec<(String, usize, (PathBuf, usize, String))>,
    },
    /// Running the intercepted build: it failed.
    ForeignBuild {
        /// The command, shell-quoted.
        command: String,
        /// How it ended.
        status: String,
        /// Its output, captured here.
        log: PathBuf,
        /// The end of that output.
        tail: String,
    },
    /// Reading the interception log: a line is not one invocation (or
    /// one link) as the log writes them.
    InterceptLog {
        /// The log.
        log: PathBuf,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// Turning invocations into a manifest: an intercepted compile cannot be
    /// replayed (source outside the root, two commands for one blob, ...).
    Intercept {
        /// What is wrong.
        why: String,
    },
    /// Compiling CK's dispatchers, stubs and glue into the crate failed.
    DispatcherBuild {
        /// The HIP compiler.
        compiler: PathBuf,
        /// The compiler's message.
        why: String,
    },
    /// Reading a compiled object or archive.
    Object {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Compiled dispatchers leave specialisations of blob templates
    /// undefined that no stub defines: every one of them.
    UndefinedSpecialisations {
        /// What was linked or archived (a library, a shared object).
        output: PathBuf,
        /// Each symbol, with its template and the object that needs it.
        missing: Vec<Missing>,
    },
    /// Evaluating an `#if` condition ([`cond::evaluate`]): the preprocessor
    /// would reject it (a syntax error, a division by zero).
    ///
    /// [`cond::evaluate`]: crate::cond::evaluate
    Condition {
        /// The preprocessor's message.
        why: String,
    },
    /// Evaluating an `#if` condition: it depends on a macro whose value or
    /// definedness is not known at build time.
    UnknownMacro {
        /// The macro.
        name: String,
        /// Why it is not known (what sets it).
        why: String,
    },
    /// Reading dispatch rules ([`RulesFile::parse`]): they are not the
    /// rules format, or not consistent (an index out of range, nesting too
    /// deep).
    ///
    /// [`RulesFile::parse`]: crate::rules::RulesFile::parse
    BadRules {
        /// What is wrong: the JSON reader's message, or the expression or
        /// function that is not consistent.
        why: String,
    },
    /// Reading dispatch rules: they are of a newer format than this build
    /// reads ([`RULES_FORMAT`](crate::rules::RULES_FORMAT)).
    NewerRules {
        /// The format of the rules.
        found: u32,
    },
    /// Deciding by the dispatch rules ([`RulesFile::decide`]): the rules
    /// have no such function.
    ///
    /// [`RulesFile::decide`]: crate::rules::RulesFile::decide
    NoSuchFunction {
        /// The dispatcher file.
        file: String,
        /// The function asked for.
        function: String,
        /// The functions the rules have.
        known: Vec<String>,
    },
    /// Deciding by the dispatch rules: a condition reached needs a value the
    /// environment does not give, compares values of different kinds,
    /// divides by zero, or could not be read by the build.
    Decide {
        /// The dispatcher file.
        file: String,
        /// The function.
        function: String,
        /// What went wrong, naming the expression.
        why: String,
    },
}

/// `s` with control characters escaped, not shortened (normalised traits
/// run to several hundred characters and all of them matter).
impl Error {
    /// The error with `path` as the file it is about, for a parse error
    /// raised before the file was known.
    pub(crate) fn in_file(self, path: &Path) -> Error {
        match self {
            Error::Parse {
                file: None,
                line,
                why,
            } => Error::Parse {
                file: Some(PathBuf::from(path)),
                line,
                why,
            },
            other => other,
        }
    }
}

pub(crate) fn shown(path: &Path) -> String {
    escape(&path.to_string_lossy())
}

/// A specialisation of a blob template that an object leaves undefined
/// and no object of the set defines: what
/// [`Error::UndefinedSpecialisations`] carries, not an error by itself.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Missing {
    /// The object that needs it: a file, or `archive(member)`.
    pub object: String,
    /// The blob template it specialises (`fmha_bwd_dot_do_o_`).
    pub template: String,
    /// The mangled symbol.
    pub symbol: String,
}

/// The message of a set of missing specialisations: each with the object
/// that needs it, at most `max` of them.
pub(crate) fn describe(missing: &[Missing], max: usize) -> String {
    let mut text = String::new();
    for m in missing.iter().take(max) {
        if !text.is_empty() {
            text.push_str("; ");
        }
        text.push_str(&format!(
            "{} (a {}<...>) needed by {}",
            m.symbol, m.template, m.object
        ));
    }
    if missing.len() > max {
        text.push_str(&format!("; ... ({} more)", missing.len() - max));
    }
    text
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            #[cfg(feature = "build")]
            Error::Build(e) => write!(f, "{e}"),
            Error::SourceTree { .. }
            | Error::HipVersion { .. }
            | Error::Generator { .. }
            | Error::ProgramNotFound { .. }
            | Error::Spawn { .. }
            | Error::Codegen { .. }
            | Error::Io { .. } => self.write_preset(f),
            Error::NoBlobs { .. }
            | Error::FileName { .. }
            | Error::Parse { .. }
            | Error::UnresolvedCalls { .. }
            | Error::LeftOutCalls { .. } => self.write_generated(f),
            Error::ForeignBuild { .. } | Error::InterceptLog { .. } | Error::Intercept { .. } => {
                self.write_intercepted(f)
            }
            Error::DispatcherBuild { .. }
            | Error::Object { .. }
            | Error::UndefinedSpecialisations { .. } => self.write_compiled(f),
            Error::Condition { .. }
            | Error::UnknownMacro { .. }
            | Error::BadRules { .. }
            | Error::NewerRules { .. }
            | Error::NoSuchFunction { .. }
            | Error::Decide { .. } => self.write_rules(f),
        }
    }
}

impl Error {
    /// The message of an error of finding CK, running its generator or
    /// another program, or accessing a file.
    fn write_preset(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::SourceTree { path, why } => {
                write!(f, "cannot use CK tree '{}': {why}", shown(path))
            }
            Error::HipVersion { version } => write!(
                f,
                "hip version '{}' is not MAJOR.MINOR.PATCH (as `hipconfig --version` prints it, \
                 e.g. 6.4.43482)",
                escape(version)
            ),
            Error::Generator { path } => write!(
                f,
                "code generator '{}' does not exist; give the root of a composable_kernel \
                 checkout (or of an aiter checkout with 3rdparty/composable_kernel), or use \
                 generated_dir() with already generated sources",
                shown(path)
            ),
            Error::ProgramNotFound { program, purpose } => write!(
                f,
                "program '{}' (needed to {purpose}) was not found; install it or give its path",
                shown(program)
            ),
            Error::Spawn { program, source } => {
                write!(f, "cannot run '{}': {source}", shown(program))
            }
            Error::Codegen {
                command,
                status,
                stderr_tail,
            } => write!(
                f,
                "the CK code generator failed ({status}): {}; its stderr ends: {}",
                escape(command),
                stderr_tail.replace(['\n', '\r'], " | ")
            ),
            Error::Io { path, source } => write!(f, "cannot access '{}': {source}", shown(path)),
            _ => unreachable!("not an error of the preset"),
        }
    }

    /// The message of an error of reading what the generator wrote and
    /// what the dispatchers call.
    fn write_generated(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoBlobs { dir } => write!(
                f,
                "no CK FMHA blobs in '{}': check the directions, the filter and the directory",
                shown(dir)
            ),
            Error::FileName { path, why } => {
                write!(f, "generated file '{}': {why}", shown(path))
            }
            Error::Parse { file, line, why } => match file {
                Some(p) => write!(f, "{}:{line}: {why}", shown(p)),
                None => write!(f, "line {line}: {why}"),
            },
            Error::UnresolvedCalls { calls } => write_unresolved_calls(f, calls),
            Error::LeftOutCalls { kinds } => write_left_out_calls(f, kinds),
            _ => unreachable!("not an error of the generated files"),
        }
    }

    /// The message of an error of intercepting a foreign build.
    fn write_intercepted(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ForeignBuild {
                command,
                status,
                log,
                tail,
            } => write!(
                f,
                "intercepted build failed ({status}): {}; log '{}' ends: {}",
                escape(command),
                shown(log),
                escape(tail)
            ),
            Error::InterceptLog { log, line, why } => {
                write!(f, "interception log '{}' line {line}: {why}", shown(log))
            }
            Error::Intercept { why } => write!(f, "interception: {why}"),
            _ => unreachable!("not an error of the interception"),
        }
    }

    /// The message of an error of compiling and reading CK's dispatchers,
    /// stubs and glue.
    fn write_compiled(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::DispatcherBuild { compiler, why } => write!(
                f,
                "compiling CK's dispatchers, lazy stubs and glue with '{}' failed: {}",
                shown(compiler),
                escape(why)
            ),
            Error::Object { path, why } => {
                write!(f, "cannot read object '{}': {}", shown(path), escape(why))
            }
            Error::UndefinedSpecialisations { output, missing } => write!(
                f,
                "'{}': {} blob specialisation{} the compiled dispatchers call {} no blob \
                 stub: {} (the blobs are missing from the generated output, or the \
                 dispatchers call kinds that were not recorded)",
                shown(output),
                missing.len(),
                if missing.len() == 1 { "" } else { "s" },
                if missing.len() == 1 { "has" } else { "have" },
                escape(&describe(missing, 20))
            ),
            _ => unreachable!("not an error of the dispatcher build"),
        }
    }

    /// The message of an error of evaluating `#if` conditions or the
    /// dispatch rules.
    fn write_rules(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Condition { why } => f.write_str(why),
            Error::UnknownMacro { name, why } => write!(
                f,
                "the condition depends on macro '{name}', which is not known at build time ({why})"
            ),
            Error::BadRules { why } => write!(f, "dispatch rules: {why}"),
            Error::NewerRules { found } => write!(
                f,
                "dispatch rules of format {found} (this build reads {} and older)",
                crate::rules::RULES_FORMAT
            ),
            Error::NoSuchFunction {
                file,
                function,
                known,
            } => write!(
                f,
                "{file}: {function}: no such function (the file has: {})",
                known.join(", ")
            ),
            Error::Decide {
                file,
                function,
                why,
            } => write!(f, "{file}: {function}: {why}"),
            _ => unreachable!("not an error of the rules"),
        }
    }
}

/// The message of [`Error::UnresolvedCalls`]: the count and the first 20
/// calls.
fn write_unresolved_calls(
    f: &mut fmt::Formatter<'_>,
    calls: &[(PathBuf, usize, String)],
) -> fmt::Result {
    write!(
        f,
        "{} dispatcher call{} of blob specialisations no recorded blob defines",
        calls.len(),
        if calls.len() == 1 { "" } else { "s" }
    )?;
    for (file, line, call) in calls.iter().take(20) {
        write!(f, "; {}:{line}: {}", shown(file), escape(call))?;
    }
    if calls.len() > 20 {
        write!(f, "; ... ({} more)", calls.len() - 20)?;
    }
    Ok(())
}

/// The message of [`Error::LeftOutCalls`]: one example call per kind.
fn write_left_out_calls(
    f: &mut fmt::Formatter<'_>,
    kinds: &[(String, usize, (PathBuf, usize, String))],
) -> fmt::Result {
    write!(
        f,
        "the dispatchers call kernels that only blobs kept by none of the requested \
             targets define, so the library would miss them at the user's call; request \
             the targets those blobs are for, or generate the dispatchers for the \
             requested targets only:"
    )?;
    for (kind, n, (file, line, call)) in kinds {
        write!(
            f,
            " {n} call{} of kind {kind}, e.g. {}:{line}: {};",
            if *n == 1 { "" } else { "s" },
            shown(file),
            escape(call)
        )?;
    }
    Ok(())
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            #[cfg(feature = "build")]
            Error::Build(e) => Some(e),
            Error::Spawn { source, .. } | Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(feature = "build")]
impl From<ck_jit_build::Error> for Error {
    fn from(e: ck_jit_build::Error) -> Error {
        Error::Build(e)
    }
}

#[cfg(feature = "build")]
impl From<ck_jit_build::manifest::ManifestError> for Error {
    fn from(e: ck_jit_build::manifest::ManifestError) -> Error {
        Error::Build(ck_jit_build::Error::Manifest(e))
    }
}

/// `Error::Io` for `path`.
pub(crate) fn io_err(path: &Path) -> impl Fn(io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A command line, quoted for a shell, for messages.
pub(crate) fn quoted<S: AsRef<std::ffi::OsStr>>(argv: &[S]) -> String {
    argv.iter()
        .map(|a| {
            let a = a.as_ref().to_string_lossy();
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
            {
                a.into_owned()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The last `max` bytes of `text`, from a line start where possible.
/// The last `lines` non-empty lines of `text` (at most `max` bytes), each
/// with control characters escaped, joined by ` | ` into one line: where a
/// Python traceback says what went wrong.
pub(crate) fn last_lines(text: &str, lines: usize, max: usize) -> String {
    let mut kept: Vec<String> = text
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(lines)
        .map(|l| {
            l.trim_end()
                .chars()
                .map(|c| {
                    if c.is_control() {
                        c.escape_debug().collect()
                    } else {
                        c.to_string()
                    }
                })
                .collect::<String>()
        })
        .collect();
    kept.reverse();
    let joined = kept.join(" | ");
    tail(&joined, max)
}

pub(crate) fn tail(text: &str, max: usize) -> String {
    let text = text.trim_end();
    if text.len() <= max {
        return text.to_string();
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let cut = &text[start..];
    match cut.find('\n') {
        Some(i) if i + 1 < cut.len() => cut[i + 1..].to_string(),
        _ => cut.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lowercase_single_lines() {
        let errors = [
            Error::Generator {
                path: "/ck/example/ck_tile/01_fmha/generate.py".into(),
            },
            Error::ProgramNotFound {
                program: "python3".into(),
                purpose: "run CK's code generator",
            },
            Error::Parse {
                file: None,
                line: 7,
                why: "expected '>'".into(),
            },
            Error::Codegen {
                command: "python3 generate.py".into(),
                status: "exit status: 1".into(),
                stderr_tail: "Traceback\nValueError".into(),
            },
        ];
        for e in errors {
            let m = e.to_string();
            assert!(!m.contains('\n'), "{m}");
            assert!(!m.starts_with(|c: char| c.is_uppercase()), "{m}");
        }
    }

    #[test]
    #[cfg(feature = "build")]
    fn the_escape_without_build_is_the_manifest_s() {
        let long = "x".repeat(250);
        for s in ["plain", "a\nb\t'c\"", "\u{1b}[31m", long.as_str()] {
            assert_eq!(escape_without_build(s), ck_jit_build::manifest::escape(s));
        }
    }

    #[test]
    fn quoting_and_tails() {
        assert_eq!(
            quoted(&["python3", "a b", "it's"]),
            "python3 'a b' 'it'\\''s'"
        );
        assert_eq!(tail("a\nb\nc\n", 100), "a\nb\nc");
        assert_eq!(tail("line one\nline two\nline three", 12), "line three");
    }

    #[test]
    fn descriptions_are_cut_with_a_count() {
        let m = |i: usize| Missing {
            object: format!("a{i}.o"),
            template: "fmha_fwd_".into(),
            symbol: format!("_Z9fmha_fwd_I{i}"),
        };
        let all: Vec<Missing> = (0..5).map(m).collect();
        let text = describe(&all, 2);
        assert!(
            text.contains("_Z9fmha_fwd_I0 (a fmha_fwd_<...>) needed by a0.o"),
            "{text}"
        );
        assert!(text.ends_with("... (3 more)"), "{text}");
    }

    fn io_error(what: &str) -> io::Error {
        io::Error::other(what.to_string())
    }

    /// A dispatcher call: file, line, specialisation.
    fn call(i: usize) -> (PathBuf, usize, String) {
        (
            PathBuf::from(format!("gen/fmha_bwd_api{i}.cpp")),
            100 + i,
            format!("fmha_bwd_dot_do_o_<trait_{i}>(s, a)"),
        )
    }

    fn missing(i: usize) -> Missing {
        Missing {
            object: format!("libdisp.a(d{i}.o)"),
            template: "fmha_fwd_".into(),
            symbol: format!("_Z9fmha_fwd_I{i}Ev"),
        }
    }

    /// A value of each error of finding CK, running its generator or
    /// another program, or accessing a file, with texts that need escaping,
    /// and its message as it was before the messages were split by area.
    fn preset_messages() -> Vec<(Error, String)> {
        vec![
            (
                Error::SourceTree {
                    path: "/ck\n'tree'".into(),
                    why: "holds no example/ck_tile/01_fmha".into(),
                },
                "cannot use CK tree '/ck\\n\\'tree\\'': holds no \
                 example/ck_tile/01_fmha"
                    .into(),
            ),
            (
                Error::HipVersion {
                    version: "6.4\t\"beta\"".into(),
                },
                "hip version '6.4\\t\\\"beta\\\"' is not MAJOR.MINOR.PATCH (as \
                 `hipconfig --version` prints it, e.g. 6.4.43482)"
                    .into(),
            ),
            (
                Error::Generator {
                    path: "/ck/example/ck_tile/01_fmha/generate.py".into(),
                },
                "code generator '/ck/example/ck_tile/01_fmha/generate.py' does \
                 not exist; give the root of a composable_kernel checkout (or of \
                 an aiter checkout with 3rdparty/composable_kernel), or use \
                 generated_dir() with already generated sources"
                    .into(),
            ),
            (
                Error::ProgramNotFound {
                    program: "python3".into(),
                    purpose: "run CK's code generator",
                },
                "program 'python3' (needed to run CK's code generator) was not \
                 found; install it or give its path"
                    .into(),
            ),
            (
                Error::Spawn {
                    program: "/usr/bin/hipcc".into(),
                    source: io_error("permission denied (os error 13)"),
                },
                "cannot run '/usr/bin/hipcc': permission denied (os error 13)".into(),
            ),
            (
                Error::Codegen {
                    command: "python3 generate.py --api 'fwd'".into(),
                    status: "exit status: 1".into(),
                    stderr_tail: "Traceback\r\nValueError: bad".into(),
                },
                "the CK code generator failed (exit status: 1): python3 \
                 generate.py --api \\'fwd\\'; its stderr ends: Traceback |  | \
                 ValueError: bad"
                    .into(),
            ),
            (
                Error::Io {
                    path: "/out/blobs".into(),
                    source: io_error("no space left on device"),
                },
                "cannot access '/out/blobs': no space left on device".into(),
            ),
        ]
    }

    /// A value of each error of reading what the generator wrote (two of a
    /// parse error: with and without its file), and its message as it was
    /// before the messages were split by area.
    fn generated_messages() -> Vec<(Error, String)> {
        vec![
            (
                Error::NoBlobs {
                    dir: "/out/gen".into(),
                },
                "no CK FMHA blobs in '/out/gen': check the directions, the filter \
                 and the directory"
                    .into(),
            ),
            (
                Error::FileName {
                    path: "/out/gen/\u{1b}x.cpp".into(),
                    why: "not UTF-8".into(),
                },
                "generated file '/out/gen/\\u{1b}x.cpp': not UTF-8".into(),
            ),
            (
                Error::Parse {
                    file: Some("/out/gen/a.cpp".into()),
                    line: 12,
                    why: "expected '>'".into(),
                },
                "/out/gen/a.cpp:12: expected '>'".into(),
            ),
            (
                Error::Parse {
                    file: None,
                    line: 7,
                    why: "expected ';'".into(),
                },
                "line 7: expected ';'".into(),
            ),
        ]
    }

    /// A value of each error of dispatcher calls no recorded or kept blob
    /// defines (two where the message depends on a count), and its message
    /// as it was before the messages were split by area.
    fn dispatcher_call_messages() -> Vec<(Error, String)> {
        vec![
            (
                Error::UnresolvedCalls {
                    calls: vec![call(1)],
                },
                "1 dispatcher call of blob specialisations no recorded blob \
                 defines; gen/fmha_bwd_api1.cpp:101: \
                 fmha_bwd_dot_do_o_<trait_1>(s, a)"
                    .into(),
            ),
            (
                Error::UnresolvedCalls {
                    calls: (0..22).map(call).collect(),
                },
                "22 dispatcher calls of blob specialisations no recorded blob \
                 defines; gen/fmha_bwd_api0.cpp:100: \
                 fmha_bwd_dot_do_o_<trait_0>(s, a); gen/fmha_bwd_api1.cpp:101: \
                 fmha_bwd_dot_do_o_<trait_1>(s, a); gen/fmha_bwd_api2.cpp:102: \
                 fmha_bwd_dot_do_o_<trait_2>(s, a); gen/fmha_bwd_api3.cpp:103: \
                 fmha_bwd_dot_do_o_<trait_3>(s, a); gen/fmha_bwd_api4.cpp:104: \
                 fmha_bwd_dot_do_o_<trait_4>(s, a); gen/fmha_bwd_api5.cpp:105: \
                 fmha_bwd_dot_do_o_<trait_5>(s, a); gen/fmha_bwd_api6.cpp:106: \
                 fmha_bwd_dot_do_o_<trait_6>(s, a); gen/fmha_bwd_api7.cpp:107: \
                 fmha_bwd_dot_do_o_<trait_7>(s, a); gen/fmha_bwd_api8.cpp:108: \
                 fmha_bwd_dot_do_o_<trait_8>(s, a); gen/fmha_bwd_api9.cpp:109: \
                 fmha_bwd_dot_do_o_<trait_9>(s, a); gen/fmha_bwd_api10.cpp:110: \
                 fmha_bwd_dot_do_o_<trait_10>(s, a); gen/fmha_bwd_api11.cpp:111: \
                 fmha_bwd_dot_do_o_<trait_11>(s, a); gen/fmha_bwd_api12.cpp:112: \
                 fmha_bwd_dot_do_o_<trait_12>(s, a); gen/fmha_bwd_api13.cpp:113: \
                 fmha_bwd_dot_do_o_<trait_13>(s, a); gen/fmha_bwd_api14.cpp:114: \
                 fmha_bwd_dot_do_o_<trait_14>(s, a); gen/fmha_bwd_api15.cpp:115: \
                 fmha_bwd_dot_do_o_<trait_15>(s, a); gen/fmha_bwd_api16.cpp:116: \
                 fmha_bwd_dot_do_o_<trait_16>(s, a); gen/fmha_bwd_api17.cpp:117: \
                 fmha_bwd_dot_do_o_<trait_17>(s, a); gen/fmha_bwd_api18.cpp:118: \
                 fmha_bwd_dot_do_o_<trait_18>(s, a); gen/fmha_bwd_api19.cpp:119: \
                 fmha_bwd_dot_do_o_<trait_19>(s, a); ... (2 more)"
                    .into(),
            ),
            (
                Error::LeftOutCalls {
                    kinds: vec![("fwd".into(), 1, call(3)), ("bwd".into(), 4, call(5))],
                },
                "the dispatchers call kernels that only blobs kept by none of the \
                 requested targets define, so the library would miss them at the \
                 user's call; request the targets those blobs are for, or \
                 generate the dispatchers for the requested targets only: 1 call \
                 of kind fwd, e.g. gen/fmha_bwd_api3.cpp:103: \
                 fmha_bwd_dot_do_o_<trait_3>(s, a); 4 calls of kind bwd, e.g. \
                 gen/fmha_bwd_api5.cpp:105: fmha_bwd_dot_do_o_<trait_5>(s, a);"
                    .into(),
            ),
        ]
    }

    /// A value of each error of intercepting a foreign build, and its
    /// message as it was before the messages were split by area.
    fn interception_messages() -> Vec<(Error, String)> {
        vec![
            (
                Error::ForeignBuild {
                    command: "make -j8\n".into(),
                    status: "signal: 9".into(),
                    log: "/tmp/build.log".into(),
                    tail: "error: out of memory\nKilled".into(),
                },
                "intercepted build failed (signal: 9): make -j8\\n; log \
                 '/tmp/build.log' ends: error: out of memory\\nKilled"
                    .into(),
            ),
            (
                Error::InterceptLog {
                    log: "/tmp/intercept.log".into(),
                    line: 3,
                    why: "not one invocation".into(),
                },
                "interception log '/tmp/intercept.log' line 3: not one invocation".into(),
            ),
            (
                Error::Intercept {
                    why: "two commands for blob x".into(),
                },
                "interception: two commands for blob x".into(),
            ),
        ]
    }

    /// A value of each error of compiling and reading CK's dispatchers,
    /// stubs and glue (two where the message depends on a count), and its
    /// message as it was before the messages were split by area.
    fn dispatcher_build_messages() -> Vec<(Error, String)> {
        vec![
            (
                Error::DispatcherBuild {
                    compiler: "/opt/rocm/bin/hipcc".into(),
                    why: "exit status 1\nundefined reference".into(),
                },
                "compiling CK's dispatchers, lazy stubs and glue with \
                 '/opt/rocm/bin/hipcc' failed: exit status 1\\nundefined reference"
                    .into(),
            ),
            (
                Error::Object {
                    path: "/out/d.o".into(),
                    why: "not an ELF\tfile".into(),
                },
                "cannot read object '/out/d.o': not an ELF\\tfile".into(),
            ),
            (
                Error::UndefinedSpecialisations {
                    output: "/out/libdisp.a".into(),
                    missing: vec![missing(0)],
                },
                "'/out/libdisp.a': 1 blob specialisation the compiled dispatchers \
                 call has no blob stub: _Z9fmha_fwd_I0Ev (a fmha_fwd_<...>) \
                 needed by libdisp.a(d0.o) (the blobs are missing from the \
                 generated output, or the dispatchers call kinds that were not \
                 recorded)"
                    .into(),
            ),
            (
                Error::UndefinedSpecialisations {
                    output: "/out/libdisp.so".into(),
                    missing: (0..23).map(missing).collect(),
                },
                "'/out/libdisp.so': 23 blob specialisations the compiled \
                 dispatchers call have no blob stub: _Z9fmha_fwd_I0Ev (a \
                 fmha_fwd_<...>) needed by libdisp.a(d0.o); _Z9fmha_fwd_I1Ev (a \
                 fmha_fwd_<...>) needed by libdisp.a(d1.o); _Z9fmha_fwd_I2Ev (a \
                 fmha_fwd_<...>) needed by libdisp.a(d2.o); _Z9fmha_fwd... (the \
                 blobs are missing from the generated output, or the dispatchers \
                 call kinds that were not recorded)"
                    .into(),
            ),
        ]
    }

    /// A value of each error of evaluating `#if` conditions or the dispatch
    /// rules, and its message as it was before the messages were split by
    /// area.
    fn rules_messages() -> Vec<(Error, String)> {
        vec![
            (
                Error::Condition {
                    why: "division by zero in #if".into(),
                },
                "division by zero in #if".into(),
            ),
            (
                Error::UnknownMacro {
                    name: "CK_TILE_FMHA_FWD_FAST_EXP2".into(),
                    why: "set by the compiler command line".into(),
                },
                "the condition depends on macro 'CK_TILE_FMHA_FWD_FAST_EXP2', \
                 which is not known at build time (set by the compiler command \
                 line)"
                    .into(),
            ),
            (
                Error::BadRules {
                    why: "expected value at line 1 column 1".into(),
                },
                "dispatch rules: expected value at line 1 column 1".into(),
            ),
            (
                Error::NewerRules { found: 999 },
                format!(
                    "dispatch rules of format 999 (this build reads {} and older)",
                    crate::rules::RULES_FORMAT
                ),
            ),
            (
                Error::NoSuchFunction {
                    file: "fmha_fwd_api.cpp".into(),
                    function: "fmha_fwd_x".into(),
                    known: vec!["fmha_fwd".into(), "fmha_fwd_splitkv".into()],
                },
                "fmha_fwd_api.cpp: fmha_fwd_x: no such function (the file has: \
                 fmha_fwd, fmha_fwd_splitkv)"
                    .into(),
            ),
            (
                Error::Decide {
                    file: "fmha_bwd_api.cpp".into(),
                    function: "fmha_bwd".into(),
                    why: "'t.hdim_q' is not given".into(),
                },
                "fmha_bwd_api.cpp: fmha_bwd: 't.hdim_q' is not given".into(),
            ),
        ]
    }

    #[test]
    fn every_variant_s_message_is_as_it_was() {
        let all = [
            preset_messages(),
            generated_messages(),
            dispatcher_call_messages(),
            interception_messages(),
            dispatcher_build_messages(),
            rules_messages(),
        ];
        for (e, want) in all.iter().flatten() {
            assert_eq!(e.to_string(), *want, "{e:?}");
        }
        #[cfg(feature = "build")]
        assert_eq!(
            Error::Build(ck_jit_build::Error::Env {
                var: "CK_JIT_X",
                why: "is not set",
            })
            .to_string(),
            "environment variable CK_JIT_X is not set"
        );
    }
}
