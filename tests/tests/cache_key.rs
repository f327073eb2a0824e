//! The cache key covers every input: source bytes, headers read (from the
//! depfile), argv, compiler identity, launcher. Changing one alone is a
//! miss; touching a file without changing it is a hit; a deleted header is
//! a miss, not an error.

use std::fs;
use std::path::Path;

use ck_jit_rt::{Error, Outcome, Runtime};
use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");

fn outcome(rt: &Runtime, blob: &str) -> Outcome {
    rt.ensure(blob, false).expect("ensure").2
}

/// A fresh runtime (new process state) over the same tree and cache.
fn fresh(t: &Tree, names: &[&str], extra: &[&str]) -> Runtime {
    // A new process has checked no header yet.
    ck_jit_rt::__internals::forget_checks();
    same_process(t, names, extra)
}

/// Another runtime over the same tree and cache that shares this
/// process's recent header checks.
fn same_process(t: &Tree, names: &[&str], extra: &[&str]) -> Runtime {
    let log = format!("--mock-log={}", t.compile_log().display());
    let mut args = vec![log.as_str()];
    args.extend_from_slice(extra);
    t.runtime(&c_manifest(&t.dir, names, MOCK, &args), test_config())
}

fn touch(p: &Path) {
    let f = fs::File::options().write(true).open(p).unwrap();
    f.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5))
        .unwrap();
}

#[test]
fn header_edit_is_a_miss_touch_is_a_hit_delete_is_a_miss() {
    let t = Tree::new("header");
    t.write("include/k.h", "#define K 3\n");
    t.write(
        "kernels/hk.c",
        "#include \"../include/k.h\"\nint hk(int x) { return x * K; }\n",
    );
    let rt = fresh(&t, &["hk"], &[]);
    assert_eq!(outcome(&rt, "hk"), Outcome::Compiled);
    assert_eq!(outcome(&rt, "hk"), Outcome::Cached);

    touch(&t.path("include/k.h"));
    assert_eq!(
        outcome(&fresh(&t, &["hk"], &[]), "hk"),
        Outcome::Cached,
        "touched header must hit"
    );

    t.write("include/k.h", "#define K 5\n");
    let rt = fresh(&t, &["hk"], &[]);
    assert_eq!(
        outcome(&rt, "hk"),
        Outcome::Compiled,
        "edited header must miss"
    );
    assert_eq!(call(rt.resolve("hk", None).unwrap(), 2), 10);

    // Header deleted and its include removed: a miss, not an error.
    fs::remove_file(t.path("include/k.h")).unwrap();
    t.write("kernels/hk.c", "int hk(int x) { return x * 7; }\n");
    let rt = fresh(&t, &["hk"], &[]);
    assert_eq!(outcome(&rt, "hk"), Outcome::Compiled);
    assert_eq!(call(rt.resolve("hk", None).unwrap(), 2), 14);
    assert_eq!(t.compiles(), 3);
}

#[test]
fn header_deleted_but_still_included_is_a_miss_then_a_compile_error() {
    let t = Tree::new("header-gone");
    t.write("include/g.h", "#define G 3\n");
    t.write(
        "kernels/g.c",
        "#include \"../include/g.h\"\nint g(int x) { return x * G; }\n",
    );
    assert_eq!(outcome(&fresh(&t, &["g"], &[]), "g"), Outcome::Compiled);
    fs::remove_file(t.path("include/g.h")).unwrap();
    let err = fresh(&t, &["g"], &[]).ensure("g", false).unwrap_err();
    assert!(
        matches!(err, ck_jit_rt::Error::CompileFailed { .. }),
        "{err}"
    );
}

#[test]
fn source_argv_launcher_and_compiler_each_change_the_key() {
    let t = Tree::new("key");
    t.c_blob("k", 2, 1);
    assert_eq!(outcome(&fresh(&t, &["k"], &[]), "k"), Outcome::Compiled);
    assert_eq!(outcome(&fresh(&t, &["k"], &[]), "k"), Outcome::Cached);

    // Touching the source without changing it: hit.
    touch(&t.path("kernels/k.c"));
    assert_eq!(outcome(&fresh(&t, &["k"], &[]), "k"), Outcome::Cached);

    // Source bytes.
    t.c_blob("k", 2, 2);
    assert_eq!(outcome(&fresh(&t, &["k"], &[]), "k"), Outcome::Compiled);

    // Argv.
    assert_eq!(
        outcome(&fresh(&t, &["k"], &["-DX=1"]), "k"),
        Outcome::Compiled
    );
    assert_eq!(
        outcome(&fresh(&t, &["k"], &["-DX=1"]), "k"),
        Outcome::Cached
    );

    // Launcher (env is a launcher that just runs its arguments).
    let mut c = test_config();
    c.launcher = vec!["env".into()];
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log]);
    let rt = t.runtime(&m, c);
    assert_eq!(outcome(&rt, "k"), Outcome::Compiled);

    // Compiler identity: another path with the same behaviour.
    let other = t.path("bin/other-cc");
    fs::create_dir_all(other.parent().unwrap()).unwrap();
    fs::copy(MOCK, &other).unwrap();
    let m = c_manifest(&t.dir, &["k"], other.to_str().unwrap(), &[&log]);
    assert_eq!(
        outcome(&t.runtime(&m, test_config()), "k"),
        Outcome::Compiled
    );
    assert_eq!(t.compiles(), 5);
}

/// A compiler script whose `--version` prints `version.txt` and logs the
/// call to `version-calls.txt`.
fn versioned_compiler(t: &Tree) -> std::path::PathBuf {
    let script = t.write(
        "bin/cc-versioned",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> {}; cat {}; exit 0; fi\n\
             exec {MOCK} \"$@\"\n",
            t.path("version-calls.txt").display(),
            t.path("version.txt").display()
        ),
    );
    t.write("version.txt", "cc 1.0\n");
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    script
}

/// Replaces the compiler script with itself plus `tail`, as an installer
/// does (a new file renamed over the old one; writing the executable in
/// place can race with other tests' forks).
fn replace_in_place(t: &Tree, script: &Path, tail: &str) {
    use std::os::unix::fs::PermissionsExt;
    let text = fs::read_to_string(script).unwrap();
    let new = t.write("bin/cc-versioned.new", &format!("{text}{tail}"));
    fs::set_permissions(&new, fs::Permissions::from_mode(0o755)).unwrap();
    fs::rename(&new, script).unwrap();
}

fn version_calls(t: &Tree) -> usize {
    fs::read_to_string(t.path("version-calls.txt"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A compiler upgraded in place while a process runs is seen before that
/// process's next compile (a stat of its files), not at its restart: the
/// next blob compiles under the new identity, and another runtime of the
/// same process keys the first blob anew.
#[test]
fn a_compiler_upgraded_in_place_is_seen_before_the_next_compile() {
    let t = Tree::new("upgrade-in-process");
    t.c_blob("v", 1, 1);
    t.c_blob("w", 2, 1);
    let script = versioned_compiler(&t);
    let m = c_manifest(&t.dir, &["v", "w"], script.to_str().unwrap(), &[]);
    ck_jit_rt::__internals::forget_identities();
    let rt = t.runtime(&m, test_config());
    assert_eq!(outcome(&rt, "v"), Outcome::Compiled);
    let before = rt.plan("v").unwrap();
    assert_eq!(version_calls(&t), 1);

    t.write("version.txt", "cc 2.0\n");
    replace_in_place(&t, &script, "# 2.0\n");
    assert_eq!(outcome(&rt, "w"), Outcome::Compiled);
    assert_eq!(version_calls(&t), 2, "the upgraded compiler was not asked");
    let after = rt.plan("v").unwrap();
    assert_ne!(before.prekey(), after.prekey());
    // Another runtime of this process: v is a miss under the new compiler.
    assert_eq!(
        outcome(&t.runtime(&m, test_config()), "v"),
        Outcome::Compiled
    );
    assert_eq!(version_calls(&t), 2);
}

/// `CK_JIT_DROP_FLAGS` adapts a recorded command to the compiler at hand:
/// a flag sequence this compiler refuses (`-mllvm -amdgpu-...`, which a
/// foreign build recorded for another clang) is taken out wherever it
/// occurs, and the key is that of the command that runs.
#[test]
fn drop_flags_take_a_refused_flag_sequence_out_and_are_part_of_the_key() {
    let t = Tree::new("drop-flags");
    t.c_blob("d", 3, 0);
    let refused = ["-mllvm", "-amdgpu-function-calls=false"];
    let m = c_manifest(&t.dir, &["d"], "cc", &refused);
    let with = |drop: &[&[&str]]| {
        let mut c = test_config();
        c.drop_flags = drop
            .iter()
            .map(|seq| seq.iter().map(|w| w.to_string()).collect())
            .collect();
        t.runtime(&m, c)
    };
    // As recorded: this compiler refuses the flags.
    match with(&[]).resolve("d", None) {
        Err(Error::CompileFailed { .. }) => {}
        Err(e) => panic!("expected a failed compile, got {e}"),
        Ok(_) => panic!("cc took -mllvm"),
    }
    let rt = with(&[&refused, &["-not-there"]]);
    let plan = rt.plan("d").unwrap();
    assert!(
        !plan
            .group
            .args
            .iter()
            .any(|a| a.starts_with("-mllvm") || a.contains("amdgpu")),
        "{:?}",
        plan.group.args
    );
    assert_eq!(outcome(&rt, "d"), Outcome::Compiled);
    assert_eq!(call(rt.resolve("d", None).unwrap(), 2), 6);
    assert_eq!(outcome(&with(&[&refused]), "d"), Outcome::Cached);
    // A sequence goes only where all its words stand together: `-mllvm`
    // asked for alone goes alone, a value that is not there changes nothing.
    let rt = with(&[&["-mllvm"], &["-amdgpu-function-calls=true"]]);
    let args = rt.plan("d").unwrap().group.args.clone();
    assert!(!args.iter().any(|a| a == "-mllvm"), "{args:?}");
    assert!(
        args.iter().any(|a| a == "-amdgpu-function-calls=false"),
        "{args:?}"
    );
}

/// `CK_JIT_EXTRA_FLAGS` reaches the compiler before the source and is part
/// of the key: the same blob with and without it are two entries, each
/// found again.
#[test]
fn extra_flags_reach_the_compiler_and_are_part_of_the_key() {
    let t = Tree::new("extra-flags");
    t.write(
        "kernels/e.c",
        "#ifndef MUL\n#define MUL 2\n#endif\nint e(int x) { return x * MUL; }\n",
    );
    let m = c_manifest(&t.dir, &["e"], "cc", &[]);
    let with = |flags: &[&str]| {
        let mut c = test_config();
        c.extra_flags = flags.iter().map(|f| f.to_string()).collect();
        t.runtime(&m, c)
    };
    let rt = with(&[]);
    assert_eq!(outcome(&rt, "e"), Outcome::Compiled);
    assert_eq!(call(rt.resolve("e", None).unwrap(), 3), 6);

    let rt = with(&["-DMUL=5", "-g"]);
    let plan = rt.plan("e").unwrap();
    let args = &plan.group.args;
    let src = args.iter().position(|a| a.contains("{src}")).unwrap();
    assert_eq!(args[src - 2..src], ["-DMUL=5", "-g"], "{args:?}");
    assert_eq!(outcome(&rt, "e"), Outcome::Compiled);
    assert_eq!(call(rt.resolve("e", None).unwrap(), 3), 15);

    assert_eq!(outcome(&with(&[]), "e"), Outcome::Cached);
    assert_eq!(outcome(&with(&["-DMUL=5", "-g"]), "e"), Outcome::Cached);
}

#[test]
fn compiler_version_output_is_part_of_the_key() {
    // With `command`, every process asks the compiler.
    let t = Tree::new("version");
    t.c_blob("v", 1, 1);
    let script = versioned_compiler(&t);
    let m = c_manifest(&t.dir, &["v"], script.to_str().unwrap(), &[]);
    let config = || {
        let mut c = test_config();
        c.compiler_check = ck_jit_rt::CompilerCheck::Command;
        c
    };
    assert_eq!(outcome(&t.runtime(&m, config()), "v"), Outcome::Compiled);
    ck_jit_rt::__internals::forget_identities();
    assert_eq!(outcome(&t.runtime(&m, config()), "v"), Outcome::Cached);
    t.write("version.txt", "cc 1.1\n");
    ck_jit_rt::__internals::forget_identities();
    assert_eq!(outcome(&t.runtime(&m, config()), "v"), Outcome::Compiled);
    assert_eq!(version_calls(&t), 3);
}

/// The default policy (`content`): a later process with a cache hit starts
/// no compiler, as its identity was kept in the cache directory; the same
/// compiler file replaced (new contents) is asked again, and its new
/// version is a new key. `string:` never asks.
#[test]
fn a_cache_hit_in_a_new_process_does_not_run_the_compiler() {
    let t = Tree::new("version-kept");
    t.c_blob("v", 1, 1);
    let script = versioned_compiler(&t);
    let m = c_manifest(&t.dir, &["v"], script.to_str().unwrap(), &[]);
    assert_eq!(
        outcome(&t.runtime(&m, test_config()), "v"),
        Outcome::Compiled
    );
    assert_eq!(version_calls(&t), 1);
    for _ in 0..3 {
        ck_jit_rt::__internals::forget_identities();
        assert_eq!(outcome(&t.runtime(&m, test_config()), "v"), Outcome::Cached);
    }
    assert_eq!(version_calls(&t), 1, "no --version for a kept identity");
    assert!(t.cache_dir().join("compilers").read_dir().unwrap().count() >= 1);

    // The compiler upgraded in place: a different file, asked again.
    t.write("version.txt", "cc 2.0\n");
    // Replaced as an installer does (a new file renamed over the old one;
    // writing the executable in place can race with other tests' forks).
    replace_in_place(&t, &script, "# 2.0\n");
    ck_jit_rt::__internals::forget_identities();
    assert_eq!(
        outcome(&t.runtime(&m, test_config()), "v"),
        Outcome::Compiled
    );
    assert_eq!(version_calls(&t), 2);

    // string:<text> is the identity; the compiler is not asked.
    let string = |s: &str| {
        let mut c = test_config();
        c.compiler_check = ck_jit_rt::CompilerCheck::parse(Some(s));
        c
    };
    ck_jit_rt::__internals::forget_identities();
    assert_eq!(
        outcome(&t.runtime(&m, string("string:cc-2")), "v"),
        Outcome::Compiled
    );
    ck_jit_rt::__internals::forget_identities();
    assert_eq!(
        outcome(&t.runtime(&m, string("string:cc-2")), "v"),
        Outcome::Cached
    );
    assert_eq!(version_calls(&t), 2);

    // A value that is no policy: a blob not yet compiled gets an error
    // naming the accepted ones.
    ck_jit_rt::__internals::forget_identities();
    let t = Tree::new("version-bad-policy");
    t.c_blob("w", 1, 1);
    let script = versioned_compiler(&t);
    let m = c_manifest(&t.dir, &["w"], script.to_str().unwrap(), &[]);
    let e = match t.runtime(&m, string("sometimes")).ensure("w", false) {
        Ok(_) => panic!("an invalid CK_JIT_COMPILER_CHECK compiled"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("CK_JIT_COMPILER_CHECK='sometimes'") && e.contains("content (the default)"),
        "{e}"
    );
}

/// `hipcc` is a wrapper: its identity follows it to the clang beside it,
/// so replacing that clang makes the next process ask again although
/// `hipcc` itself did not change. What a wrapper prints on standard error
/// when no GPU driver is loaded (Debian's `hipcc` prints a traceback) is
/// not part of the key.
#[test]
fn hipcc_is_followed_to_its_clang_and_its_stderr_noise_is_not_in_the_key() {
    use std::os::unix::fs::PermissionsExt;
    let t = Tree::new("version-wrapper");
    t.c_blob("h", 1, 1);
    let exe = |rel: &str, text: &str| {
        let tmp = t.write(&format!("{rel}.tmp"), text);
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).unwrap();
        fs::rename(&tmp, t.path(rel)).unwrap();
        t.path(rel)
    };
    let hipcc = exe(
        "bin/hipcc",
        &format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> {calls}; \
             [ -e {noise} ] && echo \"Traceback: no /sys/class/kfd\" >&2; cat {version}; exit 0; fi\n\
             exec {MOCK} \"$@\"\n",
            calls = t.path("version-calls.txt").display(),
            noise = t.path("no-gpu").display(),
            version = t.path("version.txt").display(),
        ),
    );
    exe("bin/clang++", "#!/bin/sh\n# clang 15\n");
    t.write("version.txt", "HIP version: 5.2\nclang version 15\n");
    let m = c_manifest(&t.dir, &["h"], hipcc.to_str().unwrap(), &[]);
    let with = |policy: &str| {
        let mut c = test_config();
        c.compiler_check = ck_jit_rt::CompilerCheck::parse(Some(policy));
        c
    };
    let next = |policy: &str| {
        ck_jit_rt::__internals::forget_identities();
        outcome(&t.runtime(&m, with(policy)), "h")
    };
    assert_eq!(next("mtime"), Outcome::Compiled);
    assert_eq!(next("mtime"), Outcome::Cached);
    assert_eq!(version_calls(&t), 1);

    // No GPU driver: the same installation, the same key (`command` keys
    // on the version text alone, so only the text can tell them apart).
    t.write("no-gpu", "");
    assert_eq!(next("command"), Outcome::Compiled);
    fs::remove_file(t.path("no-gpu")).unwrap();
    assert_eq!(next("command"), Outcome::Cached);
    assert_eq!(version_calls(&t), 3);

    // The clang behind the wrapper replaced: asked again, and a new key
    // although it prints the same text; then a new version is a new key.
    exe("bin/clang++", "#!/bin/sh\n# clang 15.0.7\n");
    assert_eq!(next("mtime"), Outcome::Compiled);
    assert_eq!(version_calls(&t), 4);
    assert_eq!(next("mtime"), Outcome::Cached);
    assert_eq!(version_calls(&t), 4);
    t.write("version.txt", "HIP version: 5.2\nclang version 16\n");
    exe("bin/clang++", "#!/bin/sh\n# clang 16\n");
    assert_eq!(next("mtime"), Outcome::Compiled);
    assert_eq!(version_calls(&t), 5);
}

#[test]
fn entry_file_names_carry_the_key() {
    let t = Tree::new("names");
    t.c_blob("n", 1, 0);
    let (e1, _, _) = fresh(&t, &["n"], &[]).ensure("n", false).unwrap();
    t.c_blob("n", 1, 1);
    let (e2, _, _) = fresh(&t, &["n"], &[]).ensure("n", false).unwrap();
    assert_ne!(e1.object, e2.object);
    let stem = e2
        .object
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert_eq!(stem, e2.record.key);
    assert!(
        e1.object.exists(),
        "old entry must stay (never rewritten in place)"
    );
}

#[test]
fn relocated_tree_with_same_contents_hits() {
    let t = Tree::new("relocate");
    t.write("include/r.h", "#define R 4\n");
    t.write(
        "kernels/r.c",
        "#include \"../include/r.h\"\nint r(int x) { return x + R; }\n",
    );
    let m = c_manifest(&t.dir, &["r"], MOCK, &[]);
    assert_eq!(
        outcome(&t.runtime(&m, test_config()), "r"),
        Outcome::Compiled
    );
    let moved = t.path("moved");
    fs::create_dir_all(&moved).unwrap();
    for d in ["include", "kernels"] {
        fs::rename(t.path(d), moved.join(d)).unwrap();
    }
    let rt = t.runtime(&m, test_config()).with_root(&moved);
    assert_eq!(outcome(&rt, "r"), Outcome::Cached);
    assert_eq!(call(rt.resolve("r", None).unwrap(), 1), 5);
}

#[test]
fn header_edited_with_same_size_and_mtime_put_back_is_still_a_miss() {
    // Lookups skip re-hashing a header whose size, mtime, ctime and inode
    // are unchanged; ctime moves on every write and cannot be set back, so
    // an edit that restores size and mtime is still seen.
    let t = Tree::new("same-stat");
    let h = t.write("include/s.h", "#define S 3\n");
    t.write(
        "kernels/s.c",
        "#include \"../include/s.h\"\nint s(int x) { return x * S; }\n",
    );
    assert_eq!(outcome(&fresh(&t, &["s"], &[]), "s"), Outcome::Compiled);
    let mtime = fs::metadata(&h).unwrap().modified().unwrap();
    fs::write(&h, "#define S 4\n").unwrap();
    fs::File::options()
        .write(true)
        .open(&h)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let rt = fresh(&t, &["s"], &[]);
    assert_eq!(outcome(&rt, "s"), Outcome::Compiled);
    assert_eq!(call(rt.resolve("s", None).unwrap(), 2), 8);
}

/// Without the compiler (a deployment that ships the cache, offline), a
/// blob is found among the entries of any compiler identity by reading that blob's
/// entries only: a record of another blob that would block a reader (a
/// FIFO planted under a `.json` name) is never opened, and the cost does
/// not grow with the number of other blobs cached.
#[test]
fn a_lookup_without_the_compiler_reads_only_that_blobs_entries() {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let t = Tree::new("offline-o1");
    t.c_blob("a", 2, 1);
    t.c_blob("b", 3, 1);
    let cc = t.write("bin/cc-here", &format!("#!/bin/sh\nexec {MOCK} \"$@\"\n"));
    fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).unwrap();
    let m = c_manifest(&t.dir, &["a", "b"], cc.to_str().unwrap(), &[]);
    let rt = t.runtime(&m, test_config());
    for b in ["a", "b"] {
        assert_eq!(outcome(&rt, b), Outcome::Compiled);
    }
    drop(rt);
    // The compiler is gone; b's entry directory holds a FIFO record.
    fs::remove_file(&cc).unwrap();
    ck_jit_rt::__internals::forget_identities();
    let b_dir = t.cache_dir().join("v1/b");
    let prekey_dir = fs::read_dir(&b_dir)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let fifo = prekey_dir.join("zzzz.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

    let (tx, rx) = std::sync::mpsc::channel();
    let (dir, m2) = (t.dir.clone(), m.clone());
    let cache = t.cache_dir();
    std::thread::spawn(move || {
        // Offline: a missing compiler is otherwise an error.
        let mut offline = test_config();
        offline.offline = true;
        let rt = Runtime::new(m2, "test")
            .with_root(&dir)
            .with_cache_dir(&cache)
            .with_config(offline);
        let r = rt.resolve("a", None).map(|p| call(p, 5));
        let _ = tx.send(r.map_err(|e| e.to_string()));
    });
    let got = rx.recv_timeout(std::time::Duration::from_secs(60));
    // Unblock a reader, if any, so the thread can end.
    let _ = fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo);
    let got = got.expect("the lookup read another blob's entries (blocked on its FIFO)");
    assert_eq!(got.unwrap(), 11);
}

#[test]
fn a_header_check_is_reused_within_a_second_in_a_process_then_made_again() {
    use ck_jit_rt::maintenance::CHECK_REUSE;
    let t = Tree::new("reuse");
    t.write("include/r.h", "#define R 3\n");
    t.write(
        "kernels/r.c",
        "#include \"../include/r.h\"\nint r(int x) { return x * R; }\n",
    );
    assert_eq!(outcome(&fresh(&t, &["r"], &[]), "r"), Outcome::Compiled);
    // This lookup checks the header...
    let checked = std::time::Instant::now();
    assert_eq!(
        outcome(&same_process(&t, &["r"], &[]), "r"),
        Outcome::Cached
    );
    // ...so, within CHECK_REUSE, a later lookup in the process trusts it
    // without looking (an edit in that second goes unseen here).
    t.write("include/r.h", "#define R 5\n");
    let o = outcome(&same_process(&t, &["r"], &[]), "r");
    if checked.elapsed() < CHECK_REUSE {
        assert_eq!(o, Outcome::Cached, "a check made just now is reused");
    }
    // After the window the header is checked again: the edit is a miss.
    std::thread::sleep(CHECK_REUSE + std::time::Duration::from_millis(50));
    let rt = same_process(&t, &["r"], &[]);
    assert_eq!(
        outcome(&rt, "r"),
        Outcome::Compiled,
        "edited header must miss"
    );
    assert_eq!(call(rt.resolve("r", None).unwrap(), 2), 10);
}

/// Kernels that read the same headers share one header set file; their
/// records name it by digest and carry no header list of their own.
#[test]
fn kernels_with_the_same_headers_share_one_header_set() {
    let t = Tree::new("depsets");
    t.write("include/a.h", "#define A 2\n");
    t.write("include/b.h", "#define B 1\n");
    for k in ["p", "q"] {
        t.write(
            &format!("kernels/{k}.c"),
            &format!(
                "#include \"../include/a.h\"\n#include \"../include/b.h\"\n\
                 int {k}(int x) {{ return x * A + B; }}\n"
            ),
        );
    }
    let rt = fresh(&t, &["p", "q"], &[]);
    let mut digests = Vec::new();
    for k in ["p", "q"] {
        let (e, _, o) = rt.ensure(k, false).unwrap();
        assert_eq!(o, Outcome::Compiled);
        let headers = |n: &str| e.record.deps.iter().any(|d| d.path.ends_with(n));
        assert!(headers("include/a.h") && headers("include/b.h"), "{e:?}");
        let on_disk: serde_json::Value =
            serde_json::from_slice(&fs::read(&e.record_path).unwrap()).unwrap();
        assert!(on_disk.get("deps").is_none(), "{on_disk}");
        assert_eq!(on_disk["depset"], e.record.depset.as_str());
        digests.push(e.record.depset.clone());
    }
    assert_eq!(digests[0], digests[1]);
    let sets: Vec<_> = fs::read_dir(t.cache_dir().join("deps")).unwrap().collect();
    assert_eq!(sets.len(), 1);
    // A new process reads the set back: both hit, with their headers.
    let rt = fresh(&t, &["p", "q"], &[]);
    for k in ["p", "q"] {
        let (e, _, o) = rt.ensure(k, false).unwrap();
        assert_eq!(o, Outcome::Cached);
        assert!(e
            .record
            .deps
            .iter()
            .any(|d| d.path.ends_with("include/a.h")));
    }
    assert_eq!(call(rt.resolve("q", None).unwrap(), 3), 7);
}

/// A record whose header set is missing or damaged is a miss (and the
/// compile writes the set again), never a hit with unchecked headers.
#[test]
fn a_missing_or_damaged_header_set_is_a_miss() {
    let t = Tree::new("depset-gone");
    t.write("include/g.h", "#define G 3\n");
    t.write(
        "kernels/g.c",
        "#include \"../include/g.h\"\nint g(int x) { return x * G; }\n",
    );
    let (e, _, _) = fresh(&t, &["g"], &[]).ensure("g", false).unwrap();
    let set = t
        .cache_dir()
        .join("deps")
        .join(format!("{}.json", e.record.depset));
    let text = fs::read(&set).unwrap();
    fs::remove_file(&set).unwrap();
    // Maintenance still sees the entry (so gc and clean can remove it).
    ck_jit_rt::__internals::forget_checks();
    let cache = ck_jit_rt::maintenance::Cache::open(&t.cache_dir(), false).unwrap();
    assert_eq!(cache.entries().len(), 1);
    assert_eq!(outcome(&fresh(&t, &["g"], &[]), "g"), Outcome::Compiled);
    assert_eq!(fs::read(&set).unwrap(), text, "the set is written again");
    // Same name, other bytes (a list without the header).
    fs::write(&set, b"[]").unwrap();
    assert_eq!(outcome(&fresh(&t, &["g"], &[]), "g"), Outcome::Compiled);
    assert_eq!(t.compiles(), 3);
}

/// Entries of the previous format (header list inside the record) are
/// never found by a lookup, even one planted in the current prekey's
/// directory; maintenance still lists them, so `ck-jit gc` can evict them.
#[test]
fn entries_of_the_previous_cache_format_are_misses_but_still_listed() {
    use ck_jit_rt::maintenance::Cache;
    let t = Tree::new("old-format");
    t.write("include/o.h", "#define O 3\n");
    t.write(
        "kernels/o.c",
        "#include \"../include/o.h\"\nint o(int x) { return x * O; }\n",
    );
    let (e, _, _) = fresh(&t, &["o"], &[]).ensure("o", false).unwrap();
    // Rewrite it as format 1 wrote it: same object, headers inline.
    let mut v: serde_json::Value =
        serde_json::from_slice(&fs::read(&e.record_path).unwrap()).unwrap();
    v["format"] = 1.into();
    v["deps"] = serde_json::to_value(&*e.record.deps).unwrap();
    v.as_object_mut().unwrap().remove("depset");
    v.as_object_mut().unwrap().remove("object_stat");
    fs::write(&e.record_path, serde_json::to_vec(&v).unwrap()).unwrap();
    let cache = Cache::open(&t.cache_dir(), false).unwrap();
    let listed = cache.entries();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].record.format, 1);
    assert_eq!(listed[0].record.deps, e.record.deps);
    assert!(cache.verify(&listed[0]).is_ok());
    assert_eq!(outcome(&fresh(&t, &["o"], &[]), "o"), Outcome::Compiled);
}

/// A compiler upgraded in place whose `--version` prints what the old one
/// printed is still a new key: the compiler's own file is part of it.
#[test]
fn a_compiler_replaced_in_place_with_the_same_version_text_is_a_miss() {
    let t = Tree::new("same-version");
    t.c_blob("v", 1, 1);
    let script = versioned_compiler(&t);
    let m = c_manifest(&t.dir, &["v"], script.to_str().unwrap(), &[]);
    assert_eq!(
        outcome(&t.runtime(&m, test_config()), "v"),
        Outcome::Compiled
    );
    ck_jit_rt::__internals::forget_identities();
    assert_eq!(outcome(&t.runtime(&m, test_config()), "v"), Outcome::Cached);
    replace_in_place(&t, &script, "# rebuilt\n");
    // `mtime`, the earlier default's name, is read as `content`.
    for (check, want) in [("content", Outcome::Compiled), ("mtime", Outcome::Cached)] {
        let mut c = test_config();
        c.compiler_check = ck_jit_rt::CompilerCheck::parse(Some(check));
        ck_jit_rt::__internals::forget_identities();
        assert_eq!(outcome(&t.runtime(&m, c.clone()), "v"), want, "{check}");
        ck_jit_rt::__internals::forget_identities();
        assert_eq!(outcome(&t.runtime(&m, c), "v"), Outcome::Cached, "{check}");
    }
    // The same version text every time: only the file told them apart.
    assert!(fs::read_to_string(t.path("version.txt"))
        .unwrap()
        .contains("cc 1.0"));
}

/// Variables that change what a compiler produces are part of the key:
/// the documented list (`CPATH` here, in a process of its own) and the
/// names `CK_JIT_KEY_ENV` adds.
#[test]
fn compiler_variables_are_part_of_the_key() {
    let t = Tree::new("key-env");
    t.c_blob("e", 2, 1);
    let manifest = t.write_manifest(&c_manifest(&t.dir, &["e"], "cc", &[]));
    let probe = |vars: &[(&str, &str)]| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_ck-jit-probe"));
        c.arg(&manifest).arg(t.cache_dir()).arg("e").arg("3");
        for v in ["CPATH", "CK_JIT_KEY_ENV", "MY_SDK_FLAVOUR"] {
            c.env_remove(v);
        }
        c.envs(vars.iter().copied());
        let out = c.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}");
        assert!(text.contains("\"value\":7"), "{text}");
        text.contains("\"compiles\":1")
    };
    assert!(probe(&[]), "first compile");
    assert!(!probe(&[]), "same environment: a hit");
    let inc = t.path("inc");
    fs::create_dir_all(&inc).unwrap();
    let inc = inc.to_string_lossy().into_owned();
    assert!(probe(&[("CPATH", &inc)]), "CPATH set: a miss");
    assert!(!probe(&[("CPATH", &inc)]), "same CPATH: a hit");
    // Not in the list: no effect until CK_JIT_KEY_ENV names it.
    assert!(!probe(&[("CPATH", &inc), ("MY_SDK_FLAVOUR", "a")]));
    let named = [
        ("CPATH", inc.as_str()),
        ("CK_JIT_KEY_ENV", "MY_SDK_FLAVOUR"),
        ("MY_SDK_FLAVOUR", "b"),
    ];
    assert!(probe(&named), "a named variable set: a miss");
    assert!(!probe(&named));
}
