//! The C ABI with a runtime registered from Rust: a C++ blob including
//! `ck_jit.h` resolves and calls another blob, and every misuse is an
//! error result with a message, never a crash.

use std::ffi::{c_char, c_int, CStr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use ck_jit_capi::{
    ck_jit_last_error, ck_jit_resolve, ck_jit_resolve_symbol, ck_jit_resolve_with,
    ck_jit_set_cache_dir, ck_jit_warmup, register, CkJitFn,
};
use ck_jit_rt::config::Config;
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::Runtime;

const INCLUDE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
const CALLER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/capi/caller.cpp");

fn group(name: &str, compiler: &str, extra: &[&str]) -> Group {
    let mut args: Vec<String> = ["-O1", "-fPIC", "-shared"].map(String::from).to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["{src}", "-o", "{out}"].map(String::from));
    Group {
        name: name.into(),
        compiler: compiler.into(),
        args,
        cwd: None,
        symbol: SymbolSpec::Exact("{name}".into()),
        depfile: true,
        family: None,
        neutral: Default::default(),
    }
}

fn blob(name: &str, source: &str, group: u32) -> Blob {
    Blob {
        name: name.into(),
        source: source.into(),
        group,
        symbol: None,
        meta: Default::default(),
    }
}

/// The tree, with the runtime over it registered for the C ABI, once per
/// test process.
fn tree() -> &'static Path {
    static TREE: OnceLock<PathBuf> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("kernels")).unwrap();
        std::fs::write(
            dir.join("kernels/add_two.c"),
            "int add_two(int x) { return x + 2; }\nint add_ten(int x) { return x + 10; }\n",
        )
        .unwrap();
        std::fs::copy(CALLER, dir.join("kernels/caller.cpp")).unwrap();
        let mut m = Manifest::new("ck_jit_capi_test", dir.to_string_lossy());
        m.groups.push(group("c", "cc", &[]));
        m.groups.push(group(
            "cxx",
            "c++",
            &["-std=c++11", &format!("-I{INCLUDE}")],
        ));
        m.blobs.push(blob("add_two", "kernels/add_two.c", 0));
        m.blobs.push(blob("caller", "kernels/caller.cpp", 1));
        m.finish().unwrap();
        let mut config = Config::from_env();
        config.manifest = None;
        config.offline = false;
        config.launcher = Vec::new();
        let rt = Runtime::new(m, "capi test")
            .with_config(config)
            .with_root(&dir)
            .with_cache_dir(dir.join("cache"));
        register(Box::leak(Box::new(rt))).expect("first registration");
        dir
    })
}

fn last_error() -> Option<String> {
    let p = ck_jit_last_error();
    // SAFETY: NULL or this thread's NUL-terminated message.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn resolve(name: &CStr) -> CkJitFn {
    // SAFETY: a NUL-terminated string.
    unsafe { ck_jit_resolve(name.as_ptr()) }
}

type Caller = unsafe extern "C" fn(
    unsafe extern "C" fn(*const c_char) -> CkJitFn,
    extern "C" fn() -> *const c_char,
    c_int,
) -> c_int;

#[test]
fn a_cpp_blob_resolves_and_calls_another_blob_through_the_c_abi() {
    tree();
    let caller = resolve(c"caller").unwrap_or_else(|| panic!("{:?}", last_error()));
    assert_eq!(last_error(), None);
    // SAFETY: caller.cpp defines `caller` with this signature.
    let caller: Caller = unsafe { std::mem::transmute(caller) };
    // SAFETY: the arguments are the C ABI's own functions.
    let got = unsafe { caller(ck_jit_resolve, ck_jit_last_error, 40) };
    assert_eq!(got, 42, "negative: the step of caller.cpp that failed");
}

#[test]
fn a_resolved_pointer_is_stable_and_callable() {
    tree();
    let first = resolve(c"add_two").unwrap();
    let again = resolve(c"add_two").unwrap();
    assert_eq!(first as usize, again as usize);
    // SAFETY: add_two is `int add_two(int)`.
    let f: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(first) };
    assert_eq!(f(5), 7);
}

#[test]
fn an_unknown_blob_is_null_with_a_message_naming_it() {
    tree();
    assert!(resolve(c"add_too").is_none());
    let why = last_error().unwrap();
    assert!(
        why.starts_with("ck-jit: blob 'add_too' is in no manifest"),
        "the runtime's message, after the library's name: {why}"
    );
    assert!(why.contains("did you mean 'add_two'"), "{why}");
    // The message is per thread.
    let other = std::thread::spawn(last_error).join().unwrap();
    assert_eq!(other, None);
    // And cleared by the next successful call.
    assert!(resolve(c"add_two").is_some());
    assert_eq!(last_error(), None);
}

#[test]
fn null_and_non_utf8_names_are_errors() {
    tree();
    // SAFETY: NULL is allowed.
    assert!(unsafe { ck_jit_resolve(std::ptr::null()) }.is_none());
    assert_eq!(
        last_error().as_deref(),
        Some("ck-jit: the blob name is NULL")
    );
    assert!(resolve(c"add_\xfftwo").is_none());
    assert!(last_error().unwrap().contains("not UTF-8"));
}

#[test]
fn warmup_counts_failures_and_lists_them() {
    tree();
    let names = [c"add_two".as_ptr(), c"nope".as_ptr(), std::ptr::null()];
    // SAFETY: three entries, each NULL or NUL-terminated.
    assert_eq!(unsafe { ck_jit_warmup(names.as_ptr(), names.len()) }, 2);
    let why = last_error().unwrap();
    assert!(
        why.starts_with("ck-jit: 2 of 3 blobs failed to warm up:\n"),
        "{why}"
    );
    assert!(why.contains("'nope'") && why.contains("NULL"), "{why}");
    assert!(
        why.lines().skip(1).all(|l| l.starts_with("ck-jit: ")),
        "each failure on a line of its own: {why}"
    );
    // SAFETY: one NUL-terminated entry.
    assert_eq!(
        unsafe { ck_jit_warmup([c"add_two".as_ptr()].as_ptr(), 1) },
        0
    );
    assert_eq!(last_error(), None);
}

#[test]
fn the_cache_dir_cannot_change_under_a_registered_runtime() {
    let dir = tree().join("other-cache");
    let c = std::ffi::CString::new(dir.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: NUL-terminated.
    assert_eq!(unsafe { ck_jit_set_cache_dir(c.as_ptr()) }, -1);
    assert!(last_error().unwrap().contains("too late"));
    assert!(!dir.exists());
    let again = Box::leak(Box::new(Runtime::new(
        Manifest::new("x", "/nonexistent"),
        "second",
    )));
    assert!(register(again).is_err(), "the first registration stays");
}

#[test]
fn the_header_compiles_as_strict_c_and_cpp() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let c = dir.join(format!("header-{}.c", std::process::id()));
    std::fs::write(
        &c,
        "#include \"ck_jit.h\"\n\
         int use(void) { const char* n[1] = {\"k\"}; ck_jit_fn f = ck_jit_resolve(n[0]);\n\
         return (f != 0) + ck_jit_warmup(n, 1) + ck_jit_set_cache_dir(\"d\") + (ck_jit_last_error() != 0); }\n",
    )
    .unwrap();
    let cpp = c.with_extension("cpp");
    std::fs::write(
        &cpp,
        "#include \"ck_jit.h\"\n\
         int use() { return ck_jit::resolve<int (*)(int)>(\"k\")(1); }\n",
    )
    .unwrap();
    for (compiler, std, file) in [("cc", "-std=c99", &c), ("c++", "-std=c++11", &cpp)] {
        let out = Command::new(compiler)
            .args([
                std,
                "-Wall",
                "-Wextra",
                "-Werror",
                "-pedantic",
                "-fsyntax-only",
            ])
            .arg(format!("-I{INCLUDE}"))
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{compiler}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_file(c);
    let _ = std::fs::remove_file(cpp);
}

/// A library that carries its own manifest resolves through it, beside the
/// process-wide runtime; a missing manifest is an error naming it, and is
/// not remembered.
#[test]
fn a_blob_resolves_through_the_manifest_a_library_names() {
    let dir = tree();
    let own = dir.join("own");
    std::fs::create_dir_all(own.join("kernels")).unwrap();
    std::fs::write(
        own.join("kernels/times_three.c"),
        "int times_three(int x) { return 3 * x; }\n",
    )
    .unwrap();
    let manifest_path = own.join("ck_jit_manifest.json");
    let path = std::ffi::CString::new(manifest_path.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings.
    let missing =
        unsafe { ck_jit_resolve_with(path.as_ptr(), c"times_three".as_ptr(), c"".as_ptr()) };
    assert!(missing.is_none());
    let why = last_error().unwrap();
    assert!(why.contains("ck_jit_manifest.json"), "{why}");

    let mut m = Manifest::new("ck_jit_capi_own", own.to_string_lossy());
    m.groups.push(group("c", "cc", &[]));
    m.blobs
        .push(blob("times_three", "kernels/times_three.c", 0));
    m.finish().unwrap();
    std::fs::write(&manifest_path, m.to_json()).unwrap();
    // SAFETY: NUL-terminated strings.
    let f = unsafe { ck_jit_resolve_with(path.as_ptr(), c"times_three".as_ptr(), c"".as_ptr()) }
        .unwrap_or_else(|| panic!("{:?}", last_error()));
    // SAFETY: times_three is `int times_three(int)`.
    let f: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(f) };
    assert_eq!(f(14), 42);
    // Not in the process-wide manifest.
    assert!(resolve(c"times_three").is_none());
}

/// A library's manifest is read from the compact form the build writes
/// beside the JSON (`ck_jit_manifest.ckm`) when it is at least as new, as
/// a program reads its embedded one, so a first call parses no JSON; a
/// JSON file edited after it is read instead.
#[test]
fn a_library_manifest_is_read_from_its_compact_form_when_it_is_current() {
    let dir = tree();
    let own = dir.join("own-compact");
    std::fs::create_dir_all(own.join("kernels")).unwrap();
    std::fs::write(
        own.join("kernels/times_four.c"),
        "int times_four(int x) { return 4 * x; }\nint times_five(int x) { return 5 * x; }\n",
    )
    .unwrap();
    let mut m = Manifest::new("ck_jit_capi_compact", own.to_string_lossy());
    m.groups.push(group("c", "cc", &[]));
    m.blobs.push(blob("times_four", "kernels/times_four.c", 0));
    m.finish().unwrap();
    let json = own.join(ck_jit_rt::manifest::MANIFEST_FILE);
    let compact = own.join(ck_jit_rt::manifest::compact::COMPACT_FILE);
    std::fs::write(&compact, m.to_compact()).unwrap();
    // A JSON file that does not parse, older than the compact form: not read.
    std::fs::write(&json, "{ not json").unwrap();
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&json)
        .unwrap()
        .set_modified(old)
        .unwrap();
    let path = std::ffi::CString::new(json.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings.
    let f = unsafe { ck_jit_resolve_with(path.as_ptr(), c"times_four".as_ptr(), c"".as_ptr()) }
        .unwrap_or_else(|| panic!("the compact form was not read: {:?}", last_error()));
    // SAFETY: times_four is `int times_four(int)`.
    let f: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(f) };
    assert_eq!(f(10), 40);

    // Edited after the compact form (a blob added by hand): the JSON wins.
    let other = own.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let json = other.join(ck_jit_rt::manifest::MANIFEST_FILE);
    std::fs::write(
        other.join(ck_jit_rt::manifest::compact::COMPACT_FILE),
        m.to_compact(),
    )
    .unwrap();
    m.blobs.push(blob("times_five", "kernels/times_four.c", 0));
    m.finish().unwrap();
    std::fs::write(&json, m.to_json()).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&json)
        .unwrap()
        .set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(60))
        .unwrap();
    let path = std::ffi::CString::new(json.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated strings; the symbol exists under that name.
    let f = unsafe {
        ck_jit_resolve_with(
            path.as_ptr(),
            c"times_five".as_ptr(),
            c"times_five".as_ptr(),
        )
    }
    .unwrap_or_else(|| panic!("the newer JSON was not read: {:?}", last_error()));
    // SAFETY: times_five is `int times_five(int)`.
    let f: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(f) };
    assert_eq!(f(10), 50);
}

/// A symbol other than the manifest's entry, named exactly (as
/// `#[lazy_kernel(symbol = "...")]` does from Rust); a symbol the blob does
/// not export is NULL with a message naming it.
#[test]
fn an_exact_symbol_override_resolves_that_function() {
    tree();
    // SAFETY: NUL-terminated strings.
    let f = unsafe { ck_jit_resolve_symbol(c"add_two".as_ptr(), c"add_ten".as_ptr()) }
        .expect("add_ten");
    // SAFETY: add_ten is `int add_ten(int)`.
    let f: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(f) };
    assert_eq!(f(1), 11);
    let entry = resolve(c"add_two").expect("add_two");
    // SAFETY: add_two is `int add_two(int)`.
    let entry: extern "C" fn(c_int) -> c_int = unsafe { std::mem::transmute(entry) };
    assert_eq!(entry(1), 3, "the entry is unchanged");

    // SAFETY: NUL-terminated strings.
    let none = unsafe { ck_jit_resolve_symbol(c"add_two".as_ptr(), c"add_eleven".as_ptr()) };
    assert!(none.is_none());
    let e = last_error().unwrap();
    assert!(e.contains("add_eleven"), "{e}");
    // SAFETY: NUL-terminated string and NULL.
    assert!(unsafe { ck_jit_resolve_symbol(c"add_two".as_ptr(), std::ptr::null()) }.is_none());
    assert!(unsafe { ck_jit_resolve_symbol(c"add_two".as_ptr(), c"".as_ptr()) }.is_none());
}
