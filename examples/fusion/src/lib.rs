//! What a graph compiler that fuses operations does with a kernel family:
//! it walks a chain of operations (gemm, bias add, relu), offers each to a
//! [`Selector`](ck_jit_rt::Selector) over the `fused` family, and closes
//! ("flushes") the open region whenever the selector says no kernel can
//! take the next operation too. Each region then runs as one call of the
//! kernel chosen for it, compiled on its first call.
//!
//! The family's metadata (written by `build.rs` from the kernel names)
//! says what each kernel fuses and in which order: `gemm_bias_relu_f32`
//! has `gemm=1, bias_add=2, relu=3, ops=3`. An operation at place `p` of
//! its region asks for `kind = p`, so a second gemm in a region
//! contradicts the first (`gemm = 1` and `gemm = 4`), and a bias after a
//! relu finds no kernel that adds one there; either way the selector
//! answers with a flush and the reason.

use std::ops::Range;

use ck_jit_macros::lazy_kernel;
use ck_jit_rt::family::Step;
use ck_jit_rt::{Error, Query};

ck_jit_rt::embed_manifest!();

/// The sizes a kernel works on (`fused::Shape` in `kernels/include`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// Rows of `x` and `y`.
    pub m: i32,
    /// Columns of `y` (and of `w`).
    pub n: i32,
    /// Columns of `x` (rows of `w`).
    pub k: i32,
}

/// Every kernel of the family: `y = ops(x)`, where a kernel that starts
/// with a gemm multiplies the `m`×`k` matrix `x` by the `k`×`n` matrix
/// `w`, and the element-wise kernels read `x` as `m`×`n`; `bias` has `n`
/// values and is read by kernels that add one.
#[lazy_kernel(family = "fused")]
pub unsafe extern "C" fn fused(
    x: *const f32,
    w: *const f32,
    bias: *const f32,
    y: *mut f32,
    shape: Shape,
);

/// One operation of a graph, with its parameters.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// `y = x · w`, `w` being `k`×`n` (row-major).
    Gemm {
        /// The weights.
        w: Vec<f32>,
        /// Their columns.
        n: usize,
    },
    /// `y = x + bias` (one value per column).
    BiasAdd(Vec<f32>),
    /// `y = max(x, 0)`.
    Relu,
}

impl Op {
    /// The operation's kind, as the family's metadata names it.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Gemm { .. } => "gemm",
            Op::BiasAdd(_) => "bias_add",
            Op::Relu => "relu",
        }
    }

    /// What the operation needs of a kernel when it is at place `at`
    /// (from 1) of its region.
    pub fn attributes(&self, at: usize) -> Query {
        Query::new().eq(self.kind(), at as i64)
    }
}

/// What every region needs: f32, and of the kernels that support the
/// region, the one that fuses the fewest operations (none beyond it).
pub fn base() -> Query {
    Query::new().eq("dtype", "f32").prefer_min("ops")
}

/// A region of the graph and the kernel that runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// The operations it covers (indices into the graph).
    pub ops: Range<usize>,
    /// The kernel chosen for them.
    pub kernel: fused::Kernel,
    /// Why the region ended before the next operation (the selector's
    /// answer), or `None` for the last region.
    pub flushed_by: Option<String>,
}

/// Splits `graph` (a chain: each operation consumes the previous one's
/// result) into regions, each with its kernel.
///
/// # Errors
///
/// When an operation cannot be run even alone by any kernel of the
/// family, with the family's reason.
pub fn plan(graph: &[Op]) -> Result<Vec<Planned>, Error> {
    let mut sel = fused::blobs()?.selector(&base())?;
    let mut regions = Vec::new();
    let mut start = 0;
    for (i, op) in graph.iter().enumerate() {
        if let Step::Flush(why) = sel.step(&op.attributes(sel.ops() + 1))? {
            if let Some(region) = sel.finish() {
                regions.push(Planned {
                    ops: start..i,
                    kernel: region.kernel(),
                    flushed_by: Some(why.to_string()),
                });
            }
            start = i;
            // A region that has taken nothing answers with an error
            // rather than a flush.
            sel.step(&op.attributes(1))?;
        }
    }
    if let Some(region) = sel.finish() {
        regions.push(Planned {
            ops: start..graph.len(),
            kernel: region.kernel(),
            flushed_by: None,
        });
    }
    Ok(regions)
}

/// Runs `graph` on `x` (`m` rows of `k` values) region by region through
/// the planned kernels; returns the result and its columns.
///
/// # Errors
///
/// If a kernel cannot be compiled or loaded, or a region's parameters do
/// not fit its kernel (a gemm whose weights do not match the input).
pub fn run(
    graph: &[Op],
    plan: &[Planned],
    x: &[f32],
    m: usize,
    k: usize,
) -> Result<(Vec<f32>, usize), String> {
    let mut x = x.to_vec();
    let mut k = k;
    for region in plan {
        let ops = &graph[region.ops.clone()];
        let (w, n, gemm): (&[f32], usize, bool) = match ops.first() {
            Some(Op::Gemm { w, n }) => (w, *n, true),
            _ => (&[], k, false),
        };
        if (gemm && w.len() != k * n) || x.len() != m * k {
            return Err(format!(
                "region {:?}: a {m}x{k} input and {} weights for {n} columns do not fit",
                region.ops,
                w.len()
            ));
        }
        let bias: &[f32] = ops
            .iter()
            .find_map(|op| match op {
                Op::BiasAdd(b) => Some(b.as_slice()),
                _ => None,
            })
            .unwrap_or(&[]);
        if !bias.is_empty() && bias.len() != n {
            return Err(format!(
                "region {:?}: {} bias values for {n} columns",
                region.ops,
                bias.len()
            ));
        }
        let mut y = vec![0.0f32; m * n];
        let f = fused::try_get(region.kernel).map_err(|e| e.to_string())?;
        // SAFETY: every kernel of the family has this signature; `x` has
        // m*k values, `w` k*n (or is unread), `bias` n (or is unread) and
        // `y` m*n, as checked above.
        unsafe {
            f(
                x.as_ptr(),
                w.as_ptr(),
                bias.as_ptr(),
                y.as_mut_ptr(),
                Shape {
                    m: m as i32,
                    n: n as i32,
                    k: k as i32,
                },
            )
        };
        x = y;
        k = n;
    }
    Ok((x, k))
}

/// The same graph, one operation at a time in Rust, to check the kernels
/// against.
pub fn reference(graph: &[Op], x: &[f32], m: usize, k: usize) -> (Vec<f32>, usize) {
    let mut x = x.to_vec();
    let mut cols = k;
    for op in graph {
        match op {
            Op::Gemm { w, n } => {
                let mut y = vec![0.0f32; m * n];
                for i in 0..m {
                    for j in 0..*n {
                        y[i * n + j] = (0..cols).map(|p| x[i * cols + p] * w[p * n + j]).sum();
                    }
                }
                x = y;
                cols = *n;
            }
            Op::BiasAdd(b) => x
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v += b[i % cols]),
            Op::Relu => x.iter_mut().for_each(|v| *v = v.max(0.0)),
        }
    }
    (x, cols)
}

/// A small multi-layer graph: gemm → bias_add → relu → gemm → relu →
/// bias_add → relu, on inputs of `k` = 8 columns.
pub fn example_graph() -> Vec<Op> {
    let weights = |k: usize, n: usize, seed: f32| -> Vec<f32> {
        (0..k * n)
            .map(|i| (i as f32 * 0.37 + seed).sin() * 0.5)
            .collect()
    };
    vec![
        Op::Gemm {
            w: weights(8, 16, 0.1),
            n: 16,
        },
        Op::BiasAdd((0..16).map(|j| j as f32 * 0.05 - 0.4).collect()),
        Op::Relu,
        Op::Gemm {
            w: weights(16, 4, 0.7),
            n: 4,
        },
        Op::Relu,
        Op::BiasAdd(vec![-0.25, 0.5, -1.0, 0.125]),
        Op::Relu,
    ]
}
