//! Every failure is an error value with enough to act on, remembered for
//! the process, and never a crash: failing, missing, silent, lying, noisy
//! and hanging compilers; corrupt cache entries; unknown blobs.

use std::fs;

use ck_jit_rt::{Error, Outcome, Runtime};
use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");

fn mocked(t: &Tree, names: &[&str], mode: &str) -> ck_jit_rt::Runtime {
    let log = format!("--mock-log={}", t.compile_log().display());
    let mode = format!("--mock-mode={mode}");
    t.runtime(
        &c_manifest(&t.dir, names, MOCK, &[&log, &mode]),
        test_config(),
    )
}

/// The command a failed compile's error shows can be pasted into a shell
/// after the call returned (its temporary directory long gone): it runs
/// the compiler again and gets the same error, not one about a missing
/// output directory.
#[test]
fn the_failed_command_shown_reruns_to_the_same_error() {
    let t = Tree::new("rerun");
    t.write(
        "kernels/typo.c",
        "int typo(int x) { return x * undeclared_name; }\n",
    );
    let rt = t.runtime(&c_manifest(&t.dir, &["typo"], "cc", &[]), test_config());
    let command = match rt.resolve("typo", None) {
        Err(Error::CompileFailed { command, .. }) => command,
        Err(other) => panic!("expected CompileFailed, got {other}"),
        Ok(_) => panic!("a source with an undeclared name compiled"),
    };
    assert!(command.contains("-MF"), "{command}");
    let rerun = std::process::Command::new("sh")
        .args(["-c", &command])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&rerun.stderr);
    assert!(!rerun.status.success(), "{command}");
    assert!(
        stderr.contains("undeclared_name") && !stderr.contains("No such file or directory"),
        "{command}\n{stderr}"
    );
}

#[test]
fn failing_compile_reports_command_status_stderr_and_log_and_is_remembered() {
    let t = Tree::new("fail");
    t.c_blob("broken", 1, 1);
    let rt = mocked(&t, &["broken"], "fail");
    let err = rt.resolve("broken", None).unwrap_err();
    match &err {
        Error::CompileFailed {
            command,
            status,
            stderr_tail,
            log,
            ..
        } => {
            assert!(
                command.contains(MOCK) && command.contains("broken.c"),
                "{command}"
            );
            assert_eq!(status, "exit status 1");
            assert!(stderr_tail.contains("broken on purpose"), "{stderr_tail}");
            assert!(fs::read_to_string(log)
                .unwrap()
                .contains("broken on purpose"));
        }
        other => panic!("expected CompileFailed, got {other}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("broken") && text.contains("command:"),
        "{text}"
    );
    // Called in a loop: the compiler ran once.
    for _ in 0..5 {
        assert!(rt.resolve("broken", None).is_err());
    }
    assert_eq!(t.compiles(), 1);
    // An explicit reset allows a retry.
    rt.reset("broken");
    assert!(rt.resolve("broken", None).is_err());
    assert_eq!(t.compiles(), 2);
    // So does an edit of the source: a failure is remembered for the
    // inputs it happened on, not for the blob.
    t.write("kernels/broken.c", "int broken(int x) { return x; }\n");
    assert!(rt.resolve("broken", None).is_err());
    assert_eq!(t.compiles(), 3);
    assert!(rt.resolve("broken", None).is_err());
    assert_eq!(t.compiles(), 3);
}

#[test]
fn a_compiler_installed_after_a_failed_call_is_used_by_the_next_call() {
    let t = Tree::new("lateinstall");
    t.c_blob("k", 3, 1);
    let cc = t.path("bin/late-cc");
    let rt = t.runtime(
        &c_manifest(&t.dir, &["k"], &cc.to_string_lossy(), &[]),
        test_config(),
    );
    let err = rt.resolve("k", None).unwrap_err();
    assert!(matches!(err, Error::CompilerNotFound { .. }), "{err}");
    t.write("bin/late-cc", "#!/bin/sh\nexec cc \"$@\"\n");
    fs::set_permissions(&cc, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // No reset, no new runtime: the next call finds it.
    let p = rt.resolve("k", None).expect("compiler installed since");
    assert_eq!(call(p, 5), 16);
}

#[test]
fn a_cache_directory_that_could_not_be_created_is_tried_again() {
    let t = Tree::new("latecache");
    t.c_blob("k", 2, 2);
    // A file where the cache's parent directory should be: ENOTDIR, the
    // kind of failure a full disk or a missing mount also gives.
    t.write("blocked", "not a directory");
    let rt = Runtime::new(c_manifest(&t.dir, &["k"], "cc", &[]), "test")
        .with_config(test_config())
        .with_root(&t.dir)
        .with_cache_dir(t.path("blocked/cache"));
    let err = rt.resolve("k", None).unwrap_err();
    assert!(!err.to_string().is_empty());
    assert!(rt.resolve("k", None).is_err());
    fs::remove_file(t.path("blocked")).unwrap();
    let p = rt.resolve("k", None).expect("the cache can be created now");
    assert_eq!(call(p, 5), 12);
}

#[test]
fn missing_compiler_names_the_program_and_how_to_set_it() {
    let t = Tree::new("nocc");
    t.c_blob("k", 1, 1);
    let m = c_manifest(&t.dir, &["k"], "ck-jit-no-such-cc", &[]);
    let err = t.runtime(&m, test_config()).resolve("k", None).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::CompilerNotFound { .. }), "{text}");
    assert!(text.contains("'ck-jit-no-such-cc'"), "{text}");
    assert!(text.contains("CK_JIT_CK_JIT_NO_SUCH_CC="), "{text}");
    assert!(text.contains("PATH"), "{text}");
}

#[test]
fn compiler_that_writes_nothing_or_garbage_is_a_bad_object() {
    for (mode, why) in [
        ("empty", "wrote no output"),
        ("nonelf", "not an ELF file"),
        ("otherarch", "another architecture"),
        ("truncate", "truncated"),
    ] {
        let t = Tree::new(mode);
        t.c_blob("k", 1, 1);
        let err = mocked(&t, &["k"], mode).resolve("k", None).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::BadObject { .. }), "{mode}: {text}");
        assert!(text.contains(why), "{mode}: {text}");
        // Nothing was published.
        let rt = mocked(&t, &["k"], "");
        let plan = rt.plan("k").unwrap();
        assert!(rt.cached_entry(&plan).unwrap().is_none(), "{mode}");
    }
}

#[test]
fn megabytes_of_stderr_keep_a_bounded_tail_and_the_full_log_on_disk() {
    let t = Tree::new("spew");
    t.c_blob("k", 1, 1);
    let err = mocked(&t, &["k"], "spew=8,fail")
        .resolve("k", None)
        .unwrap_err();
    match err {
        Error::CompileFailed {
            stderr_tail, log, ..
        } => {
            assert!(stderr_tail.len() <= ck_jit_rt::__internals::TAIL_BYTES);
            // The tail is the end of the output: the error after the flood.
            assert!(
                stderr_tail.ends_with("this blob is broken on purpose"),
                "{stderr_tail}"
            );
            assert!(stderr_tail.contains("a very long diagnostic line"));
            assert!(fs::metadata(log).unwrap().len() >= 8 << 20);
        }
        other => panic!("{other}"),
    }
}

#[test]
fn hanging_compiler_is_killed_after_the_timeout() {
    let t = Tree::new("hang");
    t.c_blob("k", 1, 1);
    let mut c = test_config();
    c.compile_timeout = std::time::Duration::from_millis(500);
    let m = c_manifest(&t.dir, &["k"], MOCK, &["--mock-mode=hang"]);
    let start = std::time::Instant::now();
    let err = t.runtime(&m, c).resolve("k", None).unwrap_err();
    let took = start.elapsed();
    assert!(matches!(err, Error::CompileTimeout { .. }), "{err}");
    // Killed at the limit: not before it, and not long after.
    assert!(took >= std::time::Duration::from_millis(500), "{took:?}");
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");
    assert!(err.to_string().contains("CK_JIT_COMPILE_TIMEOUT"));
}

/// Whether process `pid` is gone (or a zombie waiting for a parent that
/// no longer runs code: dead all the same).
fn gone(pid: i32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => true,
    }
}

#[test]
fn killing_a_hung_compiler_also_kills_the_processes_it_started() {
    let t = Tree::new("hang-children");
    t.c_blob("k", 1, 1);
    let pidfile = t.path("grandchild.pid");
    let mode = format!("--mock-mode=spawn-hang={}", pidfile.display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&mode]);
    let mut c = test_config();
    c.compile_timeout = std::time::Duration::from_secs(1);
    let err = t.runtime(&m, c).resolve("k", None).unwrap_err();
    assert!(matches!(err, Error::CompileTimeout { .. }), "{err}");
    let pid: i32 = fs::read_to_string(&pidfile)
        .expect("the compiler started its child")
        .trim()
        .parse()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !gone(pid) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let alive = !gone(pid);
    if alive {
        // Do not leave it behind for the rest of the run.
        // SAFETY: kill(2) on a pid this test's compiler started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(
        !alive,
        "the compiler's child {pid} outlived the timeout kill"
    );
}

#[test]
fn compile_timeout_is_read_from_the_environment_of_a_new_process() {
    let t = Tree::new("timeout-env");
    t.c_blob("k", 1, 1);
    let m = c_manifest(&t.dir, &["k"], MOCK, &["--mock-mode=hang"]);
    let manifest = t.write_manifest(&m);
    let start = std::time::Instant::now();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ck-jit-probe"))
        .arg(&manifest)
        .arg(t.cache_dir())
        .arg("k")
        .arg("1")
        .env("CK_JIT_COMPILE_TIMEOUT", "1")
        .env_remove("CK_JIT_ROOT")
        .env_remove("CK_JIT_LAUNCHER")
        .env_remove("CK_JIT_OFFLINE")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Without the variable the default (an hour) applies: give up long
    // before that, and fail.
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("CK_JIT_COMPILE_TIMEOUT=1 was not applied: still compiling after 30 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut out = String::new();
    std::io::Read::read_to_string(&mut child.stdout.take().unwrap(), &mut out).unwrap();
    assert!(!status.success(), "{out}");
    assert!(
        out.contains("compiler killed after 1 s (CK_JIT_COMPILE_TIMEOUT)"),
        "{out}"
    );
    assert!(start.elapsed() >= std::time::Duration::from_secs(1));
}

#[test]
fn unknown_blob_suggests_close_names() {
    let t = Tree::new("unknown");
    t.c_blob("vadd_f32", 1, 1);
    let rt = mocked(&t, &["vadd_f32"], "");
    let err = rt.resolve("vad_f32", None).unwrap_err();
    assert!(err.to_string().contains("did you mean 'vadd_f32'"), "{err}");
}

#[test]
fn missing_symbol_lists_what_the_object_exports() {
    let t = Tree::new("nosym");
    t.c_blob("k", 1, 1);
    let rt = mocked(&t, &["k"], "");
    let spec = ck_jit_rt::manifest::SymbolSpec::Exact("not_there".into());
    let err = rt.resolve("k", Some(&spec)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::SymbolNotFound { .. }), "{text}");
    assert!(text.contains("exported functions: k"), "{text}");
}

/// A cache hit vouches for its object by identity and reads none of it
/// (the loader maps it): the symbol table is read only when a lookup needs
/// it, so a missing symbol still lists what the object exports, and a
/// prefix still finds its match.
#[test]
fn a_cache_hit_reads_its_symbols_only_when_a_lookup_needs_them() {
    let t = Tree::new("nosym-hit");
    t.c_blob("k", 1, 1);
    mocked(&t, &["k"], "").resolve("k", None).unwrap();
    assert_eq!(t.compiles(), 1);
    let rt = mocked(&t, &["k"], "");
    let exact = ck_jit_rt::manifest::SymbolSpec::Exact("not_there".into());
    let err = rt.resolve("k", Some(&exact)).unwrap_err();
    assert_eq!(t.compiles(), 1, "the second runtime compiled: not a hit");
    let text = err.to_string();
    assert!(matches!(err, Error::SymbolNotFound { .. }), "{text}");
    assert!(text.contains("exported functions: k"), "{text}");
    let prefix = ck_jit_rt::manifest::SymbolSpec::Prefix("k".into());
    assert!(rt.resolve("k", Some(&prefix)).is_ok());
}

/// A symbol the object lacks is looked for again once the source is
/// fixed, within the process: the object the fixed source makes is loaded
/// (the first stays loaded for pointers into it), as the README says a
/// failure lasts until the source changes.
#[test]
fn a_missing_symbol_is_found_once_the_source_is_fixed_in_the_same_process() {
    let t = Tree::new("nosym-fixed");
    t.c_blob("k", 1, 1);
    let rt = mocked(&t, &["k"], "");
    let spec = ck_jit_rt::manifest::SymbolSpec::Exact("k_v2".into());
    let k = rt.resolve("k", None).unwrap();
    assert_eq!(call(k, 4), 5);
    for _ in 0..2 {
        let err = rt.resolve("k", Some(&spec)).unwrap_err();
        assert!(matches!(err, Error::SymbolNotFound { .. }), "{err}");
    }
    assert_eq!(t.compiles(), 1, "the same inputs were compiled again");
    t.write(
        "kernels/k.c",
        "int k(int x) { return x + 1; }\nint k_v2(int x) { return x * 10; }\n",
    );
    let v2 = rt.resolve("k", Some(&spec)).unwrap();
    assert_eq!(call(v2, 4), 40);
    assert_eq!(t.compiles(), 2);
    // The first object's entry point still works.
    assert_eq!(call(k, 4), 5);
}

#[test]
fn blob_deleted_after_build_is_a_clear_error() {
    let t = Tree::new("deleted");
    t.c_blob("k", 1, 1);
    let rt = mocked(&t, &["k"], "");
    fs::remove_file(t.path("kernels/k.c")).unwrap();
    let err = rt.resolve("k", None).unwrap_err();
    assert!(matches!(err, Error::Source { .. }), "{err}");
    assert!(err.to_string().contains("kernels/k.c"), "{err}");
}

#[test]
fn blob_directory_symlinked_outside_the_root_is_refused() {
    // Source directories are resolved once per runtime; a directory that
    // leads out of the tree is still refused, and a symlink that stays
    // inside is followed.
    let t = Tree::new("escape-dir");
    let outside = Tree::new("escape-dir-outside");
    outside.write("k.c", "int k(int x) { return x; }\n");
    std::os::unix::fs::symlink(&outside.dir, t.path("kernels")).unwrap();
    let err = mocked(&t, &["k"], "").resolve("k", None).unwrap_err();
    assert!(matches!(err, Error::SourceOutsideRoot { .. }), "{err}");
    assert_eq!(t.compiles(), 0);
    t.write("real/k.c", "int k(int x) { return x * 5; }\n");
    fs::remove_file(t.path("kernels")).unwrap();
    std::os::unix::fs::symlink(t.path("real"), t.path("kernels")).unwrap();
    assert_eq!(
        call(mocked(&t, &["k"], "").resolve("k", None).unwrap(), 2),
        10
    );
}

#[test]
fn blob_symlinked_outside_the_root_is_refused() {
    let t = Tree::new("escape");
    let outside = Tree::new("escape-outside");
    outside.write("evil.c", "int k(int x) { return x; }\n");
    fs::create_dir_all(t.path("kernels")).unwrap();
    std::os::unix::fs::symlink(outside.path("evil.c"), t.path("kernels/k.c")).unwrap();
    let err = mocked(&t, &["k"], "").resolve("k", None).unwrap_err();
    assert!(matches!(err, Error::SourceOutsideRoot { .. }), "{err}");
    assert_eq!(t.compiles(), 0);
}

#[test]
fn source_changed_during_compile_is_not_stored_under_the_old_key() {
    let t = Tree::new("changing");
    t.c_blob("k", 1, 1);
    // Every compile appends to the source, so no result ever matches the
    // bytes that were planned: nothing may be published.
    let rt = mocked(&t, &["k"], "touch-src");
    let err = rt.ensure("k", false).unwrap_err();
    assert!(matches!(err, Error::SourceChanged { .. }), "{err}");
    let rt = mocked(&t, &["k"], "");
    let plan = rt.plan("k").unwrap();
    assert!(rt.cached_entry(&plan).unwrap().is_none());
    assert!(rt.cache().unwrap().entries().is_empty());
}

fn corrupt_then_rebuild(name: &str, damage: impl Fn(&std::path::Path)) {
    let t = Tree::new(name);
    t.c_blob("k", 3, 0);
    let rt = mocked(&t, &["k"], "");
    let (entry, _, o) = rt.ensure("k", false).unwrap();
    assert_eq!(o, Outcome::Compiled);
    damage(&entry.object);
    let rt = mocked(&t, &["k"], "");
    assert_eq!(call(rt.resolve("k", None).unwrap(), 2), 6, "{name}");
    assert_eq!(t.compiles(), 2, "{name}: exactly one rebuild");
    let bad = fs::read_dir(t.cache_dir().join("bad")).unwrap().count();
    assert!(bad >= 1, "{name}: the bad entry is moved aside");
    assert_eq!(
        mocked(&t, &["k"], "").ensure("k", false).unwrap().2,
        Outcome::Cached
    );
}

#[test]
fn truncated_entry_is_rebuilt_once() {
    corrupt_then_rebuild("truncated", |p| {
        let b = fs::read(p).unwrap();
        fs::write(p, &b[..b.len() / 2]).unwrap();
    });
}

#[test]
fn emptied_entry_is_rebuilt_once() {
    corrupt_then_rebuild("emptied", |p| fs::write(p, b"").unwrap());
}

#[test]
fn byte_flipped_entry_is_rebuilt_once() {
    corrupt_then_rebuild("flipped", |p| {
        let mut b = fs::read(p).unwrap();
        let i = b.len() / 3;
        b[i] ^= 0xff;
        fs::write(p, &b).unwrap();
    });
}

#[test]
fn an_object_replaced_by_another_of_the_same_size_is_rebuilt_once() {
    corrupt_then_rebuild("replaced", |p| {
        let mut b = fs::read(p).unwrap();
        let i = b.len() / 2;
        b[i] ^= 0x01;
        let other = p.with_extension("other");
        fs::write(&other, &b).unwrap();
        let mtime = fs::metadata(p).unwrap().modified().unwrap();
        fs::File::options()
            .write(true)
            .open(&other)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        fs::rename(&other, p).unwrap();
    });
}

#[test]
fn an_object_rewritten_in_place_with_its_size_and_mtime_put_back_is_rebuilt_once() {
    // Only ctime (which cannot be set back) tells this one apart.
    corrupt_then_rebuild("same-stat", |p| {
        let mtime = fs::metadata(p).unwrap().modified().unwrap();
        let mut b = fs::read(p).unwrap();
        let i = b.len() / 2;
        b[i] ^= 0x01;
        let mut f = fs::File::options().write(true).open(p).unwrap();
        std::io::Write::write_all(&mut f, &b).unwrap();
        f.set_modified(mtime).unwrap();
    });
}

/// In a private cache an object whose identity is the one recorded at
/// publish is not hashed; `CK_JIT_VERIFY=full` and a shared cache hash it
/// on every load.
#[test]
fn an_unchanged_object_in_a_private_cache_is_not_hashed_unless_asked() {
    let t = Tree::new("cheap-verify");
    t.c_blob("k", 3, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["k"], MOCK, &[&log]);
    let (_, bytes, o) = t.runtime(&m, test_config()).ensure("k", false).unwrap();
    assert_eq!(o, Outcome::Compiled);
    assert!(bytes.was_hashed());
    let (_, bytes, o) = t.runtime(&m, test_config()).ensure("k", false).unwrap();
    assert_eq!(o, Outcome::Cached);
    assert!(!bytes.was_hashed(), "{bytes:?}");
    let mut full = test_config();
    full.verify_full = true;
    let (_, bytes, _) = t.runtime(&m, full).ensure("k", false).unwrap();
    assert!(bytes.was_hashed());
    let mut shared = test_config();
    shared.shared_cache = true;
    let (_, bytes, _) = t.runtime(&m, shared).ensure("k", false).unwrap();
    assert!(bytes.was_hashed());
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("k", None).unwrap(), 2), 6);
    assert_eq!(t.compiles(), 1);
}

/// The entry points a runtime hands out stay valid for the process: its
/// objects are never closed, not even when the runtime is dropped.
#[test]
fn kernels_stay_loaded_after_their_runtime_is_dropped() {
    let t = Tree::new("kept-loaded");
    t.c_blob("k", 3, 1);
    let rt = mocked(&t, &["k"], "");
    let p = rt.resolve("k", None).unwrap();
    let object = rt.load("k").unwrap().path().to_path_buf();
    drop(rt);
    let path = std::ffi::CString::new(object.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: RTLD_NOLOAD only looks the object up among those loaded.
    let h = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
    assert!(!h.is_null(), "{} was closed", object.display());
    assert_eq!(call(p, 2), 7);
}

/// A file under an object's final name that no record describes (an
/// orphan, or one planted there) is not vouched for by the next publish:
/// it is moved to `bad/` and the new compile's object takes its place.
#[test]
fn a_file_planted_under_the_final_name_is_not_vouched_for() {
    let t = Tree::new("planted");
    t.c_blob("k", 3, 0);
    let m = c_manifest(&t.dir, &["k"], "cc", &[]);
    let (entry, _, o) = t.runtime(&m, test_config()).ensure("k", false).unwrap();
    assert_eq!(o, Outcome::Compiled);
    // Another object, compiled from other code, under the same name; the
    // record gone, as after a compile killed between the two.
    let other = t.write("other.c", "int k(int x) { return -x; }\n");
    let planted = t.path("planted.so");
    let ok = std::process::Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&planted)
        .arg(&other)
        .status()
        .unwrap();
    assert!(ok.success());
    fs::remove_file(&entry.record_path).unwrap();
    fs::remove_file(&entry.object).unwrap();
    fs::copy(&planted, &entry.object).unwrap();

    let rt = t.runtime(&m, test_config());
    let (again, _, o) = rt.ensure("k", false).unwrap();
    assert_eq!(o, Outcome::Compiled);
    let bytes = fs::read(&again.object).unwrap();
    assert_eq!(
        rt.cache().unwrap().verify(&again).as_deref(),
        Ok(&bytes[..]),
        "the record describes the object it sits beside"
    );
    assert_ne!(
        bytes,
        fs::read(&planted).unwrap(),
        "the planted file was replaced"
    );
    assert_eq!(call(rt.resolve("k", None).unwrap(), 2), 6);
    let bad: Vec<_> = fs::read_dir(t.cache_dir().join("bad"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(bad.len(), 1, "{bad:?}");
}

/// In a shared cache, what is loaded is the file that was checked: the
/// object is opened, verified, and loaded through that descriptor.
#[test]
fn a_shared_cache_loads_the_descriptor_it_verified() {
    let t = Tree::new("via-fd");
    t.c_blob("k", 4, 0);
    let m = c_manifest(&t.dir, &["k"], "cc", &[]);
    let mut shared = test_config();
    shared.shared_cache = true;
    for round in 0..2 {
        // Compiled, then a hit (fresh runtime, same cache).
        let rt = t.runtime(&m, shared.clone());
        let p = rt.resolve("k", None).unwrap();
        assert_eq!(call(p, 2), 8);
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        // SAFETY: `p` is a function in a loaded object; dladdr only reads.
        assert_ne!(
            unsafe { libc::dladdr(p as *const libc::c_void, &mut info) },
            0
        );
        // SAFETY: dladdr filled a NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) }.to_string_lossy();
        assert!(name.starts_with("/proc/self/fd/"), "round {round}: {name}");
        let _ = rt;
    }
}

/// A launcher that is not installed is named as the launcher, with the
/// variable that set it, not as a compiler with a variable that would
/// change nothing.
#[test]
fn a_missing_launcher_is_reported_as_the_launcher() {
    let t = Tree::new("nolauncher");
    t.c_blob("k", 1, 1);
    let mut c = test_config();
    c.launcher = vec!["ck-jit-no-such-launcher".into()];
    let err = t
        .runtime(&c_manifest(&t.dir, &["k"], "cc", &[]), c)
        .resolve("k", None)
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::LauncherNotFound { .. }), "{text}");
    assert!(
        text.contains("launcher 'ck-jit-no-such-launcher'") && text.contains("CK_JIT_LAUNCHER"),
        "{text}"
    );
    assert!(!text.contains("CK_JIT_CK_JIT_NO_SUCH_LAUNCHER"), "{text}");
    assert!(!text.contains("compiler '"), "{text}");
}

/// A program using the runtime is told once, on stderr, about a variable
/// it could not read, and goes on with the default it names.
#[test]
fn a_malformed_variable_is_reported_once_and_the_default_used() {
    let t = Tree::new("badvar");
    t.c_blob("k", 2, 0);
    let manifest = t.write_manifest(&c_manifest(&t.dir, &["k"], "cc", &[]));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ck-jit-probe"))
        .arg(&manifest)
        .arg(t.cache_dir())
        .arg("k")
        .arg("4")
        .env("CK_JIT_JOBS", "lots")
        .env("CK_JIT_COMPILER_CHECK", "bogus")
        .env_remove("CK_JIT_MANIFEST")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("\"value\":8"), "{stdout}");
    for said in [
        "CK_JIT_JOBS='lots' is not a positive whole number; using the available cores",
        // Not every compile failing as if the compiler were missing.
        "CK_JIT_COMPILER_CHECK='bogus' is not a policy (content, command or \
         string:<text>); using content",
    ] {
        assert_eq!(stderr.matches(said).count(), 1, "{stderr}");
    }
}
