//! Calls every kernel of the family once and prints what happened: how long
//! the first call took (a hipcc compile, or a disk-cache load) and what the
//! launcher returned. Without an AMD GPU every launcher runs and reports
//! the HIP status.

use std::time::Instant;

use hip_kernels::{ck, scale_add, sum, Block, Error, F16};

fn report(name: String, t0: Instant, compiles_before: u64, r: Result<String, Error>) {
    let how = if ck_jit_rt::stats().compiles > compiles_before {
        "compiled"
    } else {
        "cached"
    };
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    match r {
        Ok(v) => println!("  {name:<28} {ms:>9.1} ms ({how})  ok: {v}"),
        Err(e) => println!("  {name:<28} {ms:>9.1} ms ({how})  {e}"),
    }
}

fn main() {
    let rt = match hip_kernels::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ck-jit: {e}");
            std::process::exit(1);
        }
    };
    println!(
        "hip-kernels: {} blobs for {}, none compiled at build time",
        rt.manifest().blobs.len(),
        hip_kernels::ARCHS
    );
    match rt.cache_dir() {
        Ok(d) => println!("cache: {}", d.display()),
        Err(e) => println!("cache: {e}"),
    }
    let n = 4096;
    let xf: Vec<f32> = (0..n).map(|i| (i % 13) as f32).collect();
    let xh: Vec<F16> = xf.iter().map(|v| F16::from_f32(*v)).collect();
    println!("  {:<28} {:>12}             result", "kernel", "first call");
    for block in Block::ALL {
        let b = block.threads();
        let (c, t) = (ck_jit_rt::stats().compiles, Instant::now());
        let mut y = vec![1.0f32; n];
        let r = scale_add(block, 2.0, &xf, &mut y).map(|()| format!("y[1] = {}", y[1]));
        report(format!("scale_add_f32_b{b}"), t, c, r);

        let (c, t) = (ck_jit_rt::stats().compiles, Instant::now());
        let mut y = vec![F16::from_f32(1.0); n];
        let r = scale_add(block, 2.0, &xh, &mut y).map(|()| format!("y[1] = {}", y[1]));
        report(format!("scale_add_f16_b{b}"), t, c, r);

        let (c, t) = (ck_jit_rt::stats().compiles, Instant::now());
        report(
            format!("sum_f32_b{b}"),
            t,
            c,
            sum(block, &xf).map(|s| s.to_string()),
        );

        let (c, t) = (ck_jit_rt::stats().compiles, Instant::now());
        report(
            format!("sum_f16_b{b}"),
            t,
            c,
            sum(block, &xh).map(|s| s.to_string()),
        );
    }
    let (c, t) = (ck_jit_rt::stats().compiles, Instant::now());
    let mut y = vec![1.0f32; n];
    let r = ck::scale_add_f32(2.0, &xf, &mut y, true).map(|ms| format!("{ms:.3} ms on the GPU"));
    report("run_scale_add_f32_b256 (ck)".into(), t, c, r);
    let s = ck_jit_rt::stats();
    println!(
        "{} compiled ({:.1} s in hipcc), {} from cache",
        s.compiles,
        s.compile_time.as_secs_f64(),
        s.cache_hits
    );
}
