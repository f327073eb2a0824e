//! Records how to compile every FMHA blob CK's own code generator writes
//! for the four classic directions (`fwd`, `fwd_splitkv`, `fwd_appendkv`,
//! `bwd`, receipt 1) for `gfx942`, and compiles none of them: that happens
//! on each blob's first call. From the same CK tree it writes:
//!
//! - `OUT_DIR/ck_jit_manifest.json`: one group per kind (and architecture
//!   family), CK's compile command, each blob's traits as metadata;
//! - `OUT_DIR/rules/*.rules.json`: the decision each of CK's four
//!   dispatchers makes (`fmha_fwd`, ...), read from the dispatcher, for the
//!   Rust side to decide the same;
//! - `OUT_DIR/stubs/*.cpp`: for C++ consumers, a lazy definition of every
//!   specialisation the blobs define, to link with CK's own dispatchers;
//! - `OUT_DIR/bindings.rs`: CK's argument and traits structs as Rust
//!   structs, field for field, read from that CK's `fmha_fwd.hpp` and
//!   `fmha_bwd.hpp`.
//!
//! The CK tree is `CK_FMHA_CK` (a CK checkout, or aiter's
//! `3rdparty/composable_kernel`; `none` for none), else the CK of 2025-11
//! that the tests of this workspace use, beside it. Without one the crate still builds, with
//! no blobs, no rules and the bindings of CK 2025-11 kept in
//! `src/bindings_ck.rs`; the build says so.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use ck_jit_build::manifest::{Group, Manifest, SymbolSpec, FORMAT_VERSION};
use ck_jit_ck::ffi::{write_rust_structs, StructSpec};
use ck_jit_ck::rules::{RulesFile, RULES_FORMAT};
use ck_jit_ck::{write_stubs, CkFmha, FMHA_EXAMPLE_DIR};

const DIRECTIONS: &[&str] = &["fwd", "fwd_splitkv", "fwd_appendkv", "bwd"];
const ARCH: &str = "gfx942";
const CACHE_NAME: &str = "ck_jit_ck_fmha";
/// The CK the workspace's tests use, relative to this crate.
const DEFAULT_CK: &str = "../../../shared/data/ck/ck-2025-11";
/// The kernel families this crate declares (`src/kernels.rs`).
const FAMILIES: &[(&str, &str)] = &[
    ("fwd", "fmha_fwd_"),
    ("fwd_splitkv", "fmha_fwd_splitkv_oneshot_"),
    ("fwd_splitkv_combine", "fmha_fwd_splitkv_combine_oneshot_"),
    ("fwd_appendkv", "fmha_fwd_appendkv_"),
    ("bwd_dot_do_o", "fmha_bwd_dot_do_o_"),
    ("bwd_dq_dk_dv", "fmha_bwd_dq_dk_dv_"),
    ("bwd_convert_dq", "fmha_bwd_convert_dq_"),
];
/// The dispatchers whose rules the crate embeds.
const DISPATCHERS: &[&str] = &[
    "fmha_fwd_api",
    "fmha_fwd_splitkv_api",
    "fmha_fwd_appendkv_api",
    "fmha_bwd_api",
];
/// CK's structs mirrored in Rust: header, C++ name, Rust name, whether it
/// is passed to a blob (`#[repr(C)]`) or only read by the dispatch rules.
const STRUCTS: &[(&str, &str, &str, bool)] = &[
    ("fmha_fwd.hpp", "fmha_fwd_args", "FmhaFwdArgs", true),
    (
        "fmha_fwd.hpp",
        "fmha_fwd_splitkv_args",
        "FmhaFwdSplitkvArgs",
        true,
    ),
    (
        "fmha_fwd.hpp",
        "fmha_fwd_appendkv_args",
        "FmhaFwdAppendkvArgs",
        true,
    ),
    ("fmha_bwd.hpp", "fmha_bwd_args", "FmhaBwdArgs", true),
    ("fmha_fwd.hpp", "fmha_fwd_traits", "FmhaFwdTraits", false),
    (
        "fmha_fwd.hpp",
        "fmha_fwd_splitkv_traits",
        "FmhaFwdSplitkvTraits",
        false,
    ),
    (
        "fmha_fwd.hpp",
        "fmha_fwd_appendkv_traits",
        "FmhaFwdAppendkvTraits",
        false,
    ),
    ("fmha_bwd.hpp", "fmha_bwd_traits", "FmhaBwdTraits", false),
];

fn main() {
    if let Err(e) = run() {
        eprintln!("error: ck-fmha build: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let start = Instant::now();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CK_FMHA_CK");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    let Some(ck) = ck_tree()? else {
        println!(
            "cargo:warning=ck-fmha: no CK tree (set CK_FMHA_CK to a CK checkout or aiter's \
             3rdparty/composable_kernel): built with no blobs and CK 2025-11's bindings"
        );
        println!("cargo:rustc-env=CK_FMHA_CK_TREE=");
        return without_ck(&out_dir);
    };
    println!("cargo:rustc-env=CK_FMHA_CK_TREE={}", ck.display());

    let t0 = Instant::now();
    let mut preset = CkFmha::new();
    preset.source(&ck).arch(ARCH).name(CACHE_NAME);
    for d in DIRECTIONS {
        preset.direction(d);
    }
    let files = preset.try_write().map_err(|e| e.to_string())?;
    let manifest_time = t0.elapsed();

    let t0 = Instant::now();
    let rules = files
        .write_rules(out_dir.join("rules"))
        .map_err(|e| e.to_string())?;
    let rules_time = t0.elapsed();

    let t0 = Instant::now();
    let stubs = write_stubs(&files, &out_dir.join("stubs")).map_err(|e| e.to_string())?;
    let stubs_time = t0.elapsed();

    let t0 = Instant::now();
    bindings(&ck, &out_dir.join("bindings.rs"))?;
    let bindings_time = t0.elapsed();

    // Not `cargo:` lines: kept in the build script's output file only. A
    // build that reused the last one's manifest does not read it back to
    // count its blobs.
    let made = if files.reused() {
        "kept manifest".to_string()
    } else {
        format!("manifest of {} blobs", files.manifest().blobs.len())
    };
    println!(
        "ck-fmha: {made} in {manifest_time:.2?}; {} rules files in \
         {rules_time:.2?}; {} stub files ({} specialisations) in {stubs_time:.2?}; \
         bindings in {bindings_time:.2?}; whole build script {:.3} s",
        rules.len(),
        stubs.files.len(),
        stubs.specialisations,
        start.elapsed().as_secs_f64(),
    );
    Ok(())
}

/// The CK tree to read, if there is one.
fn ck_tree() -> Result<Option<PathBuf>, String> {
    let generator = |p: &Path| p.join(FMHA_EXAMPLE_DIR).join("generate.py").is_file();
    let asked = std::env::var_os("CK_FMHA_CK").filter(|v| !v.is_empty());
    if asked.as_deref() == Some(std::ffi::OsStr::new("none")) {
        return Ok(None);
    }
    if let Some(dir) = asked {
        let dir = PathBuf::from(dir);
        if !generator(&dir) {
            return Err(format!(
                "CK_FMHA_CK={}: no {FMHA_EXAMPLE_DIR}/generate.py there",
                dir.display()
            ));
        }
        return Ok(Some(dir));
    }
    let dir = Path::new(DEFAULT_CK);
    println!("cargo:rerun-if-changed={DEFAULT_CK}");
    Ok(generator(dir).then(|| fs::canonicalize(dir).ok()).flatten())
}

/// No CK: a manifest with the crate's families and no blob, rules with no
/// function, and the kept bindings.
fn without_ck(out_dir: &Path) -> Result<(), String> {
    let groups = FAMILIES
        .iter()
        .map(|(name, entry)| Group {
            name: name.to_string(),
            compiler: "hipcc".into(),
            args: vec![
                "-fPIC".into(),
                "-shared".into(),
                "{src}".into(),
                "-o".into(),
                "{out}".into(),
            ],
            cwd: None,
            symbol: SymbolSpec::Prefix(format!("_Z{}{entry}I", entry.len())),
            depfile: true,
            family: None,
            neutral: Default::default(),
        })
        .collect();
    let m = Manifest {
        format: FORMAT_VERSION,
        name: CACHE_NAME.into(),
        root: out_dir.display().to_string(),
        groups,
        blobs: Vec::new(),
        together: Vec::new(),
    };
    // Both forms: the JSON file and the compact one `embed_manifest!()` embeds.
    ck_jit_build::write_manifest(&m, out_dir).map_err(|e| e.to_string())?;
    fs::create_dir_all(out_dir.join("rules")).map_err(|e| e.to_string())?;
    for d in DISPATCHERS {
        let empty = RulesFile {
            format: RULES_FORMAT,
            file: format!("{d}.cpp"),
            blobs: Vec::new(),
            exprs: Vec::new(),
            functions: Vec::new(),
        };
        write_if_changed(
            &out_dir.join(format!("rules/{d}.rules.json")),
            &empty.to_json(),
        )?;
    }
    let kept = fs::read_to_string("src/bindings_ck.rs").map_err(|e| e.to_string())?;
    write_if_changed(&out_dir.join("bindings.rs"), &kept)
}

/// Rust mirrors of [`STRUCTS`] as the headers of the CK tree `ck` declare
/// them, with the `CkStruct` implementations the dispatch rules read,
/// written to `path` (not again while the headers are unchanged).
fn bindings(ck: &Path, path: &Path) -> Result<(), String> {
    let specs: Vec<StructSpec> = STRUCTS
        .iter()
        .map(|(header, cpp, rust, repr_c)| StructSpec {
            header: format!("{FMHA_EXAMPLE_DIR}/{header}"),
            cpp: cpp.to_string(),
            rust: rust.to_string(),
            repr_c: *repr_c,
        })
        .collect();
    let preamble = "// Generated by the ck-fmha build from CK's FMHA headers: every data member\n\
                    // of CK's argument and traits structs, in CK's order.\n\n";
    write_rust_structs(ck, &specs, true, preamble, path).map_err(|e| e.to_string())
}

fn write_if_changed(path: &Path, text: &str) -> Result<(), String> {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))
}
