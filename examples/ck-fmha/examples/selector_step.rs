//! What one step of a fused-region selector costs over CK's largest
//! family (`bwd_dq_dk_dv`, 6,720 blobs of CK 2025-11 for gfx942), against
//! a full selection of the composed query at the same step, in the same
//! run.
//!
//! `cargo run --release -p ck-fmha --example selector_step -- [rounds]`
//!
//! The operations are the attributes of one member, one key each (every
//! key of the member, in key order: the region grows to the most clauses a
//! selection over the family has). Each round walks them once through a
//! `Selector` (each step timed alone) and once as a graph compiler without
//! one would: compose the region's query and `select` it again (each
//! timed alone); both must choose the same kernel at every step. Each
//! round also times a new selector's first step, its making included
//! (what a compiler pays if it does not keep its selector). Prints medians
//! over rounds, per step and for the whole walk, and ratios; the first
//! round is a warm-up and not counted.

use std::time::Instant;

use ck_jit_rt::__private::{Embedded, FamilySlots, SymbolOverride};
use ck_jit_rt::family::Step;
use ck_jit_rt::Query;

static COMPACT: Embedded = Embedded::from_compact(include_bytes!(concat!(
    env!("OUT_DIR"),
    "/ck_jit_manifest.ckm"
)));
static BWD: FamilySlots = FamilySlots::new(&COMPACT, "bwd_dq_dk_dv", SymbolOverride::Manifest);

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let members = BWD.members().expect("the family");
    let probe = members.get(members.len() / 2).expect("a member");
    let ops: Vec<Query> = probe
        .meta()
        .iter()
        .map(|(k, v)| Query::new().eq(k.as_str(), v))
        .collect();
    let mut sel = members.selector(&Query::new()).expect("a selector");
    // per step: selector times, re-selection times (us)
    let mut step_sel: Vec<Vec<f64>> = vec![Vec::new(); ops.len()];
    let mut step_full: Vec<Vec<f64>> = vec![Vec::new(); ops.len()];
    let (mut walk_sel, mut walk_full) = (Vec::new(), Vec::new());
    let mut fresh = Vec::new();
    for round in 0..rounds + 1 {
        let mut chosen = Vec::with_capacity(ops.len());
        let t_walk = Instant::now();
        for (i, op) in ops.iter().enumerate() {
            let t = Instant::now();
            let step = sel.step(op).expect("a step");
            let dt = t.elapsed().as_secs_f64() * 1e6;
            match step {
                Step::Selectable(k) => chosen.push(k),
                Step::Flush(f) => panic!("the member's own attributes flushed: {f}"),
            }
            step_sel[i].push(dt);
        }
        let walk = t_walk.elapsed().as_secs_f64() * 1e6;
        assert!(sel.finish().is_some());
        let mut region = Query::new();
        let t_walk = Instant::now();
        for (i, op) in ops.iter().enumerate() {
            let t = Instant::now();
            region = region.and(op).expect("no conflict");
            let k = BWD.select(&region).expect("a selection");
            let dt = t.elapsed().as_secs_f64() * 1e6;
            assert_eq!(k, chosen[i], "step {i}: {region}");
            step_full[i].push(dt);
        }
        let walk_f = t_walk.elapsed().as_secs_f64() * 1e6;
        let t = Instant::now();
        let mut new = members.selector(&Query::new()).expect("a selector");
        let first = new.step(&ops[0]).expect("a step");
        fresh.push(t.elapsed().as_secs_f64() * 1e6);
        assert_eq!(first, Step::Selectable(chosen[0]));
        if round == 0 {
            // The first round makes the members' chunks and parses the
            // numbers: a warm-up, not counted.
            step_sel.iter_mut().for_each(Vec::clear);
            step_full.iter_mut().for_each(Vec::clear);
            fresh.clear();
            continue;
        }
        walk_sel.push(walk);
        walk_full.push(walk_f);
    }
    let all = |v: &[Vec<f64>]| median(v.iter().flatten().copied().collect());
    println!(
        "== selector step over bwd_dq_dk_dv: {} members, {} operations of one key each, {rounds} rounds, medians (us) ==",
        members.len(),
        ops.len()
    );
    println!(
        "{:<44} {:>10} {:>14} {:>8}",
        "", "selector", "re-selection", "ratio"
    );
    let row = |label: &str, s: f64, f: f64| {
        println!("{label:<44} {s:>10.2} {f:>14.2} {:>8.3}", s / f);
    };
    row(
        "any step (median over all steps)",
        all(&step_sel),
        all(&step_full),
    );
    row(
        "first step of a region (the whole family)",
        median(step_sel[0].clone()),
        median(step_full[0].clone()),
    );
    row(
        "a new selector and its first step",
        median(fresh),
        median(step_full[0].clone()),
    );
    let last = ops.len() - 1;
    row(
        &format!("last step (region of {} clauses)", ops.len()),
        median(step_sel[last].clone()),
        median(step_full[last].clone()),
    );
    row(
        &format!("whole walk ({} steps)", ops.len()),
        median(walk_sel),
        median(walk_full),
    );
    println!("per step (selector / re-selection):");
    for (i, op) in ops.iter().enumerate() {
        println!(
            "  {i:>2} {:<40} {:>8.2} {:>8.2}",
            op.to_string(),
            median(step_sel[i].clone()),
            median(step_full[i].clone())
        );
    }
}
