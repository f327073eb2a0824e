//! The cache belongs to the user: created 0700; a root that is a symlink,
//! owned by someone else, or writable by group/others is refused with an
//! error saying why and how to fix it, unless the shared cache is opted
//! into; an unwritable cache is an error naming the directory.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use ck_jit_rt::maintenance::Cache;
use ck_jit_rt::Error;
use ck_jit_tests::{c_manifest, test_config, Tree};

fn refused(dir: &std::path::Path, shared: bool) -> String {
    match Cache::open(dir, shared) {
        Err(e @ Error::Cache { .. }) => e.to_string(),
        Err(e) => panic!("unexpected error kind: {e}"),
        Ok(_) => panic!("{} was accepted", dir.display()),
    }
}

#[test]
fn new_cache_directory_and_its_subdirectories_are_created_0700() {
    let t = Tree::new("mode");
    let dir = t.path("deep/new-cache");
    Cache::open(&dir, false).unwrap();
    let mode = fs::metadata(&dir).unwrap().mode() & 0o777;
    assert_eq!(mode, 0o700);
    for sub in ["v1", "tmp", "bad", "logs"] {
        assert_eq!(
            fs::metadata(dir.join(sub)).unwrap().mode() & 0o777,
            0o700,
            "{sub}"
        );
    }
}

/// A cache root the system will not let us inspect or create (a `HOME`
/// that is a file, or one under an unreadable parent) names the directory,
/// the system's reason, and where else to put the cache.
#[test]
fn a_cache_under_an_unusable_home_suggests_ck_jit_cache_dir() {
    let t = Tree::new("unusable-home");
    let home = t.write("home-is-a-file", "");
    for dir in [home.join(".cache/ck_jit_test"), home.join("cache")] {
        let msg = refused(&dir, false);
        assert!(
            msg.contains(&*dir.to_string_lossy())
                && msg.contains("Not a directory")
                && msg.contains("set CK_JIT_CACHE_DIR"),
            "{msg}"
        );
    }
}

#[test]
fn symlink_root_is_refused_unless_shared() {
    let t = Tree::new("symlink");
    let real = t.path("real");
    fs::create_dir(&real).unwrap();
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).unwrap();
    let link = t.path("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let msg = refused(&link, false);
    assert!(
        msg.contains("symlink") && msg.contains("CK_JIT_SHARED_CACHE"),
        "{msg}"
    );
    Cache::open(&link, true).unwrap();
}

#[test]
fn world_writable_root_is_refused_even_when_shared() {
    let t = Tree::new("0777");
    let dir = t.path("open");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let msg = refused(&dir, false);
    assert!(msg.contains("writable by every user"), "{msg}");
    refused(&dir, true);
}

#[test]
fn tmp_itself_is_refused() {
    let msg = refused(std::path::Path::new("/tmp"), false);
    assert!(msg.contains("/tmp"), "{msg}");
}

#[test]
fn group_writable_root_is_refused_unless_shared() {
    let t = Tree::new("group");
    let dir = t.path("team");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o770)).unwrap();
    let msg = refused(&dir, false);
    assert!(
        msg.contains("chmod 700") && msg.contains("CK_JIT_SHARED_CACHE=1"),
        "{msg}"
    );
    let c = Cache::open(&dir, true).unwrap();
    assert!(c.is_shared());
}

#[test]
fn root_owned_by_another_user_is_refused_unless_shared() {
    let t = Tree::new("owner");
    let dir = t.path("theirs");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).unwrap();
    // As root, give it away; otherwise use a directory we do not own.
    // SAFETY: plain syscalls on a path we created.
    let is_root = unsafe { libc::geteuid() } == 0;
    let dir = if is_root {
        let c = std::ffi::CString::new(dir.to_str().unwrap()).unwrap();
        // SAFETY: c is a valid NUL-terminated path.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
        dir
    } else {
        std::path::PathBuf::from("/")
    };
    let msg = refused(&dir, false);
    assert!(msg.contains("owned by user id"), "{msg}");
    if is_root {
        Cache::open(&dir, true).unwrap();
    }
}

#[test]
fn unwritable_cache_is_an_error_naming_the_directory() {
    let t = Tree::new("unwritable");
    let file = t.write("a-file", "not a directory");
    let dir = file.join("cache");
    let msg = refused(&dir, false);
    assert!(msg.contains(&dir.display().to_string()), "{msg}");

    // Through a runtime: the error, not a panic, with the directory named.
    t.c_blob("k", 1, 1);
    let m = c_manifest(&t.dir, &["k"], "cc", &[]);
    let rt = ck_jit_rt::Runtime::new(m, "test")
        .with_config(test_config())
        .with_cache_dir(&dir);
    let err = rt.resolve("k", None).unwrap_err();
    assert!(
        err.to_string().contains(&dir.display().to_string()),
        "{err}"
    );
}

#[test]
fn default_cache_dir_is_under_home_not_tmp() {
    let d = ck_jit_rt::maintenance::default_dir("ck_jit").unwrap();
    assert!(d.ends_with("ck_jit"));
    assert!(!d.starts_with("/tmp"), "{}", d.display());
}

/// Temps of a compile that died are removed by the next process that
/// compiles in the cache, before it compiles; a process that only hits
/// does not list them.
#[test]
fn stale_temps_are_swept_by_a_compiling_process_only() {
    let t = Tree::new("sweep");
    t.c_blob("sw_a", 2, 1);
    let m = c_manifest(&t.dir, &["sw_a"], "cc", &[]);
    let rt = t.runtime(&m, test_config());
    rt.resolve("sw_a", None).unwrap();
    // A temp of a process that is gone.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let stale = t.cache_dir().join("tmp").join(format!("{pid}-sw_a.tmp"));
    fs::write(&stale, "half an object").unwrap();

    let rt = t.runtime(&m, test_config());
    rt.resolve("sw_a", None).unwrap();
    assert!(stale.exists(), "a hit leaves tmp/ alone");

    t.c_blob("sw_a", 3, 1);
    let rt = t.runtime(&m, test_config());
    rt.resolve("sw_a", None).unwrap();
    assert!(!stale.exists(), "the compile swept the dead process's temp");
}

/// A runtime given another cache after a load remembers its sources in
/// that cache, not in the one it used before.
#[test]
fn a_runtime_moved_to_another_cache_remembers_its_sources_there() {
    let t = Tree::new("source-memo-moved");
    t.c_blob("moved_a", 3, 1);
    t.c_blob("moved_b", 5, 0);
    let m = c_manifest(&t.dir, &["moved_a", "moved_b"], "cc", &[]);
    // Settled: the memo leaves out sources changed in the last two seconds.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let memo_files = |cache: &std::path::Path| {
        fs::read_dir(cache.join("sources"))
            .map(|d| d.flatten().count())
            .unwrap_or(0)
    };

    let rt = t.runtime(&m, test_config());
    assert_eq!(
        ck_jit_tests::call(rt.resolve("moved_a", None).unwrap(), 2),
        7
    );
    assert_eq!(memo_files(&t.cache_dir()), 1);
    let other = t.path("other-cache");
    let rt = rt.with_cache_dir(&other);
    assert_eq!(
        ck_jit_tests::call(rt.resolve("moved_b", None).unwrap(), 2),
        10
    );
    assert_eq!(memo_files(&other), 1, "the new cache's own memo");
}
