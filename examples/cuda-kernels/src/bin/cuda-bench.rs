//! cuda-bench: what ck-jit costs for real CUDA kernels.
//!
//! For each kernel it prints the first call (an nvcc compile and a load),
//! the error against a CPU reference, then, in a second process started
//! from this one, the load from the disk cache; and last the warm-call cost
//! of the generated dispatcher against a plain function pointer to the same
//! launcher, on a tiny problem so that launch overhead dominates.
//!
//! ```text
//! cuda-bench [--rounds N] [--calls N]
//! cuda-bench --launch-only [--rounds N] [--calls N]
//! ```
//!
//! `--launch-only` measures nothing but the warm launch: a stream launcher
//! (`scale_f32_stream`, 256 floats already on the device, no allocation
//! or copy) called through the dispatcher and through a plain pointer to
//! the same launcher, and through that pointer again as a control (what
//! two identical arms differ by), rounds rotating the three arms' order;
//! the stream is synchronised every 256 launches in every arm alike, so
//! the launch queue never fills. Defaults there: 41 rounds of 20,000.
//!
//! Unless `CK_JIT_CACHE_DIR` is set, it compiles into a fresh cache
//! directory and removes it at the end, so the first calls always compile.
//! Unless `CK_JIT_ROOT` is set and the recorded blob tree is gone (the
//! repository was copied elsewhere), it looks for the tree next to the
//! executable (`<repo>/target/release/cuda-bench` ->
//! `<repo>/examples/cuda-kernels`).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use cuda_kernels::{kernels, reference, Error};

type Prepare = fn() -> Result<(), ck_jit_rt::Error>;

/// The kernels, in the order they are measured, with their `prepare()`.
const KERNELS: [(&str, Prepare); 5] = [
    ("saxpy_f32", kernels::saxpy_f32::prepare),
    ("softmax_f32", kernels::softmax_f32::prepare),
    ("sgemm_f32_t8", kernels::sgemm_f32_t8::prepare),
    ("sgemm_f32_t16", kernels::sgemm_f32_t16::prepare),
    ("sgemm_f32_t32", kernels::sgemm_f32_t32::prepare),
];

struct Options {
    child: bool,
    launch_only: bool,
    rounds: usize,
    calls: usize,
}

fn options() -> Result<Options, String> {
    let mut o = Options {
        child: false,
        launch_only: false,
        rounds: 0,
        calls: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut number = |name: &str| -> Result<usize, String> {
            args.next()
                .and_then(|v| v.parse().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| format!("{name} needs a positive number"))
        };
        match a.as_str() {
            "--child" => o.child = true,
            "--launch-only" => o.launch_only = true,
            "--rounds" => o.rounds = number("--rounds")?,
            "--calls" => o.calls = number("--calls")?,
            "-h" | "--help" => {
                println!("usage: cuda-bench [--launch-only] [--rounds N] [--calls N]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}' (try --help)")),
        }
    }
    let (rounds, calls) = if o.launch_only {
        (41, 20_000)
    } else {
        (7, 2000)
    };
    if o.rounds == 0 {
        o.rounds = rounds;
    }
    if o.calls == 0 {
        o.calls = calls;
    }
    Ok(o)
}

/// A fresh cache directory for this run, unless the user chose one.
fn fresh_cache() -> Option<PathBuf> {
    if std::env::var_os("CK_JIT_CACHE_DIR").is_some() {
        return None;
    }
    let dir = std::env::temp_dir().join(format!("cuda-bench-{}", std::process::id()));
    Some(dir)
}

/// Inputs of every check, the same in both processes.
struct Data {
    x: Vec<f32>,
    y: Vec<f32>,
    soft_in: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
}

const SAXPY_N: usize = 1 << 20;
const SOFT_ROWS: usize = 512;
const SOFT_COLS: usize = 1000;
const MM: usize = 256;

fn data() -> Data {
    // A small deterministic generator: no dependency, same numbers everywhere.
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
    };
    Data {
        x: (0..SAXPY_N).map(|_| next()).collect(),
        y: (0..SAXPY_N).map(|_| next()).collect(),
        soft_in: (0..SOFT_ROWS * SOFT_COLS).map(|_| next() * 8.0).collect(),
        a: (0..MM * MM).map(|_| next()).collect(),
        b: (0..MM * MM).map(|_| next()).collect(),
    }
}

/// Runs `kernel` once on the check inputs: its max abs error against the
/// CPU reference.
fn check(kernel: &str, d: &Data) -> Result<f32, Error> {
    match kernel {
        "saxpy_f32" => {
            let (mut gpu, mut cpu) = (d.y.clone(), d.y.clone());
            cuda_kernels::saxpy(1.5, &d.x, &mut gpu)?;
            reference::saxpy(1.5, &d.x, &mut cpu);
            Ok(reference::max_abs_error(&gpu, &cpu))
        }
        "softmax_f32" => {
            let mut gpu = vec![0.0; d.soft_in.len()];
            let mut cpu = gpu.clone();
            cuda_kernels::softmax_rows(&d.soft_in, &mut gpu, SOFT_COLS)?;
            reference::softmax_rows(&d.soft_in, &mut cpu, SOFT_COLS);
            Ok(reference::max_abs_error(&gpu, &cpu))
        }
        sgemm => {
            let tile: u32 = sgemm
                .strip_prefix("sgemm_f32_t")
                .and_then(|t| t.parse().ok())
                .ok_or(Error::NoTile { tile: 0 })?;
            let mut gpu = vec![0.0; MM * MM];
            let mut cpu = gpu.clone();
            cuda_kernels::sgemm_with_tile(tile, &d.a, &d.b, &mut gpu, MM, MM, MM)?;
            reference::sgemm(&d.a, &d.b, &mut cpu, MM, MM, MM);
            Ok(reference::max_abs_error(&gpu, &cpu))
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Per kernel: the first call (compile or cache load, then dlopen), the
/// first launch, and the error. False when anything failed.
fn first_calls(title: &str, d: &Data) -> bool {
    println!("\n{title}");
    println!(
        "  {:<14} {:>12}  {:<12} {:>13}  {:>13}",
        "kernel", "first call", "", "first launch", "max abs err"
    );
    let mut ok = true;
    for (k, prepare) in KERNELS {
        let compiles = ck_jit_rt::stats().compiles;
        let t0 = Instant::now();
        let prepared = prepare();
        let first = t0.elapsed();
        let how = if ck_jit_rt::stats().compiles > compiles {
            "(nvcc+load)"
        } else {
            "(disk cache)"
        };
        if let Err(e) = prepared {
            println!("  {k:<14} FAILED: {e}");
            ok = false;
            continue;
        }
        let t0 = Instant::now();
        let r = check(k, d);
        let launch = t0.elapsed();
        let err = match r {
            Ok(e) => {
                let tolerance = if k.starts_with("sgemm") { 1e-3 } else { 1e-5 };
                if e <= tolerance {
                    format!("{e:.2e}")
                } else {
                    ok = false;
                    format!("{e:.2e} WRONG (> {tolerance:.0e})")
                }
            }
            Err(e) => {
                ok = false;
                format!("FAILED: {e}")
            }
        };
        println!(
            "  {k:<14} {:>9.2} ms  {how:<12} {:>10.2} ms  {err:>13}",
            ms(first),
            ms(launch)
        );
    }
    let s = ck_jit_rt::stats();
    println!(
        "  {} compiled ({:.2} s in nvcc), {} from the disk cache; {} loaded, {:.2} ms from request to loaded object excluding nvcc",
        s.compiles,
        s.compile_time.as_secs_f64(),
        s.cache_hits,
        s.loads,
        ms(s.load_time.saturating_sub(s.compile_time))
    );
    ok
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Mean ns per call of `f` over `calls` calls.
fn per_call(calls: usize, mut f: impl FnMut()) -> f64 {
    let t0 = Instant::now();
    for _ in 0..calls {
        f();
    }
    t0.elapsed().as_secs_f64() * 1e9 / calls as f64
}

/// The value at fraction `q` (0..=1) of the sorted `v`.
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// The warm launch alone: dispatcher, pointer and pointer again (the
/// control), rotating, on a stream launcher over device memory.
fn launch_only(o: &Options) -> Result<(), String> {
    use cuda_kernels::kernels::{host, stream};
    use std::os::raw::{c_int, c_void};

    const N: usize = 256;
    const SYNC_EVERY: usize = 256;
    let check = |what: &str, s: c_int| {
        if s == 0 {
            Ok(())
        } else {
            Err(format!("{what}: CUDA status {s}"))
        }
    };
    let ptr: stream::scale_f32_stream::Fn =
        stream::scale_f32_stream::try_get().map_err(|e| e.to_string())?;
    let (mut s, mut y) = (
        std::ptr::null_mut::<c_void>(),
        std::ptr::null_mut::<c_void>(),
    );
    // SAFETY: out-pointers to locals; sizes as allocated.
    unsafe {
        check("cudaStreamCreate", host::ckx_stream_create(&mut s))?;
        check("cudaMalloc", host::ckx_malloc(&mut y, N * 4))?;
        check(
            "upload",
            host::ckx_upload(y, [1.0f32; N].as_ptr().cast(), N * 4),
        )?;
    }
    let y = y.cast::<f32>();
    let mut status = 0;
    // One arm: `calls` launches, the stream synchronised every SYNC_EVERY.
    let mut arm = |calls: usize, launch: &mut dyn FnMut() -> c_int| {
        let t0 = Instant::now();
        for i in 0..calls {
            status |= launch();
            if i % SYNC_EVERY == SYNC_EVERY - 1 {
                // SAFETY: the stream made above.
                status |= unsafe { host::ckx_stream_sync(s) };
            }
        }
        // SAFETY: as above.
        status |= unsafe { host::ckx_stream_sync(s) };
        t0.elapsed().as_secs_f64() * 1e9 / calls as f64
    };
    // SAFETY: y holds N floats on the device, s is a live stream.
    let mut via_dispatcher = || unsafe { stream::scale_f32_stream(1.0, y, N, s) };
    // SAFETY: as above; ptr is the same launcher.
    let mut via_pointer = || unsafe { ptr(1.0, y, N, s) };
    // One unmeasured round each, then the measured rounds.
    arm(o.calls, &mut via_dispatcher);
    arm(o.calls, &mut via_pointer);
    let (mut d, mut p, mut c) = (Vec::new(), Vec::new(), Vec::new());
    println!(
        "\nwarm launch only: scale_f32_stream over {N} floats on the device, stream synchronised every {SYNC_EVERY} launches;\n\
         {} rounds of {} launches, the three arms' order rotating each round (ns a launch)",
        o.rounds, o.calls
    );
    println!("  round   dispatcher      pointer    pointer again");
    for round in 0..o.rounds {
        let (mut td, mut tp, mut tc) = (0.0, 0.0, 0.0);
        for k in 0..3 {
            match (round + k) % 3 {
                0 => td = arm(o.calls, &mut via_dispatcher),
                1 => tp = arm(o.calls, &mut via_pointer),
                _ => tc = arm(o.calls, &mut via_pointer),
            }
        }
        println!("  {round:>5} {td:>12.1} {tp:>12.1} {tc:>16.1}");
        d.push(td);
        p.push(tp);
        c.push(tc);
    }
    if status != 0 {
        return Err(format!(
            "a launch or synchronisation failed: CUDA status {status}"
        ));
    }
    let mut ratios: Vec<f64> = d.iter().zip(&p).map(|(a, b)| a / b).collect();
    let mut control: Vec<f64> = c.iter().zip(&p).map(|(a, b)| a / b).collect();
    let slower = ratios.iter().filter(|r| **r > 1.0).count();
    let control_slower = control.iter().filter(|r| **r > 1.0).count();
    let (md, mp, mc) = (median(&mut d), median(&mut p), median(&mut c));
    println!(
        "  medians: dispatcher {md:.1} ns, pointer {mp:.1} ns, pointer again {mc:.1} ns; ratio of medians {:.4}",
        md / mp
    );
    println!(
        "  dispatcher / pointer, paired by round: median {:.4}, quartiles {:.4}..{:.4}, dispatcher slower in {slower} of {} rounds",
        median(&mut ratios),
        quantile(&mut ratios, 0.25),
        quantile(&mut ratios, 0.75),
        o.rounds
    );
    println!(
        "  control, pointer again / pointer: median {:.4}, quartiles {:.4}..{:.4}, slower in {control_slower} of {} rounds",
        median(&mut control),
        quantile(&mut control, 0.25),
        quantile(&mut control, 0.75),
        o.rounds
    );
    // SAFETY: allocated above, no launch in flight after the last sync.
    unsafe { host::ckx_free(y.cast()) };
    Ok(())
}

/// Dispatcher against plain pointer, interleaved rounds, medians.
fn warm_calls(o: &Options) -> Result<(), Error> {
    println!(
        "\nwarm calls: generated dispatcher vs plain function pointer (from try_get()),\n\
         tiny problems, {} rounds of {} calls each, interleaved; medians",
        o.rounds, o.calls
    );
    println!(
        "  {:<14} {:>14} {:>14} {:>10}",
        "kernel", "dispatcher", "fn pointer", "ratio"
    );
    let x = [1.0f32; 16];
    let mut y = [0.0f32; 16];
    let (a, b) = ([1.0f32; 64], [1.0f32; 64]);
    let mut c = [0.0f32; 64];

    macro_rules! compare {
        ($name:literal, $kernel:ident, ($($arg:expr),*)) => {{
            let ptr: kernels::$kernel::Fn = kernels::$kernel::try_get()?;
            let (mut via_dispatcher, mut via_pointer) = (Vec::new(), Vec::new());
            let mut status = 0;
            for round in 0..o.rounds {
                // Alternate which goes first, so drift hits both alike.
                for dispatcher in [round % 2 == 0, round % 2 == 1] {
                    if dispatcher {
                        // SAFETY: the buffers hold what the sizes say.
                        let t = per_call(o.calls, || status |= unsafe { kernels::$kernel($($arg),*) });
                        via_dispatcher.push(t);
                    } else {
                        // SAFETY: as above; ptr is the same launcher.
                        let t = per_call(o.calls, || status |= unsafe { ptr($($arg),*) });
                        via_pointer.push(t);
                    }
                }
            }
            if status != 0 {
                return Err(Error::Cuda {
                    blob: kernels::$kernel::BLOB,
                    status: cuda_kernels::CudaStatus::from_code(status),
                });
            }
            let (md, mp) = (median(&mut via_dispatcher), median(&mut via_pointer));
            println!(
                "  {:<14} {:>11.0} ns {:>11.0} ns {:>9.3}x",
                $name, md, mp, md / mp
            );
        }};
    }
    compare!(
        "saxpy_f32",
        saxpy_f32,
        (2.0, x.as_ptr(), y.as_mut_ptr(), 16)
    );
    compare!(
        "softmax_f32",
        softmax_f32,
        (x.as_ptr(), y.as_mut_ptr(), 1, 16)
    );
    compare!(
        "sgemm_f32_t8",
        sgemm_f32_t8,
        (a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), 8, 8, 8)
    );
    println!(
        "  (each call allocates, copies and launches inside the blob's launcher;\n   \
         ratio = dispatcher / pointer, 1.000 = no measurable cost)"
    );
    Ok(())
}

fn main() {
    let o = match options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("cuda-bench: {e}");
            std::process::exit(2);
        }
    };
    let mut made_cache = None;
    if !o.child {
        // Before the runtime reads the environment; the child inherits it.
        if let Some(tree) = cuda_kernels::tree_beside_executable() {
            std::env::set_var("CK_JIT_ROOT", &tree);
        }
        if let Some(dir) = fresh_cache() {
            std::env::set_var("CK_JIT_CACHE_DIR", &dir);
            made_cache = Some(dir);
        }
    }
    if o.launch_only {
        header();
        let r = launch_only(&o);
        if let Some(dir) = made_cache {
            let _ = std::fs::remove_dir_all(dir);
        }
        if let Err(e) = r {
            println!("  FAILED: {e}");
            std::process::exit(1);
        }
        return;
    }
    let d = data();
    let ok = if o.child {
        first_calls(
            &format!(
                "process 2 (pid {}): a new process, same disk cache",
                std::process::id()
            ),
            &d,
        )
    } else {
        header();
        let mut ok = first_calls(
            &format!(
                "process 1 (pid {}): first calls compile",
                std::process::id()
            ),
            &d,
        );
        if ok {
            let exe = std::env::current_exe().unwrap_or_else(|_| "cuda-bench".into());
            match Command::new(exe).arg("--child").status() {
                Ok(st) => ok &= st.success(),
                Err(e) => {
                    println!("could not start the second process: {e}");
                    ok = false;
                }
            }
        }
        if ok {
            if let Err(e) = warm_calls(&o) {
                println!("  FAILED: {e}");
                ok = false;
            }
        }
        if let Some(dir) = made_cache {
            let _ = std::fs::remove_dir_all(dir);
        }
        ok
    };
    if !ok {
        std::process::exit(1);
    }
}

fn header() {
    println!("cuda-bench: ck-jit with nvcc-compiled CUDA blobs");
    match ck_jit_rt::__internals::identify(
        "nvcc",
        KERNELS[0].0,
        &ck_jit_rt::CompilerCheck::Command,
        None,
    ) {
        Ok(id) => {
            let version = id.version.lines().last().unwrap_or("").trim();
            println!(
                "  arch {}, compiler {} ({version})",
                cuda_kernels::ARCH,
                id.path.display()
            );
        }
        Err(e) => println!("  arch {}, {e}", cuda_kernels::ARCH),
    }
    if let Ok(rt) = cuda_kernels::runtime() {
        println!("  blob tree {}", rt.root().display());
        match rt.cache_dir() {
            Ok(d) => println!("  cache {}", d.display()),
            Err(e) => println!("  cache: {e}"),
        }
    }
    println!(
        "  checks: saxpy n={SAXPY_N}, softmax {SOFT_ROWS}x{SOFT_COLS}, sgemm {MM}x{MM}x{MM}; \
         sgemm() picks tile {} for {MM}^3, {} for 48^3, {} for 100^3",
        tile_for(MM),
        tile_for(48),
        tile_for(100)
    );
}

fn tile_for(n: usize) -> String {
    match cuda_kernels::sgemm_variants() {
        Ok(v) => {
            let tiles: Vec<u32> = v.iter().map(|s| s.tile).collect();
            cuda_kernels::choose_tile(&tiles, n, n, n).map_or("none".into(), |t| t.to_string())
        }
        Err(e) => format!("? ({e})"),
    }
}
