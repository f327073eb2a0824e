//! The CK preset: the manifest of a full generated tree (10,554 blobs, and
//! how long it takes), CK's compile command per kind, running a CK tree's
//! generator only when its inputs change, and what is reported when the
//! tree, the generator or Python is missing.

mod ck_common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use ck_common::{blob_list, write_empty_tree, TempDir};
use ck_jit_build::ck::{CkFmha, Direction, Error, FileClass, Kind};
use ck_jit_build::manifest::{Manifest, SymbolSpec, MANIFEST_FILE};

fn preset(generated: &Path, out: &Path) -> CkFmha {
    let mut ck = CkFmha::new();
    ck.generated_dir(generated)
        .out_dir(out)
        .name("t")
        .cargo_metadata(false);
    ck
}

#[test]
fn a_full_generated_tree_becomes_one_group_per_kind() {
    let tmp = TempDir::new("preset-full");
    let gen = tmp.path().join("gen");
    assert_eq!(write_empty_tree(&gen), 10_558);
    let out = tmp.path().join("out");
    let ck = preset(&gen, &out);

    // Warm the directory cache once, then time the assembly alone.
    ck.try_manifest().unwrap();
    let t0 = Instant::now();
    let files = ck.try_manifest().unwrap();
    let assembled = t0.elapsed();
    let t0 = Instant::now();
    let json = files.manifest.to_json();
    let rendered = t0.elapsed();
    println!(
        "manifest of {} blobs assembled in {assembled:?}, rendered ({} bytes) in {rendered:?}",
        files.manifest.blobs.len(),
        json.len()
    );

    let m = &files.manifest;
    assert_eq!(m.blobs.len(), 10_554);
    assert!(
        files.unparsed.is_empty(),
        "{:?}",
        &files.unparsed[..files.unparsed.len().min(3)]
    );
    assert_eq!(files.dispatchers().count(), 4);
    assert_eq!(files.host_sources().count(), 0);
    assert_eq!(files.files.len(), 10_558);
    let names: Vec<&str> = m.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fwd",
            "fwd_splitkv",
            "fwd_splitkv_combine",
            "fwd_appendkv",
            "bwd_dot_do_o",
            "bwd_dq_dk_dv",
            "bwd_convert_dq"
        ]
    );
    for g in &m.groups {
        let kind = Kind::from_name(&g.name).unwrap();
        assert_eq!(g.symbol, SymbolSpec::Prefix(kind.symbol_prefix()));
        assert_eq!(g.compiler, "hipcc");
    }
    assert_eq!(
        m.groups[0].symbol,
        SymbolSpec::Prefix("_Z9fmha_fwd_I".into())
    );
    // Every blob sits in the group of its kind, with its traits as metadata.
    for b in &m.blobs {
        let g = &m.groups[b.group as usize];
        assert_eq!(b.meta["kind"], g.name, "{}", b.name);
        assert!(b
            .source
            .starts_with(Kind::from_name(&g.name).unwrap().direction().as_str()));
    }
    let b = m
        .blob("fmha_bwd_d64_fp16_group_b32x128x64x32x64x32x32x64x64_r1x4x1_r4x1x1_r1x4x1_w16x16x32_w16x16x16_o1_kr_ktr_vr_psskddv_alibi_mask_dropout_wg16_deterministic")
        .unwrap();
    assert_eq!(
        (
            b.meta["hdim"].as_str(),
            b.meta["mode"].as_str(),
            b.meta["bias"].as_str()
        ),
        ("64", "group", "alibi")
    );
    assert_eq!(
        (b.meta["dropout"].as_str(), b.meta["deterministic"].as_str()),
        ("wg16", "true")
    );

    // The written manifest parses back; an unchanged one is not rewritten.
    let written = ck.try_write().unwrap();
    let path = written.manifest_path.unwrap();
    assert_eq!(path, fs::canonicalize(&out).unwrap().join(MANIFEST_FILE));
    let back = Manifest::from_json(&fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(&back, m);
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();
    ck.try_write().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), old);
}

#[test]
fn each_kind_records_cks_compile_flags() {
    let tmp = TempDir::new("preset-flags");
    let ck_tree = tmp.path().join("ck");
    fs::create_dir_all(ck_tree.join("include/ck_tile")).unwrap();
    fs::create_dir_all(ck_tree.join("example/ck_tile/01_fmha")).unwrap();
    let gen = tmp.path().join("gen");
    write_empty_tree(&gen);
    let files = preset(&gen, &tmp.path().join("out"))
        .source(&ck_tree)
        .arch("gfx90a")
        .arch("gfx942")
        .flag("-fvisibility=hidden")
        .flag("-mllvm")
        .flag("-enable-post-misched=0")
        .define("CK_TILE_FLOAT_TO_BFLOAT16_DEFAULT", Some("3"))
        .try_manifest()
        .unwrap();
    let ck = fs::canonicalize(&ck_tree).unwrap();
    let ck = ck.to_str().unwrap();
    let fwd = &files.manifest.groups[0];
    assert_eq!(fwd.name, "fwd");
    assert_eq!(
        fwd.args,
        [
            "-std=c++17",
            "-O3",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx942",
            "-Wno-undefined-func-template",
            "-Wno-float-equal",
            "-fgpu-flush-denormals-to-zero",
            "-mllvm",
            "-enable-post-misched=0",
            &format!("-I{ck}/include"),
            &format!("-I{ck}/example/ck_tile/01_fmha"),
            "-I{root}/fwd",
            "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
            "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3",
            "-fPIC",
            "-shared",
            "{src}",
            "-o",
            "{out}"
        ]
    );
    assert!(fwd.depfile);
    let bwd = files
        .manifest
        .groups
        .iter()
        .find(|g| g.name == "bwd_dq_dk_dv")
        .unwrap();
    assert!(bwd.args.contains(&"-I{root}/bwd".to_string()));
    assert!(!bwd.args.iter().any(|a| a.contains("FAST_EXP2")));
    assert!(!files.manifest.to_json().contains("visibility"));
    // The root is the generated directory; sources are relative to it.
    assert_eq!(
        files.manifest.root,
        fs::canonicalize(&gen).unwrap().to_str().unwrap()
    );
    assert!(files
        .manifest
        .blobs
        .iter()
        .all(|b| !b.source.starts_with('/')));
}

#[test]
fn a_root_holding_ck_and_the_generated_files_makes_everything_relocatable() {
    let tmp = TempDir::new("preset-root");
    let ck_tree = tmp.path().join("third_party/ck");
    fs::create_dir_all(ck_tree.join("include")).unwrap();
    let gen = tmp.path().join("generated");
    write_empty_tree(&gen);
    let files = preset(&gen, &tmp.path().join("out"))
        .source(&ck_tree)
        .root(tmp.path())
        .direction(Direction::FwdAppendkv)
        .try_manifest()
        .unwrap();
    let g = &files.manifest.groups;
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].name, "fwd_appendkv");
    assert!(g[0]
        .args
        .contains(&"-I{root}/third_party/ck/include".to_string()));
    assert!(g[0]
        .args
        .contains(&"-I{root}/generated/fwd_appendkv".to_string()));
    assert_eq!(files.manifest.blobs.len(), 195);
    assert!(files.manifest.blobs[0]
        .source
        .starts_with("generated/fwd_appendkv/"));
    assert_eq!(files.dispatchers().count(), 1);

    let err = preset(&gen, &tmp.path().join("out"))
        .root(tmp.path().join("third_party"))
        .try_manifest()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("must contain the generated directory"),
        "{err}"
    );
}

/// A CK tree whose `generate.py` writes the listed files of the requested
/// direction (filtered with fnmatch, as CK's does) and logs each run.
fn fake_ck(dir: &Path, names: &[String]) -> PathBuf {
    let fmha = dir.join("example/ck_tile/01_fmha");
    fs::create_dir_all(dir.join("include/ck_tile")).unwrap();
    fs::create_dir_all(fmha.join("codegen/ops")).unwrap();
    fs::write(fmha.join("codegen/ops/fmha_fwd.py"), "# codegen\n").unwrap();
    fs::write(fmha.join("names.txt"), names.join("\n")).unwrap();
    fs::write(
        fmha.join("generate.py"),
        r#"import argparse, fnmatch, os, sys
p = argparse.ArgumentParser()
p.add_argument("-d", "--direction")
p.add_argument("-r", "--receipt")
p.add_argument("-o", "--output_dir")
p.add_argument("-f", "--filter", default="")
a = p.parse_args()
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\n")
if a.direction == "boom":
    sys.stderr.write("Traceback (most recent call last):\nValueError: unknown direction\n")
    sys.exit(3)
for n in open(os.path.join(here, "names.txt")).read().split():
    d, f = n.split("/")
    if d != a.direction:
        continue
    if a.filter and not f.endswith("_api.cpp") and not fnmatch.fnmatch(f[:-4], a.filter):
        continue
    open(os.path.join(a.output_dir, f), "w").write("// " + f + "\n")
"#,
    )
    .unwrap();
    fmha
}

fn calls(fmha: &Path) -> Vec<String> {
    fs::read_to_string(fmha.join("calls.log"))
        .unwrap_or_default()
        .lines()
        .map(String::from)
        .collect()
}

#[test]
fn the_generator_runs_once_per_direction_and_again_only_when_its_inputs_change() {
    let tmp = TempDir::new("preset-codegen");
    let names: Vec<String> = blob_list()
        .into_iter()
        .filter(|n| n.starts_with("fwd/") || n.contains("_d64_") || n.ends_with("_api.cpp"))
        .collect();
    let ck_tree = tmp.path().join("aiter/3rdparty/composable_kernel");
    let fmha = fake_ck(&ck_tree, &names);
    let out = tmp.path().join("out");
    let mut ck = CkFmha::new();
    ck.source(tmp.path().join("aiter")) // an aiter tree: CK found inside
        .direction(Direction::Fwd)
        .direction(Direction::Bwd)
        .filter("*_d64_*")
        .out_dir(&out)
        .name("t");

    let mut lines = Vec::new();
    let files = ck.try_write_with_output(&mut lines).unwrap();
    let lines = String::from_utf8(lines).unwrap();
    assert_eq!(
        files.ck_root.as_deref(),
        Some(fs::canonicalize(&ck_tree).unwrap().as_path())
    );
    assert_eq!(files.regenerated, [Direction::Fwd, Direction::Bwd]);
    let out_canon = fs::canonicalize(&out).unwrap();
    let log = calls(&fmha);
    assert_eq!(log.len(), 2);
    let fwd_out = out_canon.join("ck_fmha/fwd");
    assert_eq!(
        log[0],
        format!(
            "--direction fwd --receipt 1 --output_dir {} --filter *_d64_*",
            fwd_out.display()
        )
    );
    assert!(log[1].starts_with("--direction bwd --receipt 1"));
    // Only the filtered blobs, and the dispatchers, of the two directions.
    let m = &files.manifest;
    assert!(m.blobs.iter().all(|b| b.name.contains("_d64_")));
    let fwd = names
        .iter()
        .filter(|n| n.starts_with("fwd/fmha_fwd_d64"))
        .count();
    let bwd = names
        .iter()
        .filter(|n| n.starts_with("bwd/") && n.contains("_d64_"))
        .count();
    assert_eq!(m.blobs.len(), fwd + bwd);
    assert_eq!(files.dispatchers().count(), 2);
    assert_eq!(m.root, out_canon.join("ck_fmha").to_str().unwrap());
    // Cargo watches the generator's inputs, never the generated files.
    let fmha_canon = fs::canonicalize(&fmha).unwrap();
    assert!(lines.contains(&format!(
        "cargo:rerun-if-changed={}\n",
        fmha_canon.join("generate.py").display()
    )));
    assert!(lines.contains(&format!(
        "cargo:rerun-if-changed={}\n",
        fmha_canon.join("codegen").display()
    )));
    assert!(!lines.contains(out_canon.to_str().unwrap()), "{lines}");

    // Unchanged inputs: no run.
    let again = ck.try_write_with_output(&mut Vec::new()).unwrap();
    assert!(again.regenerated.is_empty());
    assert_eq!(calls(&fmha).len(), 2);
    assert_eq!(again.manifest, files.manifest);

    // A changed codegen script: both directions run again.
    let script = fmha.join("codegen/ops/fmha_fwd.py");
    fs::write(&script, "# codegen, changed\n").unwrap();
    let f = fs::File::options().write(true).open(&script).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(5))
        .unwrap();
    let third = ck.try_write_with_output(&mut Vec::new()).unwrap();
    assert_eq!(third.regenerated, [Direction::Fwd, Direction::Bwd]);
    assert_eq!(calls(&fmha).len(), 4);

    // Other arguments: a run, and files of the old filter do not linger.
    ck.filter("*_d64_bf16_*");
    let fourth = ck.try_write_with_output(&mut Vec::new()).unwrap();
    assert_eq!(calls(&fmha).len(), 6);
    assert!(!fourth.manifest.blobs.is_empty());
    assert!(fourth
        .manifest
        .blobs
        .iter()
        .all(|b| b.name.contains("_d64_bf16_")));
    assert!(fourth.files.iter().all(|f| f.class != FileClass::Host));
}

#[test]
fn missing_trees_generators_and_pythons_are_named() {
    let tmp = TempDir::new("preset-missing");
    let out = tmp.path().join("out");
    let run = |f: &dyn Fn(&mut CkFmha)| {
        let mut ck = CkFmha::new();
        ck.out_dir(&out).name("t").cargo_metadata(false);
        f(&mut ck);
        ck.try_manifest().unwrap_err()
    };

    let e = run(&|ck| {
        ck.source(tmp.path().join("nowhere"));
    });
    assert!(
        matches!(&e, Error::SourceTree { path, .. } if path.ends_with("nowhere")),
        "{e:?}"
    );
    assert!(e.to_string().contains("does not exist"), "{e}");

    let not_ck = tmp.path().join("not_ck");
    fs::create_dir_all(&not_ck).unwrap();
    let e = run(&|ck| {
        ck.source(&not_ck);
    });
    assert!(e.to_string().contains("has no include/ directory"), "{e}");

    let no_gen = tmp.path().join("ck_without_example");
    fs::create_dir_all(no_gen.join("include")).unwrap();
    let e = run(&|ck| {
        ck.source(&no_gen);
    });
    match &e {
        Error::Generator { path } => {
            assert!(
                path.ends_with("example/ck_tile/01_fmha/generate.py"),
                "{}",
                path.display()
            )
        }
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("generate.py' does not exist"), "{e}");

    let ck_tree = tmp.path().join("ck");
    let fmha = fake_ck(&ck_tree, &[]);
    let e = run(&|ck| {
        ck.source(&ck_tree)
            .python(tmp.path().join("no-such-python3"));
    });
    match &e {
        Error::ProgramNotFound { program, .. } => assert!(program.ends_with("no-such-python3")),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("no-such-python3") && e.to_string().contains("not found"));
    assert!(calls(&fmha).is_empty());

    // A generator that writes no blob (an empty tree, a filter matching
    // nothing) is an error, not an empty manifest.
    let e = run(&|ck| {
        ck.source(&ck_tree);
    });
    assert!(matches!(e, Error::NoBlobs { .. }), "{e:?}");
    assert_eq!(calls(&fmha).len(), 4);

    let e = run(&|_| {});
    assert!(e.to_string().contains("no tree given"), "{e}");
}

#[test]
fn a_failing_generator_reports_its_command_and_stderr() {
    let tmp = TempDir::new("preset-fail");
    let ck_tree = tmp.path().join("ck");
    let fmha = fake_ck(&ck_tree, &[]);
    // Break the generator: every run fails like a Python exception.
    let script = fs::read_to_string(fmha.join("generate.py"))
        .unwrap()
        .replace("if a.direction == \"boom\":", "if True:");
    fs::write(fmha.join("generate.py"), script).unwrap();
    let e = CkFmha::new()
        .source(&ck_tree)
        .direction(Direction::Fwd)
        .out_dir(tmp.path().join("out"))
        .name("t")
        .cargo_metadata(false)
        .try_manifest()
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Codegen { .. }), "{e:?}");
    assert!(msg.contains("exit status: 3"), "{msg}");
    assert!(msg.contains("generate.py --direction fwd"), "{msg}");
    assert!(msg.contains("ValueError: unknown direction"), "{msg}");
    // No stamp: the next build runs the generator again.
    assert!(!tmp.path().join("out/ck_fmha/fwd.stamp").exists());
}
