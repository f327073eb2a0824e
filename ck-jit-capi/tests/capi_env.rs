//! The C ABI's own runtime, from `$CK_JIT_ROOT/ck_jit_manifest.json`, with
//! `ck_jit_set_cache_dir` refusing an unsafe directory and applying a good
//! one. Its own test binary: it sets the process-wide environment before
//! the runtime first reads it.

use std::ffi::{CStr, CString};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ck_jit_capi::{ck_jit_last_error, ck_jit_resolve, ck_jit_set_cache_dir, ck_jit_warmup};
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec, MANIFEST_FILE};

fn last_error() -> Option<String> {
    let p = ck_jit_last_error();
    // SAFETY: NULL or this thread's NUL-terminated message.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

fn set_cache_dir(dir: &Path) -> i32 {
    let c = CString::new(dir.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: NUL-terminated.
    unsafe { ck_jit_set_cache_dir(c.as_ptr()) }
}

#[test]
fn the_root_manifest_and_a_checked_cache_dir_are_used() {
    let root =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capi-env-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("kernels")).unwrap();
    std::fs::write(
        root.join("kernels/triple.c"),
        "int triple(int x) { return 3 * x; }\n",
    )
    .unwrap();
    let mut m = Manifest::new("ck_jit_capi_env_test", "/recorded/elsewhere");
    m.groups.push(Group {
        name: "c".into(),
        compiler: "cc".into(),
        args: ["-O1", "-fPIC", "-shared", "{src}", "-o", "{out}"]
            .map(String::from)
            .to_vec(),
        cwd: None,
        symbol: SymbolSpec::Exact("{name}".into()),
        depfile: true,
        family: None,
        neutral: Default::default(),
    });
    m.blobs.push(Blob {
        name: "triple".into(),
        source: "kernels/triple.c".into(),
        group: 0,
        symbol: None,
        meta: Default::default(),
    });
    m.finish().unwrap();
    std::fs::write(root.join(MANIFEST_FILE), m.to_json()).unwrap();
    std::env::set_var("CK_JIT_ROOT", &root);
    std::env::remove_var("CK_JIT_MANIFEST");
    std::env::remove_var("CK_JIT_OFFLINE");
    std::env::remove_var("CK_JIT_SHARED_CACHE");
    std::env::remove_var("CK_JIT_LAUNCHER");
    std::env::remove_var("CK_JIT_ROOT_CK_JIT_CAPI_ENV_TEST");

    let open = root.join("open-to-all");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_eq!(set_cache_dir(&open), -1);
    let why = last_error().unwrap();
    assert!(why.contains("writable by every user"), "{why}");
    // SAFETY: an empty NUL-terminated string.
    assert_eq!(unsafe { ck_jit_set_cache_dir(c"".as_ptr()) }, -1);

    let cache = root.join("cache");
    assert_eq!(set_cache_dir(&cache), 0, "{:?}", last_error());
    assert_eq!(last_error(), None);
    let mode = std::fs::metadata(&cache).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "created private");

    // SAFETY: NUL-terminated.
    let f = unsafe { ck_jit_resolve(c"triple".as_ptr()) }
        .unwrap_or_else(|| panic!("{:?}", last_error()));
    // SAFETY: triple is `int triple(int)`.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(f) };
    assert_eq!(f(14), 42);
    let entries = walk(&cache);
    assert!(
        entries
            .iter()
            .any(|p| p.extension().is_some_and(|e| e == "so")),
        "the object is in the directory set: {entries:?}"
    );

    assert_eq!(set_cache_dir(&cache), -1, "too late now");
    assert!(last_error()
        .unwrap()
        .contains("before the first ck_jit_resolve"));
    let names = [c"triple".as_ptr(), c"quadruple".as_ptr()];
    // SAFETY: two NUL-terminated entries.
    assert_eq!(unsafe { ck_jit_warmup(names.as_ptr(), 2) }, 1);
    assert!(last_error().unwrap().contains("'quadruple'"));
    let _ = std::fs::remove_dir_all(&root);
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}
