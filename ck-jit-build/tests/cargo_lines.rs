//! What the build tells cargo: directories to watch (not blob files), the
//! config file, the environment variables it read, and warnings.

mod common;

use std::fs;

use ck_jit_build::{BlobGroup, Build, Watch};
use common::Tree;

fn lines_of(build: &Build) -> Vec<String> {
    let mut out = Vec::new();
    build.try_write_with_output(&mut out).unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn rerun(path: &std::path::Path) -> String {
    format!("cargo:rerun-if-changed={}", path.to_str().unwrap())
}

#[test]
fn rerun_lines_name_the_walked_directories_not_the_blobs() {
    let t = Tree::new("rerun");
    t.files(&[
        "k/a.cpp",
        "k/b.cpp",
        "deep/x/y.cpp",
        "deep/z/w.cpp",
        "lone/one.cpp",
    ]);
    let root = t.canonical();
    let mut b = t.build();
    b.cargo_metadata(true)
        .group(BlobGroup::new("k").glob("k/*.cpp"))
        .group(BlobGroup::new("deep").glob("deep/**/*.cpp"))
        .group(BlobGroup::new("lone").file("lone/one.cpp"));
    let lines = lines_of(&b);
    let reruns: Vec<_> = lines
        .iter()
        .filter(|l| l.starts_with("cargo:rerun-if-changed="))
        .cloned()
        .collect();
    // One line per top-most directory: cargo scans a directory recursively.
    assert_eq!(
        reruns,
        [
            rerun(&root.join("deep")),
            rerun(&root.join("k")),
            rerun(&root.join("lone"))
        ]
    );
    assert!(!lines.iter().any(|l| l.ends_with(".cpp")), "{lines:?}");
    // Nothing but cargo directives.
    assert!(lines.iter().all(|l| l.starts_with("cargo:")), "{lines:?}");
}

#[test]
fn a_glob_whose_directory_is_missing_watches_its_parent() {
    let t = Tree::new("missing-dir");
    t.file("k/a.cpp");
    let root = t.canonical();
    let mut b = t.build();
    b.cargo_metadata(true)
        .group(BlobGroup::new("k").glob("k/*.cpp"))
        .group(
            BlobGroup::new("later")
                .glob("gen/fwd/*.cpp")
                .allow_empty(true),
        );
    let lines = lines_of(&b);
    // `gen` does not exist: creating it changes the root itself.
    assert!(lines.contains(&rerun(&root)), "{lines:?}");
}

#[test]
fn the_config_file_is_watched() {
    let t = Tree::new("rerun-config");
    t.file("k/a.cpp");
    let config = t.base.join("ck-jit.toml");
    fs::write(
        &config,
        "root = \"tree\"\n[[group]]\nname = \"k\"\nglob = \"k/*.cpp\"\n",
    )
    .unwrap();
    let mut b = ck_jit_build::from_config(&config);
    b.out_dir(&t.out).name("t");
    let lines = lines_of(&b);
    assert!(
        lines.contains(&rerun(&fs::canonicalize(&config).unwrap())),
        "{lines:?}"
    );
}

#[test]
fn the_cache_name_variable_is_announced_when_read_and_only_then() {
    let t = Tree::new("rerun-env");
    t.file("k/a.cpp");
    let mut b = Build::new();
    b.root(&t.root)
        .out_dir(&t.out)
        .group(BlobGroup::new("k").glob("k/*.cpp"));
    let lines = lines_of(&b);
    assert!(
        lines.contains(&"cargo:rerun-if-env-changed=CK_JIT_NAME".to_string()),
        "{lines:?}"
    );
    // Cargo's own variables are not announced.
    assert!(!lines
        .iter()
        .any(|l| l.contains("OUT_DIR") || l.contains("CARGO_MANIFEST_DIR")));

    b.name("explicit");
    let lines = lines_of(&b);
    assert!(
        !lines.iter().any(|l| l.contains("CK_JIT_NAME")),
        "{lines:?}"
    );
}

#[test]
fn cargo_metadata_false_prints_nothing() {
    let t = Tree::new("silent");
    t.file("k/a.cpp");
    let mut b = Build::new();
    b.root(&t.root)
        .out_dir(&t.out)
        .cargo_metadata(false)
        .group(BlobGroup::new("k").glob("k/*.cpp"));
    assert!(lines_of(&b).is_empty());
}

#[test]
fn a_root_holding_the_out_dir_is_not_watched_but_its_subdirectories_are() {
    // The common single-crate layout: blobs and target/ side by side.
    let t = Tree::new("out-inside");
    t.files(&["top.cpp", "k/a.cpp"]);
    let out = t.path("target/debug/build/x/out");
    let root = t.canonical();
    let mut b = Build::new();
    b.root(&t.root)
        .out_dir(&out)
        .name("t")
        .group(BlobGroup::new("all").glob("**/*.cpp"));
    let lines = lines_of(&b);
    assert!(!lines.contains(&rerun(&root)), "{lines:?}");
    assert!(lines.contains(&rerun(&root.join("k"))), "{lines:?}");
    assert!(lines.contains(&rerun(&root.join("top.cpp"))), "{lines:?}");
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("/target") && l.starts_with("cargo:rerun-if-changed")),
        "{lines:?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cargo:warning=") && l.contains("build output")),
        "{lines:?}"
    );
    // The manifest never lists anything from the out dir.
    fs::write(out.join("generated.cpp"), "").unwrap();
    let m = b.try_manifest().unwrap();
    assert_eq!(common::sources(&m), ["k/a.cpp", "top.cpp"]);
}

#[test]
fn watching_crate_sources_names_src_and_the_config_not_the_blob_directories() {
    let t = Tree::new("watch-src");
    t.files(&["k/a.cpp", "deep/x/y.cpp"]);
    let config = t.base.join("ck-jit.toml");
    fs::write(
        &config,
        "root = \"tree\"\nwatch = \"crate-sources\"\n[[group]]\nname = \"deep\"\nglob = \"deep/**/*.cpp\"\n",
    )
    .unwrap();
    let mut b = ck_jit_build::from_config(&config);
    b.out_dir(&t.out)
        .name("t")
        .group(BlobGroup::new("k").glob("k/*.cpp"));
    // Cargo runs tests with the package directory in CARGO_MANIFEST_DIR,
    // as it runs build scripts.
    let src = fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/src")).unwrap();
    let reruns: Vec<_> = lines_of(&b)
        .into_iter()
        .filter(|l| l.starts_with("cargo:rerun-if-changed="))
        .collect();
    assert_eq!(
        reruns,
        [rerun(&fs::canonicalize(&config).unwrap()), rerun(&src)]
    );

    // The builder's setting wins over the file's.
    b.watch(Watch::BlobDirectories);
    let lines = lines_of(&b);
    assert!(!lines.contains(&rerun(&src)), "{lines:?}");
    assert!(
        lines.contains(&rerun(&t.canonical().join("k"))),
        "{lines:?}"
    );
}

#[test]
fn blobs_under_src_are_still_watched_with_it_and_a_warning_says_so() {
    let src = fs::canonicalize(concat!(env!("CARGO_MANIFEST_DIR"), "/src")).unwrap();
    let t = Tree::new("watch-src-inside");
    let mut b = Build::new();
    // This crate's own sources stand in for blobs kept under `src`.
    b.root(&src)
        .out_dir(&t.out)
        .name("t")
        .watch(Watch::CrateSources)
        .group(BlobGroup::new("rs").glob("bindings/*.rs"));
    let lines = lines_of(&b);
    assert!(lines.contains(&rerun(&src)), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("cargo:warning=")
                && l.contains("watched with the crate's sources")),
        "{lines:?}"
    );
}
