//! The check that cannot be fooled by where a CK version puts its code:
//! CK's own dispatchers, compiled with a real HIP compiler, must find
//! every blob specialisation they leave undefined among the stubs.
//!
//! Newer CK moved the template that launches bwd's three kernels
//! (`fmha_bwd_<dot_do_o, dq_dk_dv, convert_dq, Arch>`) from the generated
//! `fmha_bwd_api.cpp` into `fmha_bwd.hpp`. Here a copy of CK 2025-11 is
//! changed the same way (the template cut out of the generator's
//! dispatcher text and appended to the header, nothing else), a narrow bwd
//! generator run compiles and checks clean, and with one `dot_do_o` blob
//! deleted from the generated output, compiling the dispatchers is an
//! error naming the symbols that would have stayed undefined. A reading of
//! the dispatcher's source sees none of those calls.
//!
//! Needs the HIP compiler of `.ci/hip-toolchain.sh` (`CK_JIT_REAL_HIP_ENV`,
//! else `target/hip-toolchain/env.sh`); skipped without it unless
//! `CK_JIT_REQUIRE_REAL_CK` is set.
#![cfg(feature = "build")]

mod real_ck;

use std::fs;
use std::path::{Path, PathBuf};

use ck_jit_ck::{ffi, CkFmha, Error};
use real_ck::{ck_copy, Scratch, CK_2025};

const BWD_FILTER: &str = "*d64_fp16_b64_batch_o2_npad\
     @*d64_fp16_b64x*_batch_o2_npad_ndeterministic\
     @*d64_fp16_batch_*_npad_nbias_ndbias_nmask_ndropout_ndeterministic_ntrload";

/// The real HIP compiler, or `None` with a visible skip.
fn hipcc() -> Option<PathBuf> {
    let env = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hip-toolchain/env.sh")
        });
    let found = fs::read_to_string(&env).ok().and_then(|t| {
        t.lines()
            .filter_map(|l| l.trim().trim_start_matches("export ").split_once('='))
            .find(|(k, _)| k.trim() == "CK_JIT_REAL_HIPCC")
            .map(|(_, v)| PathBuf::from(v.trim().trim_matches('"')))
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_REAL_CK").is_none(),
            "CK_JIT_REQUIRE_REAL_CK is set but {} names no CK_JIT_REAL_HIPCC",
            env.display()
        );
        eprintln!("SKIPPED: no HIP compiler ({} missing)", env.display());
    }
    found
}

/// Moves the bwd launch template out of the generator's dispatcher text
/// into `fmha_bwd.hpp`, as newer CK has it.
fn move_launcher_into_the_header(ck: &Path) {
    let example = ck.join("example/ck_tile/01_fmha");
    let py = example.join("codegen/ops/fmha_bwd.py");
    let text = fs::read_to_string(&py).unwrap();
    let start = text
        .find("template <typename dot_do_o_trait_, typename dq_dk_dv_trait_")
        .expect("the bwd launch template in codegen/ops/fmha_bwd.py");
    let end = start
        + text[start..]
            .find("template <>\nfloat fmha_bwd<2>")
            .expect("the bwd dispatcher after the launch template");
    let launcher = text[start..end].replace("{{", "{").replace("}}", "}");
    fs::write(&py, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let header = example.join("fmha_bwd.hpp");
    let mut h = fs::read_to_string(&header).unwrap();
    h.push_str("\n#include <iostream>\n\n");
    h.push_str(&launcher);
    fs::write(&header, h).unwrap();
}

fn generate(ck: &Path, out: &Path) -> ck_jit_ck::CkFmhaFiles {
    CkFmha::new()
        .source(ck)
        .out_dir(out)
        .name("t")
        .cargo_metadata(false)
        .direction("bwd")
        .filter(BWD_FILTER)
        .arch("gfx942")
        .try_write()
        .unwrap_or_else(|e| panic!("{e}"))
}

fn compile(files: &ck_jit_ck::CkFmhaFiles, hipcc: &Path, out: &Path) -> Result<(), Error> {
    fs::create_dir_all(out).unwrap();
    ffi::compile_dispatchers(
        files,
        hipcc,
        "ck_jit_bwd_check",
        out,
        &["-Wno-unused-result", "-Wno-unused-command-line-argument"],
    )
    .map(|_| ())
}

#[test]
fn a_blob_a_header_template_calls_is_checked_in_the_compiled_dispatcher() {
    let Some(hipcc) = hipcc() else { return };
    let tmp = Scratch::new("dispatch-objects");
    let Some(ck) = ck_copy(CK_2025, &tmp.path().join("ck")) else {
        return;
    };
    move_launcher_into_the_header(&ck);
    // The cc crate reads what cargo gives a build script.
    for (k, v) in [
        ("TARGET", "x86_64-unknown-linux-gnu"),
        ("HOST", "x86_64-unknown-linux-gnu"),
        ("OPT_LEVEL", "0"),
        ("DEBUG", "false"),
    ] {
        std::env::set_var(k, v);
    }
    let out = tmp.path().join("out");
    let files = generate(&ck, &out);
    let api = fs::read_to_string(files.dispatchers().next().unwrap()).unwrap();
    assert!(
        !api.contains("fmha_bwd_dot_do_o_oneshot_"),
        "the dispatcher still launches the kernels itself"
    );
    // The reading of the source follows the launch template into the
    // header: the three kernels are one run (held calls), and the rules
    // of fmha_bwd reach blobs of each kind.
    let check = files.check_dispatchers().unwrap_or_else(|e| panic!("{e}"));
    assert!(check.unresolved.is_empty(), "{:?}", check.unresolved);
    assert!(
        check.sequences.iter().any(|run| run.len() >= 3
            && run[0].starts_with("fmha_bwd_dot_do_o_oneshot_<")
            && run[1].starts_with("fmha_bwd_dq_dk_dv_oneshot_<")),
        "{:?}",
        check.sequences
    );
    let rules = files.dispatch_rules().unwrap_or_else(|e| panic!("{e}"));
    let bwd = rules.iter().find(|r| r.file == "fmha_bwd_api.cpp").unwrap();
    for kind in ["bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"] {
        assert!(
            bwd.blobs.iter().any(|b| files
                .manifest()
                .blob(b)
                .is_some_and(|b| b.meta["kind"] == kind)),
            "fmha_bwd's rules reach no {kind} blob: {:?}",
            bwd.blobs
        );
    }
    // Every blob there: the compiled dispatcher finds all it needs.
    compile(&files, &hipcc, &tmp.path().join("lib-all")).unwrap_or_else(|e| panic!("{e}"));

    // One dot_do_o blob gone from the generated output.
    let victim = files
        .files()
        .iter()
        .find(|f| f.rel.contains("fmha_bwd_dot_do_o_"))
        .expect("a dot_do_o blob")
        .path
        .clone();
    fs::remove_file(&victim).unwrap();
    let files = generate(&ck, &out);
    assert!(files.regenerated.is_empty(), "{:?}", files.regenerated);
    let err = compile(&files, &hipcc, &tmp.path().join("lib-missing"))
        .expect_err("dispatchers calling a deleted blob compiled and checked clean");
    let text = err.to_string();
    let Error::UndefinedSpecialisations { missing, .. } = &err else {
        panic!("expected undefined specialisations, got: {text}");
    };
    assert!(
        missing.iter().any(
            |m| m.template == "fmha_bwd_dot_do_o_oneshot_" && m.object.contains("fmha_bwd_api")
        ),
        "{text}"
    );
    assert!(
        missing
            .iter()
            .all(|m| m.template.starts_with("fmha_bwd_dot_do_o_")),
        "only the deleted blob's specialisations are missing: {text}"
    );
}
