//! Family selection over what CK 2025-11's own generator writes for two
//! architectures (`gfx942` and `gfx950`): a query keeps to the members
//! that run on the device in use, and a head dimension asked for is the V
//! head's too unless the query says otherwise.
#![cfg(feature = "build")]

mod real_ck;

use ck_jit_build::manifest::Manifest;
use ck_jit_ck::CkFmha;
use ck_jit_rt::__private::{FamilySlots, SymbolOverride};
use ck_jit_rt::arch::ArchChoice;
use ck_jit_rt::config::Config;
use ck_jit_rt::{Kernel, Query, Runtime};
use real_ck::{ck_tree, Scratch, CK_2025};

/// CK 2025-11's fp16 batch-mode forward blobs for gfx942 and gfx950.
fn two_arch_manifest(tmp: &Scratch) -> Option<Manifest> {
    let ck = ck_tree(CK_2025)?;
    let mut p = CkFmha::new();
    p.source(&ck)
        .out_dir(tmp.path().join("out"))
        .name("t")
        .cargo_metadata(false)
        .direction("fwd")
        .filter("*_fp16_batch*")
        .arch("gfx942")
        .arch("gfx950");
    Some(p.try_manifest().unwrap().manifest().clone())
}

/// The `fwd` family over `m`, selecting for the device `CK_JIT_ARCH` names.
fn family(m: &Manifest, arch: &str) -> &'static FamilySlots {
    let mut config = Config::from_env();
    config.arch = ArchChoice::parse(Some(arch));
    config.cache_dir = None;
    let rt: &'static Runtime = Box::leak(Box::new(
        Runtime::new(m.clone(), "ck select test").with_config(config),
    ));
    Box::leak(Box::new(FamilySlots::with_runtime(
        rt,
        "fwd",
        SymbolOverride::Manifest,
    )))
}

/// Queries that do not name `arch`: every mask, bias, lse and dropout a
/// caller may ask of a 64 or 128 head.
fn queries() -> Vec<Query> {
    let mut out = Vec::new();
    for hdim in [64, 128] {
        for mask in ["no", "mask"] {
            for lse in ["true", "false"] {
                for extra in [None, Some(("dropout", "true")), Some(("bias", "alibi"))] {
                    let mut q = Query::new()
                        .eq("dtype", "fp16")
                        .eq("mode", "batch")
                        .eq("hdim", hdim)
                        .eq("mask", mask)
                        .eq("lse", lse);
                    if let Some((k, v)) = extra {
                        q = q.eq(k, v);
                    }
                    out.push(q);
                }
            }
        }
    }
    out
}

fn arch_of(k: Kernel) -> &'static str {
    k.meta().get("arch").map_or("", |a| a.as_str())
}

#[test]
fn a_query_without_arch_on_gfx942_never_gets_a_gfx950_only_kernel() {
    let tmp = Scratch::new("select-arch");
    let Some(m) = two_arch_manifest(&tmp) else {
        return;
    };
    assert!(
        m.blobs.iter().any(|b| b.meta["arch"] == "gfx950"),
        "the manifest has gfx950 members"
    );
    let gfx942 = family(&m, "gfx942");
    let gfx950 = family(&m, "gfx950");
    let all = family(&m, "all");
    let (mut foreign_without_device, mut on_gfx950) = (0, 0);
    for q in queries() {
        let k = gfx942.select(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(arch_of(k), "gfx9", "{q}: {}", k.name());
        for c in gfx942.candidates(&q).unwrap() {
            assert_eq!(arch_of(c), "gfx9", "{q}: candidate {}", c.name());
        }
        // The gfx9 group is recorded for gfx942 only: its objects do not
        // run on a gfx950, so that device gets gfx950 members only.
        let k = gfx950.select(&q).unwrap_or_else(|e| panic!("{q}: {e}"));
        assert_eq!(arch_of(k), "gfx950", "{q}: {}", k.name());
        on_gfx950 += usize::from(k.meta().get("trload").is_some_and(|t| t == "true"));
        // With no device known every member is a candidate, as before.
        let k = all.select(&q).unwrap();
        foreign_without_device += usize::from(arch_of(k) == "gfx950");
    }
    assert!(
        foreign_without_device > 0,
        "some query picks a gfx950 member when the device is not taken into account"
    );
    assert!(on_gfx950 > 0, "gfx950 gets its trload kernels");
    // A selector keeps to the same members.
    let mut sel = gfx942.selector(&Query::new().eq("dtype", "fp16")).unwrap();
    for q in queries() {
        let _ = sel.finish();
        match sel.step(&q).unwrap() {
            ck_jit_rt::Step::Selectable(k) => assert_eq!(arch_of(k), "gfx9", "{q}"),
            ck_jit_rt::Step::Flush(f) => panic!("{q}: {f}"),
        }
    }
    // What runs nowhere here is named as such.
    let e = gfx942
        .select(&Query::new().eq("trload", "true"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("do not run on gfx942 (from CK_JIT_ARCH)"), "{e}");
}

#[test]
fn a_head_dimension_alone_gets_a_kernel_whose_v_head_matches() {
    let tmp = Scratch::new("select-hdim-v");
    let Some(m) = two_arch_manifest(&tmp) else {
        return;
    };
    let hdim_v = |b: &str| m.blob(b).map(|b| b.meta["hdim_v"].clone());
    assert!(
        m.blobs
            .iter()
            .any(|b| b.meta["hdim"] == "192" && b.meta["hdim_v"] == "128"),
        "CK writes a (192, 128) tile"
    );
    let q = Query::new()
        .eq("dtype", "fp16")
        .eq("mode", "batch")
        .eq("hdim", 192)
        .eq("mask", "no")
        .eq("lse", "false");
    let fwd = family(&m, "gfx942");
    let k = fwd.select(&q).unwrap();
    assert_eq!(hdim_v(k.name()).as_deref(), Some("192"), "{}", k.name());
    assert_eq!(
        q.select_in(&m, "fwd").unwrap().meta["hdim_v"],
        "192",
        "the manifest-level selection agrees"
    );
    // Asked for, the (192, 128) tile is what comes back.
    let k = fwd.select(&q.clone().eq("hdim_v", 128)).unwrap();
    assert_eq!(hdim_v(k.name()).as_deref(), Some("128"), "{}", k.name());
    // A lower bound on the head is one on the V head too.
    let k = fwd
        .select(&Query::new().eq("dtype", "fp16").ge("hdim", 150))
        .unwrap();
    assert_eq!(hdim_v(k.name()).as_deref(), Some("192"), "{}", k.name());
    // The selector answers as select does.
    let mut sel = fwd.selector(&Query::new()).unwrap();
    match sel.step(&q).unwrap() {
        ck_jit_rt::Step::Selectable(k) => {
            assert_eq!(hdim_v(k.name()).as_deref(), Some("192"), "{}", k.name())
        }
        ck_jit_rt::Step::Flush(f) => panic!("{f}"),
    }
}
