//! Blobs one operation calls together (the manifest's `together` sets:
//! CK's bwd kernels, a splitkv pair) compile together at the first call of
//! the first one: the operation's first call costs about one compile when
//! cores allow, not one per blob.

use std::fs;
use std::os::unix::fs::PermissionsExt;

use ck_jit_rt::Outcome;
use ck_jit_tests::{c_manifest, test_config, Tree};

/// The compile limit every test here sets: the process-wide limit is
/// shared by the tests running at once, whose compiles (3 + 2 + 3) must
/// all find a slot for the counts to mean anything.
const JOBS: usize = 8;

/// A compiler that logs `start`/`end` around each compile, holding it
/// until the compiles started with it have started too.
fn slow_cc(t: &Tree) -> String {
    let log = t.path("spans.log");
    let cc = t.write(
        "bin/slow-cc",
        &format!(
            "#!/bin/sh\n[ \"$1\" = --version ] && exec cc --version\n\
             echo start >> {log}\n{wait}cc \"$@\"; rc=$?\necho end >> {log}\nexit $rc\n",
            log = log.display(),
            wait = ck_jit_tests::wait_for_siblings(&log)
        ),
    );
    fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).unwrap();
    cc.to_string_lossy().into_owned()
}

/// The most compiles that ran at once, and how many ran.
fn spans(t: &Tree) -> (usize, usize) {
    let text = fs::read_to_string(t.path("spans.log")).unwrap_or_default();
    let (most, runs, _) = ck_jit_tests::concurrency(&text, "start", "end");
    (most, runs)
}

#[test]
fn the_first_call_of_an_operation_compiles_its_blobs_together() {
    ck_jit_rt::set_jobs(JOBS);
    let t = Tree::new("together");
    for (i, n) in ["bwd_dot", "bwd_dq", "bwd_convert", "fwd_alone"]
        .iter()
        .enumerate()
    {
        t.c_blob(n, i as i32 + 1, 0);
    }
    let cc = slow_cc(&t);
    let mut m = c_manifest(
        &t.dir,
        &["bwd_dot", "bwd_dq", "bwd_convert", "fwd_alone"],
        &cc,
        &[],
    );
    m.set_together([vec!["bwd_dot", "bwd_dq", "bwd_convert"]])
        .unwrap();
    let rt = t.runtime(&m, test_config());

    // The operation's first blob: all three compile, at once.
    rt.resolve("bwd_dot", None).unwrap();
    assert_eq!(spans(&t), (3, 3));
    // The others are loaded already: no compile, no wait.
    for b in ["bwd_dq", "bwd_convert"] {
        assert_eq!(rt.ensure(b, false).unwrap().2, Outcome::Cached);
        rt.resolve(b, None).unwrap();
    }
    assert_eq!(spans(&t).1, 3);
    // A blob in no set compiles alone.
    rt.resolve("fwd_alone", None).unwrap();
    assert_eq!(spans(&t).1, 4);

    // Without the sets, one compile per first call, one after another.
    let t2 = Tree::new("together-control");
    for (i, n) in ["bwd_dot", "bwd_dq", "bwd_convert"].iter().enumerate() {
        t2.c_blob(n, i as i32 + 1, 0);
    }
    let cc2 = slow_cc(&t2);
    let m2 = c_manifest(&t2.dir, &["bwd_dot", "bwd_dq", "bwd_convert"], &cc2, &[]);
    let rt2 = t2.runtime(&m2, test_config());
    rt2.resolve("bwd_dot", None).unwrap();
    assert_eq!(spans(&t2), (1, 1));

    // Through the compact (embedded) form too.
    let t3 = Tree::new("together-compact");
    for (i, n) in ["bwd_dot", "bwd_dq", "bwd_convert"].iter().enumerate() {
        t3.c_blob(n, i as i32 + 1, 0);
    }
    let cc3 = slow_cc(&t3);
    let mut m3 = c_manifest(&t3.dir, &["bwd_dot", "bwd_dq", "bwd_convert"], &cc3, &[]);
    m3.set_together([vec!["bwd_dot", "bwd_dq", "bwd_convert"]])
        .unwrap();
    let bytes: &'static [u8] = Box::leak(m3.to_compact().into_boxed_slice());
    let rt3 = ck_jit_rt::Runtime::from_compact(bytes)
        .unwrap()
        .with_config(test_config())
        .with_root(&t3.dir)
        .with_cache_dir(t3.cache_dir());
    rt3.resolve("bwd_convert", None).unwrap();
    assert_eq!(spans(&t3), (3, 3));
}

/// A blob in two sets (a CK `dq_dk_dv` kernel used with two `dot_do_o`
/// variants) reached after one set's first blob was loaded: that set is
/// the one under way, so its remaining blob compiles alongside, and the
/// other set's does not.
#[test]
fn the_set_whose_earlier_blob_was_loaded_is_the_one_under_way() {
    ck_jit_rt::set_jobs(JOBS);
    let t = Tree::new("together-evidence");
    let names = ["dot1", "dot2", "dq", "dq3", "conv1", "conv2", "conv3"];
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, i as i32 + 1, 0);
    }
    let cc = slow_cc(&t);
    let mut m = c_manifest(&t.dir, &names, &cc, &[]);
    m.set_together([
        vec!["dot1", "dq", "conv1"],
        vec!["dot2", "dq", "conv2"],
        vec!["dot1", "dq3", "conv3"],
    ])
    .unwrap();
    let rt = t.runtime(&m, test_config());
    // dot1 is in two sets: nothing else is certain; it compiles alone.
    rt.resolve("dot1", None).unwrap();
    assert_eq!(spans(&t), (1, 1));
    // dq is in two sets; dot1 of the first is loaded: conv1 comes along.
    rt.resolve("dq", None).unwrap();
    assert_eq!(spans(&t), (2, 3));
    assert_eq!(rt.ensure("conv1", false).unwrap().2, Outcome::Cached);
    let conv2 = rt.plan("conv2").unwrap();
    assert!(
        rt.cached_entry(&conv2).unwrap().is_none(),
        "conv2 was not compiled"
    );
}

/// `Runtime::prepare_together` and `prepare_after` run as many compiles at
/// once as the process allows now (`set_jobs`), not as the runtime's
/// settings said when it was made; `prepare_after` adds what every set
/// holding both blobs contains.
#[test]
fn prepare_after_compiles_the_set_both_blobs_share_at_the_current_limit() {
    ck_jit_rt::set_jobs(JOBS);
    let t = Tree::new("together-after");
    let names = ["dot", "dq1", "dq2", "conv1", "conv2"];
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, i as i32 + 1, 0);
    }
    let cc = slow_cc(&t);
    let mut m = c_manifest(&t.dir, &names, &cc, &[]);
    m.set_together([vec!["dot", "dq1", "conv1"], vec!["dot", "dq2", "conv2"]])
        .unwrap();
    let mut config = test_config();
    config.jobs = 1;
    let rt = t.runtime(&m, config);
    // dot's sets disagree: its call may wait; dq1's has one set.
    assert!(rt.may_defer("dot"));
    assert!(!rt.may_defer("dq1"));
    rt.prepare_after(&["dot"], "dq1").unwrap();
    assert_eq!(spans(&t), (3, 3));
    for b in ["dot", "dq1", "conv1"] {
        assert_eq!(rt.ensure(b, false).unwrap().2, Outcome::Cached);
    }
    // Loaded now: nothing to wait for.
    assert!(!rt.may_defer("dot"));
}
