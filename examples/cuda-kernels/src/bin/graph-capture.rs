//! Nothing compiles during a CUDA graph capture.
//!
//! 1. Warm every lazy init before the capture: compile (or load) the
//!    kernels the graph uses and launch each once, outside any capture, so
//!    their CUDA modules are loaded too; then `ck_jit_rt::freeze()`.
//! 2. Capture (global mode: any allocation, synchronous copy or module
//!    load from any thread would invalidate it) a graph that calls the
//!    kernels through their `#[lazy_kernel]` dispatchers.
//! 3. Inside the capture, ask for a kernel that was never warmed: the
//!    frozen runtime answers with an error at once, without compiling and
//!    without a CUDA call, and the capture stays valid.
//! 4. End the capture, replay the graph, and check the result against the
//!    CPU; check that no compile happened while capturing.
//!
//! Prints one line per step and exits 0 only when every check holds. Run
//! on a machine with `nvcc` and a GPU, from the repository root:
//! `CK_JIT_ROOT=$PWD/examples/cuda-kernels ./target/release/graph-capture`.
//! It compiles into a fresh cache it removes at the end, unless
//! `CK_JIT_CACHE_DIR` is set; with a cache that already holds the kernel
//! left cold, that kernel is loaded from it during the capture (no
//! compile, no CUDA call), which the program reports as such. The output
//! of a run on an H100 is kept in `examples/cuda-kernels/graph-capture.txt`.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::time::Instant;

use cuda_kernels::kernels::{host, stream};

const N: usize = 1 << 20;
const REPLAYS: usize = 5;

fn status(what: &str, s: c_int) -> Result<(), String> {
    if s == 0 {
        return Ok(());
    }
    // SAFETY: the blob returns a static string for any status.
    let text = unsafe { CStr::from_ptr(host::ckx_error_name(s)) };
    Err(format!(
        "{what}: CUDA error {s}: {}",
        text.to_string_lossy()
    ))
}

fn capture_state(stream: *mut c_void) -> Result<&'static str, String> {
    let mut st = 0;
    // SAFETY: a stream made by ckx_stream_create; `st` is written.
    status("cudaStreamIsCapturing", unsafe {
        host::ckx_capture_status(stream, &mut st)
    })?;
    Ok(match st {
        1 => "active",
        2 => "invalidated",
        _ => "none",
    })
}

fn run() -> Result<bool, String> {
    let mut ok = true;
    let mut check = |what: &str, holds: bool| {
        println!("  [{}] {what}", if holds { "ok" } else { "FAILED" });
        ok &= holds;
    };

    // The device, through the host blob (its first call compiles it).
    let (mut ordinal, mut major, mut minor) = (0, 0, 0);
    let mut name = [0 as c_char; 128];
    let t0 = Instant::now();
    // SAFETY: every out-pointer is valid; `name` has its length passed.
    status("cudaGetDeviceProperties", unsafe {
        host::ckx_device(
            &mut ordinal,
            &mut major,
            &mut minor,
            name.as_mut_ptr(),
            name.len(),
        )
    })?;
    // SAFETY: NUL-terminated by the blob.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy();
    println!(
        "device {ordinal}: {name} (sm_{major}{minor}); kernels built for {}; host blob ready in {:.2} s",
        cuda_kernels::ARCH,
        t0.elapsed().as_secs_f64()
    );

    // Data: x[i] = i mod 7, y[i] = 1.
    let x: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let y0 = vec![1.0f32; N];
    let bytes = N * std::mem::size_of::<f32>();
    let mut s: *mut c_void = std::ptr::null_mut();
    let (mut dx, mut dy): (*mut c_void, *mut c_void) = (std::ptr::null_mut(), std::ptr::null_mut());
    // SAFETY: out-pointers are valid; sizes match the host vectors.
    unsafe {
        status("cudaStreamCreate", host::ckx_stream_create(&mut s))?;
        status("cudaMalloc", host::ckx_malloc(&mut dx, bytes))?;
        status("cudaMalloc", host::ckx_malloc(&mut dy, bytes))?;
        status("upload x", host::ckx_upload(dx, x.as_ptr().cast(), bytes))?;
    }
    let (fx, fy): (*const f32, *mut f32) = (dx.cast(), dy.cast());

    // 1. Warm: compile or load, then launch once outside any capture so
    //    each blob's CUDA module is loaded.
    println!("warm-up (outside the capture):");
    let t0 = Instant::now();
    let warm = ck_jit_rt::Runtime::warmup(
        cuda_kernels::runtime().map_err(|e| e.to_string())?,
        &["scale_f32_stream", "add_f32_stream"],
    );
    for (blob, r) in &warm {
        r.as_ref().map_err(|e| format!("{blob}: {e}"))?;
    }
    // SAFETY: device buffers of N floats on the stream made above.
    unsafe {
        status("scale (warm)", stream::scale_f32_stream(1.0, fy, N, s))?;
        status("add (warm)", stream::add_f32_stream(fx, fy, N, s))?;
        status("sync", host::ckx_stream_sync(s))?;
    }
    let compiles_before = ck_jit_rt::stats().compiles;
    println!(
        "  scale_f32_stream, add_f32_stream ready in {:.2} s ({} compiles so far in this process)",
        t0.elapsed().as_secs_f64(),
        compiles_before
    );
    ck_jit_rt::freeze();
    println!("  ck_jit_rt::freeze()");

    // 2. Capture y = 2 * y + x through the dispatchers.
    println!("capture (global mode):");
    // SAFETY: as above.
    unsafe { status("cudaStreamBeginCapture", host::ckx_begin_capture(s))? };
    check("capture active", capture_state(s)? == "active");
    // SAFETY: device buffers of N floats; the stream is capturing.
    let launched = unsafe {
        (
            stream::scale_f32_stream(2.0, fy, N, s),
            stream::add_f32_stream(fx, fy, N, s),
        )
    };
    check(
        "scale and add launched into the capture",
        launched == (0, 0),
    );

    // 3. A kernel never warmed, asked for during the capture.
    let t0 = Instant::now();
    let cold = stream::axpby_f32_stream::try_get();
    let waited = t0.elapsed();
    match &cold {
        // A cache that already holds it (a run with CK_JIT_CACHE_DIR that
        // compiled it before): loaded, which calls no CUDA function.
        Ok(_) => check(
            &format!(
                "kernel not warmed here came from the disk cache in {:.1} us, without compiling",
                waited.as_secs_f64() * 1e6
            ),
            ck_jit_rt::stats().compiles == compiles_before,
        ),
        Err(e) => {
            println!("  cold kernel axpby_f32_stream: {e}");
            check(
                &format!(
                    "cold kernel refused in {:.1} us, without compiling",
                    waited.as_secs_f64() * 1e6
                ),
                matches!(e, ck_jit_rt::Error::Offline { .. }),
            );
        }
    }
    check(
        "capture still active after asking for it",
        capture_state(s)? == "active",
    );

    let mut exec: *mut c_void = std::ptr::null_mut();
    let mut nodes = 0usize;
    // SAFETY: out-pointers valid; the stream is capturing.
    unsafe {
        status(
            "cudaStreamEndCapture/cudaGraphInstantiate",
            host::ckx_end_capture(s, &mut exec, &mut nodes),
        )?
    };
    check(
        &format!("graph instantiated with {nodes} kernel nodes"),
        nodes == 2,
    );
    check(
        "no compile while capturing",
        ck_jit_rt::stats().compiles == compiles_before,
    );

    // 4. Replay from y = 1 and compare with the CPU.
    // SAFETY: as above.
    unsafe {
        status("upload y", host::ckx_upload(dy, y0.as_ptr().cast(), bytes))?;
        for _ in 0..REPLAYS {
            status("cudaGraphLaunch", host::ckx_graph_launch(exec, s))?;
        }
        status("sync", host::ckx_stream_sync(s))?;
    }
    let mut got = vec![0.0f32; N];
    // SAFETY: `got` has N floats.
    unsafe {
        status(
            "download y",
            host::ckx_download(got.as_mut_ptr().cast(), dy, bytes),
        )?
    };
    let mut want = y0.clone();
    for _ in 0..REPLAYS {
        for (w, xi) in want.iter_mut().zip(&x) {
            *w = 2.0 * *w + xi;
        }
    }
    let max_err = got
        .iter()
        .zip(&want)
        .map(|(g, w)| (g - w).abs() / w.abs().max(1.0))
        .fold(0.0f32, f32::max);
    println!("replay: {REPLAYS} launches of the graph (y = 2y + x each), {N} floats");
    check(
        &format!("matches the CPU (max relative error {max_err:.2e})"),
        max_err < 1e-6,
    );

    // After the capture, unfrozen: the cold kernel compiles and runs.
    ck_jit_rt::unfreeze();
    let t0 = Instant::now();
    // SAFETY: device buffers of N floats; no capture now.
    unsafe {
        status("axpby", stream::axpby_f32_stream(1.0, fx, 0.0, fy, N, s))?;
        status("sync", host::ckx_stream_sync(s))?;
        status(
            "download y",
            host::ckx_download(got.as_mut_ptr().cast(), dy, bytes),
        )?;
    }
    println!(
        "after the capture, unfrozen: axpby_f32_stream ready and run in {:.2} s",
        t0.elapsed().as_secs_f64()
    );
    check("axpby result (y = x)", got == x);
    // SAFETY: buffers allocated above, freed once.
    unsafe {
        status("cudaFree", host::ckx_free(dx))?;
        status("cudaFree", host::ckx_free(dy))?;
    }
    Ok(ok)
}

fn main() {
    if let Some(tree) = cuda_kernels::tree_beside_executable() {
        std::env::set_var("CK_JIT_ROOT", tree);
    }
    // A fresh cache, so the kernel left cold is cold, unless the user
    // chose a cache.
    let fresh = std::env::var_os("CK_JIT_CACHE_DIR")
        .is_none()
        .then(|| std::env::temp_dir().join(format!("graph-capture-{}", std::process::id())));
    if let Some(dir) = &fresh {
        std::env::set_var("CK_JIT_CACHE_DIR", dir);
    }
    let result = run();
    if let Some(dir) = &fresh {
        let _ = std::fs::remove_dir_all(dir);
    }
    match result {
        Ok(true) => println!("all checks hold"),
        Ok(false) => {
            println!("some checks FAILED");
            std::process::exit(1);
        }
        Err(e) => {
            eprintln!("graph-capture: {e}");
            std::process::exit(2);
        }
    }
}
