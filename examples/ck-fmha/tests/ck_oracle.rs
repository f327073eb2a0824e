//! The Rust dispatch against CK's own: CK's generated `fmha_fwd_api.cpp`,
//! unchanged, compiled by a real HIP compiler and linked with the lazy
//! stubs this crate's build wrote (their `ck_jit_resolve_prefix` noting
//! which blob is asked for), decides a few hundred forward operations; the
//! Rust decision from the rules read out of the same file must name the
//! same blob for every one, including the operations CK has no kernel for.
//!
//! Needs the HIP toolchain `.ci/hip-toolchain.sh` assembles
//! (`CK_JIT_REAL_HIP_ENV`, else `target/hip-toolchain/env.sh`): without it
//! the test prints a skip line, unless `CK_JIT_REQUIRE_REAL_CK` is set.
//! Compiling the dispatcher (3.7 MB of C++ for CK 2025-11) and the stubs
//! takes about 30 s each on 2 cores; they run at once.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use ck_fmha::dispatch::fwd_blob_names;
use ck_fmha::{CkStruct, Device, FmhaFwdArgs, FmhaFwdTraits};
use ck_jit_ck::rules::Value;

const WORKSPACE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");

/// `HIPCC` and `HIPFLAGS` from the toolchain's `env.sh`.
fn toolchain() -> Option<(String, Vec<String>)> {
    let path = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(WORKSPACE).join("target/hip-toolchain/env.sh"));
    let Ok(text) = fs::read_to_string(&path) else {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_REAL_CK").is_none(),
            "CK_JIT_REQUIRE_REAL_CK is set but there is no HIP toolchain at {}",
            path.display()
        );
        eprintln!(
            "SKIPPED: no HIP toolchain at {} (.ci/hip-toolchain.sh)",
            path.display()
        );
        return None;
    };
    let var = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(|v| v.trim_matches('"').to_string())
    };
    let cc = var("HIPCC")?;
    let flags = var("HIPFLAGS")?
        .split_whitespace()
        .map(String::from)
        .collect();
    Some((cc, flags))
}

/// A small deterministic generator (64-bit LCG).
struct Rng(u64);

impl Rng {
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        &xs[((self.0 >> 33) % xs.len() as u64) as usize]
    }
}

/// `count` forward operations over the traits and shapes CK's dispatcher
/// distinguishes (and some it has no kernel for).
fn operations(count: usize) -> Vec<(FmhaFwdTraits, FmhaFwdArgs)> {
    let mut r = Rng(0x5eed);
    let mut out = Vec::new();
    for _ in 0..count {
        let (hq, hv) = *r.pick(&[
            (32, 32),
            (64, 64),
            (80, 80),
            (96, 96),
            (128, 128),
            (160, 160),
            (192, 128),
            (192, 192),
            (256, 256),
            (48, 48),
            (512, 512),
        ]);
        let t = FmhaFwdTraits {
            hdim_q: hq,
            hdim_v: hv,
            data_type: r
                .pick(&[
                    "fp16", "fp16", "fp16", "bf16", "bf16", "bf16", "fp8bf16", "fp32", "int8",
                ])
                .to_string(),
            is_group_mode: *r.pick(&[false, false, true]),
            is_v_rowmajor: *r.pick(&[true, true, true, true, true, true, true, false]),
            has_logits_soft_cap: *r.pick(&[false, false, true]),
            mask_type: r
                .pick(&[
                    "mask_enum::no_mask",
                    "mask_enum::no_mask",
                    "mask_enum::mask_top_left",
                    "mask_enum::mask_bottom_right",
                    "mask_enum::window_generic",
                ])
                .to_string(),
            bias_type: r
                .pick(&[
                    "bias_enum::no_bias",
                    "bias_enum::no_bias",
                    "bias_enum::elementwise_bias",
                    "bias_enum::alibi",
                ])
                .to_string(),
            has_lse: *r.pick(&[false, true]),
            has_dropout: *r.pick(&[false, false, true]),
            do_fp8_static_quant: *r.pick(&[false, false, false, false, false, false, false, true]),
            skip_min_seqlen_q: *r.pick(&[false, false, true]),
        };
        let seqlen_q = *r.pick(&[1, 64, 100, 128, 333, 512, 1024]);
        let seqlen_k = *r.pick(&[0, 1, 64, 100, 128, 333, 512, 1024]);
        let a = FmhaFwdArgs {
            seqlen_q,
            seqlen_k,
            max_seqlen_q: seqlen_q,
            hdim_q: *r.pick(&[hq, hq, hq, hq, hq, hq, hq, hq - 8]),
            hdim_v: hv,
            batch: *r.pick(&[1, 2, 8]),
            nhead_q: *r.pick(&[8, 32]),
            nhead_k: 8,
            cu_seqlen_k_ptr: if *r.pick(&[false, false, false, true]) {
                0x1000 as *const _
            } else {
                std::ptr::null()
            },
            ..Default::default()
        };
        out.push((t, a));
    }
    out
}

/// C++ assignments giving `var` the values of every field of `s`.
fn assignments<S: CkStruct>(var: &str, s: &S, out: &mut String) {
    for f in S::FIELDS {
        let value = match s.field(f) {
            Some(Value::Int(v)) => format!("static_cast<decltype({var}.{f})>({v})"),
            Some(Value::Float(v)) => format!("static_cast<decltype({var}.{f})>({v:?})"),
            Some(Value::Bool(b)) => b.to_string(),
            Some(Value::Str(s)) => format!("{s:?}"),
            Some(Value::Enum(e)) => e,
            Some(Value::Null) => "nullptr".into(),
            Some(Value::Ptr) => format!("reinterpret_cast<decltype({var}.{f})>(0x1000)"),
            // A field is never what a kernel returned.
            Some(Value::Ran) | None => continue,
        };
        let _ = write!(out, " {var}.{f} = {value};");
    }
}

fn compile(cc: &str, flags: &[String], args: &[&str]) -> std::thread::JoinHandle<(String, f64)> {
    let mut cmd = Command::new(cc);
    cmd.args(flags).args(args);
    let shown = format!("{cmd:?}");
    std::thread::spawn(move || {
        let t0 = Instant::now();
        let out = cmd.output().expect("the HIP compiler starts");
        assert!(
            out.status.success(),
            "{shown}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (shown, t0.elapsed().as_secs_f64())
    })
}

#[test]
fn rust_decides_as_cks_compiled_fwd_dispatcher_on_hundreds_of_operations() {
    let Some(ck) = ck_fmha::ck_tree() else {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_none(),
            "CK_JIT_REQUIRE_CK_DATA is set but ck-fmha was built without a CK tree"
        );
        eprintln!("SKIPPED: ck-fmha was built without a CK tree (CK_FMHA_CK)");
        return;
    };
    let Some((cc, mut flags)) = toolchain() else {
        return;
    };
    let out_dir = Path::new(env!("OUT_DIR"));
    let api = out_dir.join("ck_fmha/fwd/fmha_fwd_api.cpp");
    let stubs = out_dir.join("stubs/ck_jit_stubs_fwd_gfx9_0.cpp");
    assert!(api.is_file() && stubs.is_file(), "{}", out_dir.display());
    let work = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ck-fmha-oracle");
    let _ = fs::remove_dir_all(&work);
    fs::create_dir_all(&work).unwrap();

    let ops = operations(400);
    let mut inc = format!(
        "#define CK_ORACLE_OPS {}\nstatic void set_op(int k, fmha_fwd_traits& t, fmha_fwd_args& a)\n{{\n    switch(k)\n    {{\n",
        ops.len()
    );
    for (k, (t, a)) in ops.iter().enumerate() {
        let _ = write!(inc, "    case {k}:");
        assignments("t", t, &mut inc);
        assignments("a", a, &mut inc);
        inc.push_str(" break;\n");
    }
    inc.push_str("    }\n}\n");
    fs::write(work.join("ck_oracle_ops.inc"), inc).unwrap();

    // -O1: what is checked is the decision, and it halves the compile.
    flags.extend(
        [
            "-O1",
            "--offload-arch=gfx942",
            &format!("-I{}", ck.join("include").display()),
            &format!("-I{}", ck.join("example/ck_tile/01_fmha").display()),
            &format!("-I{WORKSPACE}/ck-jit-capi/include"),
            &format!("-I{}", work.display()),
        ]
        .map(String::from),
    );
    let obj = |n: &str| work.join(n).display().to_string();
    let t0 = Instant::now();
    let jobs = [
        compile(
            &cc,
            &flags,
            &["-c", api.to_str().unwrap(), "-o", &obj("api.o")],
        ),
        compile(
            &cc,
            &flags,
            &["-c", stubs.to_str().unwrap(), "-o", &obj("stubs.o")],
        ),
    ];
    let main = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/ck_oracle_main.cpp"
    );
    let driver = compile(&cc, &flags, &["-c", main, "-o", &obj("main.o")]);
    for j in jobs.into_iter().chain([driver]) {
        let (cmd, secs) = j.join().unwrap();
        eprintln!("{secs:6.1} s  {}", &cmd[..cmd.len().min(160)]);
    }
    let stand_in = work.join("libhip_stand_in.so");
    let st = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&stand_in)
        .arg(format!("{WORKSPACE}/tests/fixtures/real_ck/hip_stand_in.c"))
        .status()
        .unwrap();
    assert!(st.success());
    let exe = work.join("oracle");
    let out = Command::new(&cc)
        .args(["-fPIC", &obj("api.o"), &obj("stubs.o"), &obj("main.o")])
        .arg(&stand_in)
        .arg(format!("-Wl,-rpath,{}", work.display()))
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!(
        "compiled and linked CK's dispatcher in {:.1?}",
        t0.elapsed()
    );

    let run = Command::new(&exe).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = String::from_utf8(run.stdout).unwrap();
    let cpp: Vec<&str> = text
        .lines()
        .map(|l| l.split(' ').nth(1).unwrap_or(""))
        .collect();
    assert_eq!(cpp.len(), ops.len(), "{text}");

    let device = Device::mi300x();
    let (mut with_kernel, mut mismatches) = (0, Vec::new());
    for (k, (t, a)) in ops.iter().enumerate() {
        let rust = fwd_blob_names(t, a, &device).unwrap();
        let rust = rust.first().copied().unwrap_or("none");
        if rust != "none" {
            with_kernel += 1;
        }
        if rust != cpp[k] {
            mismatches.push(format!(
                "op {k}: C++ {} / Rust {rust}\n  {t:?}\n  {a:?}",
                cpp[k]
            ));
        }
    }
    eprintln!(
        "{} operations: {with_kernel} with a kernel, {} without; {} disagree",
        ops.len(),
        ops.len() - with_kernel,
        mismatches.len()
    );
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    assert!(
        with_kernel >= ops.len() / 3,
        "only {with_kernel} operations had a kernel"
    );
    assert!(
        with_kernel < ops.len(),
        "no operation without a kernel was tried"
    );
}
