//! A dispatcher whose first call of an operation reaches a blob that
//! several operations share (CK's bwd: one `dot_do_o` kernel for many
//! `dq_dk_dv` kernels) compiles the whole operation together, through the
//! lazy stubs as a C++ program links them: the shared blob's call waits
//! for the next blob's name, then all three compile at once and run in the
//! dispatcher's order. The program: `ck_jit_tests::held`.

use std::path::PathBuf;

use ck_jit_tests::held::{self, line, spans, Options, MAIN};
use ck_jit_tests::{capi_staticlib, Tree};

fn capi() -> PathBuf {
    capi_staticlib().expect("libck_jit_capi.a beside the test binary (a dependency)")
}

fn options(sets: bool, ordered: bool) -> Options {
    Options {
        sets,
        ordered,
        delays_ms: [0, 0, 0],
        main: MAIN,
        overlap: true,
        count_slow_paths: false,
    }
}

#[test]
fn a_shared_first_blob_waits_and_the_operation_compiles_together() {
    let t = Tree::new("held-calls");
    let p = held::build(&t, &capi(), &options(true, true));
    // Read from the dispatcher: the kernels another kernel follows may
    // wait; the last one never (a call returning a value, `dot_id_`, does
    // not count as following), nor `dot_id_` itself.
    let leading: Vec<&str> = p.order.leading.iter().map(String::as_str).collect();
    assert_eq!(
        leading,
        ["dot_oneshot_<d0>", "dq_oneshot_<q0>", "dq_oneshot_<q1>"]
    );
    let out = held::run(&p, &t.cache_dir(), 3);
    // Every call ran its kernels in the dispatcher's order.
    assert_eq!(line(&out, "first"), "1 2 3");
    assert_eq!(line(&out, "second"), "1 4 5");
    assert_eq!(line(&out, "again"), "1 2 3");
    assert_eq!(line(&out, "thread0"), "1 2 3 ".repeat(8).trim());
    assert_eq!(line(&out, "thread1"), "1 4 5 ".repeat(8).trim());
    // The first call compiled its three blobs at once; the second, whose
    // `dot_do_o` was loaded, its other two at once.
    assert_eq!(spans(&p), (3, 5), "{out}");
    let text = std::fs::read_to_string(&p.spans).unwrap();
    assert!(text.starts_with("start\nstart\nstart\n"), "{text}");
}

#[test]
fn stubs_written_without_the_order_compile_the_shared_blob_alone() {
    let t = Tree::new("held-calls-unordered");
    let p = held::build(&t, &capi(), &options(true, false));
    let out = held::run(&p, &t.cache_dir(), 3);
    assert_eq!(line(&out, "first"), "1 2 3");
    assert_eq!(line(&out, "thread1"), "1 4 5 ".repeat(8).trim());
    // dot_do_o first and alone, then dq_dk_dv with convert_dq.
    assert_eq!(spans(&p), (2, 5), "{out}");
}

#[test]
fn without_sets_nothing_waits_and_each_blob_compiles_when_reached() {
    let t = Tree::new("held-calls-no-sets");
    let p = held::build(&t, &capi(), &options(false, true));
    let out = held::run(&p, &t.cache_dir(), 3);
    assert_eq!(line(&out, "first"), "1 2 3");
    assert_eq!(line(&out, "second"), "1 4 5");
    assert_eq!(line(&out, "thread1"), "1 4 5 ".repeat(8).trim());
    assert_eq!(spans(&p), (1, 5), "{out}");
}

#[test]
fn a_warm_process_runs_from_the_cache_in_order() {
    let t = Tree::new("held-calls-warm");
    let p = held::build(&t, &capi(), &options(true, true));
    held::run(&p, &t.cache_dir(), 3);
    // A new process: everything is in the cache, nothing waits or compiles.
    let out = held::run(&p, &t.cache_dir(), 3);
    assert_eq!(line(&out, "first"), "1 2 3");
    assert_eq!(line(&out, "second"), "1 4 5");
    assert_eq!(spans(&p), (3, 5), "no compile in the second process: {out}");
}

/// Calls the shared kernel directly, as no dispatcher does: nothing follows
/// it on its thread.
const ALONE: &str = r#"#include <cstdio>
#include <thread>
#include "ops.hpp"

int main()
{
    log_t l{};
    std::thread t([&] { dot_oneshot_<d0>(cfg{0}, args{&l}); });
    t.join();
    std::printf("alone:");
    for(int i = 0; i < l.n; i++)
        std::printf(" %d", l.ids[i]);
    std::printf("\n");
    return 0;
}
"#;

#[test]
fn a_held_call_nothing_follows_runs_when_its_thread_ends_and_says_so() {
    let t = Tree::new("held-calls-alone");
    let mut o = options(true, true);
    o.main = ALONE;
    let p = held::build(&t, &capi(), &o);
    let out = std::process::Command::new(&p.path)
        .env("CK_JIT_CACHE_DIR", t.cache_dir())
        .env_remove("CK_JIT_MANIFEST")
        .env_remove("CK_JIT_OFFLINE")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(line(&stdout, "alone"), "1", "{stderr}");
    assert!(
        stderr.contains("the call of blob bwd_dot_d0 waited for the next call of its operation, which never came"),
        "{stderr}"
    );
}

/// Thread `a` holds the shared kernel's call (cold, its sets disagree) and
/// waits; meanwhile thread `b` warms the other operation's `dq` and
/// `convert` stubs, then calls them a thousand times each. Every entry of
/// a sequence stub's rare path is counted per thread
/// (`CK_JIT_STUB_ON_SLOW_PATH`).
const PER_THREAD: &str = r#"#include <atomic>
#include <cstdio>
#include <thread>
#include "ops.hpp"

static thread_local long slow_paths = 0;
extern "C" void ck_jit_test_slow_path(void) { slow_paths++; }

int main()
{
    std::atomic<int> stage{0};
    log_t la{}, lb{};
    int held_before = -1, held_after = -1;
    long b_cold = -1, b_warm = -1;
    std::thread a([&] {
        dot_oneshot_<d0>(cfg{0}, args{&la});
        held_before = la.n;
        stage.store(1);
        while(stage.load() != 2)
            std::this_thread::yield();
        held_after = la.n;
        dq_oneshot_<q0>(cfg{0}, args{&la});
        convert_oneshot_<c0>(cfg{0}, args{&la});
    });
    std::thread b([&] {
        while(stage.load() != 1)
            std::this_thread::yield();
        dq_oneshot_<q1>(cfg{0}, args{&lb});
        convert_oneshot_<c1>(cfg{0}, args{&lb});
        b_cold = slow_paths;
        for(int i = 0; i < 1000; i++)
        {
            dq_oneshot_<q1>(cfg{0}, args{&lb});
            convert_oneshot_<c1>(cfg{0}, args{&lb});
        }
        b_warm = slow_paths - b_cold;
        stage.store(2);
    });
    a.join();
    b.join();
    std::printf("a held: %d %d\n", held_before, held_after);
    std::printf("a:");
    for(int i = 0; i < la.n; i++)
        std::printf(" %d", la.ids[i]);
    std::printf("\nb calls: %d\n", lb.n);
    std::printf("b slow paths cold: %ld\n", b_cold);
    std::printf("b slow paths warm: %ld\n", b_warm);
    return 0;
}
"#;

#[test]
fn a_call_held_on_one_thread_leaves_other_threads_on_the_warm_path() {
    let t = Tree::new("held-calls-per-thread");
    let mut o = options(true, true);
    o.main = PER_THREAD;
    o.overlap = false;
    o.count_slow_paths = true;
    let p = held::build(&t, &capi(), &o);
    let out = held::run(&p, &t.cache_dir(), 3);
    // `a`'s first call was held, and still was while `b` made its calls;
    // then it ran before `a`'s next, in the dispatcher's order.
    assert_eq!(line(&out, "a held"), "0 0", "{out}");
    assert_eq!(line(&out, "a"), "1 2 3", "{out}");
    assert_eq!(line(&out, "b calls"), "2002", "{out}");
    // `b`'s cold calls took the rare path (the hook counts)...
    assert_eq!(line(&out, "b slow paths cold"), "2", "{out}");
    // ...its warm ones never, though `a` held a call all along.
    assert_eq!(line(&out, "b slow paths warm"), "0", "{out}");
}

/// The original tool's bwd path around the same kernels (what
/// `held-first-call` measures it by): its first call compiles the three
/// blobs at once, every call runs them in the dispatcher's order, and a
/// second operation compiles only the two blobs it does not share.
#[test]
fn the_original_tools_bwd_path_runs_the_same_kernels_in_order() {
    let t = Tree::new("held-calls-original");
    let o = held::build_original(&t, MAIN, [0, 0, 0], true, 1);
    let out = o.command(&t.cache_dir()).output().expect("program runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(line(&stdout, "first"), "1 2 3");
    assert_eq!(line(&stdout, "second"), "1 4 5");
    assert_eq!(line(&stdout, "again"), "1 2 3");
    assert_eq!(line(&stdout, "thread0"), "1 2 3 ".repeat(8).trim());
    assert_eq!(line(&stdout, "thread1"), "1 4 5 ".repeat(8).trim());
    assert_eq!(o.spans(), (3, 5), "{stdout}");
}
