//! Cost of intercepting one blob compile, whole process included: a build
//! of N blob compiles (a shell loop running `hipcc -c <blob>.cpp -o
//! <blob>.o` from `PATH`, as a foreign build does) run under
//! `Intercept`, where this binary is the fake `hipcc`; against, in the same
//! run, the same loop with `hipcc` being `/bin/true` (the process start
//! alone) and with `hipcc` making each stub object with `cc` (what the shim
//! did before).
//!
//! `cargo run --release -p ck-jit-benches --bin intercept-shim -- [N] [rounds]`

use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use ck_jit_ck::intercept::{self, Intercept};

fn main() {
    if intercept::is_shim() {
        intercept::shim_main()
    }
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(500);
    let rounds: usize = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5);
    let dir = std::env::temp_dir().join(format!("ck-jit-intercept-shim-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("src")).unwrap();
    for i in 0..n {
        fs::write(
            dir.join(format!("src/fmha_fwd_d{i}_fp16.cpp")),
            "device code, never compiled\n",
        )
        .unwrap();
    }
    let script = dir.join("build.sh");
    fs::write(
        &script,
        "#!/bin/sh\nset -e\nmkdir -p obj\nfor f in src/*.cpp; do\n  b=$(basename \"$f\" .cpp)\n  \
         hipcc -O3 --offload-arch=gfx942 -Iinclude -x hip -c \"$f\" -o \"obj/$b.o\"\ndone\n",
    )
    .unwrap();
    // Baselines: a `hipcc` that is /bin/true, and one that makes each stub
    // object with cc.
    let bin_true = dir.join("bin-true");
    fs::create_dir_all(&bin_true).unwrap();
    std::os::unix::fs::symlink("/bin/true", bin_true.join("hipcc")).unwrap();
    let bin_cc = dir.join("bin-cc");
    fs::create_dir_all(&bin_cc).unwrap();
    fs::write(
        bin_cc.join("hipcc"),
        "#!/bin/sh\nwhile [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then out=$2; fi; shift; done\n\
         exec cc -c -fPIC -x c /dev/null -o \"$out\"\n",
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(bin_cc.join("hipcc"))
        .status()
        .unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    let loop_with = |bin: &Path| -> Duration {
        let _ = fs::remove_dir_all(dir.join("obj"));
        let t = Instant::now();
        let ok = Command::new("sh")
            .arg(&script)
            .current_dir(&dir)
            .env("PATH", format!("{}:{path}", bin.display()))
            .status()
            .unwrap()
            .success();
        assert!(ok);
        t.elapsed()
    };
    let intercepted = || -> Duration {
        let _ = fs::remove_dir_all(dir.join("obj"));
        let _ = fs::remove_dir_all(dir.join("work"));
        let t = Instant::now();
        let done = Intercept::new(["sh", script.to_str().unwrap()])
            .current_dir(&dir)
            .work_dir(dir.join("work"))
            .out_dir(dir.join("out"))
            .name("bench")
            .cargo_metadata(false)
            .try_run()
            .unwrap_or_else(|e| panic!("{e}"));
        let took = t.elapsed();
        assert_eq!(done.invocations.len(), n);
        took
    };
    let mut rows: Vec<(&str, Vec<f64>)> = vec![
        ("hipcc = /bin/true (process start)", Vec::new()),
        ("intercepted (this binary as hipcc)", Vec::new()),
        ("hipcc = cc making a stub object", Vec::new()),
    ];
    for _ in 0..rounds {
        rows[0]
            .1
            .push(loop_with(&bin_true).as_secs_f64() * 1e3 / n as f64);
        rows[1].1.push(intercepted().as_secs_f64() * 1e3 / n as f64);
        rows[2]
            .1
            .push(loop_with(&bin_cc).as_secs_f64() * 1e3 / n as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let meds: Vec<f64> = rows.iter_mut().map(|(_, v)| median(v)).collect();
    println!("{n} blob compiles, {rounds} rounds, median ms per blob (whole build / N):");
    for ((name, _), m) in rows.iter().zip(&meds) {
        println!(
            "  {name:40} {m:7.3} ms  ({:.2}x the process start)",
            m / meds[0]
        );
    }
    println!(
        "  interception costs {:.3} ms a blob beyond the process start; {:.2}x faster than a cc stub",
        meds[1] - meds[0],
        meds[2] / meds[1]
    );
    let _ = fs::remove_dir_all(&dir);
}
