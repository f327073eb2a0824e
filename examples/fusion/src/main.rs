//! Plans the example graph into fused regions, prints each region with the
//! kernel chosen for it and why it ended, then runs the regions (each
//! kernel compiled on its first call) and checks the result against the
//! same graph computed one operation at a time.
//!
//! `cargo run -p fusion`

use std::process::ExitCode;

fn main() -> ExitCode {
    let graph = fusion::example_graph();
    let chain: Vec<&str> = graph.iter().map(fusion::Op::kind).collect();
    println!("graph: {}", chain.join(" -> "));
    let plan = match fusion::plan(&graph) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("ck-jit: {e}");
            return ExitCode::FAILURE;
        }
    };
    for (i, region) in plan.iter().enumerate() {
        println!(
            "region {i}: {:<28} -> {}",
            chain[region.ops.clone()].join(" -> "),
            region.kernel.name()
        );
        if let Some(why) = &region.flushed_by {
            println!("          closed: {why}");
        }
    }
    let (m, k) = (5, 8);
    let x: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.21).cos()).collect();
    let (got, cols) = match fusion::run(&graph, &plan, &x, m, k) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fusion: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (want, _) = fusion::reference(&graph, &x, m, k);
    let err = got
        .iter()
        .zip(&want)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    println!(
        "ran {} regions ({} kernel calls for {} operations): {m}x{cols} result, max abs error {err:e}",
        plan.len(),
        plan.len(),
        graph.len()
    );
    if err > 1e-4 {
        eprintln!("the fused result differs from the reference");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
