//! ck-jit quickstart: seven C++ kernels (three ops in a few element types),
//! each a separate blob compiled the first time it is called.
//!
//! The program calls every kernel in this process (first call: compile or
//! disk-cache load; then warm calls), checks the results against Rust, and
//! then starts itself again as a new process that finds every kernel in the
//! disk cache. Run it twice and the first process hits the cache too.

use std::process::Command;
use std::time::{Duration, Instant};

use ck_jit_macros::lazy_kernel;

ck_jit_rt::embed_manifest!();

#[lazy_kernel]
extern "C" {
    fn vadd_f32(a: *const f32, b: *const f32, out: *mut f32, n: usize);
    fn vadd_f64(a: *const f64, b: *const f64, out: *mut f64, n: usize);
    fn vadd_i32(a: *const i32, b: *const i32, out: *mut i32, n: usize);
    fn saxpy_f32(alpha: f32, x: *const f32, y: *mut f32, n: usize);
    fn saxpy_f64(alpha: f64, x: *const f64, y: *mut f64, n: usize);
    fn dot_f32(a: *const f32, b: *const f32, n: usize) -> f32;
    fn dot_f64(a: *const f64, b: *const f64, n: usize) -> f64;
}

const N: usize = 4096;
const WARM_N: usize = 16;
const WARM_CALLS: u32 = 20_000;

struct Row {
    name: &'static str,
    first: Duration,
    compiled: bool,
    warm: Duration,
    check: Result<(), String>,
}

fn data<T: Copy>(f: impl Fn(usize) -> T, n: usize) -> Vec<T> {
    (0..n).map(f).collect()
}

/// Times the first call of a kernel, then the mean of many warm calls on a
/// small input, and checks the first call's result.
fn measure(
    name: &'static str,
    mut first: impl FnMut() -> Result<(), String>,
    mut warm: impl FnMut(),
) -> Row {
    let compiles = ck_jit_rt::stats().compiles;
    let t0 = Instant::now();
    let check = first();
    let first_time = t0.elapsed();
    let compiled = ck_jit_rt::stats().compiles > compiles;
    for _ in 0..100 {
        warm();
    }
    let t0 = Instant::now();
    for _ in 0..WARM_CALLS {
        warm();
    }
    Row {
        name,
        first: first_time,
        compiled,
        warm: t0.elapsed() / WARM_CALLS,
        check,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-3 * b.abs().max(1.0)
}

fn run_all() -> Vec<Row> {
    let af = data(|i| i as f32 * 0.5, N);
    let bf = data(|i| 1.0 - i as f32 * 0.25, N);
    let ad = data(|i| i as f64 * 0.5, N);
    let bd = data(|i| 1.0 - i as f64 * 0.25, N);
    let ai = data(|i| i as i32 * 3, N);
    let bi = data(|i| 7 - i as i32, N);
    let mut rows = Vec::new();

    macro_rules! vadd_row {
        ($name:literal, $f:ident, $a:expr, $b:expr, $t:ty) => {{
            let (a, b) = (&$a, &$b);
            let mut out = vec![<$t>::default(); N];
            let mut small = vec![<$t>::default(); WARM_N];
            rows.push(measure(
                $name,
                || {
                    // SAFETY: a, b and out hold N elements each.
                    unsafe { $f(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), N) };
                    let bad = (0..N).find(|&i| out[i] != a[i] + b[i]);
                    bad.map_or(Ok(()), |i| Err(format!("element {i}: {:?}", out[i])))
                },
                // SAFETY: the inputs hold at least WARM_N elements.
                || unsafe { $f(a.as_ptr(), b.as_ptr(), small.as_mut_ptr(), WARM_N) },
            ));
        }};
    }
    vadd_row!("vadd_f32", vadd_f32, af, bf, f32);
    vadd_row!("vadd_f64", vadd_f64, ad, bd, f64);
    vadd_row!("vadd_i32", vadd_i32, ai, bi, i32);

    macro_rules! saxpy_row {
        ($name:literal, $f:ident, $x:expr, $y:expr, $t:ty) => {{
            let (x, y0) = (&$x, &$y);
            let mut y = y0.clone();
            let mut small = y0[..WARM_N].to_vec();
            rows.push(measure(
                $name,
                || {
                    // SAFETY: x and y hold N elements each.
                    unsafe { $f(2.0, x.as_ptr(), y.as_mut_ptr(), N) };
                    let bad = (0..N).find(|&i| y[i] != 2.0 * x[i] + y0[i]);
                    bad.map_or(Ok(()), |i| Err(format!("element {i}: {:?}", y[i])))
                },
                // SAFETY: both hold at least WARM_N elements.
                || unsafe { $f(2.0, x.as_ptr(), small.as_mut_ptr(), WARM_N) },
            ));
        }};
    }
    saxpy_row!("saxpy_f32", saxpy_f32, af, bf, f32);
    saxpy_row!("saxpy_f64", saxpy_f64, ad, bd, f64);

    macro_rules! dot_row {
        ($name:literal, $f:ident, $a:expr, $b:expr) => {{
            let (a, b) = (&$a, &$b);
            rows.push(measure(
                $name,
                || {
                    // SAFETY: a and b hold N elements each.
                    let got = unsafe { $f(a.as_ptr(), b.as_ptr(), N) } as f64;
                    let want: f64 = a
                        .iter()
                        .zip(b.iter())
                        .map(|(x, y)| *x as f64 * *y as f64)
                        .sum();
                    if close(got, want) {
                        Ok(())
                    } else {
                        Err(format!("{got} != {want}"))
                    }
                },
                || {
                    // SAFETY: both hold at least WARM_N elements.
                    std::hint::black_box(unsafe { $f(a.as_ptr(), b.as_ptr(), WARM_N) });
                },
            ));
        }};
    }
    dot_row!("dot_f32", dot_f32, af, bf);
    dot_row!("dot_f64", dot_f64, ad, bd);
    rows
}

fn print(title: &str, rows: &[Row]) -> bool {
    println!("\n{title}");
    println!(
        "  {:<10} {:>12}  {:<12} {:>14}  check",
        "kernel", "first call", "", "warm call"
    );
    let mut ok = true;
    for r in rows {
        let how = if r.compiled {
            "(compiled)"
        } else {
            "(disk cache)"
        };
        let check = match &r.check {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                ok = false;
                format!("WRONG: {e}")
            }
        };
        println!(
            "  {:<10} {:>9.2} ms  {:<12} {:>11.1} ns  {check}",
            r.name,
            r.first.as_secs_f64() * 1e3,
            how,
            r.warm.as_secs_f64() * 1e9,
        );
    }
    ok
}

fn main() {
    let child = std::env::args().any(|a| a == "--child");
    let rt = match ck_jit_runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ck-jit: {e}");
            std::process::exit(1);
        }
    };
    if !child {
        println!(
            "ck-jit quickstart: {} kernel blobs, none compiled at build time",
            rt.manifest().blobs.len()
        );
        match rt.cache_dir() {
            Ok(d) => println!("cache: {} (CK_JIT_CACHE_DIR to move it)", d.display()),
            Err(e) => println!("cache: {e}"),
        }
        println!("warm call = mean of {WARM_CALLS} calls on {WARM_N} elements");
    }
    let rows = run_all();
    let s = ck_jit_rt::stats();
    let title = if child {
        format!(
            "process 2 (pid {}): a new process, same disk cache — {} compiled, {} from cache",
            std::process::id(),
            s.compiles,
            s.cache_hits
        )
    } else {
        format!(
            "process 1 (pid {}): {} compiled, {} from cache",
            std::process::id(),
            s.compiles,
            s.cache_hits
        )
    };
    let mut ok = print(&title, &rows);
    if !child {
        let exe = std::env::current_exe().unwrap_or_else(|_| "quickstart".into());
        match Command::new(exe).arg("--child").status() {
            Ok(st) => ok &= st.success(),
            Err(e) => {
                eprintln!("could not start the second process: {e}");
                ok = false;
            }
        }
        println!("\nrun it again: every first call is now a disk-cache load");
    }
    if !ok {
        std::process::exit(1);
    }
}
