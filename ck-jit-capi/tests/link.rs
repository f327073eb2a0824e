//! A C++ program really linked against `libck_jit_capi.a`, and one against
//! `libck_jit_capi.so` (no Rust in their own source), compile and call a
//! blob through the C ABI.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A library cargo built beside this test's executable.
fn library(file: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let deps = exe.parent().unwrap();
    [deps, deps.parent().unwrap()]
        .iter()
        .map(|d| d.join(file))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{file} next to the test executable"))
}

#[test]
fn a_cpp_program_linked_against_the_static_library_resolves_a_blob() {
    let lib = library("libck_jit_capi.a");
    link_and_run("static", &[lib.into_os_string()]);
}

#[test]
fn a_cpp_program_linked_against_the_shared_library_resolves_a_blob() {
    let lib = library("libck_jit_capi.so");
    let dir = lib.parent().unwrap();
    link_and_run(
        "shared",
        &[
            format!("-L{}", dir.display()).into(),
            format!("-Wl,-rpath,{}", dir.display()).into(),
            "-lck_jit_capi".into(),
        ],
    );
}

fn link_and_run(kind: &str, link: &[std::ffi::OsString]) {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("capi-link-{kind}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("kernels")).unwrap();
    std::fs::write(
        dir.join("kernels/square.c"),
        "int square(int x) { return x * x; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("ck_jit_manifest.json"),
        format!(
            "{{\"format\":1,\"name\":\"ck_jit_capi_link\",\"root\":{root:?},\n\
             \"groups\":[{{\"name\":\"c\",\"compiler\":\"cc\",\
             \"args\":[\"-O1\",\"-fPIC\",\"-shared\",\"{{src}}\",\"-o\",\"{{out}}\"],\
             \"symbol\":{{\"exact\":\"{{name}}\"}}}}],\n\
             \"blobs\":[{{\"name\":\"square\",\"source\":\"kernels/square.c\",\"group\":0}}]}}\n",
            root = dir.to_string_lossy()
        ),
    )
    .unwrap();

    let program = dir.join("program");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let out = Command::new("c++")
        .arg("-std=c++11")
        .arg(format!("-I{}", include.display()))
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/program.cpp"))
        .args(link)
        .args(["-lpthread", "-ldl", "-lm", "-lrt", "-lutil", "-lgcc_s"])
        .arg("-o")
        .arg(&program)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "link failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = Command::new(&program)
        .arg(dir.join("cache"))
        .env("CK_JIT_MANIFEST", dir.join("ck_jit_manifest.json"))
        .env_remove("CK_JIT_ROOT")
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_LAUNCHER")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "ok 144\n",
        "exit {:?}, stderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}
