//! Hostile names and paths, and arguments full of shell metacharacters.
//!
//! A blob name or source path may be `../`, absolute, hold `/`, NUL, a line
//! break, `$(...)`, backticks, `;`, bytes that are not UTF-8, or be 4,096
//! characters long. Each is refused with the offending entry named (at
//! build time by the file discovery, at run time by `Manifest::from_json`)
//! or mapped to one safe file name inside the cache (`safe_component`).
//! None may create a file outside the cache directory, reach a shell, or
//! panic. Launchers and compiler arguments are passed to `execve` as they
//! are, and the command printed in an error pastes back into a shell as
//! the same argv.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::process::{Command, Stdio};

use ck_jit_build::manifest::{escape, Blob, Manifest, ManifestError, SymbolSpec};
use ck_jit_build::{BlobGroup, Build};
use ck_jit_rt::__internals::safe_component;
use ck_jit_rt::maintenance::Cache;
use ck_jit_rt::{Error, Runtime};
use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");
const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");
const ARGV_REC: &str = env!("CARGO_BIN_EXE_argv-rec");

/// Blob names no manifest may contain; `{mark}` becomes a file that must
/// never be created.
fn hostile_names(mark: &Path) -> Vec<String> {
    let mark = mark.display();
    vec![
        "../escape".into(),
        "../../escape".into(),
        "/abs/escape".into(),
        "a/b".into(),
        "a\0b".into(),
        "a\nb".into(),
        "a\rb".into(),
        "a\tb".into(),
        format!("$(touch {mark})"),
        format!("`touch {mark}`"),
        format!("a;touch {mark}"),
        format!("a|touch {mark}"),
        format!("a&&touch {mark}"),
        "a b".into(),
        "*".into(),
        "~".into(),
        ".".into(),
        "..".into(),
        String::new(),
        "-rf".into(),
        ".hidden".into(),
        "it's".into(),
        "é".into(),
        "\u{202e}fdp.exe".into(),
        "x".repeat(4096),
    ]
}

/// Every file under `dir`, recursively (symlinks not followed).
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A one-blob manifest whose blob is `name` with `source`, as JSON text
/// (what a hand edit produces; nothing here validates it).
fn manifest_json(name: &str, source: &str) -> String {
    serde_json::json!({
        "format": 1,
        "name": "hostile",
        "root": "/r",
        "groups": [{
            "name": "g",
            "compiler": "cc",
            "args": ["-fPIC", "-shared", "{src}", "-o", "{out}"],
            "symbol": {"exact": "{name}"},
        }],
        "blobs": [{"name": name, "source": source, "group": 0}],
    })
    .to_string()
}

#[test]
fn hostile_blob_names_in_a_manifest_are_refused_naming_the_entry() {
    let t = Tree::new("names-refused");
    for name in hostile_names(&t.path("pwned")) {
        let err = Manifest::from_json(&manifest_json(&name, "k/a.c")).unwrap_err();
        let ManifestError::BadName { name: shown, why } = &err else {
            panic!("{name:?}: expected BadName, got {err:?}");
        };
        assert_eq!(*shown, escape(&name), "{name:?}");
        assert!(!why.is_empty());
        let text = err.to_string();
        assert!(text.contains(&escape(&name)), "{text}");
        assert!(!text.contains(['\n', '\r', '\0']), "{text:?}");

        // The same through a manifest file, as the runtime reads one.
        let path = t.write("m.json", &manifest_json(&name, "k/a.c"));
        let err = Runtime::from_file(&path).unwrap_err();
        assert!(matches!(err, Error::Manifest { .. }), "{err}");
        let text = err.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains(&escape(&name)),
            "{text}"
        );
    }
    assert!(!t.path("pwned").exists());
}

#[test]
fn source_paths_leaving_the_root_are_refused_naming_the_blob_and_path() {
    for source in [
        "../../etc/passwd",
        "/etc/passwd",
        "kernels/../../../etc/passwd",
        "kernels/./k.c",
        "kernels//k.c",
        "kernels/k.c/",
        "..",
        "",
        "kernels\\..\\..\\etc\\passwd",
        "k\0.c",
        "k\n.c",
    ] {
        let err = Manifest::from_json(&manifest_json("k", source)).unwrap_err();
        let ManifestError::BadSource {
            blob,
            source: shown,
            ..
        } = &err
        else {
            panic!("{source:?}: expected BadSource, got {err:?}");
        };
        assert_eq!(blob, "k");
        assert_eq!(*shown, escape(source));
        let text = err.to_string();
        assert!(
            text.contains("blob 'k'") && text.contains(&escape(source)),
            "{text}"
        );
    }
}

#[test]
fn manifests_that_are_not_utf8_are_refused() {
    let t = Tree::new("non-utf8-manifest");
    // Raw bytes that are not UTF-8 inside a name.
    let text = manifest_json("bad_NAME", "k/a.c");
    let at = text.find("_NAME").unwrap();
    let mut bytes = text.into_bytes();
    bytes[at] = 0xff;
    let path = t.path("raw.json");
    fs::write(&path, &bytes).unwrap();
    let err = Runtime::from_file(&path).unwrap_err();
    assert!(matches!(err, Error::Manifest { .. }), "{err}");
    assert!(err.to_string().contains("UTF-8"), "{err}");
    // A lone surrogate escape cannot become a Rust string.
    let text = manifest_json("bad_NAME", "k/a.c").replace("bad_NAME", "bad\\udc80");
    assert!(matches!(
        Manifest::from_json(&text),
        Err(ManifestError::Parse(_))
    ));
}

#[test]
fn hostile_names_map_to_one_safe_file_name_inside_the_cache() {
    let t = Tree::new("safe-component");
    let cache = Cache::open(&t.cache_dir(), false).unwrap();
    let root = fs::canonicalize(t.cache_dir()).unwrap();
    let entries = cache.derived_paths("plain", "0123456789abcdef")[0]
        .parent()
        .unwrap()
        .to_path_buf();
    let mut seen = HashSet::new();
    for name in hostile_names(&t.path("pwned")) {
        let s = safe_component(&name);
        assert!(!s.is_empty() && s.len() <= 100, "{name:?} -> {s:?}");
        assert!(
            s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b)),
            "{name:?} -> {s:?}"
        );
        assert!(!s.starts_with(['.', '-']), "{name:?} -> {s:?}");
        assert!(seen.insert(s.clone()), "{name:?} collides: {s:?}");
        // Exactly one normal component under the entries directory.
        let paths = cache.derived_paths(&name, "0123456789abcdef");
        assert_eq!(paths[0].parent(), Some(entries.as_path()), "{name:?}");
        for p in paths {
            assert!(
                p.starts_with(&root) || p.starts_with(t.cache_dir()),
                "{p:?}"
            );
            let rel = p.strip_prefix(t.cache_dir()).unwrap_or(&p);
            assert!(
                rel.components().all(|c| matches!(c, Component::Normal(_))),
                "{name:?}: {p:?}"
            );
            assert!(
                p.file_name().unwrap().len() <= 255,
                "{name:?}: file name too long"
            );
        }
    }
    // Plain names stay readable.
    assert_eq!(safe_component("fmha_fwd_d128_bf16"), "fmha_fwd_d128_bf16");
}

/// A manifest built in code, bypassing `from_json`'s checks, so the runtime's
/// own defences are what is tested: every blob compiles `kernels/k.c`, the
/// name reaches the compiler's argv and the cache paths.
fn unchecked_manifest(t: &Tree, names: &[String], source: &str) -> Manifest {
    let log = format!("--mock-log={}", t.compile_log().display());
    let mut m = c_manifest(&t.dir, &["k"], MOCK, &[&log, "--mock-note={name}"]);
    m.blobs = names
        .iter()
        .map(|n| Blob {
            name: n.clone(),
            source: source.into(),
            group: 0,
            symbol: Some(SymbolSpec::Exact("k".into())),
            meta: BTreeMap::new(),
        })
        .collect();
    m.blobs.sort_by(|a, b| a.name.cmp(&b.name));
    m
}

#[test]
fn hostile_names_compile_into_the_cache_and_nowhere_else_without_a_shell() {
    let t = Tree::new("names-compile");
    t.c_blob("k", 5, 1);
    let mark = t.path("pwned");
    let outside = [
        t.dir.parent().unwrap().join("escape"),
        t.dir.parent().unwrap().parent().unwrap().join("escape"),
        PathBuf::from("/abs/escape"),
    ];
    let existed: Vec<bool> = outside.iter().map(|p| p.exists()).collect();
    let names = hostile_names(&mark);
    let rt = t.runtime(
        &unchecked_manifest(&t, &names, "kernels/k.c"),
        test_config(),
    );
    for name in &names {
        match rt.resolve(name, None) {
            Ok(p) => assert_eq!(call(p, 2), 11, "{name:?}"),
            // A NUL cannot be in an argv: the compile is refused, no panic.
            Err(e) => assert!(name.contains('\0'), "{name:?}: {e}"),
        }
    }
    // The name reached the compiler as one literal argument.
    let log = fs::read_to_string(t.compile_log()).unwrap();
    for name in names.iter().filter(|n| !n.contains('\0')) {
        let arg = format!("\x1f--mock-note={name}\x1f");
        assert!(log.contains(&arg), "{name:?} not passed literally");
    }
    // Nothing was created anywhere but the cache (and the compile log).
    assert!(!mark.exists(), "a shell ran");
    for (p, before) in outside.iter().zip(existed) {
        assert_eq!(p.exists(), before, "{} was created", p.display());
    }
    for f in files_under(&t.dir) {
        assert!(
            f.starts_with(t.cache_dir())
                || f.starts_with(t.path("kernels"))
                || f == t.compile_log(),
            "file outside the cache: {}",
            f.display()
        );
    }
    // One entry per compiled name, each under the cache's entries.
    let cache = rt.cache().unwrap();
    let entries = cache.entries();
    assert_eq!(entries.len(), names.len() - 1);
    for e in entries {
        assert!(names.contains(&e.record.blob));
        assert!(e
            .object
            .starts_with(&cache.derived_paths(&e.record.blob, &e.record.prekey)[0]));
    }
}

#[test]
fn sources_outside_the_root_are_refused_even_from_an_unchecked_manifest() {
    let t = Tree::new("unchecked-source");
    let outside = Tree::new("unchecked-source-outside");
    let evil = outside.write("evil.c", "int k(int x) { return x; }\n");
    let rel = format!(
        "../{}/evil.c",
        outside.dir.file_name().unwrap().to_string_lossy()
    );
    for source in [
        rel.as_str(),
        evil.to_str().unwrap(),
        "../../../../../etc/passwd",
    ] {
        let m = unchecked_manifest(&t, &["k".into()], source);
        let err = t.runtime(&m, test_config()).resolve("k", None).unwrap_err();
        assert!(
            matches!(err, Error::SourceOutsideRoot { .. }),
            "{source}: {err}"
        );
    }
    assert_eq!(t.compiles(), 0);
}

/// A tree with the file `kernels/<name>` and the error its discovery gives.
fn discover(name: &OsStr) -> ck_jit_build::Error {
    let t = Tree::new("discover");
    let mut rel = PathBuf::from("kernels");
    rel.push(name);
    let p = t.dir.join(&rel);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(&p, "int k(int x) { return x; }\n").unwrap();
    let out = t.path("out");
    fs::create_dir_all(&out).unwrap();
    Build::new()
        .root(&t.dir)
        .out_dir(&out)
        .cargo_metadata(false)
        .group(BlobGroup::new("k").glob("kernels/**/*.c"))
        .try_manifest()
        .expect_err("a hostile file name became a blob")
}

#[test]
fn hostile_file_names_are_refused_at_build_time_naming_the_file() {
    let long = format!("{}.c", "x".repeat(253));
    for name in [
        "$(touch /tmp/pwned).c", // directories "$(touch ", "tmp", then "pwned).c"
        "`touch pwned`.c",
        "a;touch pwned.c",
        "a|b.c",
        "a&&b.c",
        "a\nb.c",
        "a\rb.c",
        "a\tb.c",
        "a b.c",
        "-rf.c",
        "*.c",
        "it's.c",
        "a\\b.c",
        "é.c",
        long.as_str(),
    ] {
        let err = discover(OsStr::new(name));
        let text = err.to_string();
        let ck_jit_build::Error::BlobName { path, .. } = &err else {
            panic!("{name:?}: expected BlobName, got {err:?}");
        };
        assert_eq!(*path, escape(&format!("kernels/{name}")), "{name:?}");
        assert!(text.contains(path.as_str()), "{text}");
        assert!(!text.contains(['\n', '\r']), "{text:?}");
    }
    // Bytes that are not UTF-8: named by the path, never made lossy.
    let err = discover(OsStr::from_bytes(b"bad\xffname.c"));
    let ck_jit_build::Error::NonUtf8Path { path, .. } = &err else {
        panic!("expected NonUtf8Path, got {err:?}");
    };
    assert!(path
        .as_os_str()
        .as_bytes()
        .ends_with(b"kernels/bad\xffname.c"));
    assert!(err.to_string().contains("bad\\xFFname.c"), "{err}");
}

#[test]
fn compiler_arguments_with_shell_metacharacters_are_passed_literally() {
    let t = Tree::new("args-literal");
    t.c_blob("k", 3, 0);
    let mark = t.path("pwned");
    let m = mark.display();
    let hostile = [
        format!("-DX1=$(touch {m})"),
        format!("-DX2=`touch {m}`"),
        format!("-DX3=a;touch {m}"),
        format!("-DX4=a|touch {m}&&touch {m}"),
        "-DX5=*".to_string(),
        "-DX6=a b".to_string(),
        "-DX7=$HOME".to_string(),
        "-DX8={a,b}".to_string(),
    ];
    let log = format!("--mock-log={}", t.compile_log().display());
    let mut extra: Vec<&str> = vec![&log];
    extra.extend(hostile.iter().map(String::as_str));
    let manifest = c_manifest(&t.dir, &["k"], MOCK, &extra);
    let rt = t.runtime(&manifest, test_config());
    assert_eq!(call(rt.resolve("k", None).unwrap(), 4), 12);
    let logged = fs::read_to_string(t.compile_log()).unwrap();
    let argv: Vec<&str> = logged.trim_end_matches('\n').split('\x1f').collect();
    for a in &hostile {
        assert!(
            argv.contains(&a.as_str()),
            "{a:?} not passed as one argument: {argv:?}"
        );
    }
    assert!(!mark.exists(), "a shell ran");
}

#[test]
fn a_failed_compile_prints_a_command_that_pastes_back_as_the_same_argv() {
    let t = Tree::new("paste");
    t.c_blob("k", 3, 0);
    let mark = t.path("pwned");
    let m = mark.display();
    let hostile = [
        format!("-DX1=$(touch {m})"),
        format!("-DX2=`touch {m}`"),
        format!("-DX3=a;touch {m}"),
        "-DX4=it's".to_string(),
        "-DX5=a\nb".to_string(),
        "-DX6=$HOME".to_string(),
        "-DX7={a,b}".to_string(),
        "-DX8=~".to_string(),
        "#comment".to_string(),
        "-DX9=!!".to_string(),
    ];
    let log = format!("--mock-log={}", t.compile_log().display());
    let mut extra: Vec<&str> = vec![&log, "--mock-mode=fail"];
    extra.extend(hostile.iter().map(String::as_str));
    let manifest = c_manifest(&t.dir, &["k"], MOCK, &extra);
    let err = t
        .runtime(&manifest, test_config())
        .resolve("k", None)
        .unwrap_err();
    let Error::CompileFailed { command, .. } = &err else {
        panic!("{err}");
    };
    let first = fs::read_to_string(t.compile_log()).unwrap();
    // bash, where there is one: it expands more than sh (braces, `!`).
    let shell = if Path::new("/bin/bash").exists() {
        "/bin/bash"
    } else {
        "/bin/sh"
    };
    let status = Command::new(shell)
        .arg("-c")
        .arg(command)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1), "{command}");
    let both = fs::read_to_string(t.compile_log()).unwrap();
    // The same argv but for the directory the compile writes into: the
    // one it ran with is gone, the pasted command makes a fresh one.
    let scratch_free = |log: &str| {
        let out = log
            .split('\x1f')
            .skip_while(|a| *a != "-o")
            .nth(1)
            .unwrap_or_else(|| panic!("no -o in {log:?}"));
        let dir = out.rsplit_once('/').unwrap().0;
        log.replace(dir, "{scratch}")
    };
    let again = both.strip_prefix(first.as_str()).expect("the log grew");
    assert_eq!(
        scratch_free(again),
        scratch_free(&first),
        "{shell} saw another argv in: {command}"
    );
    assert_ne!(again, first, "the removed directory was named again");
    assert!(!mark.exists(), "the printed command ran a shell command");
}

#[test]
fn launcher_from_the_environment_is_passed_literally() {
    let t = Tree::new("launcher-literal");
    t.c_blob("k", 2, 1);
    let mark = t.path("pwned");
    let rec = t.path("launcher.jsonl");
    let m = mark.display();
    // CK_JIT_LAUNCHER is split on whitespace, and nothing else.
    let words = [
        format!("--rec-log={}", rec.display()),
        "$(touch".to_string(),
        format!("{m})"),
        "`touch".to_string(),
        format!("{m}`"),
        ";touch".to_string(),
        format!("{m}"),
        format!("|touch{m}&&touch{m}"),
        "{a,b}".to_string(),
        "'quoted'".to_string(),
        "*".to_string(),
    ];
    let launcher = format!("{ARGV_REC} {}", words.join(" \t "));
    let m = c_manifest(&t.dir, &["k"], MOCK, &[]);
    let manifest = t.write_manifest(&m);
    let out = Command::new(PROBE)
        .arg(&manifest)
        .arg(t.cache_dir())
        .arg("k")
        .arg("5")
        .env("CK_JIT_LAUNCHER", &launcher)
        .env_remove("CK_JIT_ROOT")
        .env_remove("CK_JIT_MANIFEST")
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_SHARED_CACHE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("\"value\":11"), "{stdout}");
    let recorded = fs::read_to_string(&rec).unwrap();
    let line = recorded.lines().next().expect("the launcher ran");
    let argv: Vec<String> = serde_json::from_str(line).unwrap();
    assert_eq!(argv[..words.len()], words, "launcher words changed");
    assert_eq!(argv[words.len()], MOCK, "the compiler follows the launcher");
    assert!(argv.iter().any(|a| a == "-c"), "{argv:?}");
    assert!(!mark.exists(), "a shell ran");
}

#[test]
fn placeholder_text_in_a_path_is_not_substituted_again() {
    // A directory literally named `{name}`: the blob's source is
    // `kernels/{name}/k.c`, and `kernels/k/k.c` is another file that a
    // second substitution pass would compile in its place (under the key
    // of the first one's bytes).
    let t = Tree::new("brace-path");
    t.write("kernels/{name}/k.c", "int k(int x) { return x * 2; }\n");
    t.write("kernels/k/k.c", "int k(int x) { return x * 1000; }\n");
    let mut m = c_manifest(&t.dir, &["k"], MOCK, &[]);
    m.blobs[0].source = "kernels/{name}/k.c".into();
    m.validate().unwrap();
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("k", None).unwrap(), 3), 6);

    // A tree root under a directory named `{out}`.
    let t = Tree::new("brace-root");
    let root = t.path("{out}");
    fs::create_dir_all(root.join("kernels")).unwrap();
    fs::write(root.join("kernels/k.c"), "int k(int x) { return x + 7; }\n").unwrap();
    let m = c_manifest(&root, &["k"], MOCK, &[]);
    let rt = Runtime::new(m, "test")
        .with_config(test_config())
        .with_root(&root)
        .with_cache_dir(t.cache_dir());
    assert_eq!(call(rt.resolve("k", None).unwrap(), 3), 10);
}
