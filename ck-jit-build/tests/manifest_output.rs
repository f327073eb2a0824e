//! The manifest as written: rendering, determinism and write-if-changed.

mod common;

use std::fs;
use std::time::{Duration, SystemTime};

use ck_jit_build::manifest::compact::COMPACT_FILE;
use ck_jit_build::manifest::{Manifest, SymbolSpec, MANIFEST_FILE};
use ck_jit_build::BlobGroup;
use common::{read, Tree};

fn vec_group() -> BlobGroup {
    let mut g = BlobGroup::new("vec");
    g.glob("k/*.cpp")
        .flags(["-O2", "-fvisibility=hidden", "-std=c++17"])
        .include("include")
        .include("/opt/rocm/include")
        .define("USE_FAST", Some("1"))
        .define("DEBUG", None)
        .meta_pattern(r"(?P<op>[a-z]+)_(?P<dtype>f32|f64)");
    g
}

#[test]
fn flags_includes_defines_render_in_order_without_hidden_visibility() {
    let t = Tree::new("render");
    t.files(&["k/vadd_f32.cpp"]);
    let m = t.manifest(&vec_group()).unwrap();
    let g = &m.groups[0];
    assert_eq!(
        g.args,
        [
            "-O2",
            "-std=c++17",
            "-I{root}/include",
            "-I/opt/rocm/include",
            "-DUSE_FAST=1",
            "-DDEBUG",
            "-fPIC",
            "-shared",
            "{src}",
            "-o",
            "{out}"
        ]
    );
    assert!(!m.to_json().contains("visibility"));
    assert_eq!(g.compiler, "c++");
    assert_eq!(g.symbol, SymbolSpec::Exact("{name}".into()));
    assert!(g.depfile);
    assert_eq!(
        m.symbol_of(&m.blobs[0]),
        SymbolSpec::Exact("vadd_f32".into())
    );
}

#[test]
fn the_written_manifest_parses_back_and_validates() {
    let t = Tree::new("parse-back");
    t.files(&["k/vadd_f32.cpp", "k/vmul_f64.cpp"]);
    let path = t.build().group(vec_group()).try_write().unwrap();
    assert_eq!(path, fs::canonicalize(&t.out).unwrap().join(MANIFEST_FILE));
    let m = Manifest::from_json(&read(&path)).unwrap();
    assert_eq!(m.name, "t");
    assert_eq!(m.blobs.len(), 2);
    assert_eq!(m, t.manifest(&vec_group()).unwrap());
}

#[test]
fn a_manifest_edited_after_the_build_is_written_in_both_forms_an_embedding_program_reads() {
    let t = Tree::new("write-edited");
    t.files(&["k/vadd_f32.cpp", "k/vmul_f64.cpp"]);
    let mut m = t.manifest(&vec_group()).unwrap();
    m.blobs.retain(|b| b.name != "vmul_f64");
    let out = t.path("edited-out");
    let path = ck_jit_build::write_manifest(&m, &out).unwrap();
    assert_eq!(path, out.join(MANIFEST_FILE));
    assert_eq!(Manifest::from_json(&read(&path)).unwrap(), m);
    // The compact form is what `embed_manifest!()` includes: without it a
    // crate that writes its own manifest does not compile.
    let compact = fs::read(out.join(COMPACT_FILE)).unwrap();
    assert_eq!(compact, m.to_compact());
}

#[test]
fn an_invalid_hand_made_manifest_is_refused_and_nothing_is_written() {
    let t = Tree::new("write-invalid");
    t.files(&["k/vadd_f32.cpp"]);
    let mut m = t.manifest(&vec_group()).unwrap();
    m.blobs[0].group = 7;
    let out = t.path("invalid-out");
    let err = ck_jit_build::write_manifest(&m, &out).unwrap_err();
    assert!(err.to_string().contains("invalid manifest"), "{err}");
    assert!(!out.join(MANIFEST_FILE).exists());
    assert!(!out.join(COMPACT_FILE).exists());
}

#[test]
fn two_runs_give_identical_bytes_whatever_the_creation_order() {
    let t = Tree::new("determinism");
    let files = ["k/c_f32.cpp", "k/a_f64.cpp", "k/b_f32.cpp", "k/sub/z.cpp"];
    t.files(&files);
    let mut g = vec_group();
    g.glob("k/**/*.cpp");
    let first = read(&t.build().group(&g).try_write().unwrap());
    let again = read(&t.build().group(&g).try_write().unwrap());
    assert_eq!(first, again);

    // Same tree, files created in the opposite order (different directory
    // order on most file systems), manifest rebuilt from scratch.
    fs::remove_dir_all(t.path("k")).unwrap();
    fs::remove_dir_all(&t.out).unwrap();
    for f in files.iter().rev() {
        t.file(f);
    }
    let rebuilt = read(&t.build().group(&g).try_write().unwrap());
    assert_eq!(first, rebuilt);
    let names: Vec<_> = t
        .manifest(&g)
        .unwrap()
        .blobs
        .iter()
        .map(|b| b.name.clone())
        .collect();
    assert_eq!(names, ["a_f64", "b_f32", "c_f32", "z"]);
}

#[test]
fn an_unchanged_manifest_is_not_rewritten() {
    let t = Tree::new("mtime");
    t.files(&["k/vadd_f32.cpp"]);
    let path = t.build().group(vec_group()).try_write().unwrap();
    let old = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(old)
        .unwrap();

    t.build().group(vec_group()).try_write().unwrap();
    assert_eq!(fs::metadata(&path).unwrap().modified().unwrap(), old);

    // A new blob changes the content, so the file is rewritten.
    t.file("k/vsub_f32.cpp");
    t.build().group(vec_group()).try_write().unwrap();
    assert_ne!(fs::metadata(&path).unwrap().modified().unwrap(), old);
    assert!(read(&path).contains("vsub_f32"));
    // No temporary file is left behind: the JSON manifest and its
    // compact form (what programs embed) only.
    let mut names: Vec<String> = fs::read_dir(&t.out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["ck_jit_manifest.ckm", "ck_jit_manifest.json"]);
    // The compact form holds the same manifest.
    let compact = fs::read(t.out.join("ck_jit_manifest.ckm")).unwrap();
    let decoded = ck_jit_build::manifest::compact::Compact::parse(&compact)
        .unwrap()
        .to_manifest()
        .unwrap();
    assert_eq!(decoded.to_json(), read(&path));
}

#[test]
fn template_shared_cwd_and_prefix_symbols_reach_the_manifest() {
    let t = Tree::new("template");
    t.files(&["cu/saxpy.cu"]);
    let m = t
        .manifest(
            BlobGroup::new("cuda")
                .glob("cu/*.cu")
                .compiler("nvcc")
                .args_template([
                    "-O3",
                    "-Xcompiler",
                    "-fPIC",
                    "-shared",
                    "{src}",
                    "-o",
                    "{out}",
                ])
                .cwd("cu")
                .symbol_prefix("_Z5saxpy")
                .depfile(false),
        )
        .unwrap();
    let g = &m.groups[0];
    assert_eq!(g.compiler, "nvcc");
    assert_eq!(g.args[0], "-O3");
    assert_eq!(g.cwd.as_deref(), Some("{root}/cu"));
    assert!(!g.depfile);
    assert_eq!(
        m.symbol_of(&m.blobs[0]),
        SymbolSpec::Prefix("_Z5saxpy".into())
    );
}
