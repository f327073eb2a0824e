//! Kernel families through the runtime: six C blobs of one family with
//! different metadata, compiled by the system C compiler, selected by
//! attributes and called through the family table.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use ck_jit_rt::__private::{FamilySlots, SymbolOverride};
use ck_jit_rt::config::Config;
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::{Error, Query, Runtime};

/// The six members: name, what `entry(x)` adds to `x`, metadata.
const MEMBERS: [(&str, i32, &str); 6] = [
    ("attn_d64_f16", 100, "dtype=f16,hdim=64"),
    ("attn_d128_f16", 200, "dtype=f16,hdim=128,lse=1"),
    (
        "attn_d128_f16_fast",
        300,
        "dtype=f16,hdim=128,lse=1,priority=5",
    ),
    ("attn_d128_f32", 400, "dtype=f32,hdim=128"),
    ("attn_d256_f16", 500, "dtype=f16,hdim=256,lse=yes"),
    ("attn_d256_f32", 600, "dtype=f32,hdim=256,lse=0"),
];

/// A directory of its own under cargo's temp dir, removed on success.
struct Tree(PathBuf);

impl Tree {
    fn new(name: &str) -> Tree {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "family-{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("kernels")).unwrap();
        Tree(dir)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

fn config() -> Config {
    let mut c = Config::from_env();
    c.cache_dir = None;
    c.root = None;
    c.manifest = None;
    c.offline = false;
    c.shared_cache = false;
    c.launcher = Vec::new();
    c
}

/// Writes the sources of `members` (plus `extra` blobs of another family)
/// and returns a leaked runtime over them with the tree's cache.
fn runtime(tree: &Tree, members: &[(&str, i32, &str)], broken: &[&str]) -> &'static Runtime {
    let mut m = Manifest::new("ck_jit_family_test", tree.0.to_string_lossy());
    for family in ["attn", "other"] {
        m.groups.push(Group {
            name: family.into(),
            compiler: "cc".into(),
            args: ["-O1", "-fPIC", "-shared", "{src}", "-o", "{out}"]
                .map(String::from)
                .to_vec(),
            cwd: None,
            symbol: SymbolSpec::Exact("entry".into()),
            depfile: true,
            family: None,
            neutral: Default::default(),
        });
    }
    let mut blob = |name: &str, group: u32, meta: &str, source: String| {
        std::fs::write(tree.0.join(format!("kernels/{name}.c")), source).unwrap();
        m.blobs.push(Blob {
            name: name.into(),
            source: format!("kernels/{name}.c"),
            group,
            symbol: None,
            meta: meta
                .split(',')
                .filter(|kv| !kv.is_empty())
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        });
    };
    for (name, add, meta) in members {
        blob(
            name,
            0,
            meta,
            format!("int entry(int x) {{ return x + {add}; }}\n"),
        );
    }
    for name in broken {
        blob(name, 0, "dtype=broken", "this is not C\n".into());
    }
    blob(
        "lonely",
        1,
        "dtype=f16",
        "int entry(int x) { return -x; }\n".into(),
    );
    m.finish().unwrap();
    Box::leak(Box::new(
        Runtime::new(m, "family test")
            .with_config(config())
            .with_root(&tree.0)
            .with_cache_dir(tree.0.join("cache")),
    ))
}

fn family(rt: &'static Runtime) -> &'static FamilySlots {
    Box::leak(Box::new(FamilySlots::with_runtime(
        rt,
        "attn",
        SymbolOverride::Manifest,
    )))
}

fn call(kernel: ck_jit_rt::Kernel, x: i32) -> i32 {
    // SAFETY: every blob of the family defines `int entry(int)`.
    let f: unsafe extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(kernel.get()) };
    // SAFETY: `entry` has no requirements.
    unsafe { f(x) }
}

#[test]
fn selection_by_attributes_calls_the_chosen_blob() {
    let tree = Tree::new("select");
    let fam = family(runtime(&tree, &MEMBERS, &[]));
    assert_eq!(
        fam.members().unwrap().len(),
        6,
        "'lonely' is another family"
    );

    // hdim >= 100 prefers 128 over 256; of the two f16 128s with lse the
    // one with priority 5 wins.
    let k = fam
        .select(&Query::new().eq("dtype", "f16").ge("hdim", 100).has("lse"))
        .unwrap();
    assert_eq!(k.name(), "attn_d128_f16_fast");
    assert!(!k.member().is_ready(), "selecting compiles nothing");
    assert_eq!(call(k, 1), 301);
    assert!(k.member().is_ready());
    assert_eq!(call(k, 2), 302, "warm call through the same slot");

    // An explicit preference beats the fit.
    let k = fam
        .select(
            &Query::new()
                .eq("dtype", "f16")
                .ge("hdim", 100)
                .prefer_max("hdim"),
        )
        .unwrap();
    assert_eq!((k.name(), call(k, 0)), ("attn_d256_f16", 500));
    // "0" is not a flag that is set.
    let k = fam.select(
        &Query::new()
            .eq("dtype", "f32")
            .lacks("lse")
            .prefer_max("hdim"),
    );
    assert_eq!(call(k.unwrap(), 0), 600);
}

#[test]
fn every_member_is_reachable_by_index_and_by_name() {
    let tree = Tree::new("all");
    let fam = family(runtime(&tree, &MEMBERS, &[]));
    let members = fam.members().unwrap();
    for (i, member) in members.iter().enumerate() {
        assert_eq!(member.index(), i);
        let by_name = fam.by_name(member.name()).unwrap();
        assert_eq!(by_name, member.kernel());
        let (_, add, _) = MEMBERS.iter().find(|m| m.0 == member.name()).unwrap();
        assert_eq!(call(by_name, 1), 1 + add, "{}", member.name());
    }
    let all = fam.candidates(&Query::new()).unwrap();
    assert_eq!(all.len(), 6);
    assert_eq!(
        all[0].name(),
        "attn_d128_f16_fast",
        "highest priority first"
    );
}

#[test]
fn threads_racing_on_a_cold_member_all_get_it() {
    let tree = Tree::new("race");
    let fam = family(runtime(&tree, &MEMBERS, &[]));
    let k = fam.by_name("attn_d64_f16").unwrap();
    let results: Vec<i32> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8).map(|i| s.spawn(move || call(k, i))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results, (0..8).map(|i| i + 100).collect::<Vec<_>>());
}

#[test]
fn no_match_and_wrong_names_say_why() {
    let tree = Tree::new("errors");
    let fam = family(runtime(&tree, &MEMBERS, &[]));
    let err = fam
        .select(&Query::new().eq("dtype", "bf16").ge("hdim", 512))
        .unwrap_err();
    assert!(matches!(err, Error::NoMatch(ref n) if n.candidates() == 6));
    assert_eq!(
        err.to_string(),
        "no attn blob matches dtype = bf16, hdim >= 512: \
         dtype = bf16 matched 0 of 6 (values seen: f16, f32); \
         hdim >= 512 matched 0 of 6 (closest values seen: 256, 128, 64)"
    );
    // A key no member has is a mistake, not a constraint nobody meets.
    let err = fam.select(&Query::new().eq("dtyp", "f16")).unwrap_err();
    assert!(matches!(err, Error::UnknownKey { ref key, .. } if key == "dtyp"));
    assert_eq!(
        err.to_string(),
        "no member of family 'attn' has the key 'dtyp'; did you mean 'dtype'?"
    );
    let err = fam.by_name("lonely").unwrap_err().to_string();
    assert_eq!(
        err,
        "blob 'lonely' is not in family 'attn' (it belongs to family 'other')"
    );
    let err = fam.by_name("attn_d128_f61").unwrap_err().to_string();
    assert!(
        err.ends_with("did you mean 'attn_d128_f16', 'attn_d128_f32'?"),
        "{err}"
    );

    let none: &'static FamilySlots = Box::leak(Box::new(FamilySlots::with_runtime(
        runtime(&tree, &MEMBERS, &[]),
        "atn",
        SymbolOverride::Manifest,
    )));
    assert_eq!(none.members().unwrap().len(), 0);
    let err = none.select(&Query::new()).unwrap_err().to_string();
    assert_eq!(
        err,
        "family 'atn' has no blobs in the manifest; did you mean 'attn'?"
    );
}

#[test]
fn a_member_that_fails_to_compile_is_an_error_then_a_panic_naming_it() {
    let tree = Tree::new("broken");
    let fam = family(runtime(&tree, &MEMBERS[..1], &["attn_broken"]));
    let k = fam.select(&Query::new().eq("dtype", "broken")).unwrap();
    let err = k.try_get().unwrap_err().to_string();
    assert!(err.contains("blob 'attn_broken': compile failed"), "{err}");
    let panic = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| k.get())).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert_eq!(
        message.as_str(),
        format!("ck-jit: {err}"),
        "the error's message after the library's name"
    );
    assert!(!k.member().is_ready());
    // The family's other members are unaffected.
    assert_eq!(call(fam.by_name("attn_d64_f16").unwrap(), 0), 100);
}

#[test]
fn a_symbol_override_applies_to_every_member() {
    let tree = Tree::new("symbol");
    let rt = runtime(&tree, &MEMBERS[..2], &[]);
    let fam: &'static FamilySlots = Box::leak(Box::new(FamilySlots::with_runtime(
        rt,
        "attn",
        SymbolOverride::Exact("missing_{name}"),
    )));
    let err = fam
        .members()
        .unwrap()
        .get(0)
        .unwrap()
        .kernel()
        .try_get()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("no symbol 'missing_attn_d128_f16'"),
        "{err}"
    );
}

/// Selection on a family's table of codes (what an embedded compact
/// manifest gives, and what a parsed manifest builds on first use) orders
/// the members exactly as the metadata maps do (`Query::rank_in`), for
/// many queries over members with missing keys, flags, numbers and words.
#[test]
fn selection_on_codes_agrees_with_selection_on_maps() {
    use ck_jit_rt::__private::Embedded;
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let mut m = Manifest::new("codes", "/nowhere");
    for (g, family) in [("a", "fam"), ("b", "fam"), ("c", "other")] {
        m.groups.push(Group {
            name: g.into(),
            compiler: "cc".into(),
            args: vec!["{src}".into(), "-o".into(), "{out}".into()],
            cwd: None,
            symbol: SymbolSpec::Exact("{name}".into()),
            depfile: true,
            family: Some(family.into()),
            neutral: if g == "a" {
                [("mode".to_string(), "batch".to_string())].into()
            } else {
                BTreeMap::new()
            },
        });
    }
    let words = ["f16", "bf16", "fp8", "", "0", "no", "yes", "128", "x"];
    for i in 0..400 {
        let mut meta = BTreeMap::new();
        for key in ["dtype", "hdim", "lse", "mode", "tile", "priority", "odd"] {
            if next(5) == 0 {
                continue; // missing
            }
            let v = match key {
                "hdim" | "tile" => (32 << next(4)).to_string(),
                "priority" => next(3).to_string(),
                "mode" => ["batch", "group"][next(2) as usize].to_string(),
                _ => words[next(words.len() as u64) as usize].to_string(),
            };
            meta.insert(key.to_string(), v);
        }
        m.blobs.push(Blob {
            name: format!("k{i:04}_{}", next(1000)),
            source: format!("k/{i}.c"),
            group: next(3) as u32,
            symbol: None,
            meta,
        });
    }
    m.finish().unwrap();
    let json_rt: &'static Runtime = Box::leak(Box::new(
        Runtime::new(m.clone(), "test").with_config(config()),
    ));
    let from_json: &'static FamilySlots = Box::leak(Box::new(FamilySlots::with_runtime(
        json_rt,
        "fam",
        SymbolOverride::Manifest,
    )));
    let bytes: &'static [u8] = Box::leak(m.to_compact().into_boxed_slice());
    let embedded: &'static Embedded = Box::leak(Box::new(Embedded::from_compact(bytes)));
    let from_compact: &'static FamilySlots = Box::leak(Box::new(FamilySlots::new(
        embedded,
        "fam",
        SymbolOverride::Manifest,
    )));
    let keys = ["dtype", "hdim", "lse", "mode", "tile", "odd", "nothere"];
    for round in 0..500 {
        let mut q = Query::new();
        for _ in 0..next(4) {
            let key = keys[next(keys.len() as u64) as usize];
            let n = 32 << next(4);
            q = match next(8) {
                0 => q.eq(key, words[next(words.len() as u64) as usize]),
                1 => q.ne(key, "f16"),
                2 => q.ge(key, n),
                3 => q.le(key, n),
                4 => q.gt(key, n),
                5 => q.lt(key, n),
                6 => q.has(key),
                _ => q.lacks(key),
            };
        }
        if next(2) == 0 {
            q = q.prefer_max("tile");
        }
        if next(3) == 0 {
            q = q.prefer_min("hdim");
        }
        let want: Vec<&str> = q
            .rank_in(&m, "fam")
            .iter()
            .map(|b| b.name.as_str())
            .collect();
        for (form, fam) in [("json", from_json), ("compact", from_compact)] {
            let got: Vec<&str> = fam
                .candidates(&q)
                .unwrap()
                .into_iter()
                .map(|k| k.name())
                .collect();
            assert_eq!(got, want, "{form}, round {round}, query {q}");
            // select: the first of them, or an error saying why.
            match (fam.select(&q), want.first()) {
                (Ok(k), Some(first)) => assert_eq!(k.name(), *first, "{form}: {q}"),
                (Err(Error::NoMatch(_)), None) => {}
                (Err(Error::UnknownKey { key, .. }), _) => assert_eq!(key, "nothere"),
                // Constraints that contradict each other are reported as
                // such, and indeed nothing meets them.
                (Err(Error::Conflict(_)), None) => assert!(q.conflict().is_some()),
                (other, first) => panic!("{form}: {q}: {other:?} but expected {first:?}"),
            }
        }
    }
    // Members' metadata read from the table is the manifest's.
    for fam in [from_json, from_compact] {
        for member in fam.members().unwrap() {
            let b = m.blob(member.name()).unwrap();
            assert_eq!(member.meta(), &b.meta);
            assert_eq!(member.get("dtype"), b.meta.get("dtype").map(String::as_str));
        }
    }
}

/// A family of two groups, one recorded for gfx942 and one for gfx950,
/// selected for the device `arch` (`CK_JIT_ARCH`): (name, group, metadata).
fn two_arch_family(arch: &str) -> &'static FamilySlots {
    let mut m = Manifest::new("ck_jit_family_arch_test", "/nowhere");
    for (name, target) in [("attn_gfx9", "gfx942"), ("attn_gfx950", "gfx950")] {
        m.groups.push(Group {
            name: name.into(),
            compiler: "hipcc".into(),
            args: [&format!("--offload-arch={target}"), "{src}", "-o", "{out}"]
                .map(String::from)
                .to_vec(),
            cwd: None,
            symbol: SymbolSpec::Exact("entry".into()),
            depfile: true,
            family: Some("attn".into()),
            neutral: Default::default(),
        });
    }
    for (name, group, meta) in [
        ("a_d128_trload", 1, "hdim=128,arch=gfx950,trload=1"),
        ("b_d128_untagged", 1, "hdim=128"),
        ("c_d128", 0, "hdim=128,arch=gfx9,trload=0"),
        ("d_d64", 0, "hdim=64,arch=gfx9,trload=0"),
    ] {
        m.blobs.push(Blob {
            name: name.into(),
            source: format!("{name}.hip"),
            group,
            symbol: None,
            meta: meta
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        });
    }
    m.finish().unwrap();
    let mut c = config();
    c.arch = ck_jit_rt::arch::ArchChoice::parse(Some(arch));
    let rt: &'static Runtime = Box::leak(Box::new(Runtime::new(m, "arch test").with_config(c)));
    Box::leak(Box::new(FamilySlots::with_runtime(
        rt,
        "attn",
        SymbolOverride::Manifest,
    )))
}

#[test]
fn only_members_that_run_on_the_device_are_selected() {
    let q = Query::new().eq("hdim", 128);
    let names = |f: &'static FamilySlots| -> Vec<&str> {
        f.candidates(&q).unwrap().iter().map(|k| k.name()).collect()
    };
    // gfx942: the gfx950 tag and the group recorded for gfx950 are out,
    // though both sort first.
    let gfx942 = two_arch_family("gfx942");
    assert_eq!(gfx942.select(&q).unwrap().name(), "c_d128");
    assert_eq!(names(gfx942), ["c_d128"]);
    // gfx950: the gfx9 group's objects are for gfx942 only.
    let gfx950 = two_arch_family("gfx950");
    assert_eq!(names(gfx950), ["a_d128_trload", "b_d128_untagged"]);
    // No device: every member, as the compile keeps every target.
    assert_eq!(names(two_arch_family("all")).len(), 3);
    // Naming a member still reaches it; a query only others run says so.
    assert!(gfx942.by_name("a_d128_trload").is_ok());
    let e = gfx942
        .select(&Query::new().eq("trload", 1))
        .unwrap_err()
        .to_string();
    assert!(
        e.ends_with("2 members do not run on gfx942 (from CK_JIT_ARCH), 1 of which match"),
        "{e}"
    );
    // A family tag runs on every target of its major; nothing else does.
    let gfx90a = two_arch_family("gfx90a");
    assert!(
        gfx90a.select(&q).is_err(),
        "no group is recorded for gfx90a"
    );
    let mut sel = gfx942.selector(&Query::new()).unwrap();
    match sel.step(&q).unwrap() {
        ck_jit_rt::Step::Selectable(k) => assert_eq!(k.name(), "c_d128"),
        ck_jit_rt::Step::Flush(f) => panic!("{f}"),
    }
}
