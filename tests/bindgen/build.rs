//! Generates, with ck-jit-build's `bindgen` feature:
//!
//! - `OUT_DIR/ck_<version>.rs`: CK's FMHA argument and traits structs and
//!   `ck_tile::stream_config`, for each CK version beside the repository
//!   (`../shared/data/ck`), and `OUT_DIR/ck_<version>_layout.rs`: what rustc
//!   makes of them (every field's offset and size, each struct's size and
//!   alignment), for the tests to compare with C++;
//! - `OUT_DIR/launchers.rs`: the `#[lazy_kernel]` block of
//!   `kernels/launchers.h`, and the manifest of the kernels in `kernels/`.
//!
//! Without libclang, CK's data or HIP's headers, a part is skipped with a
//! warning (the tests then print a skip), unless `CK_JIT_REQUIRE_BINDGEN=1`
//! (or `CK_JIT_REQUIRE_CK_DATA=1` for the CK trees): then the build fails.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ck_jit_build::bindings::{Bindings, CkTypes, Launchers};
use ck_jit_build::{BlobGroup, Build};

/// The CK versions beside the repository, and their module names.
const VERSIONS: &[(&str, &str)] = &[
    ("ck-2024-10-23", "ck_2024_10_23"),
    ("ck-2025-11", "ck_2025_11"),
];

fn main() {
    for var in [
        "CK_JIT_REQUIRE_BINDGEN",
        "CK_JIT_REQUIRE_CK_DATA",
        "CK_JIT_REAL_HIP_ENV",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(launchers, ck_2024_10_23, ck_2025_11)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("dir"));
    let workspace = manifest_dir.join("../..");

    // The kernels: recorded, none compiled; `affine_i32` comes from the
    // blob `affine_v2`.
    Build::new()
        .name("ck_jit_bindgen_tests")
        .group(
            BlobGroup::new("launchers")
                .glob("kernels/*.c")
                .compiler("cc")
                .flags(["-O2", "-std=c11"])
                .include("kernels"),
        )
        .write();

    let mut status = String::new();
    let launchers = Launchers::new()
        .header("kernels/launchers.h")
        .blob("affine_i32", "affine_v2")
        .try_write("launchers.rs");
    match launchers {
        Ok(_) => {
            println!("cargo:rustc-cfg=launchers");
            status.push_str("pub const LAUNCHERS_SKIPPED: Option<&str> = None;\n");
        }
        Err(e) => {
            let why = skip("the launcher bindings", &e.to_string());
            let _ = writeln!(
                status,
                "pub const LAUNCHERS_SKIPPED: Option<&str> = Some({why:?});"
            );
        }
    }
    write(&out.join("status.rs"), &status);

    let hip = hip_include(&workspace);
    for (version, module) in VERSIONS {
        let (bindings, layout) = match ck_version(&workspace, version, hip.as_deref()) {
            Ok((b, ms)) => {
                println!("cargo:rustc-cfg={module}");
                (b.source().to_string(), layout(&b, ms))
            }
            Err(why) => {
                let why = skip(&format!("the bindings of {version}"), &why);
                (
                    String::new(),
                    format!(
                        "pub const SKIPPED: Option<&str> = Some({why:?});\n\
                         pub const GENERATED_MS: u128 = 0;\n\
                         pub fn layouts() -> Vec<crate::Layout> {{ Vec::new() }}\n"
                    ),
                )
            }
        };
        write(&out.join(format!("{module}.rs")), &bindings);
        write(&out.join(format!("{module}_layout.rs")), &layout);
    }
}

/// A part that cannot be generated: a failure when required, else a
/// warning and the reason for the tests' skip line.
fn skip(what: &str, why: &str) -> String {
    let required = std::env::var("CK_JIT_REQUIRE_BINDGEN").is_ok_and(|v| v == "1");
    if required {
        panic!("CK_JIT_REQUIRE_BINDGEN=1 but {what} cannot be generated: {why}");
    }
    println!("cargo:warning=ck-jit-bindgen-tests: {what} skipped: {why}");
    why.to_string()
}

/// HIP's headers as `.ci/hip-toolchain.sh` lays them out: beside the
/// `env.sh` that `CK_JIT_REAL_HIP_ENV` names, else in the workspace's
/// `target/hip-toolchain`.
fn hip_include(workspace: &Path) -> Option<PathBuf> {
    let toolchain = match std::env::var_os("CK_JIT_REAL_HIP_ENV") {
        Some(env) => PathBuf::from(env).parent()?.to_path_buf(),
        None => workspace.join("target/hip-toolchain"),
    };
    let dir = toolchain.join("rocm/include");
    dir.join("hip/hip_runtime.h").is_file().then_some(dir)
}

/// One CK version's bindings and how long bindgen took, in milliseconds.
fn ck_version(
    workspace: &Path,
    version: &str,
    hip: Option<&Path>,
) -> Result<(Bindings, u128), String> {
    let tree = workspace.join("../shared/data/ck").join(version);
    if !tree.join("example/ck_tile/01_fmha/fmha_fwd.hpp").is_file() {
        let why = format!("no CK tree at {}", tree.display());
        if std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_some() {
            panic!("CK_JIT_REQUIRE_CK_DATA is set but there is {why}");
        }
        return Err(why);
    }
    let hip = hip.ok_or(
        "no HIP headers: run .ci/hip-toolchain.sh (target/hip-toolchain) or set CK_JIT_REAL_HIP_ENV",
    )?;
    let t0 = Instant::now();
    let b = CkTypes::new()
        .ck(&tree)
        .hip_include(hip)
        .try_generate()
        .map_err(|e| e.to_string())?;
    Ok((b, t0.elapsed().as_millis()))
}

/// What rustc makes of the generated structs, as Rust source.
fn layout(b: &Bindings, ms: u128) -> String {
    let mut s = String::from(
        "// Generated by build.rs: the layout rustc gives these bindings.\n\
         pub const SKIPPED: Option<&str> = None;\n",
    );
    let _ = writeln!(s, "pub const GENERATED_MS: u128 = {ms};");
    s.push_str("pub fn layouts() -> Vec<crate::Layout> {\n    vec![\n");
    for st in b.structs() {
        let t = &st.name;
        let _ = writeln!(
            s,
            "        crate::Layout {{\n            cpp: {:?},\n            size: ::std::mem::size_of::<{t}>(),\n            \
             align: ::std::mem::align_of::<{t}>(),\n            fields: vec![",
            st.cpp
        );
        for f in &st.fields {
            let Some(cpp) = &f.cpp else { continue };
            let n = &f.name;
            let _ = writeln!(
                s,
                "                crate::FieldLayout {{ cpp: {cpp:?}, offset: ::std::mem::offset_of!({t}, {n}), \
                 size: crate::field_size(|s: &{t}| &s.{n}) }},"
            );
        }
        s.push_str("            ],\n        },\n");
    }
    s.push_str("    ]\n}\n");
    s
}

fn write(path: &Path, text: &str) {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
