//! The example graph's regions are the ones the family's kernels can run,
//! each closed for the reason the selector gave, and running them gives
//! the graph's result.

use fusion::{example_graph, plan, reference, run, Op};

/// Points ck-jit at an empty cache of this test binary before the runtime
/// is first used.
fn fresh_cache() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("fusion-cache");
        let _ = std::fs::remove_dir_all(&dir);
        std::env::set_var("CK_JIT_CACHE_DIR", &dir);
    });
}

fn regions(graph: &[Op]) -> Vec<(std::ops::Range<usize>, &'static str, Option<String>)> {
    plan(graph)
        .unwrap()
        .into_iter()
        .map(|r| (r.ops, r.kernel.name(), r.flushed_by))
        .collect()
}

#[test]
fn the_example_graph_splits_where_no_kernel_can_take_the_next_operation() {
    fresh_cache();
    let got = regions(&example_graph());
    let names: Vec<_> = got.iter().map(|(ops, k, _)| (ops.clone(), *k)).collect();
    assert_eq!(
        names,
        [
            (0..3, "gemm_bias_relu_f32"),
            (3..5, "gemm_relu_f32"),
            (5..6, "bias_f32"),
            (6..7, "relu_f32"),
        ]
    );
    let why: Vec<&str> = got.iter().filter_map(|r| r.2.as_deref()).collect();
    assert_eq!(
        why,
        [
            "the region (dtype = f32, gemm = 1, bias_add = 2, relu = 3, prefer min ops) \
             cannot take gemm = 4: gemm = 1 conflicts with gemm = 4 (no value of gemm meets both)",
            "the region (dtype = f32, gemm = 1, relu = 2, prefer min ops) cannot take \
             bias_add = 3: bias_add = 3 leaves none of the 1 kernels that support the region",
            "the region (dtype = f32, bias_add = 1, prefer min ops) cannot take \
             relu = 2: relu = 2 leaves none of the 1 kernels that support the region",
        ]
    );
    assert_eq!(
        got.last().unwrap().2,
        None,
        "the last region ends with the graph"
    );
}

#[test]
fn each_region_gets_the_kernel_that_fuses_exactly_its_operations() {
    fresh_cache();
    let gemm = || Op::Gemm {
        w: vec![1.0; 4],
        n: 2,
    };
    let bias = || Op::BiasAdd(vec![0.5, -0.5]);
    for (graph, want) in [
        (vec![gemm()], vec!["gemm_f32"]),
        (vec![gemm(), bias()], vec!["gemm_bias_f32"]),
        (vec![gemm(), gemm()], vec!["gemm_f32", "gemm_f32"]),
        (vec![Op::Relu, Op::Relu], vec!["relu_f32", "relu_f32"]),
        (
            vec![bias(), gemm(), Op::Relu],
            vec!["bias_f32", "gemm_relu_f32"],
        ),
    ] {
        let plan = plan(&graph).unwrap();
        let names: Vec<&str> = plan.iter().map(|r| r.kernel.name()).collect();
        assert_eq!(names, want, "{graph:?}");
        for region in &plan {
            assert_eq!(
                region.kernel.meta().get("ops").map(String::as_str),
                Some(region.ops.len().to_string().as_str()),
                "{} runs more or less than its region",
                region.kernel.name()
            );
        }
    }
}

#[test]
fn the_fused_regions_compute_what_the_graph_does() {
    fresh_cache();
    let graph = example_graph();
    let (m, k) = (3, 8);
    let x: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.3).sin()).collect();
    let (got, cols) = run(&graph, &plan(&graph).unwrap(), &x, m, k).unwrap();
    let (want, want_cols) = reference(&graph, &x, m, k);
    assert_eq!(cols, want_cols);
    for (a, b) in got.iter().zip(&want) {
        assert!((a - b).abs() <= 1e-4, "{got:?}\n{want:?}");
    }
    assert!(
        want.iter().any(|&v| v > 0.0),
        "a result that is not all zeros"
    );
}
