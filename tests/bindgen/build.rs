//! Generates, with ck-jit-build's `bindgen` feature, `OUT_DIR/launchers.rs`:
//! the `#[lazy_kernel]` block of `kernels/launchers.h`, and records the
//! manifest of the kernels in `kernels/`.
//!
//! Without libclang the bindings are skipped with a warning (the tests then
//! print a skip), unless `CK_JIT_REQUIRE_BINDGEN=1`: then the build fails.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use ck_jit_build::bindings::Launchers;
use ck_jit_build::{BlobGroup, Build};

fn main() {
    println!("cargo:rerun-if-env-changed=CK_JIT_REQUIRE_BINDGEN");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo::rustc-check-cfg=cfg(launchers)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));

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

fn write(path: &Path, text: &str) {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}
