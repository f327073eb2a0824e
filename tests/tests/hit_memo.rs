//! A lazy load whose blob the cache's memo of hits knows (its source
//! unchanged, the same group command, launcher and compiler) reads no
//! source and no record: it checks the object's `lstat` and the headers,
//! and loads; the record is marked used only when the memo's word on its
//! last use is old. Anything it stands for changed, and the
//! load is looked up (or compiled) as without the memo. Its own test
//! binary: it counts the process's source reads and compiles, which other
//! tests' runtimes would add to.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use ck_jit_build::manifest::Manifest;
use ck_jit_tests::{c_manifest, call, test_config, Tree};

/// Long enough for a file written now to be remembered (the memos leave
/// out files changed in the last two seconds).
const SETTLE: Duration = Duration::from_millis(2100);

/// The tests count the process's reads and compiles: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn reads() -> u64 {
    ck_jit_rt::stats().sources_read
}

fn compiles() -> u64 {
    ck_jit_rt::stats().compiles
}

/// The files of the cache directory `dir` whose names end in `suffix`.
fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, suffix));
        } else if p.to_string_lossy().ends_with(suffix) {
            out.push(p);
        }
    }
    out
}

/// Every record of the tree's cache written over in place: only the memo
/// can serve a hit now.
fn spoil_records(t: &Tree) {
    for r in files(&t.cache_dir().join("v1"), ".json") {
        fs::write(r, "not a record").unwrap();
    }
}

/// The tree: `hm_a` includes `include/hm.h`, `hm_b` includes nothing.
fn tree(name: &str) -> (Tree, Manifest) {
    ck_jit_rt::__internals::forget_checks();
    let t = Tree::new(name);
    t.write("include/hm.h", "#define HM_ADD 1\n");
    t.write(
        "kernels/hm_a.c",
        "#include \"../include/hm.h\"\nint hm_a(int x) { return x * 3 + HM_ADD; }\n",
    );
    t.c_blob("hm_b", 5, 0);
    let m = c_manifest(&t.dir, &["hm_a", "hm_b"], "cc", &[]);
    std::thread::sleep(SETTLE);
    (t, m)
}

/// Each blob resolved by a new runtime over the tree's cache, called on 2.
fn run(t: &Tree, m: &Manifest) -> (i32, i32) {
    let rt = t.runtime(m, test_config());
    (
        call(rt.resolve("hm_a", None).unwrap(), 2),
        call(rt.resolve("hm_b", None).unwrap(), 2),
    )
}

#[test]
fn a_remembered_hit_reads_neither_source_nor_record() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-reads");
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 2);
    let memo = files(&t.cache_dir().join("hits"), "");
    assert_eq!(memo.len(), 1, "one memo for the tree: {memo:?}");

    // Every record written over in place (the prekey directory's head is
    // the same file): a lookup that read one could not use it.
    let records = files(&t.cache_dir().join("v1"), ".json");
    assert_eq!(records.len(), 2, "{records:?}");
    for r in &records {
        fs::write(r, "not a record").unwrap();
    }
    let (r0, c0) = (reads(), compiles());
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(reads() - r0, 0, "no source read");
    assert_eq!(compiles() - c0, 0, "served from the memo, records unread");

    // Without the memo the same cache has no usable record: both compile.
    fs::remove_dir_all(t.cache_dir().join("hits")).unwrap();
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 2);
}

#[test]
fn what_one_process_remembers_does_not_cost_another_its_memo() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-others");
    // Two processes, each loading one blob: each compiles it and
    // remembers it, the second appending to the memo the first wrote.
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("hm_a", None).unwrap(), 2), 7);
    let rt = t.runtime(&m, test_config());
    assert_eq!(call(rt.resolve("hm_b", None).unwrap(), 2), 10);
    // With every record written over, a third finds both in the memo.
    spoil_records(&t);
    let (r0, c0) = (reads(), compiles());
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 0, "both served from the memo");
    assert_eq!(reads() - r0, 0, "no source read");
}

#[test]
fn a_remembered_hit_is_refused_when_anything_it_stands_for_changed() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-changes");
    assert_eq!(run(&t, &m), (7, 10));
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 0);

    // A header's contents: checked as any hit checks them (on a
    // process's first use of its set; these runtimes share one process).
    t.write("include/hm.h", "#define HM_ADD 2\n");
    ck_jit_rt::__internals::forget_checks();
    let c0 = compiles();
    assert_eq!(run(&t, &m), (8, 10));
    assert_eq!(compiles() - c0, 1);

    // The source.
    t.c_blob("hm_b", 6, 0);
    let c0 = compiles();
    assert_eq!(run(&t, &m), (8, 12));
    assert_eq!(compiles() - c0, 1);
    std::thread::sleep(SETTLE);
    assert_eq!(run(&t, &m), (8, 12));

    // The group's command: another context, so another entry.
    let flagged = c_manifest(&t.dir, &["hm_a", "hm_b"], "cc", &["-DHM_UNUSED"]);
    let c0 = compiles();
    assert_eq!(run(&t, &flagged), (8, 12));
    assert_eq!(compiles() - c0, 2);

    // The object removed, or replaced by another file at its path.
    let c0 = compiles();
    assert_eq!(run(&t, &m), (8, 12));
    assert_eq!(compiles() - c0, 0);
    let b_objects = || -> Vec<PathBuf> {
        files(&t.cache_dir().join("v1"), ".so")
            .into_iter()
            .filter(|p| p.to_string_lossy().contains("hm_b"))
            .collect()
    };
    for b in b_objects() {
        fs::remove_file(b).unwrap();
    }
    let c0 = compiles();
    assert_eq!(run(&t, &m), (8, 12));
    assert_eq!(compiles() - c0, 1);
    let [b] = &b_objects()[..] else {
        panic!("one object of hm_b: {:?}", b_objects())
    };
    let bytes = fs::read(b).unwrap();
    fs::remove_file(b).unwrap();
    fs::write(b, &bytes).unwrap();
    let c0 = compiles();
    assert_eq!(run(&t, &m), (8, 12), "an object of the same bytes loads");
    assert_eq!(compiles() - c0, 0);

    // A memo written over by anything is ignored, and replaced by the
    // next one remembered: with the records unusable, it serves alone.
    for f in files(&t.cache_dir().join("hits"), "") {
        fs::write(f, "garbage").unwrap();
    }
    assert_eq!(run(&t, &m), (8, 12));
    spoil_records(&t);
    let c0 = compiles();
    assert_eq!(run(&t, &m), (8, 12));
    assert_eq!(compiles() - c0, 0, "served from the memo made anew");
}

#[test]
fn a_remembered_hit_marks_its_record_used_when_the_memo_says_it_is_old() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-used");
    assert_eq!(run(&t, &m), (7, 10));
    let records = files(&t.cache_dir().join("v1"), ".json");
    assert_eq!(records.len(), 2, "{records:?}");
    let age = |hours: u64| {
        let then = SystemTime::now() - Duration::from_secs(hours * 3600);
        for r in &records {
            let f = fs::File::options().write(true).open(r).unwrap();
            f.set_modified(then).unwrap();
        }
    };
    let hours_old = || -> Vec<u64> {
        let hours = |r: &PathBuf| {
            let mtime = fs::metadata(r).unwrap().modified().unwrap();
            mtime.elapsed().unwrap_or_default().as_secs() / 3600
        };
        records.iter().map(hours).collect()
    };

    // Records aged by hand: the memo knows of a use just now, so a hit
    // neither looks at them nor marks them.
    age(5);
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(hours_old(), [5, 5]);

    // The memo's word made old (each record's last field, Unix seconds in
    // hex): the next hit marks each record used, and remembers that.
    let [memo] = &files(&t.cache_dir().join("hits"), "")[..] else {
        panic!("one memo")
    };
    let mut bytes = fs::read(memo).unwrap();
    let ends: Vec<usize> = (0..bytes.len()).filter(|&i| bytes[i] == b'\n').collect();
    for &end in &ends[1..] {
        bytes[end - 16..end].copy_from_slice(b"0000000000000001");
    }
    fs::write(memo, &bytes).unwrap();
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 0);
    assert_eq!(hours_old(), [0, 0], "marked used");

    // Aged again: the memo now knows of that use, and marks nothing.
    age(5);
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(hours_old(), [5, 5]);
}

#[test]
fn a_shared_cache_keeps_no_memo_of_hits() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-shared");
    let mut config = test_config();
    config.shared_cache = true;
    for _ in 0..2 {
        let rt = t.runtime(&m, config.clone());
        assert_eq!(call(rt.resolve("hm_b", None).unwrap(), 2), 10);
    }
    assert!(files(&t.cache_dir().join("hits"), "").is_empty());
}

#[test]
fn a_full_verification_does_not_take_the_memos_word() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-verify");
    assert_eq!(run(&t, &m), (7, 10));
    // Records unusable: only the memo could serve these blobs now.
    spoil_records(&t);
    let mut full = test_config();
    full.verify_full = true;
    let rt = t.runtime(&m, full);
    let c0 = compiles();
    assert_eq!(call(rt.resolve("hm_a", None).unwrap(), 2), 7);
    assert_eq!(call(rt.resolve("hm_b", None).unwrap(), 2), 10);
    assert_eq!(
        compiles() - c0,
        2,
        "CK_JIT_VERIFY=full looks the entries up"
    );
}

#[test]
fn read_only_tiers_come_before_the_memo() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-tiers");
    assert_eq!(run(&t, &m), (7, 10));
    // An empty cache as the tier: looked in first, it has nothing.
    let tier = t.path("tier");
    ck_jit_rt::Runtime::new(m.clone(), "tier")
        .with_config(test_config())
        .with_cache_dir(&tier)
        .cache()
        .unwrap();
    spoil_records(&t);
    let mut tiered = test_config();
    tiered.cache_path = vec![tier];
    let rt = t.runtime(&m, tiered);
    assert_eq!(rt.tiers().len(), 1);
    let c0 = compiles();
    assert_eq!(call(rt.resolve("hm_b", None).unwrap(), 2), 10);
    assert_eq!(compiles() - c0, 1, "with tiers, the memo is not asked");
}

#[test]
fn an_object_another_tool_hard_linked_is_hashed_once_then_remembered() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-linked");
    assert_eq!(run(&t, &m), (7, 10));
    // A second name for each object (as a profiler's build-id cache or
    // a snapshot makes): its ctime changes, so its identity is not the
    // one published. The next load hashes it against its record.
    let elsewhere = t.path("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    for (i, o) in files(&t.cache_dir().join("v1"), ".so").iter().enumerate() {
        fs::hard_link(o, elsewhere.join(format!("{i}.so"))).unwrap();
    }
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 0);
    // That load remembered the objects as they are now: with every
    // record unusable, the memo alone serves them.
    spoil_records(&t);
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 0, "served from the memo");
}

#[test]
fn a_memo_of_hits_that_cannot_be_written_loses_nothing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (t, m) = tree("hit-memo-unwritable");
    // `hits` a file where the memo's directory goes (what a permission
    // would do to a process not running as root): no memo can be opened
    // or written, whoever runs it.
    fs::create_dir_all(t.cache_dir()).unwrap();
    let hits = t.cache_dir().join("hits");
    fs::write(&hits, "not a directory").unwrap();
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 2);
    // Every later load is a hit, looked up as without the memo.
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 0, "hits from the records");
    // No memo served them: with the records unusable, both compile again.
    spoil_records(&t);
    let c0 = compiles();
    assert_eq!(run(&t, &m), (7, 10));
    assert_eq!(compiles() - c0, 2);
    assert_eq!(fs::read_to_string(&hits).unwrap(), "not a directory");
}
