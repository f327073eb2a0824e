//! Which files become blobs, under which names, and which trees are refused.

mod common;

use ck_jit_build::{BlobGroup, Error};
use common::{names, sources, Tree};

#[test]
fn glob_explicit_files_and_exclude_combine_without_duplicates() {
    let t = Tree::new("combine");
    t.files(&[
        "k/vadd_f32.cpp",
        "k/vmul_f64.cpp",
        "k/vec_api.cpp",
        "k/notes.txt",
        "extra/saxpy.cu",
        "extra/unused.cu",
    ]);
    let m = t
        .manifest(
            BlobGroup::new("vec")
                .glob("k/*.cpp")
                .glob("k/v*.cpp") // overlaps the first glob
                .file("extra/saxpy.cu")
                .file("./k/vadd_f32.cpp") // also found by the glob
                .exclude("*_api.cpp"),
        )
        .unwrap();
    assert_eq!(names(&m), ["saxpy", "vadd_f32", "vmul_f64"]);
    assert_eq!(
        sources(&m),
        ["extra/saxpy.cu", "k/vadd_f32.cpp", "k/vmul_f64.cpp"]
    );
    assert!(m.blobs.iter().all(|b| b.group == 0));
    assert_eq!(m.root, t.canonical().to_str().unwrap());
}

#[test]
fn explicit_absolute_file_inside_the_root_is_accepted() {
    let t = Tree::new("abs");
    let path = t.file("k/a.cpp");
    let m = t.manifest(BlobGroup::new("g").file(&path)).unwrap();
    assert_eq!(sources(&m), ["k/a.cpp"]);
}

#[test]
fn double_star_recurses_but_skips_hidden_and_target_directories() {
    let t = Tree::new("recurse");
    t.files(&[
        "top.cpp",
        "a/one.cpp",
        "a/b/c/deep.cpp",
        ".git/hooks/hidden_dir.cpp",
        "a/.hidden_file.cpp",
        "target/debug/build/x/out/generated.cpp",
        "target/CACHEDIR.TAG",
        "elsewhere/CACHEDIR.TAG",
        "elsewhere/cached.cpp",
    ]);
    let m = t.manifest(BlobGroup::new("g").glob("**/*.cpp")).unwrap();
    assert_eq!(sources(&m), ["a/b/c/deep.cpp", "a/one.cpp", "top.cpp"]);

    let m = t.manifest(BlobGroup::new("g").glob("a/**")).unwrap();
    assert_eq!(sources(&m), ["a/b/c/deep.cpp", "a/one.cpp"]);

    // A leading dot written out is matched, and then refused as a name.
    let e = t
        .manifest(BlobGroup::new("g").glob("a/.*.cpp"))
        .unwrap_err();
    assert!(
        matches!(&e, Error::BlobName { path, .. } if path == "a/.hidden_file.cpp"),
        "{e:?}"
    );
}

#[test]
fn exclude_with_a_slash_matches_the_whole_path() {
    let t = Tree::new("exclude");
    t.files(&["fwd/x/skip_a.cpp", "fwd/keep.cpp", "bwd/skip_b.cpp"]);
    let m = t
        .manifest(
            BlobGroup::new("g")
                .glob("**/*.cpp")
                .exclude("fwd/**/skip_*.cpp"),
        )
        .unwrap();
    // Sorted by blob name, not by path.
    assert_eq!(sources(&m), ["fwd/keep.cpp", "bwd/skip_b.cpp"]);
}

#[test]
fn meta_pattern_captures_become_metadata_and_group_meta_applies_to_all() {
    let t = Tree::new("meta");
    t.files(&["k/vadd_f32.cpp", "k/vmul_f64.cpp", "k/vec_api.cpp"]);
    let m = t
        .manifest(
            BlobGroup::new("vec")
                .glob("k/*.cpp")
                .meta_pattern(r"^(?P<op>[a-z]+)_(?P<dtype>f32|f64)(?P<tail>_x)?$")
                .meta("family", "vec")
                .meta("dtype", "overridden by the capture"),
        )
        .unwrap();
    let meta = |name: &str| {
        m.blob(name)
            .unwrap()
            .meta
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(meta("vadd_f32"), ["dtype=f32", "family=vec", "op=vadd"]);
    assert_eq!(meta("vmul_f64"), ["dtype=f64", "family=vec", "op=vmul"]);
    // No match: group metadata only, and no error by default.
    assert_eq!(
        meta("vec_api"),
        ["dtype=overridden by the capture", "family=vec"]
    );
}

#[test]
fn require_meta_match_names_the_file_that_does_not_match() {
    let t = Tree::new("meta-req");
    t.files(&["k/vadd_f32.cpp", "k/vec_api.cpp"]);
    let e = t
        .manifest(
            BlobGroup::new("vec")
                .glob("k/*.cpp")
                .meta_pattern(r"^(?P<op>[a-z]+)_(?P<dtype>f32|f64)$")
                .require_meta_match(true),
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::MetaMismatch { path, .. } if path == "k/vec_api.cpp"),
        "{e:?}"
    );
}

#[test]
fn two_files_with_one_stem_name_both_paths() {
    let t = Tree::new("dup");
    t.files(&["a/k.cpp", "b/k.cu"]);
    let e = t.manifest(BlobGroup::new("g").glob("*/k.*")).unwrap_err();
    let Error::DuplicateBlob {
        name,
        first,
        second,
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(
        (name.as_str(), first.as_str(), second.as_str()),
        ("k", "a/k.cpp", "b/k.cu")
    );
    let m = e.to_string();
    assert!(m.contains("a/k.cpp") && m.contains("b/k.cu"), "{m}");
}

#[test]
fn duplicate_stems_across_groups_are_refused_too() {
    let t = Tree::new("dup2");
    t.files(&["a/k.cpp", "b/k.cpp"]);
    let e = t
        .build()
        .group(BlobGroup::new("ga").glob("a/*.cpp"))
        .group(BlobGroup::new("gb").glob("b/*.cpp"))
        .try_manifest()
        .unwrap_err();
    assert!(matches!(e, Error::DuplicateBlob { .. }), "{e:?}");
}

#[test]
fn a_file_in_two_groups_names_both_groups() {
    let t = Tree::new("two-groups");
    t.files(&["k/a.cpp", "k/b.cpp"]);
    let e = t
        .build()
        .group(BlobGroup::new("first").glob("k/*.cpp"))
        .group(BlobGroup::new("second").file("k/b.cpp"))
        .try_manifest()
        .unwrap_err();
    let m = e.to_string();
    assert!(
        matches!(&e, Error::FileInTwoGroups { path, first, second }
            if path == "k/b.cpp" && first == "first" && second == "second"),
        "{e:?}"
    );
    assert!(
        m.contains("'first'") && m.contains("'second'") && m.contains("k/b.cpp"),
        "{m}"
    );
}

#[test]
fn hostile_file_names_are_errors_naming_the_file() {
    for (file, shown) in [
        ("k/with space.cpp", "k/with space.cpp"),
        ("k/dollar$(x).cpp", "k/dollar$(x).cpp"),
        ("k/new\nline.cpp", "k/new\\nline.cpp"),
        ("k/-rf.cpp", "k/-rf.cpp"),
        ("k/semi;colon.cpp", "k/semi;colon.cpp"),
    ] {
        let t = Tree::new("hostile");
        t.files(&["k/fine.cpp", file]);
        let e = t.manifest(BlobGroup::new("g").glob("k/*.cpp")).unwrap_err();
        assert!(matches!(e, Error::BlobName { .. }), "{file:?}: {e:?}");
        let m = e.to_string();
        assert!(m.contains(shown), "{file:?}: {m}");
        assert!(!m.contains('\n'), "{m}");

        // Excluding it is the way out.
        let name = file.rsplit('/').next().unwrap();
        let m = t
            .manifest(BlobGroup::new("g").glob("k/*.cpp").exclude(name))
            .unwrap();
        assert_eq!(names(&m), ["fine"]);
    }
}

#[test]
fn a_hostile_directory_name_is_an_error_naming_the_path() {
    let t = Tree::new("hostile-dir");
    t.files(&["ok/a.cpp", "bad\ndir/b.cpp"]);
    let e = t.manifest(BlobGroup::new("g").glob("*/*.cpp")).unwrap_err();
    assert!(
        matches!(&e, Error::BlobName { path, .. } if path.contains("bad\\ndir/b.cpp")),
        "{e:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_non_utf8_file_name_is_an_error() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let t = Tree::new("non-utf8");
    t.file("k/fine.cpp");
    let bad = t.path("k").join(OsStr::from_bytes(b"bad\xff.cpp"));
    if std::fs::write(&bad, "").is_err() {
        return; // a file system that refuses such names cannot hold one
    }
    let e = t.manifest(BlobGroup::new("g").glob("k/*.cpp")).unwrap_err();
    assert!(
        matches!(&e, Error::NonUtf8Path { path, .. } if *path == bad),
        "{e:?}"
    );
    assert!(e.to_string().contains("\\xFF"), "{e}");
}

#[cfg(unix)]
#[test]
fn symlinks_leading_outside_the_root_are_errors_inside_ones_are_fine() {
    use std::os::unix::fs::symlink;
    let t = Tree::new("symlink");
    t.file("k/real.cpp");
    let outside = t.base.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("evil.cpp"), "").unwrap();

    symlink(t.path("k/real.cpp"), t.path("k/alias.cpp")).unwrap();
    let m = t.manifest(BlobGroup::new("g").glob("k/*.cpp")).unwrap();
    assert_eq!(names(&m), ["alias", "real"]);

    symlink(outside.join("evil.cpp"), t.path("k/evil.cpp")).unwrap();
    let e = t.manifest(BlobGroup::new("g").glob("k/*.cpp")).unwrap_err();
    assert!(
        matches!(&e, Error::OutsideRoot { path, .. } if path == "k/evil.cpp"),
        "{e:?}"
    );
    assert!(e.to_string().contains("k/evil.cpp"), "{e}");
    std::fs::remove_file(t.path("k/evil.cpp")).unwrap();

    // Through a directory link: a wildcard follows it, the file is outside.
    symlink(&outside, t.path("linked")).unwrap();
    let e = t.manifest(BlobGroup::new("g").glob("*/*.cpp")).unwrap_err();
    assert!(
        matches!(&e, Error::OutsideRoot { path, .. } if path == "linked/evil.cpp"),
        "{e:?}"
    );
    // `**` does not follow directory links at all.
    let m = t.manifest(BlobGroup::new("g").glob("**/*.cpp")).unwrap();
    assert_eq!(names(&m), ["alias", "real"]);
    // Named explicitly, it is refused too.
    let e = t
        .manifest(BlobGroup::new("g").file("linked/evil.cpp"))
        .unwrap_err();
    assert!(matches!(e, Error::OutsideRoot { .. }), "{e:?}");
}

#[cfg(unix)]
#[test]
fn a_broken_symlink_matched_by_a_glob_is_an_error_naming_it() {
    let t = Tree::new("broken");
    t.file("k/a.cpp");
    std::os::unix::fs::symlink(t.path("k/gone.cpp"), t.path("k/dangling.cpp")).unwrap();
    let e = t.manifest(BlobGroup::new("g").glob("k/*.cpp")).unwrap_err();
    assert!(e.to_string().contains("dangling.cpp"), "{e}");
}

/// `meta_with` computes a blob's metadata from its name and path; its
/// entries win over the pattern's and the group's, and a refusal stops the
/// build naming the file.
#[test]
fn meta_with_sets_what_a_pattern_cannot_and_its_refusal_names_the_file() {
    let t = Tree::new("meta-with");
    t.files(&["k/gemm_relu_f32.cpp", "k/gemm_bias_relu_f64.cpp"]);
    let mut g = BlobGroup::new("fused");
    g.glob("k/*.cpp")
        .meta("ops", "0")
        .meta_pattern(r"_(?P<dtype>f32|f64)$")
        .meta_with(|blob| {
            let ops = blob.name.split('_').count() - 1;
            Ok(vec![
                ("ops".to_string(), ops.to_string()),
                (
                    "dir".to_string(),
                    blob.path.rsplit_once('/').unwrap().0.into(),
                ),
            ])
        });
    let m = t.manifest(&g).unwrap();
    let meta = |name: &str| &m.blobs.iter().find(|b| b.name == name).unwrap().meta;
    assert_eq!(meta("gemm_bias_relu_f64")["ops"], "3");
    assert_eq!(meta("gemm_relu_f32")["ops"], "2");
    assert_eq!(meta("gemm_relu_f32")["dtype"], "f32");
    assert_eq!(meta("gemm_relu_f32")["dir"], "k");

    g.meta_with(|blob| match blob.name.contains("bias") {
        true => Err("bias is not an operation here".into()),
        false => Ok(Vec::new()),
    });
    let e = t.manifest(&g).unwrap_err().to_string();
    assert!(
        e.contains("gemm_bias_relu_f64.cpp") && e.contains("bias is not an operation here"),
        "{e}"
    );
}

#[test]
fn an_empty_group_is_an_error_unless_allowed() {
    let t = Tree::new("empty");
    t.file("k/a.cpp");
    let e = t
        .manifest(BlobGroup::new("g").glob("kernels/*.cpp"))
        .unwrap_err();
    assert!(
        matches!(&e, Error::EmptyGroup { group, .. } if group == "g"),
        "{e:?}"
    );
    assert!(e.to_string().contains("kernels/*.cpp"), "{e}");
    // How to allow it, in both places a group is declared.
    assert!(
        e.to_string().contains("allow_empty(true)")
            && e.to_string()
                .contains("`allow_empty = true` in ck-jit.toml"),
        "{e}"
    );

    // Everything excluded is empty too.
    let e = t
        .manifest(BlobGroup::new("g").glob("k/*.cpp").exclude("*.cpp"))
        .unwrap_err();
    assert!(matches!(e, Error::EmptyGroup { .. }), "{e:?}");

    let m = t
        .build()
        .group(BlobGroup::new("g").glob("k/*.cpp"))
        .group(
            BlobGroup::new("later")
                .glob("later/*.cpp")
                .allow_empty(true),
        )
        .try_manifest()
        .unwrap();
    assert_eq!(names(&m), ["a"]);
    assert_eq!(m.groups.len(), 2);
}

#[test]
fn missing_or_escaping_explicit_files_are_errors() {
    let t = Tree::new("explicit");
    t.file("k/a.cpp");
    for (file, says) in [
        ("k/missing.cpp", "does not exist"),
        ("k", "not a regular file"),
        ("../outside.cpp", "inside"),
    ] {
        let e = t.manifest(BlobGroup::new("g").file(file)).unwrap_err();
        assert!(e.to_string().contains(says), "{file}: {e}");
    }
}

#[test]
fn bad_globs_are_errors_naming_the_pattern() {
    let t = Tree::new("bad-glob");
    t.file("k/a.cpp");
    for pattern in ["/etc/*.cpp", "../*.cpp", "k/../k/*.cpp", "k/a**.cpp"] {
        let e = t.manifest(BlobGroup::new("g").glob(pattern)).unwrap_err();
        assert!(matches!(e, Error::Glob { .. }), "{pattern}: {e:?}");
        assert!(e.to_string().contains(pattern), "{e}");
    }
}

#[test]
fn group_and_cache_names_are_checked() {
    let t = Tree::new("names");
    t.file("k/a.cpp");
    let e = t
        .build()
        .name("../escape")
        .group(BlobGroup::new("g").glob("k/*.cpp"))
        .try_manifest()
        .unwrap_err();
    assert!(matches!(e, Error::CacheName { .. }), "{e:?}");
    let m = e.to_string();
    assert!(
        m.starts_with("bad cache name '../escape'") && !m.contains("blob name"),
        "{m}"
    );
    let e = t
        .build()
        .group(BlobGroup::new("g").glob("k/*.cpp"))
        .group(BlobGroup::new("g").allow_empty(true))
        .try_manifest()
        .unwrap_err();
    assert!(e.to_string().contains("two groups"), "{e}");
    let e = t.build().try_manifest().unwrap_err();
    assert!(matches!(e, Error::NoGroups), "{e:?}");
}

#[test]
fn a_missing_root_is_an_error_naming_it() {
    let t = Tree::new("no-root");
    let e = t
        .build()
        .root(t.base.join("nope"))
        .group(BlobGroup::new("g").glob("*.cpp"))
        .try_manifest()
        .unwrap_err();
    assert!(matches!(e, Error::Root { .. }), "{e:?}");
    assert!(e.to_string().contains("nope"), "{e}");
}
