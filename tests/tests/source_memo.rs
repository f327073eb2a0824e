//! A cache hit whose source has the identity it was hashed with reads no
//! source: the cache keeps a memo of source digests (path, size, mtime,
//! ctime, inode). Its own test binary: it counts the process's source
//! reads, which other tests' runtimes would add to.

use std::fs;
use std::time::Duration;

use ck_jit_tests::{c_manifest, call, test_config, Tree};

/// Long enough for a file written now to be remembered (the memo leaves
/// out files changed in the last two seconds).
const SETTLE: Duration = Duration::from_millis(2100);

fn reads() -> u64 {
    ck_jit_rt::stats().sources_read
}

#[test]
fn a_hit_reads_no_source_while_its_identity_is_unchanged() {
    let t = Tree::new("source-memo");
    let src = t.c_blob("memo_a", 3, 1);
    t.c_blob("memo_b", 5, 0);
    let m = c_manifest(&t.dir, &["memo_a", "memo_b"], "cc", &[]);
    std::thread::sleep(SETTLE);

    // The first process compiles both, reading (and remembering) each.
    let before = reads();
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("memo_a", None).unwrap(), 2), 7);
    assert_eq!(call(rt.resolve("memo_b", None).unwrap(), 2), 10);
    assert_eq!(reads() - before, 2);

    // A new runtime over the same cache: hits, no source read.
    let before = reads();
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("memo_a", None).unwrap(), 2), 7);
    assert_eq!(call(rt.resolve("memo_b", None).unwrap(), 2), 10);
    assert_eq!(reads() - before, 0, "hits whose sources the memo knows");
    assert!(ck_jit_rt::stats().cache_hits >= 2);

    // The source's bytes changed, its size and mtime put back: its ctime
    // tells, so it is read, and the new code is what runs.
    let mtime = fs::metadata(&src).unwrap().modified().unwrap();
    let text = fs::read_to_string(&src).unwrap().replace("* 3", "* 4");
    fs::write(&src, &text).unwrap();
    fs::File::options()
        .write(true)
        .open(&src)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let before = reads();
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("memo_a", None).unwrap(), 2), 9);
    assert_eq!(call(rt.resolve("memo_b", None).unwrap(), 2), 10);
    assert_eq!(reads() - before, 1, "the edited source alone");

    // A source replaced by a symlink to the same bytes is read, not taken
    // from the memo (a link is never the file that was remembered).
    let b = t.path("kernels/memo_b.c");
    let copy = t.write("kernels/memo_b_copy.c", &fs::read_to_string(&b).unwrap());
    fs::remove_file(&b).unwrap();
    std::os::unix::fs::symlink(&copy, &b).unwrap();
    let before = reads();
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("memo_b", None).unwrap(), 2), 10);
    assert_eq!(reads() - before, 1);

    // A memo that is not one (written over by anything) is ignored.
    for entry in fs::read_dir(t.cache_dir().join("sources")).unwrap() {
        fs::write(entry.unwrap().path(), "garbage").unwrap();
    }
    let before = reads();
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("memo_a", None).unwrap(), 2), 9);
    assert_eq!(reads() - before, 1);
}
