//! The first call of a CK-bwd-shaped operation through a C++ program's
//! lazy stubs, whole process included (start, runtime set-up, compiles,
//! loads, the call), against the same program with the blobs compiled one
//! after another, in one run. The program (`ck_jit_tests::held`): a
//! dispatcher template running `dot` → `dq` → `convert`, the `dot` kernel
//! shared by two operations; a compiler that sleeps a fixed delay per blob
//! kind, then runs `c++`.
//!
//! - `sequential` (baseline): no `together` sets, each blob compiles when
//!   its call is reached;
//! - `unordered stubs`: the sets, stubs written without the dispatcher's
//!   order: `dot` is reached first and, shared, compiles alone, then `dq`
//!   with `convert`;
//! - `held`: the sets and the order: `dot`'s call waits for `dq`'s name,
//!   then all three compile at once;
//! - `slowest alone`: `dot` and `convert` already in the cache, so the
//!   process compiles `dq` only: the slowest blob's compile with the same
//!   process around it.
//!
//! ```text
//! held-first-call [--rounds R] [--delays DOT,DQ,CONVERT] [--jobs N] [--original-calls N]
//! ```
//!
//! Run from the workspace after `cargo build --release -p ck-jit-tests`
//! (it links `target/release/deps/libck_jit_capi.a`). Prints medians and
//! ratios; asserts only that every run called the kernels in order. Each
//! process then makes a million warm calls (three stub calls each) and
//! prints the time of one: the stubs' cost once everything is loaded,
//! against the same program with the kernels linked in and called
//! directly (`held::build_direct`), run in the same rounds.
//!
//! A sixth program in the same rounds runs the same dispatcher and
//! kernels through the original tool's runtime as its bwd path does it
//! (`held::build_original`, after ROCm/ck-jit's `ck_jit_runtime.cpp`,
//! `ck_jit_bwd_call`): per call three name lookups under shared locks and
//! three `std::async` tasks, each waited on. Its first call compiles the
//! three blobs at once with the same compiler; its warm calls, each
//! starting three threads, are `--original-calls` to a process (20,000
//! unless told), not a million.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use ck_jit_rt::manifest::Manifest;
use ck_jit_rt::Runtime;
use ck_jit_tests::held::{self, line, Options, Program, FIRST_CALL};
use ck_jit_tests::{capi_staticlib, Tree};

fn usage() -> ! {
    eprintln!(
        "usage: held-first-call [--rounds R] [--delays DOT,DQ,CONVERT] [--jobs N] [--original-calls N]"
    );
    std::process::exit(2);
}

/// One timed process on an empty cache (or one holding `warm`'s blobs):
/// (whole process ms, the first call's own ms, ns of a warm call).
fn measure(p: &Program, cache: &Path, jobs: usize, warm: &[&str]) -> (f64, f64, f64) {
    let _ = std::fs::remove_dir_all(cache);
    if !warm.is_empty() {
        // Without the sets, so that nothing else compiles alongside.
        let text = std::fs::read_to_string(&p.manifest).expect("manifest");
        let mut m = Manifest::from_json(&text).expect("manifest");
        m.together.clear();
        let rt = Runtime::new(m, "warm-up").with_cache_dir(cache);
        for b in warm {
            rt.load(b).unwrap_or_else(|e| panic!("{b}: {e}"));
        }
    }
    time(held::command(p, cache, jobs))
}

/// Runs `cmd` (a program built with `FIRST_CALL`): (whole process ms, the
/// first call's own ms, ns of a warm call).
fn time(mut cmd: Command) -> (f64, f64, f64) {
    let t = Instant::now();
    let out = cmd.output().expect("program runs");
    let whole = t.elapsed().as_secs_f64() * 1e3;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(line(&stdout, "ran"), "1 2 3", "kernels out of order");
    let call: f64 = line(&stdout, "first call")
        .trim_end_matches(" ms")
        .parse()
        .expect("a time");
    let warm: f64 = line(&stdout, "warm call")
        .trim_end_matches(" ns")
        .parse()
        .expect("a time");
    (whole, call, warm)
}

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

fn main() {
    let mut rounds = 5usize;
    let mut delays = [600u64, 1500, 600];
    let mut jobs = 3usize;
    let mut original_calls = 20_000usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let Some(v) = args.next() else { usage() };
        match a.as_str() {
            "--rounds" => rounds = v.parse().unwrap_or_else(|_| usage()),
            "--jobs" => jobs = v.parse().unwrap_or_else(|_| usage()),
            "--original-calls" => original_calls = v.parse().unwrap_or_else(|_| usage()),
            "--delays" => {
                let d: Vec<u64> = v.split(',').filter_map(|x| x.parse().ok()).collect();
                if d.len() != 3 {
                    usage()
                }
                delays = [d[0], d[1], d[2]];
            }
            _ => usage(),
        }
    }
    let capi = capi_staticlib().expect("libck_jit_capi.a below this program's directory");
    let build = |name: &str, sets: bool, ordered: bool| {
        let t = Tree::new(name);
        let p = held::build(
            &t,
            &capi,
            &Options {
                sets,
                ordered,
                delays_ms: delays,
                main: FIRST_CALL,
                overlap: false,
                count_slow_paths: false,
            },
        );
        (t, p)
    };
    let cases = [
        (
            "sequential (baseline)",
            build("bench-seq", false, true),
            &[][..],
        ),
        (
            "unordered stubs",
            build("bench-unordered", true, false),
            &[],
        ),
        ("held", build("bench-held", true, true), &[]),
        (
            "slowest alone",
            build("bench-slowest", true, true),
            &["bwd_dot_d0", "bwd_convert_c0"][..],
        ),
    ];
    // The same kernels linked in and called directly: the warm call's
    // baseline, measured in the same rounds.
    let direct_tree = Tree::new("bench-direct");
    let direct = held::build_direct(&direct_tree, FIRST_CALL);
    let mut direct_hot: Vec<f64> = Vec::new();
    // The original tool's bwd path around the same kernels, same rounds.
    let original_tree = Tree::new("bench-original");
    let original = held::build_original(&original_tree, FIRST_CALL, delays, false, original_calls);
    let mut original_runs: [Vec<f64>; 3] = Default::default();
    let mut whole: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut call: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut hot: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (i, (_, (t, p), warm)) in cases.iter().enumerate() {
            let (w, c, h) = measure(p, &t.path("cache"), jobs, warm);
            whole[i].push(w);
            call[i].push(c);
            hot[i].push(h);
        }
        let out = std::process::Command::new(&direct)
            .output()
            .expect("the direct program runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{stdout}");
        assert_eq!(line(&stdout, "ran"), "1 2 3", "kernels out of order");
        direct_hot.push(
            line(&stdout, "warm call")
                .trim_end_matches(" ns")
                .parse()
                .expect("a time"),
        );
        let cache = original_tree.path("cache");
        let _ = std::fs::remove_dir_all(&cache);
        let (w, c, h) = time(original.command(&cache));
        original_runs[0].push(w);
        original_runs[1].push(c);
        original_runs[2].push(h);
    }
    println!(
        "delays dot/dq/convert: {} / {} / {} ms, CK_JIT_JOBS={jobs}, {rounds} rounds; \
         a new process per measurement, its first call bwd(0) runs dot, dq, convert",
        delays[0], delays[1], delays[2]
    );
    // The processes less their warm calls (a million a process, n ns
    // each, is n ms), for the original's, whose warm calls are fewer and
    // each takes microseconds.
    let less_warm = |w: &[f64], h: &[f64], calls: f64| -> Vec<f64> {
        w.iter().zip(h).map(|(w, h)| w - h * calls / 1e6).collect()
    };
    let mut bare: Vec<Vec<f64>> = (0..cases.len())
        .map(|i| less_warm(&whole[i][..], &hot[i][..], 1e6))
        .collect();
    let mut original_bare = less_warm(
        &original_runs[0][..],
        &original_runs[2][..],
        original_calls as f64,
    );
    let w: Vec<f64> = whole.iter_mut().map(|x| median(x)).collect();
    let c: Vec<f64> = call.iter_mut().map(|x| median(x)).collect();
    let h: Vec<f64> = hot.iter_mut().map(|x| median(x)).collect();
    for (i, (name, ..)) in cases.iter().enumerate() {
        println!(
            "  {name:<22} process median {:8.1} ms (first call {:8.1} ms)  x{:.3} of sequential, x{:.3} of the slowest blob alone; warm call {:.2} ns",
            w[i],
            c[i],
            w[i] / w[0],
            w[i] / w[3],
            h[i]
        );
    }
    let d = median(&mut direct_hot);
    println!("  direct calls           warm call {d:.2} ns (the kernels linked in, no stubs)");
    println!(
        "  warm call with held-call stubs x{:.3} of stubs without (3 stub calls and 3 kernels per call)",
        h[2] / h[1]
    );
    println!(
        "  warm call with held-call stubs x{:.3} of direct calls; stubs without held calls x{:.3}",
        h[2] / d,
        h[1] / d
    );
    // Threads started per call make it swing with the machine's load:
    // each round's figure, in round order, before the medians sort them.
    let rounds_of = |xs: &[f64], digits: usize| -> String {
        xs.iter()
            .map(|x| format!("{x:.digits$}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    println!(
        "  original's bwd path by round: warm call {} ns; first call {} ms",
        rounds_of(&original_runs[2], 0),
        rounds_of(&original_runs[1], 1)
    );
    let [ow, oc, oh] = original_runs.map(|mut x| median(&mut x));
    let b: Vec<f64> = bare.iter_mut().map(|x| median(x)).collect();
    let ob = median(&mut original_bare);
    println!(
        "  {:<22} process median {ow:8.1} ms (first call {oc:8.1} ms); warm call {oh:.2} ns ({original_calls} calls a process)",
        "original's bwd path"
    );
    println!(
        "  processes less their warm calls: sequential {:.1}, held {:.1}, slowest alone {:.1}, original's bwd path {ob:.1} ms: original x{:.3} of sequential, x{:.3} of held, x{:.3} of the slowest blob alone; its first call x{:.3} of held's",
        b[0],
        b[2],
        b[3],
        ob / b[0],
        ob / b[2],
        ob / b[3],
        oc / c[2]
    );
    println!(
        "  warm call through the original's bwd path (3 name lookups, 3 std::async tasks) x{:.1} of held-call stubs, x{:.1} of stubs without held calls, x{:.1} of direct calls",
        oh / h[2],
        oh / h[1],
        oh / d
    );
}
