//! The Rust dispatch does the C++ dispatcher's job: the rewritten
//! `fmha_fwd` and `fmha_fwd_appendkv` dispatchers (CK's if-chains, each
//! call now resolving its blob through `ck_jit.h`) are compiled with a
//! driver whose mocked `ck_jit_resolve` reports which blob each case
//! dispatched to, and for hundreds of operations (data types, head
//! dimensions, modes, layouts, masks, biases, switches, ragged and aligned
//! lengths) the blob Rust selects is that blob, and Rust finds none exactly
//! when the dispatcher finds none.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use ck_fmha::{
    AppendkvTraits, Bias, DType, FmhaFwdAppendkvArgs, FmhaFwdArgs, FwdTraits, Mask, Mode, Rope,
    VLayout,
};

/// A fixed-seed xorshift, so that a failure reproduces.
struct Rng(u64);

impl Rng {
    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        from[(self.0 % from.len() as u64) as usize]
    }
}

fn b(v: bool) -> u8 {
    u8::from(v)
}

/// One operation: the driver's input line and the Rust answer.
struct Case {
    line: String,
    rust: String,
}

fn fwd_cases(rng: &mut Rng, n: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    for _ in 0..n {
        let dtype = rng.pick(&[DType::Fp16, DType::Bf16, DType::Fp8]);
        let hdim = rng.pick(&[32u32, 48, 64, 96, 100, 128, 160, 256]);
        let hdim_v = rng.pick(&[hdim, hdim, hdim, 64, 128]);
        let mut t = FwdTraits::new(dtype, hdim);
        t.hdim_v = hdim_v;
        t.mode = rng.pick(&[Mode::Batch, Mode::Group]);
        t.v_layout = rng.pick(&[VLayout::RowMajor, VLayout::ColMajor]);
        t.mask = rng.pick(&[Mask::None, Mask::TopLeft, Mask::BottomRight, Mask::Window]);
        t.bias = rng.pick(&[Bias::None, Bias::Elementwise, Bias::Alibi]);
        t.lse = rng.pick(&[false, true]);
        t.dropout = rng.pick(&[false, true]);
        // Now and then asks for what no kernel has (fp16 with quantisation,
        // fp8 without).
        if rng.pick(&[0, 1, 2, 3, 4, 5, 6, 7]) == 0 {
            t.fp8_static_quant = !t.fp8_static_quant;
        }
        let a = FmhaFwdArgs {
            seqlen_q: rng.pick(&[1, 64, 100, 128, 384, 500, 512]),
            seqlen_k: rng.pick(&[0, 64, 77, 128, 500, 512, 4096]),
            hdim_q: hdim as i32,
            hdim_v: hdim_v as i32,
            ..Default::default()
        };
        let rust = match t.select(&a) {
            Ok(k) => k.name().to_string(),
            Err(ck_fmha::Error::Runtime(e)) => panic!("{e}"),
            Err(_) => "-".to_string(),
        };
        let bias = match t.bias {
            Bias::None => 0,
            Bias::Elementwise => 1,
            Bias::Alibi => 2,
        };
        let line = format!(
            "fwd {} {} {} {} {} {} {bias} {} {} {} {} {}",
            dtype.as_str(),
            t.hdim_q,
            t.hdim_v,
            b(t.mode == Mode::Group),
            b(t.v_layout == VLayout::RowMajor),
            t.mask.ck_value(),
            b(t.lse),
            b(t.dropout),
            b(t.fp8_static_quant),
            a.seqlen_q,
            a.seqlen_k,
        );
        cases.push(Case { line, rust });
    }
    cases
}

fn appendkv_cases(rng: &mut Rng, n: usize) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut table = [0i32; 1];
    for _ in 0..n {
        let dtype = rng.pick(&[DType::Fp16, DType::Bf16]);
        let hdim = rng.pick(&[32u32, 64, 80, 128, 256]);
        let mut t = AppendkvTraits::new(dtype, hdim);
        t.v_layout = rng.pick(&[VLayout::RowMajor, VLayout::ColMajor]);
        t.rope = rng.pick(&[Rope::None, Rope::Interleaved, Rope::HalfRotated]);
        let paged = rng.pick(&[false, true]);
        let a = FmhaFwdAppendkvArgs {
            seqlen_q: rng.pick(&[1, 64, 100, 128]),
            seqlen_knew: 1,
            hdim_q: hdim as i32,
            hdim_v: hdim as i32,
            block_table_ptr: if paged {
                table.as_mut_ptr().cast()
            } else {
                std::ptr::null_mut()
            },
            ..Default::default()
        };
        let rust = match t.select(&a) {
            Ok(k) => k.name().to_string(),
            Err(ck_fmha::Error::Runtime(e)) => panic!("{e}"),
            Err(_) => "-".to_string(),
        };
        let rope = match t.rope {
            Rope::None => 0,
            Rope::Interleaved => 1,
            Rope::HalfRotated => 2,
        };
        let line = format!(
            "appendkv {} {} {} {} {rope} {} {}",
            dtype.as_str(),
            t.hdim_q,
            t.hdim_v,
            b(t.v_layout == VLayout::RowMajor),
            b(paged),
            a.seqlen_q,
        );
        cases.push(Case { line, rust });
    }
    cases
}

/// Compiles the two rewritten dispatchers and the driver, two at a time.
fn build_driver(dir: &Path) -> PathBuf {
    let cxx = common::cxx();
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut includes = common::standin_includes().to_vec();
    includes.push(manifest_dir.join("../../ck-jit-capi/include"));
    let sources = [
        ck_fmha::dispatchers_dir().join("fmha_fwd_api.cpp"),
        ck_fmha::dispatchers_dir().join("fmha_fwd_appendkv_api.cpp"),
        manifest_dir.join("tests/fixtures/dispatch_driver.cpp"),
    ];
    let t0 = Instant::now();
    let mut objects = Vec::new();
    let mut running = Vec::new();
    for src in &sources {
        let obj = dir.join(src.file_name().unwrap()).with_extension("o");
        let mut cmd = Command::new(cxx);
        cmd.args(["-std=c++17", "-O0", "-w", "-c"]);
        for inc in &includes {
            cmd.arg("-I").arg(inc);
        }
        cmd.arg(src).arg("-o").arg(&obj);
        running.push((src, cmd.spawn().unwrap()));
        objects.push(obj);
        if running.len() == 2 {
            let (src, mut child) = running.remove(0);
            assert!(child.wait().unwrap().success(), "{}", src.display());
        }
    }
    for (src, mut child) in running {
        assert!(child.wait().unwrap().success(), "{}", src.display());
    }
    let exe = dir.join("dispatch_driver");
    let status = Command::new(cxx)
        .args(&objects)
        .arg("-o")
        .arg(&exe)
        .status()
        .unwrap();
    assert!(status.success());
    println!("compiled the dispatchers and driver in {:?}", t0.elapsed());
    exe
}

#[test]
fn rust_selects_the_blob_the_rewritten_cpp_dispatcher_calls() {
    common::setup("dispatcher");
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut cases = fwd_cases(&mut rng, 400);
    cases.extend(appendkv_cases(&mut rng, 100));
    let found = cases.iter().filter(|c| c.rust != "-").count();
    assert!(
        found > 150 && found < cases.len(),
        "{found} of {}",
        cases.len()
    );

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ck-fmha-dispatcher");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = build_driver(&dir);
    let mut child = Command::new(&exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = cases.iter().map(|c| format!("{}\n", c.line)).collect();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answers: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(answers.len(), cases.len());
    let wrong: Vec<String> = cases
        .iter()
        .zip(&answers)
        .filter(|(c, cpp)| c.rust != **cpp)
        .map(|(c, cpp)| format!("{}\n    rust: {}\n    c++:  {cpp}", c.line, c.rust))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} differ:\n{}",
        wrong.len(),
        cases.len(),
        wrong[..wrong.len().min(5)].join("\n")
    );
    println!(
        "{} operations agree ({found} dispatched, {} with no kernel)",
        cases.len(),
        cases.len() - found
    );
}
