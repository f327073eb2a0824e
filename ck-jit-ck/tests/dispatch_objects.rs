//! The check that cannot be fooled by where a CK version puts its code:
//! CK's own dispatchers, compiled with a real HIP compiler, must find
//! every blob specialisation they leave undefined among the stubs, for
//! every kind of blob a dispatcher calls: fwd, split-KV and its combine
//! kernel, and bwd's dot_do_o, dq_dk_dv and convert_dq.
//!
//! Newer CK moved the template that launches bwd's three kernels
//! (`fmha_bwd_<dot_do_o, dq_dk_dv, convert_dq, Arch>`) from the generated
//! `fmha_bwd_api.cpp` into `fmha_bwd.hpp`. Here a copy of CK 2025-11 is
//! changed the same way (the template cut out of the generator's
//! dispatcher text and appended to the header, nothing else), and CK
//! 2024-10-23, whose generator differs in names, filters and what it
//! writes, is taken as it is (its dispatcher launches the kernels itself).
//! For each, a narrow generator run per direction compiles and checks
//! clean; then one blob of each of the six kinds is deleted from the
//! generated output and one compile of the dispatchers is an error naming,
//! for each deleted blob, exactly the specialisations of it that its
//! dispatcher's object leaves undefined.
//!
//! Why the sets are shaped as they are:
//!
//! - one generator run per direction: the preset passes one `--filter` to
//!   every direction, and no single pattern narrows fwd (matched whole),
//!   split-KV (2025-11: `combine@splitkv`) and bwd (2025-11:
//!   `dot_do_o@convert_dq@dq_dk_dv`) at once. The runs share one output
//!   directory, and the build that is compiled takes it with
//!   `generated_dir`;
//! - exactly one blob of each kind: the reading of the dispatchers' source
//!   knows a blob template by the recorded blobs that specialise it, so
//!   while another blob of a kind is left, a call of a deleted one is
//!   reported before anything is compiled (`UnresolvedCalls`). With the
//!   kind gone the reading sees nothing, and only the compiled objects
//!   tell (which is why a dispatcher whose every blob is gone must still
//!   be taken for one: else it is not compiled, and nothing tells).
//!   Split-KV is fp8 for that: an fp16 split-KV kernel is combined with
//!   and without LSE (two combine blobs), an fp8 one only without;
//! - one `fwd_appendkv` blob that stays, so that something is recorded
//!   once the six are gone, and so that a blob left in place is seen not
//!   to be reported.
//!
//! The four dispatchers go into one library, fwd's and bwd's together
//! (their C glue is one source per header: CK's `fmha_fwd.hpp` and
//! `fmha_bwd.hpp` cannot be included together). Two compiles per version
//! (CI has two cores, and each compile of CK's dispatchers costs tens of
//! seconds): every blob there, and six gone. The first is what shows that
//! the stubs of a blob there define what its dispatcher needs, and what
//! the second's report is compared with.
//!
//! Needs the HIP compiler of `.ci/hip-toolchain.sh` (`CK_JIT_REAL_HIP_ENV`,
//! else `target/hip-toolchain/env.sh`); skipped without it unless
//! `CK_JIT_REQUIRE_REAL_CK` is set.
#![cfg(feature = "build")]

mod real_ck;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use ck_jit_ck::{ffi, mangled_template_prefix, CkFmha, CkFmhaFiles, Error, Role, GENERATED_SUBDIR};
use object::read::archive::ArchiveFile;
use object::{Object, ObjectSymbol};
use real_ck::{ck_copy, Scratch, CK_2024, CK_2025};

/// One CK version's check: its tree, the generator runs, the blobs its
/// generator writes whatever the filter, the kinds deleted and where its
/// bwd launch template is.
struct Case {
    ck: &'static str,
    /// Each direction and its filter: one blob of each kind, every one of
    /// them called by its direction's dispatcher.
    runs: &'static [(&'static str, &'static str)],
    /// Blobs a generator writes whatever the filter: the direction, the
    /// prefix of their names, and the one of them kept (the one the
    /// filtered dispatcher calls); the others are removed once generated.
    unfiltered: &'static [(&'static str, &'static str, &'static str)],
    /// The kinds whose blob is deleted, each with the template its
    /// dispatcher calls.
    deleted: &'static [(&'static str, &'static str)],
    /// Whether the bwd launch template is moved into `fmha_bwd.hpp`.
    launcher_in_header: bool,
}

/// CK 2025-11, its bwd launcher moved into the header.
const CK_2025_CASE: Case = Case {
    ck: CK_2025,
    runs: &[
        (
            "fwd",
            "*d64_fp16_batch_*_qr_vr_psskddv_nlogits_nbias_nmask_nlse_ndropout_nskip_nsquant_ntrload",
        ),
        (
            "fwd_splitkv",
            "*d64_fp8_batch_b32_unused_npad_nlse_squant\
             @*d64_fp8_batch_*_qr_vr_npad_nlogits_nbias_nmask_lse_squant_npagedkv",
        ),
        ("fwd_appendkv", "*d64_fp16_b64x64x64x64_vr_psk"),
        (
            "bwd",
            "*d64_fp16_b64_batch_o2_npad\
             @*d64_fp16_b64x*_batch_o2_npad_ndeterministic\
             @*d64_fp16_batch_*_npad_nbias_ndbias_nmask_ndropout_ndeterministic_ntrload",
        ),
    ],
    unfiltered: &[],
    deleted: &DELETED,
    launcher_in_header: true,
};

/// CK 2024-10-23, as it is (its bwd dispatcher launches the kernels
/// itself). Its generator has the same six kinds and its dispatchers call
/// the same templates (no `Arch` argument), but:
///
/// - one `--filter` per direction, no `@`: split-KV's one pattern picks
///   the combine kernel (`..._unused_squant`) and the split-KV kernel
///   without bias or mask (`..._qr_vc_squant`), the only fp8 d64 batch
///   ones whose names end in `d_squant` or `c_squant`;
/// - bwd's filter reaches `dq_dk_dv` only: every `dot_do_o` and
///   `convert_dq` blob is written whatever it says. All but the one the
///   dispatcher calls are removed after the run;
/// - a bwd case whose `dq_dk_dv` kernel pads the sequence (`_ps`) calls
///   one `dot_do_o` and one `convert_dq` kernel (one unpadded calls two,
///   padded and not).
const CK_2024_CASE: Case = Case {
    ck: CK_2024,
    runs: &[
        ("fwd", "*d64_fp16_batch_*_qr_async_vr_psddv"),
        ("fwd_splitkv", "*d64_fp8_batch_*[dc]_squant"),
        ("fwd_appendkv", "*d64_fp16_b64x64x64x64_vr_psk"),
        ("bwd", "*d64_fp16_batch_*_kr_ktr_vr_iglp_ps"),
    ],
    unfiltered: &[
        (
            "bwd",
            "fmha_bwd_dot_do_o_",
            "fmha_bwd_dot_do_o_d64_fp16_batch_o2_ps",
        ),
        (
            "bwd",
            "fmha_bwd_convert_dq_",
            "fmha_bwd_convert_dq_d64_fp16_b64x128_batch_o2_ps",
        ),
    ],
    deleted: &DELETED,
    launcher_in_header: false,
};

/// The kinds whose blob is deleted, each with the template its dispatcher
/// calls (both versions name them so).
const DELETED: [(&str, &str); 6] = [
    ("fwd", "fmha_fwd_"),
    ("fwd_splitkv", "fmha_fwd_splitkv_oneshot_"),
    ("fwd_splitkv_combine", "fmha_fwd_splitkv_combine_oneshot_"),
    ("bwd_dot_do_o", "fmha_bwd_dot_do_o_oneshot_"),
    ("bwd_dq_dk_dv", "fmha_bwd_dq_dk_dv_oneshot_"),
    ("bwd_convert_dq", "fmha_bwd_convert_dq_oneshot_"),
];

/// The real HIP compiler, or `None` with a visible skip.
fn hipcc() -> Option<PathBuf> {
    let env = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hip-toolchain/env.sh")
        });
    let found = fs::read_to_string(&env).ok().and_then(|t| {
        t.lines()
            .filter_map(|l| l.trim().trim_start_matches("export ").split_once('='))
            .find(|(k, _)| k.trim() == "CK_JIT_REAL_HIPCC")
            .map(|(_, v)| PathBuf::from(v.trim().trim_matches('"')))
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_REAL_CK").is_none(),
            "CK_JIT_REQUIRE_REAL_CK is set but {} names no CK_JIT_REAL_HIPCC",
            env.display()
        );
        eprintln!("SKIPPED: no HIP compiler ({} missing)", env.display());
    }
    found
}

/// Moves the bwd launch template out of the generator's dispatcher text
/// into `fmha_bwd.hpp`, as newer CK has it.
fn move_launcher_into_the_header(ck: &Path) {
    let example = ck.join("example/ck_tile/01_fmha");
    let py = example.join("codegen/ops/fmha_bwd.py");
    let text = fs::read_to_string(&py).unwrap();
    let start = text
        .find("template <typename dot_do_o_trait_, typename dq_dk_dv_trait_")
        .expect("the bwd launch template in codegen/ops/fmha_bwd.py");
    let end = start
        + text[start..]
            .find("template <>\nfloat fmha_bwd<2>")
            .expect("the bwd dispatcher after the launch template");
    let launcher = text[start..end].replace("{{", "{").replace("}}", "}");
    fs::write(&py, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let header = example.join("fmha_bwd.hpp");
    let mut h = fs::read_to_string(&header).unwrap();
    h.push_str("\n#include <iostream>\n\n");
    h.push_str(&launcher);
    fs::write(&header, h).unwrap();
}

/// One generator run per direction into `out`, each with its filter.
fn generate(
    ck: &Path,
    runs: &[(&'static str, &str)],
    out: &Path,
) -> Vec<(&'static str, Result<CkFmhaFiles, Error>)> {
    runs.iter()
        .map(|(direction, filter)| {
            let files = CkFmha::new()
                .source(ck)
                .out_dir(out)
                .name("t")
                .cargo_metadata(false)
                .direction(direction)
                .filter(filter)
                .arch("gfx942")
                .try_manifest();
            (*direction, files)
        })
        .collect()
}

/// What the runs into `out` generated, taken as one build.
fn gather(ck: &Path, out: &Path, build: &Path) -> CkFmhaFiles {
    CkFmha::new()
        .source(ck)
        .generated_dir(out.join(GENERATED_SUBDIR))
        .out_dir(build)
        .name("t")
        .cargo_metadata(false)
        .arch("gfx942")
        .try_write()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn compile(
    files: &CkFmhaFiles,
    hipcc: &Path,
    out: &Path,
) -> Result<ffi::CompiledDispatchers, Error> {
    fs::create_dir_all(out).unwrap();
    ffi::compile_dispatchers(
        files,
        hipcc,
        "ck_jit_check",
        out,
        &["-Wno-unused-result", "-Wno-unused-command-line-argument"],
    )
}

/// The member of `archive(member)`, or the object itself.
fn member(object: &str) -> &str {
    object
        .rsplit_once('(')
        .and_then(|(_, m)| m.strip_suffix(')'))
        .unwrap_or(object)
}

/// Whether the object `member` was compiled from the source `stem.cpp`
/// (the `cc` crate names it `<hash>-<stem>.o`).
fn compiled_from(member: &str, stem: &str) -> bool {
    let o = format!("{stem}.o");
    member == o || member.ends_with(&format!("-{o}"))
}

/// Every member of the archive `path`: its name, the symbols it defines
/// and those it leaves undefined.
fn archive_symbols(path: &Path) -> Vec<(String, BTreeSet<String>, BTreeSet<String>)> {
    let data = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let archive = ArchiveFile::parse(&*data).unwrap();
    let mut out = Vec::new();
    for m in archive.members() {
        let m = m.unwrap();
        let name = String::from_utf8_lossy(m.name()).into_owned();
        // ELF headers want alignment the archive does not give a member.
        let bytes = m.data(&*data).unwrap();
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (w, c) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            *w = u64::from_ne_bytes(b);
        }
        let aligned: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let file = object::File::parse(&aligned[..bytes.len()])
            .unwrap_or_else(|e| panic!("{}({name}): {e}", path.display()));
        let (mut defined, mut undefined) = (BTreeSet::new(), BTreeSet::new());
        for s in file.symbols() {
            let Ok(n) = s.name() else { continue };
            if n.is_empty() {
                continue;
            }
            if s.is_undefined() {
                undefined.insert(n.to_string());
            } else if s.is_definition() {
                defined.insert(n.to_string());
            }
        }
        out.push((name, defined, undefined));
    }
    out
}

/// A deleted blob: its kind, name, the templates it specialises, and the
/// dispatcher (file stem) of its direction.
struct Victim {
    kind: String,
    name: String,
    templates: Vec<String>,
    dispatcher: String,
}

#[test]
fn a_deleted_blob_of_each_kind_is_named_by_the_compiled_dispatcher_that_calls_it() {
    check(&CK_2025_CASE);
}

#[test]
fn on_ck_2024_too_a_deleted_blob_of_each_kind_is_named_by_the_dispatcher_that_calls_it() {
    check(&CK_2024_CASE);
}

/// The blobs of `unfiltered` in the generated output `out` but the one
/// kept of each, removed; their paths.
fn remove_unfiltered(case: &Case, out: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for (direction, prefix, keep) in case.unfiltered {
        let dir = out.join(GENERATED_SUBDIR).join(direction);
        let mut kept = 0;
        for e in fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap();
            if !name.starts_with(prefix) {
                continue;
            }
            if name.strip_suffix(".cpp") == Some(keep) {
                kept += 1;
            } else {
                fs::remove_file(&path).unwrap();
                removed.push(path);
            }
        }
        assert_eq!(
            kept,
            1,
            "{keep}.cpp among the {prefix}* blobs of {}",
            dir.display()
        );
    }
    removed
}

fn check(case: &Case) {
    let Some(hipcc) = hipcc() else { return };
    let tmp = Scratch::new("dispatch-objects");
    let Some(ck) = ck_copy(case.ck, &tmp.path().join("ck")) else {
        return;
    };
    if case.launcher_in_header {
        move_launcher_into_the_header(&ck);
    }
    // The cc crate reads what cargo gives a build script.
    for (k, v) in [
        ("TARGET", "x86_64-unknown-linux-gnu"),
        ("HOST", "x86_64-unknown-linux-gnu"),
        ("OPT_LEVEL", "0"),
        ("DEBUG", "false"),
    ] {
        std::env::set_var(k, v);
    }
    let out = tmp.path().join("out");
    for (direction, run) in generate(&ck, case.runs, &out) {
        run.unwrap_or_else(|e| panic!("{direction}: {e}"));
    }
    let pruned = remove_unfiltered(case, &out);
    let files = gather(&ck, &out, &tmp.path().join("build-all"));

    // Where the bwd dispatcher launches the kernels (itself, or through
    // the template in the header: the reading of the source follows it
    // there), the three kernels are one run (held calls), and the rules of
    // fmha_bwd reach blobs of each kind.
    let bwd_api = files
        .dispatchers()
        .find(|p| p.ends_with("fmha_bwd_api.cpp"))
        .expect("fmha_bwd_api.cpp is a dispatcher");
    let api = fs::read_to_string(bwd_api).unwrap();
    assert_eq!(
        api.contains("fmha_bwd_dot_do_o_oneshot_"),
        !case.launcher_in_header,
        "where the dispatcher launches the kernels"
    );
    let check = files.check_dispatchers().unwrap_or_else(|e| panic!("{e}"));
    assert!(check.unresolved.is_empty(), "{:?}", check.unresolved);
    // Read before the blobs were known, for every template the headers
    // declare: the same runs as a reading for the blobs' templates alone.
    let vocab = ck_jit_ck::Vocabulary::read(&ck.join("example/ck_tile/01_fmha")).unwrap();
    assert_eq!(
        real_ck::direct_check(&vocab, &files).sequences,
        check.sequences
    );
    assert!(
        check.sequences.iter().any(|run| run.len() >= 3
            && run[0].starts_with("fmha_bwd_dot_do_o_oneshot_<")
            && run[1].starts_with("fmha_bwd_dq_dk_dv_oneshot_<")),
        "{:?}",
        check.sequences
    );
    let rules = files.dispatch_rules().unwrap_or_else(|e| panic!("{e}"));
    let bwd = rules.iter().find(|r| r.file == "fmha_bwd_api.cpp").unwrap();
    for kind in ["bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"] {
        assert!(
            bwd.blobs.iter().any(|b| files
                .manifest()
                .blob(b)
                .is_some_and(|b| b.meta["kind"] == kind)),
            "fmha_bwd's rules reach no {kind} blob: {:?}",
            bwd.blobs
        );
    }

    let blob_prefixes: Vec<String> = files
        .blob_templates()
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|t| mangled_template_prefix(t))
        .collect();

    // One blob of each kind, called by the dispatcher of its direction.
    let dispatcher_in = |dir: &Path| -> String {
        files
            .files()
            .iter()
            .find(|f| f.role == Role::Dispatcher && f.path.parent() == Some(dir))
            .and_then(|f| f.path.file_stem()?.to_str().map(String::from))
            .unwrap_or_else(|| panic!("no dispatcher in {}", dir.display()))
    };
    let mut victims = Vec::new();
    let mut kept: Vec<String> = Vec::new();
    for (d, path) in files.blobs() {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        assert!(
            check.groups.iter().any(|g| g.contains(&name)),
            "no dispatcher calls {name}: {:?}",
            check.groups
        );
        if case.deleted.iter().any(|(k, _)| *k == d.kind) {
            victims.push((
                path.to_path_buf(),
                Victim {
                    kind: d.kind.clone(),
                    name,
                    templates: d.templates.clone(),
                    dispatcher: dispatcher_in(path.parent().unwrap()),
                },
            ));
        } else {
            kept.push(name);
        }
    }
    let kinds: Vec<&str> = victims.iter().map(|(_, v)| v.kind.as_str()).collect();
    for &(kind, _) in case.deleted {
        assert_eq!(
            kinds.iter().filter(|k| **k == kind).count(),
            1,
            "one {kind} blob: {kinds:?}"
        );
    }
    assert_eq!(kept.len(), 1, "one fwd_appendkv blob stays: {kept:?}");

    // Every blob there: the compiled dispatchers find all they need, and
    // the glue wraps each of the four.
    let lib_all = tmp.path().join("lib-all");
    let built = compile(&files, &hipcc, &lib_all).unwrap_or_else(|e| panic!("{e}"));
    let wrapped: BTreeSet<&str> = built.dispatchers.iter().map(String::as_str).collect();
    assert_eq!(
        wrapped,
        BTreeSet::from([
            "fmha_bwd",
            "fmha_fwd",
            "fmha_fwd_appendkv",
            "fmha_fwd_splitkv"
        ])
    );

    // One blob of each kind gone from the generated output. The generator
    // does not run again (its inputs are unchanged): the directions left
    // without a blob say so, the one left with its blob regenerates
    // nothing.
    for (path, _) in &victims {
        fs::remove_file(path).unwrap();
    }
    for (direction, run) in generate(&ck, case.runs, &out) {
        match run {
            Ok(run) => {
                assert_eq!(direction, "fwd_appendkv");
                assert!(run.regenerated.is_empty(), "{:?}", run.regenerated);
            }
            Err(Error::NoBlobs { .. }) => assert_ne!(direction, "fwd_appendkv"),
            Err(e) => panic!("{direction}: {e}"),
        }
    }
    for path in victims.iter().map(|(p, _)| p).chain(&pruned) {
        assert!(!path.exists(), "{} was generated again", path.display());
    }
    let files = gather(&ck, &out, &tmp.path().join("build-missing"));
    // A dispatcher whose blobs are all gone is still a dispatcher (its
    // templates are the headers'), so that it is compiled and checked;
    // the reading of its source sees none of the calls.
    let stems: BTreeSet<String> = files
        .dispatchers()
        .filter_map(|p| p.file_stem()?.to_str().map(String::from))
        .collect();
    for (_, v) in &victims {
        assert!(
            stems.contains(&v.dispatcher),
            "{} is no longer taken for a dispatcher once its blobs are gone: {stems:?}",
            v.dispatcher
        );
    }
    let check = files.check_dispatchers().unwrap_or_else(|e| panic!("{e}"));
    assert!(check.unresolved.is_empty(), "{:?}", check.unresolved);
    // Read before the blobs were known, for every template the headers
    // declare: the same runs as a reading for the blobs' templates alone.
    let vocab = ck_jit_ck::Vocabulary::read(&ck.join("example/ck_tile/01_fmha")).unwrap();
    assert_eq!(
        real_ck::direct_check(&vocab, &files).sequences,
        check.sequences
    );

    let err = compile(&files, &hipcc, &tmp.path().join("lib-missing"))
        .expect_err("dispatchers calling deleted blobs compiled and checked clean");
    let text = err.to_string();
    let Error::UndefinedSpecialisations { output, missing } = &err else {
        panic!("expected undefined specialisations, got: {text}");
    };

    // What went away: every specialisation of a blob template that the
    // stubs of the clean build defined and those of this one do not. Each
    // is a specialisation of exactly one deleted blob (by the template it
    // names).
    let lib_missing = tmp.path().join("lib-missing");
    let clean = lib_all.join(output.strip_prefix(&lib_missing).unwrap());
    let before = archive_symbols(&clean);
    let after = archive_symbols(output);
    let defined_after: BTreeSet<&String> = after.iter().flat_map(|(_, d, _)| d).collect();
    let gone: BTreeSet<&String> = before
        .iter()
        .flat_map(|(_, d, _)| d)
        .filter(|s| !defined_after.contains(s))
        .filter(|s| blob_prefixes.iter().any(|p| s.starts_with(p.as_str())))
        .collect();
    let owner = |symbol: &str| -> Vec<&Victim> {
        victims
            .iter()
            .map(|(_, v)| v)
            .filter(|v| {
                v.templates
                    .iter()
                    .any(|t| symbol.starts_with(&mangled_template_prefix(t)))
            })
            .collect()
    };
    // A kind had one blob: the template a symbol names is its blob's.
    for s in &gone {
        assert_eq!(owner(s).len(), 1, "{s} is no deleted blob's: {text}");
    }

    // Per deleted blob: exactly its gone specialisations that an object
    // of the library needs, each needed by its direction's dispatcher.
    let mut report = String::new();
    let mut accounted = 0;
    for (_, v) in &victims {
        let needed: BTreeMap<&str, Vec<&str>> = gone
            .iter()
            .filter(|s| owner(s)[0].name == v.name)
            .map(|s| {
                let mut by: Vec<&str> = after
                    .iter()
                    .filter(|(_, _, u)| u.contains(*s))
                    .map(|(m, _, _)| m.as_str())
                    .collect();
                by.sort();
                (s.as_str(), by)
            })
            .filter(|(_, by)| !by.is_empty())
            .collect();
        let mine: Vec<_> = missing
            .iter()
            .filter(|m| v.templates.contains(&m.template))
            .collect();
        let mut reported: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for m in &mine {
            reported
                .entry(m.symbol.as_str())
                .or_default()
                .push(member(&m.object));
        }
        reported.values_mut().for_each(|by| by.sort());
        assert_eq!(reported, needed, "{} ({}): {text}", v.name, v.kind);
        let called = case.deleted.iter().find(|(k, _)| k == &v.kind).unwrap().1;
        assert!(
            mine.iter().any(|m| m.template == called),
            "no {called}<...> of the deleted {} reported: {text}",
            v.name
        );
        for m in &mine {
            assert!(
                compiled_from(member(&m.object), &v.dispatcher),
                "{} needed by {}, not by {}: {text}",
                m.symbol,
                m.object,
                v.dispatcher
            );
        }
        report.push_str(&format!(
            "{:<20} {} undefined in {}: {}\n",
            v.kind,
            mine.len(),
            v.dispatcher,
            mine.iter()
                .map(|m| m.template.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
        accounted += mine.len();
    }
    // Nothing for the blob that stays, nor for any template else.
    assert_eq!(accounted, missing.len(), "{text}");
    eprintln!("{report}");
}
