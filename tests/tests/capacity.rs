//! `CK_JIT_CACHE_MAX_ENTRIES` / `CK_JIT_CACHE_MAX_SIZE` are kept by the
//! runtime itself: each publish evicts least recently used entries that no
//! compile holds, and kernels already loaded from evicted entries keep
//! working.

use std::time::{Duration, SystemTime};

use ck_jit_rt::maintenance::Limits;
use ck_jit_tests::{c_manifest, call, test_config, Tree};

fn age(path: &std::path::Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs))
        .unwrap();
}

fn cached_blobs(t: &Tree) -> Vec<String> {
    let cache = ck_jit_rt::maintenance::Cache::open(&t.cache_dir(), false).unwrap();
    let mut names: Vec<String> = cache.entries().into_iter().map(|e| e.record.blob).collect();
    names.sort();
    names
}

#[test]
fn publishing_keeps_the_cache_within_its_entry_limit_least_recently_used_first() {
    let t = Tree::new("capacity");
    for (i, n) in ["a", "b", "c", "d"].iter().enumerate() {
        t.c_blob(n, i as i32 + 2, 0);
    }
    let m = c_manifest(&t.dir, &["a", "b", "c", "d"], "cc", &[]);
    let mut config = test_config();
    config.cache_limits = Limits {
        max_size: None,
        max_entries: Some(2),
    };
    let rt = t.runtime(&m, config);
    let pa = rt.resolve("a", None).unwrap();
    rt.resolve("b", None).unwrap();
    age(&rt.cached("a").unwrap().unwrap().record_path, 7200);
    age(&rt.cached("b").unwrap().unwrap().record_path, 3600);

    // A third entry: the least recently used one goes.
    rt.resolve("c", None).unwrap();
    assert_eq!(cached_blobs(&t), ["b", "c"]);
    // What was loaded from it still runs.
    assert_eq!(call(pa, 5), 10);

    // A compile of `b` in progress (its lock held): `b` is skipped, the
    // next least recently used entry goes instead.
    age(&rt.cached("c").unwrap().unwrap().record_path, 60);
    let b = rt.cached("b").unwrap().unwrap();
    let cache = rt.cache().unwrap();
    let lock = cache.try_lock("b", &b.record.prekey).unwrap().unwrap();
    rt.resolve("d", None).unwrap();
    assert_eq!(cached_blobs(&t), ["b", "d"]);
    drop(lock);

    // Without limits nothing is evicted.
    let rt = t.runtime(&m, test_config());
    rt.resolve("a", None).unwrap();
    rt.resolve("c", None).unwrap();
    assert_eq!(cached_blobs(&t), ["a", "b", "c", "d"]);
}

#[test]
fn a_size_limit_is_kept_too() {
    let t = Tree::new("capacity-size");
    for n in ["a", "b", "c"] {
        t.c_blob(n, 3, 1);
    }
    let m = c_manifest(&t.dir, &["a", "b", "c"], "cc", &[]);
    let rt = t.runtime(&m, test_config());
    rt.resolve("a", None).unwrap();
    let one = ck_jit_rt::maintenance::entry_bytes(&rt.cached("a").unwrap().unwrap());
    let mut config = test_config();
    // Room for two entries of about this size, not three.
    config.cache_limits = Limits {
        max_size: Some(one * 2 + one / 2),
        max_entries: None,
    };
    let rt = t.runtime(&m, config);
    age(&rt.cached("a").unwrap().unwrap().record_path, 3600);
    rt.resolve("b", None).unwrap();
    assert_eq!(cached_blobs(&t), ["a", "b"]);
    rt.resolve("c", None).unwrap();
    assert_eq!(cached_blobs(&t), ["b", "c"]);
}
