//! The CK preset on real generator output: both CK versions of
//! `shared/data/ck`, every direction each generator offers (`-r 1`), every
//! blob recorded with what its declarations say; architectures passed to
//! the generator as `--targets` and each blob compiled for the requested
//! targets its preprocessor guard admits; CK's CMake options per direction; the generator run again only
//! when its inputs change; and what is reported when the tree, the
//! generator or Python fails.
#![cfg(feature = "build")]

mod real_ck;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ck_jit_build::manifest::{Manifest, SymbolSpec, MANIFEST_FILE};
use ck_jit_ck::rules::{Expr, RulesFile, Stmt};
use ck_jit_ck::{CkFmha, CkFmhaFiles, Error, Role, Vocabulary};
use ck_jit_rt::Query;
use real_ck::{ck_copy, ck_tree, Scratch, CK_2024, CK_2025};

fn preset(ck: &Path, out: &Path) -> CkFmha {
    let mut p = CkFmha::new();
    p.source(ck).out_dir(out).name("t").cargo_metadata(false);
    p
}

/// Every generated file is a blob, a dispatcher or nothing else; every
/// blob's metadata has every parameter of its traits template; names agree
/// with declarations; one group per kind and architecture tag.
fn whole_version(version: &str, archs: &[&str]) -> Option<(Manifest, CkFmhaSummary)> {
    let ck = ck_tree(version)?;
    let tmp = Scratch::new(&format!("preset-all-{version}"));
    let out = tmp.path().join("out");
    let mut p = preset(&ck, &out);
    for a in archs {
        p.arch(a);
    }
    let t0 = Instant::now();
    let files = p.try_write().unwrap();
    let first = t0.elapsed();
    // Generator stamps match now: this is what a rebuild costs.
    let t0 = Instant::now();
    let again = p.try_write().unwrap();
    let rebuild = t0.elapsed();
    assert!(again.regenerated.is_empty());
    let json = fs::read_to_string(files.manifest_path.as_ref().unwrap()).unwrap();
    eprintln!(
        "{version}: {} blobs in {} groups; first build {first:.2?} (generator included), \
         rebuild {rebuild:.2?}; manifest {} bytes",
        files.manifest().blobs.len(),
        files.manifest().groups.len(),
        json.len()
    );
    assert!(
        files.disagreements.is_empty(),
        "{:?}",
        &files.disagreements[..files.disagreements.len().min(5)]
    );
    let vocab = Vocabulary::read(&ck.join("example/ck_tile/01_fmha")).unwrap();
    let m = files.manifest();
    let mut kinds = BTreeMap::new();
    for (d, path) in files.blobs() {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let b = m.blob(name).unwrap();
        assert_eq!(b.meta, d.meta, "{name}");
        *kinds.entry(d.kind.clone()).or_insert(0usize) += 1;
        // Every parameter of the traits template is a key.
        let traits = d.traits.as_deref().and_then(|t| vocab.template(t));
        let traits = traits.unwrap_or_else(|| panic!("{name}: no declared traits"));
        for p in &traits.params {
            assert!(b.meta.contains_key(p.key()), "{name}: no {}", p.key());
        }
        let g = &m.groups[b.group as usize];
        assert_eq!(
            g.symbol,
            SymbolSpec::Prefix(format!("_Z{}{}I", d.entry.len(), d.entry)),
            "{name}"
        );
        let expected_group = match &d.arch {
            Some(a) => format!("{}_{a}", d.kind),
            None => d.kind.clone(),
        };
        assert_eq!(g.name, expected_group, "{name}");
    }
    let dispatchers: Vec<String> = files
        .dispatchers()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert!(
        dispatchers.iter().all(|d| d.ends_with("_api.cpp")),
        "{dispatchers:?}"
    );
    assert!(!files.files().iter().any(|f| f.role == Role::Host));
    // Every call of every dispatcher resolves to a recorded blob.
    let t0 = Instant::now();
    let check = files.check_dispatchers().unwrap();
    eprintln!(
        "{version}: {} dispatcher calls of blob specialisations checked in {:.2?}",
        check.calls,
        t0.elapsed()
    );
    assert!(
        check.calls > m.blobs.len() / 2,
        "{version}: only {} calls",
        check.calls
    );
    // The calls were read from each dispatcher as its direction was
    // generated, for every template the headers declare, and narrowed to
    // the blobs' templates once every blob was read: the same calls, in
    // the same runs, as reading each dispatcher for the blobs' templates
    // alone, against the specialisations the blob files define.
    let t0 = Instant::now();
    assert_eq!(
        real_ck::direct_check(&vocab, &files).sequences,
        check.sequences,
        "{version}"
    );
    eprintln!(
        "{version}: dispatchers read again for the blobs' templates alone in {:.2?}",
        t0.elapsed()
    );
    // A rebuild reads no blob: what it answers comes from the index the
    // first build kept, and is what the first build answered.
    assert_eq!(again.manifest(), files.manifest(), "{version}");
    assert_eq!(again.check_dispatchers().unwrap(), check, "{version}");
    assert_eq!(m.together.is_empty(), check.groups.is_empty(), "{version}");
    assert!(
        check.unresolved.is_empty(),
        "{version}: {} unresolved, e.g. {:?}",
        check.unresolved.len(),
        &check.unresolved[..check.unresolved.len().min(3)]
    );
    // What each call runs together: CK's bwd calls its three (or two)
    // kernels from one template, splitkv its split and combine kernels.
    let kind_of = |b: &str| m.groups[m.blob(b).unwrap().group as usize].name.clone();
    let mut with_kinds: BTreeMap<Vec<String>, usize> = BTreeMap::new();
    for g in check.groups.iter().filter(|g| g.len() > 1) {
        let mut kinds: Vec<String> = g.iter().map(|b| kind_of(b)).collect();
        kinds.sort();
        *with_kinds.entry(kinds).or_insert(0) += 1;
    }
    eprintln!("{version}: sets of blobs called together, by kinds: {with_kinds:?}");
    let mut together = m.clone();
    together.set_together(&check.groups).unwrap();
    let bwd_main: Vec<usize> = (0..m.blobs.len())
        .filter(|&i| kind_of(&m.blobs[i].name).starts_with("bwd_dq_dk_dv"))
        .collect();
    let known = bwd_main
        .iter()
        .filter(|&&i| together.companions(i).len() >= 2)
        .count();
    eprintln!(
        "{version}: {known} of {} bwd_dq_dk_dv blobs start their dot_do_o and convert_dq compiles with theirs",
        bwd_main.len()
    );
    if !bwd_main.is_empty() {
        assert!(
            with_kinds
                .keys()
                .any(|k| k.iter().any(|x| x.starts_with("bwd_dot_do_o"))
                    && k.iter().any(|x| x.starts_with("bwd_dq_dk_dv"))),
            "{version}: no bwd set: {with_kinds:?}"
        );
        assert!(known > 0, "{version}");
    }
    assert!(
        with_kinds
            .keys()
            .any(|k| k.iter().any(|x| x.starts_with("fwd_splitkv_combine"))
                && k.iter()
                    .any(|x| x.starts_with("fwd_splitkv") && !x.contains("combine"))),
        "{version}: no splitkv set: {with_kinds:?}"
    );
    // Which calls may wait for the next one of their operation: read from
    // the dispatchers' order of calls, with each template's return type
    // from the blobs.
    let mut returns: BTreeMap<String, String> = BTreeMap::new();
    for (_, p) in files.blobs() {
        let text = std::fs::read_to_string(p).unwrap();
        for s in ck_jit_ck::__private::specialisations(&text).unwrap() {
            returns.entry(s.template).or_insert(s.returns);
        }
    }
    let order = ck_jit_ck::__private::call_order(&check.sequences, |t| {
        returns.get(t).is_some_and(|r| r == "void")
    });
    let mut leading: BTreeMap<&str, usize> = BTreeMap::new();
    for k in &order.leading {
        *leading.entry(k.split_once('<').unwrap().0).or_insert(0) += 1;
    }
    eprintln!(
        "{version}: calls that may wait for the next, by template: {leading:?}; {} stubs in sequences",
        order.members.len()
    );
    // A kernel that runs first in its operation may wait; the last one
    // (convert_dq, the splitkv combine) and anything returning a value
    // (the get_name functions) never.
    assert!(
        leading.contains_key("fmha_fwd_splitkv_oneshot_"),
        "{version}: {leading:?}"
    );
    if !bwd_main.is_empty() {
        assert!(
            leading.contains_key("fmha_bwd_dot_do_o_oneshot_"),
            "{version}: {leading:?}"
        );
    }
    for t in leading.keys() {
        assert!(
            t.ends_with("oneshot_") && !t.contains("combine") && !t.contains("convert"),
            "{version}: {t} may wait, though no call follows it"
        );
    }
    // Every dot_do_o and split kernel a dispatcher calls with others.
    for k in &order.members {
        let t = k.split_once('<').unwrap().0;
        if t == "fmha_bwd_dot_do_o_oneshot_" || t == "fmha_fwd_splitkv_oneshot_" {
            assert!(order.leading.contains(k), "{version}: {k} does not wait");
        }
    }
    // Every dispatcher function reads as rules: every condition parsed,
    // every statement followed, every call a recorded blob.
    let t0 = Instant::now();
    let rules = files.dispatch_rules().unwrap();
    let mut leaves = 0;
    for r in &rules {
        let opaque: Vec<&Expr> = r
            .exprs
            .iter()
            .filter(|e| matches!(e, Expr::Opaque(_)))
            .collect();
        assert!(opaque.is_empty(), "{}: {opaque:?}", r.file);
        assert!(
            !r.functions.is_empty(),
            "{}: no function calls a blob",
            r.file
        );
        for f in &r.functions {
            leaves += count_leaves(&f.body, &r.file);
        }
        for b in &r.blobs {
            assert!(m.blob(b).is_some(), "{}: {b}", r.file);
        }
        assert_eq!(&RulesFile::parse(&r.to_json()).unwrap(), r);
    }
    eprintln!(
        "{version}: dispatch rules of {} dispatchers ({} functions, {leaves} calls, {} bytes) in {:.2?}",
        rules.len(),
        rules.iter().map(|r| r.functions.len()).sum::<usize>(),
        rules.iter().map(|r| r.to_json().len()).sum::<usize>(),
        t0.elapsed()
    );
    assert!(leaves > m.blobs.len() / 4, "{version}: {leaves} calls");
    for f in files.files() {
        if matches!(f.role, Role::Host) {
            panic!("{} was not classified", f.rel);
        }
    }
    Some((
        files.manifest().clone(),
        CkFmhaSummary {
            kinds,
            dispatchers,
            other_arch: files
                .files()
                .iter()
                .filter(|f| matches!(f.role, Role::OtherArch(_)))
                .count(),
        },
    ))
}

/// Blob calls in `body`; panics at a statement the build could not follow.
fn count_leaves(body: &[Stmt], file: &str) -> usize {
    body.iter()
        .map(|s| match s {
            Stmt::If { arms, otherwise } => {
                arms.iter()
                    .map(|a| count_leaves(&a.body, file))
                    .sum::<usize>()
                    + count_leaves(otherwise, file)
            }
            Stmt::Call { .. } => 1,
            Stmt::Unsupported { line, what } => panic!("{file}:{line}: {what}"),
            Stmt::Let { .. } | Stmt::Return { .. } | Stmt::Invoke { .. } => 0,
        })
        .sum()
}

struct CkFmhaSummary {
    kinds: BTreeMap<String, usize>,
    dispatchers: Vec<String>,
    other_arch: usize,
}

#[test]
fn ck_2024_10_every_blob_is_recorded_with_its_declared_traits() {
    let Some((m, s)) = whole_version(CK_2024, &["gfx90a"]) else {
        return;
    };
    assert_eq!(m.blobs.len(), 10_554);
    assert_eq!(
        s.kinds,
        BTreeMap::from(
            [
                ("bwd_convert_dq", 96),
                ("bwd_dot_do_o", 48),
                ("bwd_dq_dk_dv", 7680),
                ("fwd", 1458),
                ("fwd_appendkv", 195),
                ("fwd_splitkv", 978),
                ("fwd_splitkv_combine", 99)
            ]
            .map(|(k, n)| (k.to_string(), n))
        )
    );
    assert_eq!(s.dispatchers.len(), 4);
    let fwd = &m.groups.iter().find(|g| g.name == "fwd").unwrap();
    assert!(fwd.args.contains(&"--offload-arch=gfx90a".to_string()));
    let b = m
        .blob("fmha_bwd_d64_fp16_group_b32x128x64x32x64x32x32x64x64_r1x4x1_r4x1x1_r1x4x1_w16x16x32_w16x16x16_o1_kr_ktr_vr_psskddv_alibi_mask_dropout_wg16_deterministic")
        .unwrap();
    assert_eq!(b.meta["kind"], "bwd_dq_dk_dv");
    assert_eq!(b.meta["hdim"], "64");
    assert_eq!(b.meta["mode"], "group");
    assert_eq!(b.meta["bias"], "alibi");
    assert_eq!(b.meta["deterministic"], "true");
}

#[test]
fn ck_2025_11_every_direction_is_recorded_and_only_the_asked_architecture() {
    let Some((m, s)) = whole_version(CK_2025, &["gfx942"]) else {
        return;
    };
    // `--targets gfx942`: the generator writes no gfx950 blob at all.
    assert_eq!(s.other_arch, 0);
    for k in [
        "fwd",
        "fwd_splitkv",
        "fwd_splitkv_combine",
        "fwd_appendkv",
        "fwd_pagedkv",
        "batch_prefill",
        "bwd_dot_do_o",
        "bwd_dq_dk_dv",
        "bwd_convert_dq",
    ] {
        assert!(
            s.kinds.get(k).is_some_and(|n| *n > 0),
            "no {k}: {:?}",
            s.kinds
        );
    }
    assert_eq!(s.dispatchers.len(), 6, "{:?}", s.dispatchers);
    for b in &m.blobs {
        let g = &m.groups[b.group as usize];
        let arch_args: Vec<&String> = g
            .args
            .iter()
            .filter(|a| a.starts_with("--offload-arch"))
            .collect();
        assert_eq!(arch_args, ["--offload-arch=gfx942"], "{}", b.name);
        if let Some(a) = b.meta.get("arch") {
            assert_eq!(a, "gfx9", "{}", b.name);
        }
    }
    // The traits 2025 added are plain keys now, not an "extra" blob.
    let fwd = m.blobs.iter().find(|b| b.meta["kind"] == "fwd").unwrap();
    for key in [
        "logits", "skip", "trload", "arch", "lse", "dropout", "squant",
    ] {
        assert!(fwd.meta.contains_key(key), "{}: no {key}", fwd.name);
    }
    // A fully specified forward query gets no trait it did not ask for:
    // logits soft-cap, sink, skip and quantisation are held to their
    // neutral values unless mentioned.
    let base = Query::new()
        .eq("dtype", "fp16")
        .eq("mode", "batch")
        .eq("hdim", "128")
        .eq("bias", "no")
        .eq("mask", "no")
        .eq("lse", "false")
        .eq("dropout", "false");
    let chosen = base.select_in(&m, "fwd").unwrap();
    for (k, v) in [("logits", "false"), ("skip", "false"), ("squant", "false")] {
        assert_eq!(chosen.meta[k], v, "{}: {k}", chosen.name);
    }
    let fwd_groups: Vec<_> = m.groups.iter().filter(|g| g.family() == "fwd").collect();
    assert!(
        fwd_groups.iter().all(|g| g.neutral["logits"] == "false"),
        "{fwd_groups:?}"
    );
    // Asked for, the soft-cap variant is what comes back.
    let capped = base
        .clone()
        .eq("logits", "true")
        .select_in(&m, "fwd")
        .unwrap();
    assert_eq!(capped.meta["logits"], "true");
    let dot = m
        .blobs
        .iter()
        .find(|b| b.meta["kind"] == "bwd_dot_do_o")
        .unwrap();
    assert!(
        dot.meta.contains_key("hdim") && dot.meta.contains_key("dtype"),
        "{:?}",
        dot.meta
    );
}

#[test]
fn two_architectures_go_to_their_own_families() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-archs");
    let files = preset(&ck, &tmp.path().join("out"))
        .direction("fwd")
        .filter("*_d128_fp16_batch*")
        .arch("gfx942")
        .arch("gfx950")
        .try_manifest()
        .unwrap();
    let m = files.manifest();
    let mut seen = BTreeSet::new();
    for b in &m.blobs {
        let g = &m.groups[b.group as usize];
        let arch = b.meta["arch"].as_str();
        let want = match arch {
            "gfx9" => "--offload-arch=gfx942",
            "gfx950" => "--offload-arch=gfx950",
            other => panic!("{}: arch {other}", b.name),
        };
        let got: Vec<&String> = g
            .args
            .iter()
            .filter(|a| a.starts_with("--offload-arch"))
            .collect();
        assert_eq!(got, [want], "{}", b.name);
        assert!(b.name.ends_with(&format!("_{arch}")));
        seen.insert(arch.to_string());
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
}

/// The `--offload-arch=` flags of a blob's group.
fn offload_archs(m: &Manifest, blob: &str) -> Vec<String> {
    let g = &m.groups[m.blob(blob).unwrap().group as usize];
    g.args
        .iter()
        .filter_map(|a| a.strip_prefix("--offload-arch="))
        .map(str::to_string)
        .collect()
}

/// The architecture guard a generated blob opens with, as CK writes it.
fn guard_line(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap();
    text.lines()
        .find(|l| l.starts_with("#if"))
        .unwrap_or_else(|| panic!("{}: no #if", path.display()))
        .to_string()
}

#[test]
fn gfx950_alone_records_the_gfx9_splitkv_and_appendkv_blobs_its_device_runs() {
    // `--targets gfx950` still writes `_gfx9` split-KV and append-KV blobs
    // guarded by `defined(__gfx9__)`: gfx950 defines it, and the split-KV
    // dispatcher built for gfx950 calls them.
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-gfx950");
    let out = tmp.path().join("out");
    // The generator's filter differs by direction: one run each, then all
    // three directions read together, as one build with every direction
    // reads them (the `_gfx950` forward blobs beside the `_gfx9` ones).
    for direction in ["fwd", "fwd_splitkv", "fwd_appendkv"] {
        generate_d128_fp16(&ck, &out, direction, &["gfx950"]);
    }
    let files = preset(&ck, &tmp.path().join("out-read"))
        .generated_dir(out.join("ck_fmha"))
        .arch("gfx950")
        .try_manifest()
        .unwrap();
    let m = files.manifest();
    let mut kinds: BTreeMap<(String, Option<String>), usize> = BTreeMap::new();
    for (d, path) in files.blobs() {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let guard = guard_line(path);
        let want = match d.arch.as_deref() {
            Some("gfx9") => "(defined(__gfx9__))",
            Some("gfx950") => "(defined(__gfx950__))",
            other => panic!("{name}: arch {other:?}"),
        };
        assert!(guard.ends_with(want), "{name}: {guard}");
        assert_eq!(offload_archs(m, name), ["gfx950"], "{name}");
        *kinds.entry((d.kind.clone(), d.arch.clone())).or_default() += 1;
    }
    eprintln!("gfx950 alone, blobs by kind and arch: {kinds:?}");
    for k in ["fwd_splitkv", "fwd_splitkv_combine", "fwd_appendkv"] {
        let n = kinds.get(&(k.to_string(), Some("gfx9".to_string())));
        assert!(n.is_some_and(|n| *n > 0), "no {k}: {kinds:?}");
    }
    assert_eq!(files.left_out().count(), 0);
    // Every blob the gfx950 dispatchers call is recorded.
    let check = files.check_dispatchers().unwrap();
    assert!(check.calls > 0);
    assert!(
        check.unresolved.is_empty(),
        "{} unresolved, e.g. {:?}",
        check.unresolved.len(),
        &check.unresolved[..check.unresolved.len().min(3)]
    );
}

#[test]
fn blobs_no_requested_target_keeps_are_one_warning_per_kind_with_count_example_and_condition() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-left-out");
    let out = tmp.path().join("out");
    for direction in ["fwd", "fwd_appendkv"] {
        generate_d128_fp16(&ck, &out, direction, &["gfx942", "gfx950"]);
    }
    let mut p = preset(&ck, &tmp.path().join("out-950"));
    p.generated_dir(out.join("ck_fmha"))
        .arch("gfx950")
        .cargo_metadata(true);
    let warnings = |lines: &[u8]| -> Vec<String> {
        String::from_utf8_lossy(lines)
            .lines()
            .filter_map(|l| l.strip_prefix("cargo:warning="))
            .filter(|l| l.contains("kept by none of the requested targets"))
            .map(str::to_string)
            .collect()
    };
    let mut lines = Vec::new();
    let files = p.try_write_with_output(&mut lines).unwrap();
    let left_out: Vec<&Path> = files.left_out().collect();
    // Only the gfx942-only forward blobs, guarded by
    // `defined(__gfx9__) && !defined(__gfx950__)`, are left out.
    assert!(!left_out.is_empty());
    let w = warnings(&lines);
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(
        w[0].starts_with(&format!(
            "ck-jit-ck: {} fwd blobs kept by none",
            left_out.len()
        )),
        "{}",
        w[0]
    );
    assert!(w[0].contains("(gfx950)"), "{}", w[0]);
    assert!(
        w[0].contains("!defined(__gfx950__)")
            && w[0].contains("#if !defined(__HIP_DEVICE_COMPILE__)"),
        "{}",
        w[0]
    );
    let example = left_out
        .iter()
        .map(|p| p.file_name().unwrap().to_str().unwrap())
        .find(|n| w[0].contains(*n));
    assert!(example.is_some(), "no left-out blob named in {}", w[0]);
    assert_eq!(
        files.left_out_kinds,
        w.iter()
            .map(|l| l["ck-jit-ck: ".len()..].to_string())
            .collect::<Vec<_>>()
    );
    // The forward dispatcher, generated for both targets, calls the
    // left-out gfx942-only kernels: making it lazy for gfx950 alone is an
    // error naming the kind, not a library that misses them at run time.
    match ck_jit_ck::write_stubs(&files, &tmp.path().join("stubs")).unwrap_err() {
        Error::LeftOutCalls { kinds } => {
            let names: Vec<&str> = kinds.iter().map(|(k, _, _)| k.as_str()).collect();
            assert_eq!(names, ["fwd"], "{kinds:?}");
            assert!(kinds[0].1 > 0);
        }
        other => panic!("{other}"),
    }
    // A rerun that reuses everything says it again.
    let mut again = Vec::new();
    let files = p.try_write_with_output(&mut again).unwrap();
    assert!(files.reused());
    assert_eq!(warnings(&again), w);
}

/// Runs the generator for one direction, fp16 d128 blobs only (split-KV's
/// generator takes a `combine@split` pair of patterns).
fn generate_d128_fp16(ck: &Path, out: &Path, direction: &str, archs: &[&str]) -> CkFmhaFiles {
    let pattern = "*_d128_fp16_*";
    let filter = if direction == "fwd_splitkv" {
        format!("{pattern}@{pattern}")
    } else {
        pattern.to_string()
    };
    let mut p = preset(ck, out);
    p.direction(direction).filter(&filter);
    for a in archs {
        p.arch(a);
    }
    p.try_manifest().unwrap()
}

#[test]
fn with_gfx942_and_gfx950_each_blob_is_compiled_for_the_targets_its_guard_admits() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-guards");
    let out = tmp.path().join("out");
    for direction in ["fwd", "fwd_splitkv", "fwd_appendkv"] {
        generate_d128_fp16(&ck, &out, direction, &["gfx942", "gfx950"]);
    }
    let generated = out.join("ck_fmha");
    let files = preset(&ck, &tmp.path().join("out-both"))
        .generated_dir(&generated)
        .arch("gfx942")
        .arch("gfx950")
        .try_manifest()
        .unwrap();
    let m = files.manifest();
    // Blobs by (guard, kind), and the groups each guard went to.
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (d, path) in files.blobs() {
        let name = path.file_stem().unwrap().to_str().unwrap();
        let guard = guard_line(path);
        let guard = guard
            .trim_start_matches("#if !defined(__HIP_DEVICE_COMPILE__) || ")
            .to_string();
        let want: &[&str] = match guard.as_str() {
            "(defined(__gfx9__))" => &["gfx942", "gfx950"],
            "(defined(__gfx9__) && !defined(__gfx950__))" => &["gfx942"],
            "(defined(__gfx950__))" => &["gfx950"],
            other => panic!("{name}: guard {other}"),
        };
        assert_eq!(offload_archs(m, name), want, "{name}: {guard}");
        let g = &m.groups[m.blob(name).unwrap().group as usize];
        groups
            .entry(guard.clone())
            .or_default()
            .insert(g.name.clone());
        *seen.entry((guard, d.kind.clone())).or_default() += 1;
    }
    eprintln!("gfx942+gfx950, blobs by guard and kind: {seen:?}; groups: {groups:?}");
    let kinds_of = |guard: &str| -> BTreeSet<&str> {
        seen.keys()
            .filter(|(g, _)| g == guard)
            .map(|(_, k)| k.as_str())
            .collect()
    };
    assert_eq!(
        kinds_of("(defined(__gfx9__))"),
        BTreeSet::from(["fwd_appendkv", "fwd_splitkv", "fwd_splitkv_combine"])
    );
    assert_eq!(
        kinds_of("(defined(__gfx9__) && !defined(__gfx950__))"),
        BTreeSet::from(["fwd"])
    );
    assert_eq!(kinds_of("(defined(__gfx950__))"), BTreeSet::from(["fwd"]));
    // Blobs of one kind compiled for different targets are in different
    // groups, the families still one per kind.
    let fwd: Vec<_> = m.groups.iter().filter(|g| g.family() == "fwd").collect();
    assert_eq!(fwd.len(), 2, "{fwd:?}");
    let check = files.check_dispatchers().unwrap();
    assert!(check.unresolved.is_empty(), "{:?}", &check.unresolved[..1]);

    // The same files read for gfx950 alone: the gfx942-only forward blobs
    // are left out, counted, and everything else is compiled for gfx950.
    let only = preset(&ck, &tmp.path().join("out-950"))
        .generated_dir(&generated)
        .arch("gfx950")
        .try_manifest()
        .unwrap();
    let left_out = only.left_out().count();
    let gfx942_only = seen
        .iter()
        .filter(|((g, _), _)| g.contains("!defined(__gfx950__)"))
        .map(|(_, n)| n)
        .sum::<usize>();
    assert_eq!(left_out, gfx942_only);
    assert_eq!(only.manifest().blobs.len(), m.blobs.len() - gfx942_only);
    for b in &only.manifest().blobs {
        assert_eq!(
            offload_archs(only.manifest(), &b.name),
            ["gfx950"],
            "{}",
            b.name
        );
    }
}

#[test]
fn a_guard_on_the_compilers_version_is_an_error_naming_the_blob_line_and_macro() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-bad-guard");
    let out = tmp.path().join("out");
    let files = generate_d128_fp16(&ck, &out, "fwd_appendkv", &["gfx942"]);
    let (_, blob) = files.blobs().next().unwrap();
    let text = fs::read_to_string(blob).unwrap();
    let line = guard_line(blob);
    fs::write(
        blob,
        text.replacen(
            &line,
            "#if !defined(__HIP_DEVICE_COMPILE__) || (__clang_major__ >= 20)",
            1,
        ),
    )
    .unwrap();
    let e = preset(&ck, &tmp.path().join("out-read"))
        .generated_dir(out.join("ck_fmha"))
        .arch("gfx942")
        .try_manifest()
        .unwrap_err();
    let want_line = text.lines().position(|l| l == line).unwrap() + 1;
    match &e {
        Error::Parse { file, line, .. } => {
            assert_eq!(file.as_deref(), Some(blob));
            assert_eq!(*line, want_line);
        }
        other => panic!("{other:?}"),
    }
    let msg = e.to_string();
    let name = blob.file_name().unwrap().to_str().unwrap();
    assert!(msg.contains(name), "{msg}");
    assert!(msg.contains("macro '__clang_major__'"), "{msg}");
    assert!(msg.contains("not known at build time"), "{msg}");
}

#[test]
fn true_in_a_guard_keeps_the_blob_and_an_unterminated_ifdef_is_an_error_at_its_line() {
    // Two of issue 40's cases, through the preset: a generator writing
    // `|| (true)` (C++ preprocessing reads it as 1), and one writing an
    // `#ifdef __clang__` without its `#endif` (the compiler rejects it).
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-true-unterminated");
    let out = tmp.path().join("out");
    let files = generate_d128_fp16(&ck, &out, "fwd_appendkv", &["gfx942"]);
    let (_, blob) = files.blobs().next().unwrap();
    let blob = blob.to_path_buf();
    let name = blob.file_stem().unwrap().to_str().unwrap().to_string();
    let text = fs::read_to_string(&blob).unwrap();
    let line = guard_line(&blob);
    let read = |tag: &str| {
        preset(&ck, &tmp.path().join(tag))
            .generated_dir(out.join("ck_fmha"))
            .arch("gfx942")
            .arch("gfx1100")
            .try_manifest()
    };
    fs::write(
        &blob,
        text.replacen(&line, "#if !defined(__HIP_DEVICE_COMPILE__) || (true)", 1),
    )
    .unwrap();
    let files = read("out-true").unwrap();
    assert_eq!(
        offload_archs(files.manifest(), &name),
        ["gfx942", "gfx1100"],
        "true keeps it for every target"
    );
    let at = text.lines().position(|l| l == line).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.insert(at, "#ifdef __clang__");
    fs::write(&blob, lines.join("\n") + "\n").unwrap();
    let e = read("out-unterminated").unwrap_err();
    match &e {
        Error::Parse { file, line, why } => {
            assert_eq!(file.as_deref(), Some(blob.as_path()));
            assert_eq!(*line, at + 1);
            assert!(why.contains("unterminated #ifdef"), "{why}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn cks_cmake_options_are_read_per_version_and_direction() {
    for version in [CK_2024, CK_2025] {
        let Some(ck) = ck_tree(version) else { return };
        let tmp = Scratch::new("preset-flags");
        let files = preset(&ck, &tmp.path().join("out"))
            .direction("fwd")
            .direction("bwd")
            .filter("*_d64_*")
            .arch("gfx90a")
            .flag("-fvisibility=hidden")
            .flag("-mllvm")
            .flag("-enable-post-misched=0")
            .define("EXTRA", Some("1"))
            .try_manifest()
            .unwrap();
        let group = |kind: &str| {
            files
                .manifest()
                .groups
                .iter()
                .find(|g| g.name.starts_with(kind))
                .unwrap_or_else(|| panic!("{version}: no {kind} group"))
                .clone()
        };
        let fwd = group("fwd");
        let bwd = group("bwd_dq_dk_dv");
        for f in [
            "-O3",
            "--offload-arch=gfx90a",
            "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
            "-fgpu-flush-denormals-to-zero",
            "-Wno-float-equal",
            "-Wno-undefined-func-template",
            "-mllvm",
            "-enable-post-misched=0",
            "-DEXTRA=1",
            "-fPIC",
            "-shared",
        ] {
            assert!(
                fwd.args.iter().any(|a| a == f),
                "{version} fwd lacks {f}: {:?}",
                fwd.args
            );
        }
        assert!(
            fwd.args.iter().any(|a| a.ends_with("/include")),
            "{:?}",
            fwd.args
        );
        assert!(
            !bwd.args.iter().any(|a| a.contains("FAST_EXP2")),
            "{version}"
        );
        assert!(bwd
            .args
            .iter()
            .any(|a| a == "-fgpu-flush-denormals-to-zero"));
        // 2025's CMake adds this for backward sources; 2024's does not.
        assert_eq!(
            bwd.args
                .iter()
                .any(|a| a == "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3"),
            version == CK_2025,
            "{version}: {:?}",
            bwd.args
        );
        assert!(!files.manifest().to_json().contains("visibility"));
        // Options of CK's other example targets (fwd_v3) are not the blobs'.
        assert!(
            !fwd.args.iter().any(|a| a == "--save-temps"),
            "{version}: {:?}",
            fwd.args
        );
        assert!(fwd.depfile);
    }
}

/// The forward and backward groups of `ck` (d64 only, for speed), with
/// the `cargo:` lines the preset printed.
fn fwd_bwd_groups(ck: &Path, out: &Path, hip: Option<&str>) -> (Manifest, String) {
    let mut p = preset(ck, out);
    p.direction("fwd")
        .direction("bwd")
        .filter("*_d64_*")
        .arch("gfx90a")
        .cargo_metadata(true);
    if let Some(v) = hip {
        p.hip_version(v);
    }
    let mut lines = Vec::new();
    let files = p
        .try_write_with_output(&mut lines)
        .unwrap_or_else(|e| panic!("{e}"));
    (files.manifest().clone(), String::from_utf8(lines).unwrap())
}

/// The `-std=` flags of every group, one set for all of them.
fn standards(m: &Manifest) -> BTreeSet<String> {
    assert!(!m.groups.is_empty());
    m.groups
        .iter()
        .flat_map(|g| g.args.iter().filter(|a| a.starts_with("-std=")).cloned())
        .collect()
}

#[test]
fn ck_2025_blobs_compile_with_the_cxx_standard_of_cks_top_level_cmake() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-std-2025");
    let (m, lines) = fwd_bwd_groups(&ck, &tmp.path().join("out"), None);
    // Every group, forward and backward, once each: c++20, never c++17.
    assert_eq!(standards(&m), BTreeSet::from(["-std=c++20".to_string()]));
    for g in &m.groups {
        assert_eq!(
            g.args.iter().filter(|a| a.starts_with("-std=")).count(),
            1,
            "{}: {:?}",
            g.name,
            g.args
        );
    }
    // The file the standard came from is watched; nothing was assumed.
    assert!(
        lines.contains(&format!(
            "cargo:rerun-if-changed={}\n",
            ck.join("CMakeLists.txt").display()
        )),
        "{lines}"
    );
    assert!(!lines.contains("c++17"), "{lines}");
}

#[test]
fn a_ck_tree_without_a_top_level_cmake_file_compiles_with_cxx17_and_says_so() {
    let Some(ck) = ck_tree(CK_2024) else { return };
    // The 2024 tree here is `include/` and `example/` only.
    assert!(!ck.join("CMakeLists.txt").exists());
    let tmp = Scratch::new("preset-std-2024");
    let (m, lines) = fwd_bwd_groups(&ck, &tmp.path().join("out"), None);
    assert_eq!(standards(&m), BTreeSet::from(["-std=c++17".to_string()]));
    let warning = format!(
        "cargo:warning=ck-jit-ck: '{}' does not exist: CK's FMHA blobs are recorded with \
         -std=c++17\n",
        ck.join("CMakeLists.txt").display()
    );
    assert!(lines.contains(&warning), "{lines}");
    assert_eq!(lines.matches("cargo:warning=").count(), 1, "{lines}");
    assert!(
        !lines.contains("CMakeLists.txt\n"),
        "a missing file is not watched: {lines}"
    );
}

#[test]
fn the_cxx_standard_is_read_from_the_top_level_cmake_file_of_the_tree() {
    let tmp = Scratch::new("preset-std-edited");
    let Some(ck) = ck_copy(CK_2025, &tmp.path().join("ck")) else {
        return;
    };
    let top = ck.join("CMakeLists.txt");
    let text = fs::read_to_string(&top).unwrap();
    let from = r#"set(CK_CXX_STANDARD "20" CACHE"#;
    assert!(text.contains(from));
    fs::write(
        &top,
        text.replace(from, r#"set(CK_CXX_STANDARD "23" CACHE"#),
    )
    .unwrap();
    let (m, _) = fwd_bwd_groups(&ck, &tmp.path().join("out"), None);
    assert_eq!(standards(&m), BTreeSet::from(["-std=c++23".to_string()]));

    // A file that sets no standard: the one assumed, and a warning.
    fs::write(&top, text.replace("set(CMAKE_CXX_STANDARD ", "set(UNUSED ")).unwrap();
    let (m, lines) = fwd_bwd_groups(&ck, &tmp.path().join("out"), None);
    assert_eq!(standards(&m), BTreeSet::from(["-std=c++17".to_string()]));
    assert!(
        lines.contains(&format!(
            "cargo:warning=ck-jit-ck: '{}' sets no C++ standard",
            top.display()
        )),
        "{lines}"
    );
}

#[test]
fn cks_hip_version_flags_are_recorded_only_for_a_hip_version_given() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-hip-flags");
    let has = |args: &[String], pair: [&str; 2]| args.windows(2).any(|w| w == pair);
    // Unknown compiler: none of them (one it lacks fails every compile).
    let (m, _) = fwd_bwd_groups(&ck, &tmp.path().join("out"), None);
    for g in &m.groups {
        assert!(
            !g.args
                .iter()
                .any(|a| a == "-mllvm" || a == "-fno-offload-uniform-block"),
            "{}: {:?}",
            g.name,
            g.args
        );
    }
    // ROCm 6.1's HIP: what CK 2025-11's CMake adds for it, on every group,
    // before the example's own options; not the ones for HIP > 6.2.41132.
    let (m, _) = fwd_bwd_groups(&ck, &tmp.path().join("out"), Some("6.1.40091"));
    for g in &m.groups {
        let a = &g.args;
        assert!(a.iter().any(|f| f == "-fno-offload-uniform-block"), "{a:?}");
        assert!(has(a, ["-mllvm", "--lsr-drop-solution=1"]), "{a:?}");
        assert!(has(a, ["-mllvm", "-enable-post-misched=0"]), "{a:?}");
        assert!(
            !a.iter().any(|f| f.contains("amdgpu-function-calls")),
            "{a:?}"
        );
        assert!(
            !a.iter().any(|f| f.contains("coerce-illegal-types")),
            "{a:?}"
        );
        let pos = |f: &str| a.iter().position(|x| x == f);
        assert!(
            pos("-fno-offload-uniform-block") < pos("-Wno-float-equal"),
            "{a:?}"
        );
    }
    let (m, _) = fwd_bwd_groups(&ck, &tmp.path().join("out"), Some("6.4.43483-0"));
    assert!(has(
        &m.groups[0].args,
        ["-mllvm", "-amdgpu-function-calls=false"]
    ));
    // A version that is not one is an error naming it, not a guess.
    let err = preset(&ck, &tmp.path().join("out"))
        .direction("fwd")
        .filter("*_d64_*")
        .hip_version("rocm-6")
        .try_manifest()
        .unwrap_err();
    assert!(
        matches!(&err, Error::HipVersion { version } if version == "rocm-6"),
        "{err}"
    );
    assert!(err.to_string().contains("'rocm-6'"), "{err}");
}

#[test]
fn a_root_holding_ck_and_the_generated_files_makes_everything_relocatable() {
    let tmp = Scratch::new("preset-root");
    let Some(ck) = ck_copy(CK_2025, &tmp.path().join("third_party/ck")) else {
        return;
    };
    let files = preset(&ck, &tmp.path().join("out"))
        .root(tmp.path())
        .direction("fwd_appendkv")
        .filter("*_d128_*")
        .arch("gfx942")
        .try_manifest()
        .unwrap();
    let g = &files.manifest().groups;
    assert!(
        g.iter().all(|g| g.name.starts_with("fwd_appendkv")),
        "{g:?}"
    );
    assert!(g[0]
        .args
        .contains(&"-I{root}/third_party/ck/include".to_string()));
    assert!(g[0]
        .args
        .contains(&"-I{root}/out/ck_fmha/fwd_appendkv".to_string()));
    assert!(files.manifest().blobs[0]
        .source
        .starts_with("out/ck_fmha/fwd_appendkv/"));
    assert_eq!(files.dispatchers().count(), 1);

    let err = preset(&ck, &tmp.path().join("out"))
        .root(tmp.path().join("third_party"))
        .direction("fwd_appendkv")
        .try_manifest()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("must contain the generated directory"),
        "{err}"
    );
}

#[test]
fn the_generator_runs_once_per_direction_and_again_only_when_its_inputs_change() {
    let tmp = Scratch::new("preset-codegen");
    // An aiter tree: CK is found inside.
    let Some(ck) = ck_copy(
        CK_2025,
        &tmp.path().join("aiter/3rdparty/composable_kernel"),
    ) else {
        return;
    };
    let out = tmp.path().join("out");
    let mut p = CkFmha::new();
    p.source(tmp.path().join("aiter"))
        .direction("fwd")
        .direction("batch_prefill")
        .filter("*_d128_*")
        .arch("gfx942")
        .out_dir(&out)
        .name("t");
    let mut lines = Vec::new();
    let files = p.try_write_with_output(&mut lines).unwrap();
    let lines = String::from_utf8(lines).unwrap();
    assert_eq!(files.ck_root.as_deref(), Some(ck.as_path()));
    assert_eq!(files.regenerated, ["batch_prefill", "fwd"]);
    let m = files.manifest();
    assert!(m.blobs.iter().all(|b| b.name.contains("_d128_")));
    assert!(m.blobs.iter().any(|b| b.meta["kind"] == "batch_prefill"));
    assert_eq!(files.dispatchers().count(), 2);
    // Cargo watches the generator's inputs, never the generated files.
    let example = ck.join("example/ck_tile/01_fmha");
    assert!(lines.contains(&format!("cargo:rerun-if-changed={}\n", example.display())));
    assert!(!lines.contains(&fs::canonicalize(&out).unwrap().display().to_string()));

    // Unchanged inputs: no run.
    let again = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(again.regenerated.is_empty());
    assert_eq!(again.manifest(), files.manifest());

    // A changed codegen script: both directions run again.
    let script = example.join("codegen/cpp_symbol_map.py");
    let f = fs::File::options().write(true).open(&script).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let third = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert_eq!(third.regenerated, ["batch_prefill", "fwd"]);

    // Another filter: files of the old one do not linger.
    p.filter("*_d64_*");
    let fourth = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(!fourth.manifest().blobs.is_empty());
    assert!(fourth
        .manifest()
        .blobs
        .iter()
        .all(|b| b.name.contains("_d64_")));
    let written = fs::read_to_string(out.join(MANIFEST_FILE)).unwrap();
    assert_eq!(Manifest::from_json(&written).unwrap(), *fourth.manifest());
}

#[test]
fn a_rerun_with_every_input_as_it_was_reads_nothing_and_gives_the_same_files() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-reuse");
    let out = tmp.path().join("out");
    let mut p = CkFmha::new();
    p.source(&ck)
        .direction("fwd")
        .direction("bwd")
        .filter("*_d128_*")
        .arch("gfx942")
        .out_dir(&out)
        .name("t");
    let mut lines = Vec::new();
    let first = p.try_write_with_output(&mut lines).unwrap();
    assert!(!first.reused());
    let first_stubs = ck_jit_ck::write_stubs(&first, &tmp.path().join("stubs-1")).unwrap();

    // A blob's bytes replaced, its size and mtime kept: a rerun that read
    // it would fail to describe it; this one trusts the listing, as the
    // kept index does, and reads no generated file.
    let blob = first
        .blobs()
        .next()
        .map(|(_, path)| path.to_path_buf())
        .unwrap();
    let (text, mtime) = (
        fs::read(&blob).unwrap(),
        fs::metadata(&blob).unwrap().modified().unwrap(),
    );
    fs::write(&blob, vec![b'#'; text.len()]).unwrap();
    let set_mtime = |t: SystemTime| {
        fs::File::options()
            .write(true)
            .open(&blob)
            .unwrap()
            .set_modified(t)
            .unwrap()
    };
    set_mtime(mtime);
    let mut again_lines = Vec::new();
    let again = p.try_write_with_output(&mut again_lines).unwrap();
    assert!(again.reused() && again.regenerated.is_empty());
    assert_eq!(
        String::from_utf8(again_lines).unwrap(),
        String::from_utf8(lines.clone()).unwrap(),
        "a reuse prints what the build it reuses printed"
    );
    assert_eq!(again.manifest(), first.manifest());
    assert_eq!(again.files(), first.files());
    assert_eq!(again.manifest_path, first.manifest_path);
    assert_eq!(
        again.check_dispatchers().unwrap(),
        first.check_dispatchers().unwrap()
    );
    let again_stubs = ck_jit_ck::write_stubs(&again, &tmp.path().join("stubs-2")).unwrap();
    assert_eq!(again_stubs.together, first_stubs.together);
    assert_eq!(again_stubs.specialisations, first_stubs.specialisations);
    fs::write(&blob, &text).unwrap();
    set_mtime(mtime);

    // The manifest changed behind the build's back: written again.
    let manifest = out.join(MANIFEST_FILE);
    fs::write(&manifest, "{}").unwrap();
    let third = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(!third.reused());
    let written = fs::read_to_string(&manifest).unwrap();
    assert_eq!(Manifest::from_json(&written).unwrap(), *first.manifest());
    assert_eq!(third.manifest(), first.manifest());

    // A setting changed: a new manifest, not the old one.
    p.flag("-DCK_JIT_REUSE_TEST=1");
    let fourth = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(!fourth.reused());
    assert!(fourth.manifest().groups[0]
        .args
        .iter()
        .any(|a| a == "-DCK_JIT_REUSE_TEST=1"));
    let written = fs::read_to_string(&manifest).unwrap();
    assert_eq!(Manifest::from_json(&written).unwrap(), *fourth.manifest());

    // The kept index gone: the files are read again, nothing is reused
    // that would need it.
    fs::remove_file(out.join("ck_jit_ck_index_detail.json")).unwrap();
    let fifth = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(!fifth.reused());
    assert_eq!(fifth.manifest(), fourth.manifest());
    // A build asked for the manifest alone never reuses.
    assert!(!p.try_manifest().unwrap().reused());
    assert_eq!(
        fifth.check_dispatchers().unwrap(),
        first.check_dispatchers().unwrap()
    );
}

#[test]
fn a_rerun_finds_the_rules_and_stubs_it_made_by_their_stamps_and_reads_no_dispatcher() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-derived");
    let (out, rules_dir, stubs_dir) = (
        tmp.path().join("out"),
        tmp.path().join("rules"),
        tmp.path().join("stubs"),
    );
    let mut p = CkFmha::new();
    p.source(&ck)
        .direction("fwd")
        .direction("bwd")
        .filter("*_d128_*")
        .arch("gfx942")
        .out_dir(&out)
        .name("t");
    let first = p.try_write_with_output(&mut Vec::new()).unwrap();
    let rules = first.write_rules(&rules_dir).unwrap();
    let stubs = ck_jit_ck::write_stubs(&first, &stubs_dir).unwrap();
    let texts = |paths: &[PathBuf]| -> Vec<String> {
        paths
            .iter()
            .map(|f| fs::read_to_string(f).unwrap())
            .collect()
    };
    let (rules_text, stubs_text) = (texts(&rules), texts(&stubs.files));

    // Every dispatcher's bytes replaced, sizes and mtimes kept: the manifest
    // is reused, and rules or stubs made again would read the dispatchers.
    let dispatchers: Vec<(PathBuf, Vec<u8>, SystemTime)> = first
        .dispatchers()
        .map(|d| {
            let meta = fs::metadata(d).unwrap();
            (
                d.to_path_buf(),
                fs::read(d).unwrap(),
                meta.modified().unwrap(),
            )
        })
        .collect();
    let put = |path: &Path, bytes: &[u8], mtime: SystemTime| {
        fs::write(path, bytes).unwrap();
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(mtime).unwrap();
    };
    for (d, text, mtime) in &dispatchers {
        put(d, &vec![b' '; text.len()], *mtime);
    }
    let again = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(again.reused());
    assert_eq!(again.write_rules(&rules_dir).unwrap(), rules);
    assert_eq!(ck_jit_ck::write_stubs(&again, &stubs_dir).unwrap(), stubs);
    assert_eq!(texts(&rules), rules_text);
    assert_eq!(texts(&stubs.files), stubs_text);
    // Elsewhere, nothing is kept: made again, from the blank dispatchers.
    assert!(again.write_rules(tmp.path().join("rules-2")).is_err());
    for (d, text, mtime) in &dispatchers {
        put(d, text, *mtime);
    }

    // An output edited since: made again, as it was.
    fs::write(&rules[0], "{}").unwrap();
    fs::write(&stubs.files[0], "").unwrap();
    let third = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(third.reused());
    assert_eq!(third.write_rules(&rules_dir).unwrap(), rules);
    assert_eq!(ck_jit_ck::write_stubs(&third, &stubs_dir).unwrap(), stubs);
    assert_eq!(texts(&rules), rules_text);
    assert_eq!(texts(&stubs.files), stubs_text);

    // Another setting: another manifest, and the kept outputs are not its.
    p.filter("*_d64_*");
    let fourth = p.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(!fourth.reused());
    assert_ne!(ck_jit_ck::write_stubs(&fourth, &stubs_dir).unwrap(), stubs);
}

#[test]
fn a_direction_the_generator_does_not_offer_is_an_error_naming_those_it_does() {
    let Some(ck) = ck_tree(CK_2024) else { return };
    let tmp = Scratch::new("preset-direction");
    let e = preset(&ck, tmp.path())
        .direction("batch_prefill")
        .try_manifest()
        .unwrap_err();
    let msg = e.to_string();
    assert!(msg.contains("no direction 'batch_prefill'"), "{msg}");
    assert!(msg.contains("bwd, fwd, fwd_appendkv, fwd_splitkv"), "{msg}");
}

#[test]
fn a_filter_matching_nothing_is_an_error_not_an_empty_manifest() {
    let Some(ck) = ck_tree(CK_2025) else { return };
    let tmp = Scratch::new("preset-empty");
    let e = preset(&ck, tmp.path())
        .direction("fwd")
        .filter("no_such_kernel*")
        .try_manifest()
        .unwrap_err();
    assert!(matches!(e, Error::NoBlobs { .. }), "{e:?}");
}

/// A CK tree whose `generate.py` fails like an older CK asked for a
/// direction it lacks: a long traceback ending in the real reason.
fn failing_ck(dir: &Path) -> PathBuf {
    let fmha = dir.join("example/ck_tile/01_fmha");
    fs::create_dir_all(dir.join("include/ck_tile")).unwrap();
    fs::create_dir_all(fmha.join("codegen/ops")).unwrap();
    fs::write(fmha.join("codegen/ops/fmha_fwd.py"), "# codegen\n").unwrap();
    let mut traceback = String::from("Traceback (most recent call last):\n");
    for i in 0..20 {
        traceback.push_str(&format!(
            "  File \"/ck/example/ck_tile/01_fmha/codegen/frame_{i}.py\", line {i}, in handler_{i}\n    step_{i}()\n"
        ));
    }
    traceback.push_str("KeyError: 'fwd_appendkv'\n");
    fs::write(fmha.join("traceback.txt"), traceback).unwrap();
    fs::write(
        fmha.join("generate.py"),
        "import os, sys\nhere = os.path.dirname(os.path.abspath(__file__))\n\
         sys.stderr.write(open(os.path.join(here, 'traceback.txt')).read())\nsys.exit(1)\n",
    )
    .unwrap();
    dir.to_path_buf()
}

#[test]
fn a_failing_generator_reports_its_command_and_the_end_of_its_traceback() {
    let tmp = Scratch::new("preset-fail");
    let ck = failing_ck(&tmp.path().join("ck"));
    let e = preset(&ck, &tmp.path().join("out"))
        .direction("fwd")
        .try_manifest()
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Codegen { .. }), "{e:?}");
    assert!(msg.contains("exit status: 1"), "{msg}");
    assert!(msg.contains("generate.py --direction fwd"), "{msg}");
    assert!(msg.ends_with("KeyError: 'fwd_appendkv'"), "{msg}");
    assert!(!msg.contains('\n'));
    // No stamp: the next build runs the generator again.
    assert!(!tmp.path().join("out/ck_fmha/fwd.stamp").exists());
}

#[test]
fn missing_trees_generators_and_pythons_are_named() {
    let tmp = Scratch::new("preset-missing");
    let out = tmp.path().join("out");
    let run = |f: &dyn Fn(&mut CkFmha)| {
        let mut p = CkFmha::new();
        p.out_dir(&out).name("t").cargo_metadata(false);
        f(&mut p);
        p.try_manifest().unwrap_err()
    };
    let e = run(&|p| {
        p.source(tmp.path().join("nowhere"));
    });
    assert!(
        matches!(&e, Error::SourceTree { path, .. } if path.ends_with("nowhere")),
        "{e:?}"
    );
    assert!(e.to_string().contains("does not exist"), "{e}");

    let not_ck = tmp.path().join("not_ck");
    fs::create_dir_all(&not_ck).unwrap();
    let e = run(&|p| {
        p.source(&not_ck);
    });
    assert!(e.to_string().contains("has no include/ directory"), "{e}");

    let no_gen = tmp.path().join("ck_without_example");
    fs::create_dir_all(no_gen.join("include")).unwrap();
    fs::create_dir_all(no_gen.join("example/ck_tile/01_fmha")).unwrap();
    let e = run(&|p| {
        p.source(&no_gen);
    });
    match &e {
        Error::Generator { path } => assert!(path.ends_with("01_fmha/generate.py")),
        other => panic!("{other:?}"),
    }

    let ck = failing_ck(&tmp.path().join("ck"));
    let e = run(&|p| {
        p.source(&ck).python(tmp.path().join("no-such-python3"));
    });
    match &e {
        Error::ProgramNotFound { program, .. } => assert!(program.ends_with("no-such-python3")),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("not found"), "{e}");

    let e = run(&|_| {});
    assert!(e.to_string().contains("no CK tree given"), "{e}");
}

/// A traits template of `version` with one more parameter than its
/// generator passes, a type after `HDim_`. In CK 2025-11 the last
/// parameter has a default, so C++ counts would agree and every value
/// after `HDim` would be read one place off. Recording must stop, naming a
/// blob, both counts and the parameter that shows the shift.
fn shifted_traits_are_refused(version: &str, declared: usize, passed: usize) {
    let tmp = Scratch::new(&format!("shifted-{version}"));
    let Some(ck) = ck_copy(version, &tmp.path().join("ck")) else {
        return;
    };
    let header = ck.join("example/ck_tile/01_fmha/fmha_fwd.hpp");
    let text = fs::read_to_string(&header).unwrap();
    let head = "template <ck_tile::index_t HDim_,\n          typename DataType_,";
    assert!(
        text.contains(head),
        "{version}: fmha_fwd_traits_ is not declared as expected"
    );
    let text = text.replacen(
        head,
        "template <ck_tile::index_t HDim_,\n          typename Inserted_,\n          typename DataType_,",
        1,
    );
    fs::write(&header, text).unwrap();
    let err = preset(&ck, &tmp.path().join("out"))
        .direction("fwd")
        .filter("*d128_fp16_batch*")
        .try_write()
        .map(|f| f.manifest().blobs.len())
        .expect_err("blobs whose traits arguments are shifted were recorded");
    let text = err.to_string();
    assert!(
        text.contains("fmha_fwd_d128_fp16_batch"),
        "{version}: {text}"
    );
    assert!(
        text.contains(&format!(
            "fmha_fwd_traits_ declares {declared} template parameters, the blob passes {passed} arguments"
        )) && text.contains("parameter 3 (DataType_) is a type, given the value `false`"),
        "{version}: {text}"
    );
}

#[test]
fn traits_arguments_shifted_against_the_declaration_are_an_error_naming_both_counts() {
    shifted_traits_are_refused(CK_2024, 21, 20);
    shifted_traits_are_refused(CK_2025, 24, 23);
}
