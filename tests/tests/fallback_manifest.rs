//! `CK_JIT_MANIFEST`: a runtime falls back to it for blobs its own
//! manifest does not know; `CK_JIT_ROOT` relocates a manifest's tree.

use std::process::Command;

use ck_jit_tests::{c_manifest, Tree};

const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");

fn probe(manifest: &std::path::Path, cache: &std::path::Path, blob: &str) -> Command {
    let mut c = Command::new(PROBE);
    c.arg(manifest).arg(cache).arg(blob).arg("5");
    c.env_remove("CK_JIT_MANIFEST").env_remove("CK_JIT_ROOT");
    c
}

#[test]
fn unknown_blobs_are_looked_up_in_the_fallback_manifest() {
    let own = Tree::new("own");
    own.c_blob("mine", 2, 0);
    let own_manifest = own.write_manifest(&c_manifest(&own.dir, &["mine"], "cc", &[]));
    let other = Tree::new("other");
    other.c_blob("theirs", 3, 0);
    let other_manifest = other.write_manifest(&c_manifest(&other.dir, &["theirs"], "cc", &[]));
    let cache = own.cache_dir();

    // Without the fallback: an unknown-blob error that says how to add one.
    let out = probe(&own_manifest, &cache, "theirs").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(text.contains("CK_JIT_MANIFEST"), "{text}");

    // With it: found there, compiled from the fallback's own tree.
    let out = probe(&own_manifest, &cache, "theirs")
        .env("CK_JIT_MANIFEST", &other_manifest)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"value\":15"), "{text}");

    // The embedded/own manifest still wins for its own blobs.
    let out = probe(&own_manifest, &cache, "mine")
        .env("CK_JIT_MANIFEST", &other_manifest)
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"value\":10"));
}

#[test]
fn a_fallback_manifest_that_could_not_be_read_is_read_again_on_the_next_call() {
    use std::io::{BufRead, BufReader, Write};
    let own = Tree::new("own-late");
    own.c_blob("mine", 2, 0);
    let own_manifest = own.write_manifest(&c_manifest(&own.dir, &["mine"], "cc", &[]));
    let other = Tree::new("other-late");
    other.c_blob("theirs", 3, 0);
    let late = other.path("late/manifest.json");
    let mut child = probe(&own_manifest, &own.cache_dir(), "theirs")
        .arg("--again")
        .env("CK_JIT_MANIFEST", &late)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).unwrap();
    assert!(
        first.contains("error") && first.contains("late/manifest.json"),
        "{first}"
    );
    // The manifest appears (a volume mounted late, a deploy finishing).
    std::fs::create_dir_all(late.parent().unwrap()).unwrap();
    std::fs::write(
        &late,
        c_manifest(&other.dir, &["theirs"], "cc", &[]).to_json(),
    )
    .unwrap();
    writeln!(child.stdin.take().unwrap()).unwrap();
    let mut second = String::new();
    out.read_line(&mut second).unwrap();
    assert!(child.wait().unwrap().success(), "{second}");
    assert!(second.contains("\"value\":15"), "{second}");
}

#[test]
fn ck_jit_root_relocates_the_tree() {
    let t = Tree::new("reloc");
    t.c_blob("k", 4, 0);
    let manifest = t.write_manifest(&c_manifest(&t.dir, &["k"], "cc", &[]));
    let moved = t.path("moved");
    std::fs::create_dir_all(&moved).unwrap();
    std::fs::rename(t.path("kernels"), moved.join("kernels")).unwrap();

    let out = probe(&manifest, &t.cache_dir(), "k").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(text.contains("CK_JIT_ROOT"), "{text}");

    let out = probe(&manifest, &t.cache_dir(), "k")
        .env("CK_JIT_ROOT", &moved)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("\"value\":20"), "{text}");
}
