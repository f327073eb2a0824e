//! Warm dispatch: the cost of calling a loaded kernel, three ways, on the
//! same loaded function (`int add1(int)`, compiled by the system `cc`
//! through the runtime before measuring):
//!
//! - `direct_fn_pointer` (baseline): an indirect call through a function
//!   pointer read from memory on every call;
//! - `lazy_kernel`: the `#[lazy_kernel]` dispatcher (one acquire load, a
//!   null check, the indirect call);
//! - `name_keyed`: the C++ runtime's design ([`NamedDispatcher`]: hash the
//!   name, read lock, map lookup, once-check, call).
//!
//! `cargo bench -p ck-jit-benches --bench warm_dispatch -- --warm-up-time 1 --measurement-time 3`

use std::hint::black_box;
use std::time::SystemTime;

use ck_jit_benches::named::NamedDispatcher;
use ck_jit_benches::report::{self, Comparison, Target, Unit};
use ck_jit_benches::{add1, criterion_estimates};
use criterion::Criterion;

const GROUP: &str = "warm_dispatch";

fn main() {
    let started = SystemTime::now();
    let direct: add1::Fn = match add1::try_get() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("warm_dispatch: cannot load add1: {e}");
            std::process::exit(1);
        }
    };
    let named = NamedDispatcher::new(move |name| match name {
        "add1" => direct as *const (),
        _ => std::ptr::null(),
    });
    // SAFETY (all three): add1 is `int add1(int)`; every path below calls
    // that same loaded function.
    assert_eq!(unsafe { add1(41) }, 42);

    let mut c = Criterion::default().configure_from_args();
    {
        let mut g = c.benchmark_group(GROUP);
        g.bench_function("direct_fn_pointer", |b| {
            b.iter(|| unsafe { black_box(direct)(black_box(41)) })
        });
        g.bench_function("lazy_kernel", |b| b.iter(|| unsafe { add1(black_box(41)) }));
        g.bench_function("name_keyed", |b| {
            b.iter(|| {
                let f: add1::Fn = unsafe { std::mem::transmute(named.get(black_box("add1"))) };
                unsafe { f(black_box(41)) }
            })
        });
        g.finish();
    }
    c.final_summary();

    let median = |f: &str| criterion_estimates::median_ns(GROUP, f, started);
    let Some(base) = median("direct_fn_pointer") else {
        println!("warm_dispatch: the baseline was not measured in this run (filtered out?)");
        return;
    };
    report::heading("warm dispatch: add1(int) -> int, criterion median per call");
    if let Some(lazy) = median("lazy_kernel") {
        Comparison {
            bench: "warm_dispatch",
            what: "#[lazy_kernel] dispatcher vs a direct call through a fn pointer".into(),
            baseline_label: "direct call through a fn pointer".into(),
            baseline: base,
            measured_label: "#[lazy_kernel] dispatcher".into(),
            measured: lazy,
            unit: Unit::Ns,
            target: Target::DiffAtMost(0.5),
        }
        .print();
    }
    if let Some(named) = median("name_keyed") {
        Comparison {
            bench: "warm_dispatch",
            what: "name-keyed dispatcher (HashMap + RwLock + once) vs direct".into(),
            baseline_label: "direct call through a fn pointer".into(),
            baseline: base,
            measured_label: "name-keyed: hash, read lock, lookup, once-check".into(),
            measured: named,
            unit: Unit::Ns,
            target: Target::None,
        }
        .print();
    }
}
