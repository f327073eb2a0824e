//! The first call of an operation that runs several blobs (CK's bwd:
//! `dot_do_o`, `dq_dk_dv`, `convert_dq`) against the sum of its blobs'
//! compiles, with a compiler of fixed delay per blob (a script that sleeps,
//! then runs `cc` on a small C blob), in one run:
//!
//! - `sequential` (the baseline): no `together` sets; each blob compiles
//!   when it is reached, one after another (what every first call did
//!   before);
//! - `together`: the manifest's `together` set; the C++ stubs' path, the
//!   first cold blob reached being `dq_dk_dv` (its companions are certain);
//! - `together, at dot_do_o`: the same, the first blob reached being
//!   `dot_do_o` of two sets (CK shares one `dot_do_o` among many
//!   `dq_dk_dv` kernels): nothing is certain then, so it compiles alone and
//!   `dq_dk_dv` with `convert_dq` after it (the runtime alone, a caller
//!   that cannot hold a call);
//! - `held at dot_do_o`: the same sets, through what the C++ stubs do
//!   there: `dot_do_o`'s call waits (`Runtime::may_defer`), and at the
//!   `dq_dk_dv` call `Runtime::prepare_after` compiles the three together
//!   before the held call and its own run;
//! - `prepare`: `Runtime::prepare_together` with the three names (the Rust
//!   dispatcher's path, which knows them all);
//! - `slowest`: `dq_dk_dv` alone, the slowest blob's compile.
//!
//! ```text
//! together-first-call [--rounds R] [--delays DOT,DQ,CONVERT] [--jobs N]
//! ```
//!
//! Each measurement uses a new runtime and an empty cache. Prints medians
//! and the ratios to `sequential` and to `slowest`; asserts nothing.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Instant;

use ck_jit_benches::stats::summary;
use ck_jit_benches::workdir;
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::Runtime;

const BLOBS: [&str; 3] = ["bwd_dot_do_o", "bwd_dq_dk_dv", "bwd_convert_dq"];

/// A second `dq_dk_dv` and `convert_dq` sharing the `dot_do_o`.
const OTHERS: [&str; 2] = ["bwd_dq_dk_dv_other", "bwd_convert_dq_other"];

fn manifest(root: &Path, cc: &Path, sets: &[&[&str]]) -> Manifest {
    let mut m = Manifest::new("together_bench", root.to_string_lossy());
    m.groups.push(Group {
        name: "c".into(),
        compiler: cc.to_string_lossy().into_owned(),
        args: ["-O1", "-fPIC", "-shared", "{src}", "-o", "{out}"]
            .map(String::from)
            .to_vec(),
        cwd: None,
        symbol: SymbolSpec::Exact("{name}".into()),
        depfile: false,
        family: None,
        neutral: Default::default(),
    });
    for b in BLOBS.iter().chain(&OTHERS) {
        m.blobs.push(Blob {
            name: b.to_string(),
            source: format!("{b}.c"),
            group: 0,
            symbol: None,
            meta: Default::default(),
        });
    }
    m.finish().expect("valid manifest");
    m.set_together(sets.iter().map(|s| s.to_vec()))
        .expect("known names");
    m
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let mut rounds = 5usize;
    let mut delays = [600u64, 1500, 600];
    let mut jobs = 3usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--rounds" => rounds = value().parse().expect("--rounds N"),
            "--jobs" => jobs = value().parse().expect("--jobs N"),
            "--delays" => {
                let v: Vec<u64> = value()
                    .split(',')
                    .map(|d| d.parse().expect("--delays A,B,C in ms"))
                    .collect();
                delays = [v[0], v[1], v[2]];
            }
            _ => {
                eprintln!(
                    "usage: together-first-call [--rounds R] [--delays DOT,DQ,CONVERT] [--jobs N]"
                );
                std::process::exit(2);
            }
        }
    }
    ck_jit_rt::set_jobs(jobs);
    let dir = workdir::fresh("together-first-call").expect("scratch directory");
    for (i, b) in BLOBS.iter().chain(&OTHERS).enumerate() {
        fs::write(
            dir.join(format!("{b}.c")),
            format!("int {b}(int x) {{ return x + {i}; }}\n"),
        )
        .expect("write blob");
    }
    // The delay per blob, keyed by the source name in argv.
    let cc = dir.join("delay-cc");
    let mut script = String::from("#!/bin/sh\n[ \"$1\" = --version ] && exec cc --version\n");
    for (b, d) in BLOBS.iter().zip(delays) {
        script.push_str(&format!(
            "case \"$*\" in *{b}.c*) sleep {}.{:03};; esac\n",
            d / 1000,
            d % 1000
        ));
    }
    script.push_str("exec cc \"$@\"\n");
    fs::write(&cc, script).expect("write compiler");
    fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).expect("chmod");

    let plain = manifest(&dir, &cc, &[]);
    let sets = manifest(&dir, &cc, &[&BLOBS]);
    let shared_dot = manifest(&dir, &cc, &[&BLOBS, &[BLOBS[0], OTHERS[0], OTHERS[1]]]);
    let mut n = 0;
    let mut fresh = |m: &Manifest| {
        n += 1;
        Runtime::new(m.clone(), "bench")
            .with_root(&dir)
            .with_cache_dir(dir.join(format!("cache-{n}")))
    };
    let (mut seq, mut tog, mut prep, mut slow) = (vec![], vec![], vec![], vec![]);
    let mut at_dot = vec![];
    let mut held = vec![];
    for _ in 0..rounds {
        let rt = fresh(&plain);
        let t = Instant::now();
        for b in BLOBS {
            rt.resolve(b, None).expect("compile");
        }
        seq.push(ms(t));

        let rt = fresh(&sets);
        let t = Instant::now();
        rt.resolve("bwd_dq_dk_dv", None).expect("compile");
        for b in BLOBS {
            rt.resolve(b, None).expect("loaded");
        }
        tog.push(ms(t));

        let rt = fresh(&shared_dot);
        let t = Instant::now();
        for b in BLOBS {
            rt.resolve(b, None).expect("compile");
        }
        at_dot.push(ms(t));

        let rt = fresh(&shared_dot);
        let t = Instant::now();
        assert!(rt.may_defer(BLOBS[0]), "a cold dot_do_o of two sets waits");
        rt.prepare_after(&[BLOBS[0]], BLOBS[1]).expect("compile");
        for b in BLOBS {
            rt.resolve(b, None).expect("loaded");
        }
        held.push(ms(t));

        let rt = fresh(&plain);
        let t = Instant::now();
        rt.prepare_together(&BLOBS).expect("compile");
        prep.push(ms(t));

        let rt = fresh(&plain);
        let t = Instant::now();
        rt.resolve("bwd_dq_dk_dv", None).expect("compile");
        slow.push(ms(t));
    }
    let _ = workdir::remove(&dir);
    println!(
        "delays dot/dq_dk_dv/convert: {} / {} / {} ms, CK_JIT_JOBS={jobs}, {rounds} rounds; \
         first call until all three blobs are loaded",
        delays[0], delays[1], delays[2]
    );
    let base = summary(&seq).expect("rounds").median;
    let one = summary(&slow).expect("rounds").median;
    for (name, xs) in [
        ("sequential (baseline)", &seq),
        ("together (stubs' path)", &tog),
        ("together, at dot_do_o", &at_dot),
        ("held at dot_do_o", &held),
        ("prepare_together", &prep),
        ("slowest blob alone", &slow),
    ] {
        let s = summary(xs).expect("rounds");
        println!(
            "  {name:<24} median {:8.1} ms (min {:8.1}, max {:8.1})  x{:.3} of sequential, x{:.3} of the slowest blob",
            s.median,
            s.min,
            s.max,
            s.median / base,
            s.median / one
        );
    }
}
