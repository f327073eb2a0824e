//! Interception of a foreign build: a small Makefile project compiles three
//! blobs, one host source and links them, through `$(ROCM_PATH)/bin/hipcc`
//! and `hipcc` from `PATH`. Run through the interceptor, the blob compiles
//! are recorded (exact argv and cwd) and answered with stub objects, the
//! host source really compiles, the link succeeds, and the recorded compiles
//! become the manifest.
//!
//! The fake `hipcc` is this test binary itself: like a build script calling
//! `is_shim()`/`shim_main()` first thing in `main`, it checks for shim mode
//! before the test harness starts (an ELF `.init_array` entry).
#![cfg(feature = "build")]

mod ck_common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use ck_common::TempDir;
use ck_jit_build::manifest::{Manifest, SymbolSpec};
use ck_jit_ck::intercept::{self, Intercept};
use ck_jit_ck::Error;

#[cfg(target_os = "linux")]
#[used]
#[link_section = ".init_array"]
static SHIM_HOOK: extern "C" fn() = shim_hook;

#[cfg(target_os = "linux")]
extern "C" fn shim_hook() {
    if intercept::is_shim() {
        intercept::shim_main()
    }
}

const FWD_A: &str =
    "fmha_fwd_d64_fp16_batch_shb_b128x64x32x64x32x64_r4x1x1_w32x32x16_qr_async_vr_psddv";
const FWD_B: &str =
    "fmha_fwd_d128_bf16_group_hbs_b128x128x32x128x32x128_r4x1x1_w32x32x16_qr_vr_psskddv_mask_lse";

/// The foreign project: three blobs (two CK-named, one not), a host source
/// named like a CK dispatcher, and a link step.
fn project(dir: &Path) {
    fs::create_dir_all(dir.join("kernels")).unwrap();
    fs::create_dir_all(dir.join("host")).unwrap();
    fs::create_dir_all(dir.join("include")).unwrap();
    fs::write(
        dir.join("include/common.hpp"),
        "#pragma once\nint api_answer();\n",
    )
    .unwrap();
    // The header that declares the traits, as CK's fmha_fwd.hpp does: the
    // blobs are described by what they declare, not by their names.
    fs::write(
        dir.join("include/fmha_fwd.hpp"),
        "#pragma once\n\
         template <int HDim_, typename DataType_, bool kIsGroupMode_, bool kStoreLse_>\n\
         struct fmha_fwd_traits_;\n\
         template <typename Traits_>\nfloat fmha_fwd_(const ck_tile::stream_config&, fmha_fwd_args);\n",
    )
    .unwrap();
    for (name, traits) in [
        (FWD_A, "64, FmhaFwdFp16, false, false"),
        (FWD_B, "128, FmhaFwdBf16, true, true"),
    ] {
        // Not valid host C++: a compile that was not intercepted would fail.
        fs::write(
            dir.join(format!("kernels/{name}.cpp")),
            format!(
                "#include \"fmha_fwd.hpp\"\n\
                 using trait_0 = fmha_fwd_traits_<{traits}>;\n\
                 template <>\nfloat fmha_fwd_<trait_0>(const ck_tile::stream_config& s, fmha_fwd_args a)\n\
                 {{ this is device code }}\n"
            ),
        )
        .unwrap();
    }
    fs::write(dir.join("kernels/kernel_saxpy.cpp"), "device code only\n").unwrap();
    fs::write(
        dir.join("host/fmha_fwd_api.cpp"),
        "#include \"common.hpp\"\nint api_answer() { return 42; }\n",
    )
    .unwrap();
    let makefile = format!(
        "FLAGS = -O3 -std=c++17 --offload-arch=gfx90a -Iinclude\n\
         OBJ = obj/fwd_a.o obj/fwd_b.o obj/saxpy.o obj/api.o\n\
         all: libfmha.so\n\
         obj:\n\tmkdir -p obj\n\
         obj/fwd_a.o: kernels/{FWD_A}.cpp | obj\n\t$(ROCM_PATH)/bin/hipcc $(FLAGS) -x hip -c $< -o $@ -MD -MF obj/fwd_a.d\n\
         obj/fwd_b.o: kernels/{FWD_B}.cpp | obj\n\thipcc $(FLAGS) -x hip -c $< -o $@\n\
         obj/saxpy.o: kernels/kernel_saxpy.cpp | obj\n\tcd kernels && hipcc -O2 -DSAXPY -c kernel_saxpy.cpp -o ../obj/saxpy.o\n\
         obj/api.o: host/fmha_fwd_api.cpp | obj\n\t$(ROCM_PATH)/bin/hipcc $(FLAGS) -fPIC -c $< -o $@\n\
         libfmha.so: $(OBJ)\n\thipcc -shared --offload-arch=gfx90a $(OBJ) -o $@\n"
    );
    fs::write(dir.join("Makefile"), makefile).unwrap();
}

/// A stand-in for the real hipcc: logs its call, then compiles host code
/// with `c++` (dropping `--offload-arch=`, `-x hip` becoming `-x c++`).
fn mock_hipcc(dir: &Path) -> PathBuf {
    let path = dir.join("mock-hipcc");
    fs::write(
        &path,
        "#!/bin/sh\n\
         echo \"cwd=$PWD rocm=${ROCM_PATH-unset} path=$PATH :: $*\" >> \"$MOCK_HIPCC_LOG\"\n\
         for a do\n  shift\n  case \"$a\" in\n    --offload-arch=*) continue ;;\n    hip) a=c++ ;;\n  esac\n  set -- \"$@\" \"$a\"\ndone\n\
         exec c++ \"$@\"\n",
    )
    .unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn elf_type(path: &Path) -> u16 {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(&bytes[..4], b"\x7fELF", "{}", path.display());
    u16::from_le_bytes([bytes[16], bytes[17]])
}

const ET_REL: u16 = 1;
const ET_DYN: u16 = 3;

#[test]
fn a_make_build_records_blob_compiles_and_builds_the_rest() {
    let tmp = TempDir::new("intercept-make");
    let proj = tmp.path().join("proj");
    project(&proj);
    let mock = mock_hipcc(tmp.path());
    let mock_log = tmp.path().join("mock.log");
    let work = tmp.path().join("work");
    let out = tmp.path().join("out");

    let mut lines = Vec::new();
    let done = Intercept::new(["make", "-j2"])
        .current_dir(&proj)
        .blobs("fmha_*.cpp")
        .blobs("kernel_*.cpp")
        .real_compiler(&mock)
        .env("MOCK_HIPCC_LOG", &mock_log)
        .work_dir(&work)
        .out_dir(&out)
        .name("t")
        .watch(proj.join("kernels"))
        .watch(proj.join("Makefile"))
        .try_write_with_output(&mut lines)
        .unwrap_or_else(|e| panic!("{e}"));
    let lines = String::from_utf8(lines).unwrap();
    assert!(lines.contains(&format!(
        "cargo:rerun-if-changed={}\n",
        proj.join("kernels").display()
    )));
    assert!(lines.contains(&format!(
        "cargo:rerun-if-changed={}\n",
        proj.join("Makefile").display()
    )));
    for var in ["PATH", "ROCM_PATH", "HIP_PATH"] {
        assert!(
            lines.contains(&format!("cargo:rerun-if-env-changed={var}\n")),
            "{lines}"
        );
    }
    assert!(
        !lines.contains("CK_JIT_REAL_HIPCC"),
        "set explicitly, so not read: {lines}"
    );

    let proj = fs::canonicalize(&proj).unwrap();
    let work = fs::canonicalize(&work).unwrap();
    let fake_hipcc = work.join("rocm/bin/hipcc");
    assert_eq!(done.fake_home, work.join("rocm"));

    // The invocations: exact argv (as invoked) and cwd, sorted by blob.
    let r = &done.invocations;
    assert_eq!(r.len(), 3, "{r:?}");
    let a = r.iter().find(|r| r.source.contains(FWD_A)).unwrap();
    assert_eq!(a.argv[0], fake_hipcc.to_str().unwrap());
    assert_eq!(
        a.argv[1..],
        [
            "-O3",
            "-std=c++17",
            "--offload-arch=gfx90a",
            "-Iinclude",
            "-x",
            "hip",
            "-c",
            &format!("kernels/{FWD_A}.cpp"),
            "-o",
            "obj/fwd_a.o",
            "-MD",
            "-MF",
            "obj/fwd_a.d"
        ]
    );
    assert_eq!(a.cwd, proj.to_str().unwrap());
    assert_eq!(a.output.as_deref(), Some("obj/fwd_a.o"));
    let b = r.iter().find(|r| r.source.contains(FWD_B)).unwrap();
    assert_eq!(b.argv[0], "hipcc", "found through PATH");
    let s = r.iter().find(|r| r.source == "kernel_saxpy.cpp").unwrap();
    assert_eq!(s.cwd, proj.join("kernels").to_str().unwrap());
    assert_eq!(
        s.argv[1..],
        [
            "-O2",
            "-DSAXPY",
            "-c",
            "kernel_saxpy.cpp",
            "-o",
            "../obj/saxpy.o"
        ]
    );

    // Stub objects for the blobs, a depfile where one was asked for, a
    // real object for the host source, and the link went through.
    for o in ["obj/fwd_a.o", "obj/fwd_b.o", "obj/saxpy.o", "obj/api.o"] {
        assert_eq!(elf_type(&proj.join(o)), ET_REL, "{o}");
    }
    assert_eq!(
        fs::read_to_string(proj.join("obj/fwd_a.d")).unwrap(),
        format!("obj/fwd_a.o: kernels/{FWD_A}.cpp\n")
    );
    let api = fs::read(proj.join("obj/api.o")).unwrap();
    assert!(
        api.windows(10).any(|w| w == b"api_answer"),
        "host source not compiled"
    );
    assert!(!fs::read(proj.join("obj/fwd_a.o"))
        .unwrap()
        .windows(6)
        .any(|w| w == b"kernel"));
    assert_eq!(elf_type(&proj.join("libfmha.so")), ET_DYN);

    // The real compiler saw the host compile and the link, never a blob,
    // and ran with the interceptor's changes to the environment undone.
    let log = fs::read_to_string(&mock_log).unwrap();
    let calls: Vec<&str> = log.lines().collect();
    assert_eq!(calls.len(), 2, "{log}");
    assert!(
        calls.iter().any(|l| l.contains("-c host/fmha_fwd_api.cpp")),
        "{log}"
    );
    assert!(
        calls
            .iter()
            .any(|l| l.contains("-shared --offload-arch=gfx90a obj/fwd_a.o")),
        "{log}"
    );
    assert!(
        !log.contains("fmha_fwd_d") && !log.contains("kernel_saxpy"),
        "{log}"
    );
    assert!(
        !log.contains("ck_jit_intercept") && !log.contains(work.to_str().unwrap()),
        "{log}"
    );

    // The manifest: one group per command shape, CK blobs by the kind
    // their declarations give.
    let m = &done.manifest;
    assert_eq!(m.root, proj.to_str().unwrap());
    assert_eq!(m.blobs.len(), 3);
    let names: Vec<&str> = m.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["blob", "fwd"]);
    // C++ spellings: this tree has no generator symbol tables.
    assert_eq!(m.blob(FWD_B).unwrap().meta["dtype"], "FmhaFwdBf16");
    assert_eq!(m.blob(FWD_B).unwrap().meta["mode"], "true");
    let fwd = &m.groups[1];
    assert_eq!(fwd.compiler, "hipcc");
    assert_eq!(
        fwd.args,
        [
            "-O3",
            "-std=c++17",
            "--offload-arch=gfx90a",
            "-Iinclude",
            "-x",
            "hip",
            "{src}",
            "-fPIC",
            "-shared",
            "-o",
            "{out}"
        ]
    );
    assert_eq!(fwd.cwd.as_deref(), Some("{root}"));
    assert_eq!(fwd.symbol, SymbolSpec::Prefix("_Z9fmha_fwd_I".into()));
    let saxpy = &m.groups[0];
    assert_eq!(
        saxpy.args,
        ["-O2", "-DSAXPY", "{src}", "-fPIC", "-shared", "-o", "{out}"]
    );
    assert_eq!(saxpy.cwd.as_deref(), Some("{root}/kernels"));
    assert_eq!(saxpy.symbol, SymbolSpec::Exact("{name}".into()));
    let blob_a = m.blob(FWD_A).unwrap();
    assert_eq!(blob_a.source, format!("kernels/{FWD_A}.cpp"));
    assert_eq!(m.group_of(blob_a).name, "fwd");
    assert_eq!(blob_a.meta["hdim"], "64");
    assert_eq!(m.group_of(m.blob(FWD_B).unwrap()).name, "fwd");
    assert_eq!(m.group_of(m.blob("kernel_saxpy").unwrap()).name, "blob");

    let written = fs::read_to_string(done.manifest_path.unwrap()).unwrap();
    assert_eq!(&Manifest::from_json(&written).unwrap(), m);
}

#[test]
fn a_failing_foreign_build_is_reported_with_its_output() {
    let tmp = TempDir::new("intercept-fail");
    fs::write(
        tmp.path().join("Makefile"),
        "all:\n\t@echo compiling the world\n\t@echo 'error: no rule for device code' >&2\n\t@false\n",
    )
    .unwrap();
    let e = Intercept::new(["make"])
        .current_dir(tmp.path())
        .work_dir(tmp.path().join("work"))
        .out_dir(tmp.path().join("out"))
        .cargo_metadata(false)
        .try_write()
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::ForeignBuild { .. }), "{e:?}");
    assert!(
        msg.contains("make") && msg.contains("error: no rule for device code"),
        "{msg}"
    );
    assert!(msg.contains("compiling the world"), "{msg}");

    let e = Intercept::new(["no-such-build-tool-xyz"])
        .current_dir(tmp.path())
        .work_dir(tmp.path().join("work"))
        .out_dir(tmp.path().join("out"))
        .try_run()
        .unwrap_err();
    assert!(matches!(e, Error::ProgramNotFound { .. }), "{e:?}");
    assert!(e.to_string().contains("no-such-build-tool-xyz"));
}

#[test]
fn a_blob_outside_the_root_is_an_error_naming_it() {
    let tmp = TempDir::new("intercept-root");
    let proj = tmp.path().join("proj");
    fs::create_dir_all(proj.join("sub")).unwrap();
    fs::write(proj.join("kernel_x.cpp"), "x").unwrap();
    fs::write(
        proj.join("sub/Makefile"),
        "all:\n\thipcc -c ../kernel_x.cpp -o x.o\n",
    )
    .unwrap();
    let e = Intercept::new(["make"])
        .current_dir(proj.join("sub"))
        .blobs("kernel_*.cpp")
        .real_compiler("/bin/false")
        .work_dir(tmp.path().join("work"))
        .out_dir(tmp.path().join("out"))
        .try_run()
        .unwrap_err();
    assert!(e.to_string().contains("is outside the root"), "{e}");
    assert!(e.to_string().contains("kernel_x.cpp"), "{e}");
    // With the root above it, the blob is recorded relative to the root and
    // compiled in `{root}/sub`.
    let done = Intercept::new(["make"])
        .current_dir(proj.join("sub"))
        .root(&proj)
        .blobs("kernel_*.cpp")
        .real_compiler("/bin/false")
        .work_dir(tmp.path().join("work"))
        .out_dir(tmp.path().join("out"))
        .try_run()
        .unwrap();
    assert_eq!(done.manifest.blobs[0].source, "kernel_x.cpp");
    assert_eq!(done.manifest.groups[0].cwd.as_deref(), Some("{root}/sub"));
    assert_eq!(
        done.manifest.groups[0].args,
        ["{src}", "-fPIC", "-shared", "-o", "{out}"]
    );
}

/// A build that finds its compiler through `ROCM_HOME` (as aiter does,
/// before `ROCM_PATH`) and, in record-only mode, asks the fake ROCm for its
/// version and probes a flag first; run twice, the second run compiles
/// nothing (make finds every object up to date) and keeps the first run's
/// records. Without ROCm and without record-only mode the build's own
/// check fails, and the error ends with its message; a build that compiles
/// no blob at all is an error. Neither touches the manifest written.
#[test]
fn rocm_home_record_only_and_an_unchanged_rerun_keep_the_invocations() {
    let tmp = TempDir::new("intercept-rerun");
    let proj = tmp.path().join("proj");
    project(&proj);
    // The same project, its compiler found through ROCM_HOME, after the
    // checks a build such as aiter's makes.
    let makefile = fs::read_to_string(proj.join("Makefile"))
        .unwrap()
        .replace("$(ROCM_PATH)/bin/hipcc", "$(ROCM_HOME)/bin/hipcc")
        .replace(
            "all: libfmha.so\n",
            "all: check libfmha.so\n\
             check:\n\
             \t$(ROCM_HOME)/bin/hipconfig --version > obj-version.txt\n\
             \ttest -f $(ROCM_HOME)/.info/version && test -f $(ROCM_HOME)/lib/libamdhip64.so\n\
             \t$(ROCM_HOME)/bin/hipcc -mllvm --lsr-drop-solution=1 -x hip -E -P /dev/null -o /dev/null\n\
             .PHONY: check\n",
        );
    fs::write(proj.join("Makefile"), makefile).unwrap();
    let mock = mock_hipcc(tmp.path());
    let work = tmp.path().join("work");
    let out = tmp.path().join("out");
    let intercept = |work: &Path| {
        let mut i = Intercept::new(["make", "-j2"]);
        i.current_dir(&proj)
            .blobs("fmha_*.cpp")
            .blobs("kernel_*.cpp")
            .hip_version("6.4.43482-0")
            .real_compiler(&mock)
            .env("MOCK_HIPCC_LOG", tmp.path().join("mock.log"))
            .work_dir(work)
            .out_dir(&out)
            .name("t")
            .cargo_metadata(false);
        i.try_write()
    };
    let first = intercept(&work).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        first.invocations.len(),
        3,
        "the blobs went through ROCM_HOME"
    );
    assert_eq!(first.kept, 0);
    assert_eq!(
        fs::read_to_string(proj.join("obj-version.txt")).unwrap(),
        "6.4.43482-0"
    );
    let written = fs::read_to_string(out.join("ck_jit_manifest.json")).unwrap();

    // Nothing to do the second time: the invocations are kept.
    let second = intercept(&work).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(second.kept, 3);
    assert_eq!(second.manifest, first.manifest);
    assert_eq!(
        fs::read_to_string(out.join("ck_jit_manifest.json")).unwrap(),
        written
    );

    // Without ROCm and without record-only mode, the build's check of its
    // ROCm fails: an error that ends with the build's own message, and
    // the manifest already written is left alone.
    // (On a machine with a ROCm the fake home mirrors it: not this case.)
    let has_rocm = ["ROCM_PATH", "ROCM_HOME"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|p| Path::new(&p).is_dir()))
        || Path::new("/opt/rocm").is_dir();
    let mut plain = Intercept::new(if has_rocm {
        ["false", ""]
    } else {
        ["make", "-j2"]
    });
    plain
        .current_dir(&proj)
        .blobs("fmha_*.cpp")
        .real_compiler(&mock)
        .work_dir(tmp.path().join("work-3"))
        .out_dir(&out)
        .name("t")
        .cargo_metadata(false);
    match plain.try_write().unwrap_err() {
        Error::ForeignBuild { tail, .. } => {
            assert!(has_rocm || tail.contains("hipconfig: not found"), "{tail}");
        }
        other => panic!("{other}"),
    }
    assert_eq!(
        fs::read_to_string(out.join("ck_jit_manifest.json")).unwrap(),
        written
    );

    // A build that compiles no blob, with no earlier interception: an
    // error, and the manifest already written is left alone.
    let e = intercept(&tmp.path().join("work-2")).unwrap_err();
    match &e {
        Error::Intercept { why } => assert!(why.contains("compiled no blob"), "{why}"),
        other => panic!("{other}"),
    }
    assert_eq!(
        fs::read_to_string(out.join("ck_jit_manifest.json")).unwrap(),
        written
    );
}
