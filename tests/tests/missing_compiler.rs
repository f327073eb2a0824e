//! A compiler that cannot be found never has another compiler's object
//! served in its place: outside offline mode the blob is an error naming
//! the missing compiler, as it is with an empty cache; offline (a
//! deployment that ships the cache), the object built from the same inputs
//! is loaded and the log names the compiler that built it.
//!
//! One test in its own binary: it sets a `CK_JIT_<PROGRAM>` variable.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::sync::Mutex;

use ck_jit_tests::{c_manifest, call, test_config, Tree};

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");

/// The program the manifest names; found only through its variable.
const PROGRAM: &str = "ck-jit-missing-test-cc";
const VAR: &str = "CK_JIT_CK_JIT_MISSING_TEST_CC";

static LINES: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        LINES.lock().unwrap().push(record.args().to_string());
    }
    fn flush(&self) {}
}

#[test]
fn a_missing_compiler_is_an_error_with_a_warm_cache_unless_offline() {
    assert_eq!(ck_jit_rt::config::compiler_var(PROGRAM), VAR);
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Info);
    let t = Tree::new("missing-compiler");
    t.c_blob("a", 2, 1);
    let cc = t.write("bin/cc-here", &format!("#!/bin/sh\nexec {MOCK} \"$@\"\n"));
    fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).unwrap();
    let m = c_manifest(&t.dir, &["a"], PROGRAM, &[]);

    std::env::set_var(VAR, &cc);
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("a", None).unwrap(), 5), 11);
    drop(rt);

    // A typo in the variable: the cache holds the object the real compiler
    // built from the same inputs, and it is not loaded.
    std::env::set_var(VAR, "/opt/typo/clang++");
    ck_jit_rt::__internals::forget_identities();
    let rt = t.runtime(&m, test_config());
    let e = match rt.resolve("a", None) {
        Ok(_) => panic!("another compiler's object was loaded for a missing compiler"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("/opt/typo/clang++") && e.contains(VAR), "{e}");
    assert!(rt.cached("a").unwrap().is_none());
    drop(rt);

    // Offline, the same object is loaded, and the log says who built it.
    ck_jit_rt::__internals::forget_identities();
    let mut offline = test_config();
    offline.offline = true;
    let rt = t.runtime(&m, offline);
    assert_eq!(call(rt.resolve("a", None).unwrap(), 5), 11);
    let lines = LINES.lock().unwrap().join("\n");
    let said = lines
        .lines()
        .find(|l| l.contains("is missing"))
        .unwrap_or_else(|| panic!("no line names the compiler that built it:\n{lines}"));
    assert!(
        said.contains(PROGRAM) && said.contains(cc.to_str().unwrap()) && said.contains("offline"),
        "{said}"
    );
}
