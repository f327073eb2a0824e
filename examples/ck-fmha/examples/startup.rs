//! What a process pays for the manifest at CK scale, before its first
//! kernel: the embedded compact manifest (what `embed_manifest!` embeds)
//! against the same manifest embedded as JSON, in the same binary and run.
//!
//! `cargo run --release -p ck-fmha --example startup -- [rounds]`
//!
//! Each round starts this program again once per form (alternating which
//! goes first); the child times, from the start of `main`: opening the
//! runtime, the first lookup of a blob, the first selection over the
//! largest family (reading its table included; the query is made of every
//! key of one member, decoded first), and then the
//! median of 200 more selections. The parent also times whole processes
//! (spawn to exit) that open the runtime and look one blob up, against a
//! process that only starts and exits. Prints medians and ratios.

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Instant;

use ck_jit_rt::__private::{Embedded, FamilySlots, SymbolOverride};
use ck_jit_rt::Query;

static COMPACT: Embedded = Embedded::from_compact(include_bytes!(concat!(
    env!("OUT_DIR"),
    "/ck_jit_manifest.ckm"
)));
static JSON: Embedded = Embedded::from_json_str(include_str!(concat!(
    env!("OUT_DIR"),
    "/ck_jit_manifest.json"
)));
static COMPACT_BWD: FamilySlots =
    FamilySlots::new(&COMPACT, "bwd_dq_dk_dv", SymbolOverride::Manifest);
static JSON_BWD: FamilySlots = FamilySlots::new(&JSON, "bwd_dq_dk_dv", SymbolOverride::Manifest);

/// A blob in the middle of the manifest, and a query every key of one
/// `bwd_dq_dk_dv` member constrains (the most clauses a selection has).
const PROBE_BLOB_INDEX: f64 = 0.37;

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn child(form: &str, blob: &str, whole: bool) {
    let t0 = Instant::now();
    let (embedded, family) = match form {
        "compact" => (&COMPACT, &COMPACT_BWD),
        _ => (&JSON, &JSON_BWD),
    };
    let rt = embedded.runtime().expect("runtime");
    let open = us(t0);
    assert!(rt.contains(blob).expect("lookup"), "{blob} not found");
    let lookup = us(t0);
    if whole {
        return;
    }
    let t1 = Instant::now();
    let members = family.members().expect("members");
    let meta: BTreeMap<String, String> = members
        .get(members.len() / 2)
        .expect("a member")
        .meta()
        .clone();
    let query = meta
        .iter()
        .fold(Query::new(), |q, (k, v)| q.eq(k.as_str(), v));
    let chosen = family.select(&query).expect("select");
    let first_select = us(t1);
    let mut again = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let k = family.select(&query).expect("select");
        again.push(us(t));
        assert_eq!(k, chosen);
    }
    println!(
        "{open} {lookup} {first_select} {} {} {}",
        median(again),
        members.len(),
        query.keys().len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("child") => return child(&args[2], &args[3], false),
        Some("whole") => return child(&args[2], &args[3], true),
        Some("bare") => return,
        _ => {}
    }
    let rounds: usize = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(15);
    // The probe blob: read from the JSON form once, here in the parent.
    let names: Vec<String> = JSON
        .runtime()
        .expect("runtime")
        .manifest()
        .blobs
        .iter()
        .map(|b| b.name.clone())
        .collect();
    let blob = &names[(names.len() as f64 * PROBE_BLOB_INDEX) as usize];
    // What the build script pays to write each form (medians of 5).
    let manifest = JSON.runtime().expect("runtime").manifest();
    let time_ms = |f: &dyn Fn() -> usize| {
        median(
            (0..5)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(f());
                    us(t) / 1e3
                })
                .collect(),
        )
    };
    let write_json = time_ms(&|| manifest.to_json().len());
    let write_compact = time_ms(&|| manifest.to_compact().len());
    let exe = std::env::current_exe().expect("exe");
    let run = |mode: &str, form: &str| -> (f64, String) {
        let t = Instant::now();
        let out = Command::new(&exe)
            .args([mode, form, blob])
            .output()
            .expect("child");
        let wall = us(t);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        (wall, String::from_utf8_lossy(&out.stdout).into_owned())
    };
    let mut rows: BTreeMap<&str, Vec<Vec<f64>>> = BTreeMap::new();
    let mut whole: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut info = String::new();
    for round in 0..rounds {
        let forms = if round % 2 == 0 {
            ["compact", "json"]
        } else {
            ["json", "compact"]
        };
        for form in forms {
            let (_, out) = run("child", form);
            let v: Vec<f64> = out
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            info = format!("{} members, {} clauses", v[4], v[5]);
            rows.entry(form).or_default().push(v);
            whole.entry(form).or_default().push(run("whole", form).0);
        }
        whole.entry("bare").or_default().push(run("bare", "-").0);
    }
    let col = |form: &str, i: usize| median(rows[form].iter().map(|v| v[i]).collect());
    let ckm = include_bytes!(concat!(env!("OUT_DIR"), "/ck_jit_manifest.ckm")).len();
    let json = include_str!(concat!(env!("OUT_DIR"), "/ck_jit_manifest.json")).len();
    let n = names.len() as f64;
    println!(
        "== CK-scale start-up: {} blobs of CK 2025-11 (gfx942), {rounds} rounds, medians ==",
        names.len()
    );
    println!(
        "embedded bytes: compact {ckm} ({:.1} B/blob), JSON {json} ({:.1} B/blob), ratio {:.3}",
        ckm as f64 / n,
        json as f64 / n,
        ckm as f64 / json as f64
    );
    println!(
        "build script, writing the form (ms): compact {write_compact:.1} (JSON alone {write_json:.1}, \
         both are written)"
    );
    println!("{:<58} {:>12} {:>12} {:>8}", "", "compact", "JSON", "ratio");
    let labels = [
        "open the runtime, from main (us)",
        "first lookup of a blob, from main (us)",
        "first selection, bwd_dq_dk_dv (its table read first) (us)",
        "each later selection (us)",
    ];
    for (i, label) in labels.iter().enumerate() {
        let (c, j) = (col("compact", i), col("json", i));
        println!("{label:<58} {c:>12.1} {j:>12.1} {:>8.4}", c / j);
    }
    println!("selection: {info}");
    let (c, j, b) = (
        median(whole["compact"].clone()),
        median(whole["json"].clone()),
        median(whole["bare"].clone()),
    );
    println!(
        "whole process, open + one lookup (ms): compact {:.3}, JSON {:.3}, bare process {:.3}; \
         compact / bare {:.3}, JSON / bare {:.3}",
        c / 1e3,
        j / 1e3,
        b / 1e3,
        c / b,
        j / b
    );
}
