//! Kernel selection for regions of fused operations: a family whose
//! metadata says which operations each kernel fuses (and in which order),
//! walked one operation at a time. Selection compiles nothing, so the
//! blobs here have no sources.

use std::collections::BTreeMap;

use ck_jit_rt::__private::{FamilySlots, SymbolOverride};
use ck_jit_rt::family::{FlushReason, Region, Selector, Step};
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::{Error, Query, Runtime};

/// Each kernel: name and metadata. An operation kind's value is its place
/// in the kernel's chain (`gemm=1,bias_add=2,relu=3`: a gemm, then a bias
/// added, then a relu); `ops` counts them; `cap` is a trait of relus whose
/// neutral value (what a relu that does not ask gets) is `none`.
const KERNELS: [(&str, &str); 9] = [
    ("gemm_f32", "dtype=f32,gemm=1,ops=1,cap=none"),
    (
        "gemm_bias_f32",
        "dtype=f32,gemm=1,bias_add=2,ops=2,cap=none",
    ),
    ("gemm_relu_f32", "dtype=f32,gemm=1,relu=2,ops=2,cap=none"),
    (
        "gemm_bias_relu_f32",
        "dtype=f32,gemm=1,bias_add=2,relu=3,ops=3,cap=none",
    ),
    ("gemm_f16", "dtype=f16,gemm=1,ops=1,cap=none"),
    (
        "gemm_fast_f16",
        "dtype=f16,gemm=1,ops=1,cap=none,priority=3",
    ),
    ("bias_add_f32", "dtype=f32,bias_add=1,ops=1,cap=none"),
    ("relu_f32", "dtype=f32,relu=1,ops=1,cap=none"),
    ("relu_capped_f32", "dtype=f32,relu=1,ops=1,cap=6"),
];

fn family_of(kernels: &[(&str, &str)], neutral: &[(&str, &str)]) -> &'static FamilySlots {
    let mut m = Manifest::new("ck_jit_selector_test", "/nonexistent");
    m.groups.push(Group {
        name: "fused".into(),
        compiler: "cc".into(),
        args: ["{src}", "-o", "{out}"].map(String::from).to_vec(),
        cwd: None,
        symbol: SymbolSpec::Exact("run".into()),
        depfile: false,
        family: None,
        neutral: neutral
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    });
    for (name, meta) in kernels {
        m.blobs.push(Blob {
            name: name.to_string(),
            source: format!("{name}.c"),
            group: 0,
            symbol: None,
            meta: meta
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        });
    }
    m.finish().unwrap();
    let rt: &'static Runtime = Box::leak(Box::new(Runtime::new(m, "selector test")));
    Box::leak(Box::new(FamilySlots::with_runtime(
        rt,
        "fused",
        SymbolOverride::Manifest,
    )))
}

fn family() -> &'static FamilySlots {
    family_of(&KERNELS, &[("cap", "none")])
}

/// What every region needs: the kernel that does the least beyond it.
fn base() -> Query {
    Query::new().prefer_min("ops")
}

/// The attributes of operation `kind` at place `at` of its region.
fn op(kind: &str, at: usize, dtype: &str) -> Query {
    Query::new().eq(kind, at as i64).eq("dtype", dtype)
}

fn selectable(step: Step) -> &'static str {
    match step {
        Step::Selectable(k) => k.name(),
        Step::Flush(f) => panic!("unexpected flush: {f}"),
    }
}

fn flush(step: Step) -> ck_jit_rt::family::Flush {
    match step {
        Step::Selectable(k) => panic!("unexpected kernel {}", k.name()),
        Step::Flush(f) => f,
    }
}

/// Walks `ops` (kind, dtype) as a graph compiler would: each operation's
/// place is its position in the open region, so after a flush it is
/// offered again as the first of a new region. Returns each region's
/// operation count and kernel.
fn regions(sel: &mut Selector, ops: &[(&str, &str)]) -> Vec<(usize, &'static str)> {
    let mut out = Vec::new();
    let mut close = |r: Option<Region>| {
        let r = r.expect("a region with operations");
        out.push((r.ops(), r.kernel().name()));
    };
    for (kind, dtype) in ops {
        if let Step::Flush(_) = sel.step(&op(kind, sel.ops() + 1, dtype)).unwrap() {
            close(sel.finish());
            selectable(sel.step(&op(kind, 1, dtype)).unwrap());
        }
    }
    close(sel.finish());
    out
}

#[test]
fn a_chain_of_fusable_operations_is_one_region_and_the_next_gemm_starts_another() {
    let mut sel = family().selector(&base()).unwrap();
    let f32 = "f32";
    assert_eq!(
        selectable(sel.step(&op("gemm", 1, f32)).unwrap()),
        "gemm_f32"
    );
    assert_eq!(sel.candidates(), 4);
    assert_eq!(
        selectable(sel.step(&op("bias_add", 2, f32)).unwrap()),
        "gemm_bias_f32"
    );
    assert_eq!(
        selectable(sel.step(&op("relu", 3, f32)).unwrap()),
        "gemm_bias_relu_f32"
    );
    // A kernel runs one gemm: the region cannot take a second.
    let why = flush(sel.step(&op("gemm", 4, f32)).unwrap());
    assert_eq!(
        why.reason(),
        &FlushReason::Conflict(conflict(
            Query::new()
                .eq("gemm", 1)
                .and(&Query::new().eq("gemm", 4))
                .unwrap_err()
        ))
    );
    assert_eq!(
        why.to_string(),
        "the region (gemm = 1, dtype = f32, bias_add = 2, relu = 3, prefer min ops) \
         cannot take gemm = 4, dtype = f32: gemm = 1 conflicts with gemm = 4 \
         (no value of gemm meets both)"
    );
    // The flush left the region as it was.
    assert_eq!(sel.ops(), 3);
    assert_eq!(sel.kernel().unwrap().name(), "gemm_bias_relu_f32");
    let region = sel.finish().unwrap();
    assert_eq!(
        (region.ops(), region.kernel().name()),
        (3, "gemm_bias_relu_f32")
    );
    assert_eq!(sel.ops(), 0);
    assert_eq!(sel.kernel(), None);
    assert_eq!(
        selectable(sel.step(&op("gemm", 1, f32)).unwrap()),
        "gemm_f32"
    );

    let mut sel = family().selector(&base()).unwrap();
    assert_eq!(
        regions(
            &mut sel,
            &[
                ("gemm", f32),
                ("bias_add", f32),
                ("relu", f32),
                ("gemm", f32)
            ]
        ),
        [(3, "gemm_bias_relu_f32"), (1, "gemm_f32")]
    );
}

#[test]
fn an_order_no_kernel_has_flushes_naming_the_constraint_that_left_none() {
    let mut sel = family().selector(&base()).unwrap();
    selectable(sel.step(&op("gemm", 1, "f32")).unwrap());
    assert_eq!(
        selectable(sel.step(&op("relu", 2, "f32")).unwrap()),
        "gemm_relu_f32"
    );
    // No kernel adds a bias after a relu.
    let why = flush(sel.step(&op("bias_add", 3, "f32")).unwrap());
    assert_eq!(
        why.reason(),
        &FlushReason::NoKernel {
            constraint: "bias_add = 3".into(),
            among: 1
        }
    );
    assert_eq!(
        why.to_string(),
        "the region (gemm = 1, dtype = f32, relu = 2, prefer min ops) cannot take \
         bias_add = 3, dtype = f32: bias_add = 3 leaves none of the 1 kernels that support the region"
    );
    let mut sel = family().selector(&base()).unwrap();
    assert_eq!(
        regions(
            &mut sel,
            &[
                ("gemm", "f32"),
                ("relu", "f32"),
                ("bias_add", "f32"),
                ("relu", "f32")
            ]
        ),
        [(2, "gemm_relu_f32"), (1, "bias_add_f32"), (1, "relu_f32")],
        "the bias_add starts a region, and a relu cannot follow it in any kernel"
    );
    // A change of dtype is a conflict with the region's.
    let mut sel = family().selector(&base()).unwrap();
    assert_eq!(
        regions(
            &mut sel,
            &[("gemm", "f32"), ("gemm", "f16"), ("relu", "f32")]
        ),
        [(1, "gemm_f32"), (1, "gemm_fast_f16"), (1, "relu_f32")]
    );
}

#[test]
fn push_closes_the_region_and_starts_the_next_with_the_operation() {
    // Attributes that do not depend on the place in the region.
    let mut sel = family()
        .selector(&Query::new().eq("dtype", "f32").prefer_min("ops"))
        .unwrap();
    assert_eq!(sel.push(&Query::new().eq("gemm", 1)).unwrap(), None);
    assert_eq!(sel.push(&Query::new().eq("bias_add", 2)).unwrap(), None);
    let closed = sel.push(&Query::new().eq("bias_add", 1)).unwrap().unwrap();
    assert_eq!((closed.ops(), closed.kernel().name()), (2, "gemm_bias_f32"));
    assert_eq!(
        closed.query().to_string(),
        "dtype = f32, gemm = 1, bias_add = 2, prefer min ops"
    );
    assert_eq!(sel.kernel().unwrap().name(), "bias_add_f32");
    assert_eq!(sel.ops(), 1);
    assert_eq!(sel.finish().unwrap().kernel().name(), "bias_add_f32");
    assert!(sel.finish().is_none(), "an empty region closes to nothing");
}

#[test]
fn an_operation_that_cannot_be_selected_even_alone_is_an_error_not_a_flush() {
    let fam = family();
    let mut sel = fam.selector(&base()).unwrap();
    // Misspelt keys get the closest ones, in an empty region or not.
    let err = sel.step(&Query::new().eq("gem", 1)).unwrap_err();
    assert!(matches!(err, Error::UnknownKey { ref key, .. } if key == "gem"));
    assert_eq!(
        err.to_string(),
        "no member of family 'fused' has the key 'gem'; did you mean 'gemm'?"
    );
    selectable(sel.step(&op("gemm", 1, "f32")).unwrap());
    let err = sel.step(&Query::new().has("reluu")).unwrap_err();
    assert!(err.to_string().ends_with("did you mean 'relu'?"), "{err}");
    assert_eq!(sel.ops(), 1, "an error leaves the region as it was");

    sel.reset();
    let err = sel.step(&op("relu", 2, "f16")).unwrap_err();
    assert!(matches!(err, Error::NoMatch(_)), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("no fused blob matches relu = 2, dtype = f16")
            && msg.contains("together they match none"),
        "the family's own report: {msg}"
    );
    let err = sel
        .step(&Query::new().eq("dtype", "f32").eq("dtype", "f16"))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "dtype = f32 conflicts with dtype = f16: no value of dtype meets both"
    );
    // A single selection reports a conflict as one too, not as no match.
    let err = fam
        .select(&Query::new().ge("ops", 3).le("ops", 2))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "ops >= 3 conflicts with ops <= 2: no value of ops meets both"
    );
    // The base is checked when the selector is made.
    let err = fam
        .selector(&Query::new().ge("ops", 2).le("ops", 1))
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    let err = fam.selector(&Query::new().eq("dtype", "f64")).unwrap_err();
    assert!(matches!(err, Error::NoMatch(_)), "{err:?}");
    let err = fam.selector(&Query::new().eq("dtyp", "f32")).unwrap_err();
    assert!(err.to_string().ends_with("did you mean 'dtype'?"), "{err}");
}

#[test]
fn a_key_the_region_leaves_open_gets_the_familys_neutral_value() {
    let mut sel = family().selector(&base()).unwrap();
    // relu_capped sorts first by name, but a relu that says nothing about
    // capping gets the neutral (uncapped) one.
    assert_eq!(
        selectable(sel.step(&op("relu", 1, "f32")).unwrap()),
        "relu_f32"
    );
    assert_eq!(sel.candidates(), 2);
    assert_eq!(
        selectable(sel.step(&Query::new().eq("cap", 6)).unwrap()),
        "relu_capped_f32"
    );
    // A family whose only kernels for a region lack the neutral value.
    let fam = family_of(
        &[("a", "k=1,x=1,soft=no"), ("b", "k=2,x=1,soft=yes")],
        &[("soft", "no")],
    );
    let mut sel = fam.selector(&Query::new()).unwrap();
    assert_eq!(selectable(sel.step(&Query::new().eq("x", 1)).unwrap()), "a");
    let why = flush(sel.step(&Query::new().eq("k", 2)).unwrap());
    assert_eq!(
        why.reason(),
        &FlushReason::NoKernel {
            constraint: "soft = no (the family's neutral value)".into(),
            among: 1
        }
    );
}

/// Every operation's attributes in this pool, in every order up to four
/// long, through a selector and through a full selection of the composed
/// query: the same answers.
#[test]
fn each_step_answers_as_a_full_selection_of_the_composed_query_would() {
    let fam = family();
    let pool = [
        Query::new().eq("gemm", 1),
        Query::new().eq("bias_add", 2),
        Query::new().eq("relu", 2),
        Query::new().eq("relu", 3),
        Query::new().eq("dtype", "f32"),
        Query::new().eq("dtype", "f16"),
        Query::new().ge("ops", 2),
        Query::new().le("ops", 1),
        Query::new().lacks("bias_add").prefer_max("ops"),
        Query::new().has("relu"),
        Query::new().ne("gemm", 1),
        Query::new().eq("cap", 6),
    ];
    let mut steps = 0;
    let mut flushes = 0;
    for len in 1..=4u32 {
        for n in 0..pool.len().pow(len) {
            let mut sel = fam.selector(&base()).unwrap();
            let mut region = base();
            let mut rest = n;
            for _ in 0..len {
                let op = &pool[rest % pool.len()];
                rest /= pool.len();
                steps += 1;
                let step = sel.step(op);
                let composed = region.clone().and(op);
                let expected = composed.clone().map(|q| fam.select(&q));
                match (step, expected) {
                    (Ok(Step::Selectable(k)), Ok(Ok(e))) => {
                        assert_eq!(k, e, "{region} + {op}");
                        region = composed.unwrap();
                    }
                    (Ok(Step::Flush(f)), Err(conflict)) => {
                        assert_eq!(f.reason(), &FlushReason::Conflict(self::conflict(conflict)));
                        flushes += 1;
                    }
                    (Ok(Step::Flush(f)), Ok(Err(Error::NoMatch(_)))) => {
                        assert!(matches!(f.reason(), FlushReason::NoKernel { .. }), "{f}");
                        flushes += 1;
                    }
                    (Err(Error::NoMatch(_)), Ok(Err(Error::NoMatch(_))))
                    | (Err(Error::Conflict(_)), Err(_))
                        if sel.ops() == 0 => {}
                    (got, want) => panic!("{region} + {op}: {got:?} but {want:?}"),
                }
                assert_eq!(sel.query(), &region);
            }
        }
    }
    assert!(
        steps > 20_000 && flushes > 1_000,
        "{steps} steps, {flushes} flushes"
    );
}

/// The conflict `Query::and` reported.
fn conflict(e: Error) -> ck_jit_rt::Conflict {
    match e {
        Error::Conflict(c) => c,
        e => panic!("not a conflict: {e}"),
    }
}
