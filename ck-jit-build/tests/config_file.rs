//! `ck-jit.toml`: it must give exactly what the same settings in Rust give.

mod common;

use std::fs;

use ck_jit_build::{from_config, BlobGroup, Build, Error};
use common::{read, Tree};

const CONFIG: &str = r#"
name = "my_kernels"
root = "tree"

[[group]]
name = "vec"
glob = ["k/vec_*.cpp"]
exclude = ["*_api.cpp"]
compiler = "c++"
flags = ["-O2", "-std=c++17", "-fvisibility=hidden"]
include = ["include"]
define = { USE_FAST = "1", DEBUG = true, UNSET = false }
symbol = { exact = "{name}" }
meta_pattern = '(?P<op>[a-z]+)_(?P<dtype>f32|f64)'
meta = { family = "vec" }
family = "kernels"
neutral = { op = "add" }
shared = true
depfile = true

[[group]]
name = "fwd"
glob = "fwd/**/*.cpp"
files = ["extra/fmha_one.cpp"]
symbol = { prefix = "fmha_fwd_" }
require_meta_match = true
meta_pattern = '^(?P<kind>[a-z]+)_'
cwd = "fwd"
family = "kernels"
"#;

fn tree() -> Tree {
    let t = Tree::new("config");
    t.files(&[
        "k/vec_add_f32.cpp",
        "k/vec_mul_f64.cpp",
        "k/vec_api.cpp",
        "fwd/a/fmha_x.cpp",
        "extra/fmha_one.cpp",
    ]);
    fs::write(t.base.join("ck-jit.toml"), CONFIG).unwrap();
    t
}

fn same_in_rust(t: &Tree) -> Build {
    let mut b = Build::new();
    b.root(&t.root)
        .name("my_kernels")
        .out_dir(&t.out)
        .cargo_metadata(false)
        .group(
            BlobGroup::new("vec")
                .glob("k/vec_*.cpp")
                .exclude("*_api.cpp")
                .compiler("c++")
                .flags(["-O2", "-std=c++17", "-fvisibility=hidden"])
                .include("include")
                // A TOML table is applied in name order.
                .define("DEBUG", None)
                .define("USE_FAST", Some("1"))
                .symbol_exact("{name}")
                .meta_pattern("(?P<op>[a-z]+)_(?P<dtype>f32|f64)")
                .meta("family", "vec")
                .family("kernels")
                .neutral("op", "add")
                .shared(true)
                .depfile(true),
        )
        .group(
            BlobGroup::new("fwd")
                .glob("fwd/**/*.cpp")
                .file("extra/fmha_one.cpp")
                .symbol_prefix("fmha_fwd_")
                .require_meta_match(true)
                .meta_pattern("^(?P<kind>[a-z]+)_")
                .cwd("fwd")
                .family("kernels"),
        );
    b
}

#[test]
fn config_file_gives_the_same_manifest_as_the_builder() {
    let t = tree();
    let mut from_file = from_config(t.base.join("ck-jit.toml"));
    from_file.out_dir(&t.out).cargo_metadata(false);
    let a = from_file.try_manifest().unwrap();
    let b = same_in_rust(&t).try_manifest().unwrap();
    assert_eq!(a, b);
    assert_eq!(a.to_json(), b.to_json());
    assert_eq!(a.name, "my_kernels");
    assert_eq!(a.blobs.len(), 4);
    assert!(a.groups[0].args.contains(&"-DUSE_FAST=1".to_string()));
    assert!(!a.groups[0].args.iter().any(|x| x.contains("UNSET")));
    // Two groups, two compile commands, one family; a neutral value.
    assert_eq!(a.groups[0].family(), "kernels");
    assert_eq!(a.groups[1].family(), "kernels");
    assert_eq!(a.groups[0].neutral["op"], "add");
    assert!(a.groups[1].neutral.is_empty());

    // And byte-identical files on disk.
    let written_a = read(&from_file.try_write().unwrap());
    let written_b = read(&same_in_rust(&t).try_write().unwrap());
    assert_eq!(written_a, written_b);
}

#[test]
fn explicit_setters_win_over_the_config_name_and_root() {
    let t = tree();
    let other = t.base.join("other");
    fs::create_dir_all(other.join("k")).unwrap();
    fs::write(other.join("k/vec_sub_f32.cpp"), "").unwrap();
    fs::create_dir_all(other.join("fwd")).unwrap();
    fs::write(other.join("fwd/fmha_y.cpp"), "").unwrap();
    fs::create_dir_all(other.join("extra")).unwrap();
    fs::write(other.join("extra/fmha_one.cpp"), "").unwrap();
    let m = from_config(t.base.join("ck-jit.toml"))
        .name("explicit")
        .root(&other)
        .out_dir(&t.out)
        .try_manifest()
        .unwrap();
    assert_eq!(m.name, "explicit");
    assert_eq!(m.root, fs::canonicalize(&other).unwrap().to_str().unwrap());
    assert!(m.blob("vec_sub_f32").is_some());
}

#[test]
fn config_groups_come_after_builder_groups() {
    let t = tree();
    t.file("misc/m.cpp");
    let m = Build::new()
        .out_dir(&t.out)
        .group(BlobGroup::new("misc").glob("misc/*.cpp"))
        .config_file(t.base.join("ck-jit.toml"))
        .try_manifest()
        .unwrap();
    let groups: Vec<_> = m.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(groups, ["misc", "vec", "fwd"]);
}

#[test]
fn an_unknown_key_names_the_key_the_file_and_the_line() {
    let t = Tree::new("config-unknown");
    let path = t.base.join("ck-jit.toml");
    fs::write(
        &path,
        "[[group]]\nname = \"g\"\nglob = \"*.cpp\"\ncompilr = \"c++\"\n",
    )
    .unwrap();
    let e = from_config(&path).try_manifest().unwrap_err();
    assert!(
        matches!(e, Error::ParseConfig { line: Some(4), .. }),
        "{e:?}"
    );
    let m = e.to_string();
    assert!(m.contains("compilr"), "{m}");
    assert!(m.contains(&*path.to_string_lossy()), "{m}");
}

#[test]
fn a_syntax_error_names_the_file_and_line_and_a_missing_file_is_an_error() {
    let t = Tree::new("config-syntax");
    let path = t.base.join("ck-jit.toml");
    fs::write(&path, "name = \"x\"\nroot = \n").unwrap();
    let e = from_config(&path).try_manifest().unwrap_err();
    assert!(
        matches!(e, Error::ParseConfig { line: Some(2), .. }),
        "{e:?}"
    );

    let e = from_config(t.base.join("absent.toml"))
        .try_manifest()
        .unwrap_err();
    assert!(matches!(e, Error::ReadConfig { .. }), "{e:?}");
    assert!(e.to_string().contains("absent.toml"), "{e}");
}

#[test]
fn a_wrong_type_is_a_parse_error_not_a_default() {
    let t = Tree::new("config-type");
    let path = t.base.join("ck-jit.toml");
    fs::write(&path, "[[group]]\nname = \"g\"\nshared = \"yes\"\n").unwrap();
    let e = from_config(&path).try_manifest().unwrap_err();
    assert!(
        matches!(e, Error::ParseConfig { line: Some(3), .. }),
        "{e:?}"
    );
}
