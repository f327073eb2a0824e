//! A lazy stub whose blob cannot be had never takes the host process down:
//! a `float` entry returns CK's "no kernel" value (a negative time), the
//! reason is said once on stderr and kept for the thread
//! (`ck_jit_last_error`), a `void` launch counts a failure the caller can
//! see (`ck_jit_thread_failures`), and the next call tries again, so a
//! blob fixed meanwhile is used. `CK_JIT_ON_FAILURE=abort` aborts instead.
//! A C++ program links CK-shaped blobs' stubs (`stub_source`) with
//! `libck_jit_capi.a`; one blob does not compile.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ck_jit_ck::stub_source;
use ck_jit_tests::held::{cxx_manifest, link_with_stubs};
use ck_jit_tests::{capi_staticlib, Tree};

const HEADER: &str = "#pragma once\n\
    struct good; struct bad;\n\
    template <typename T> float fwd_(int x);\n\
    template <typename T> void launch_(int* x);\n";

const GOOD: &str = "#include \"ops.hpp\"\n\
    template <>\nfloat fwd_<good>(int x)\n{ return x * 2.0f; }\n\
    template <>\nvoid launch_<good>(int* x)\n{ *x += 1; }\n";

/// Does not compile until fixed (`MISSING` undeclared).
const BAD: &str = "#include \"ops.hpp\"\n\
    template <>\nfloat fwd_<bad>(int x)\n{ return x * MISSING; }\n\
    template <>\nvoid launch_<bad>(int* x)\n{ *x += MISSING; }\n";

const MAIN: &str = r##"#include <cstdint>
#include <cstdio>
#include <cstring>
#include "ops.hpp"
extern "C" const char* ck_jit_last_error(void);
extern "C" std::uint64_t ck_jit_thread_failures(void);

int main(int argc, char** argv)
{
    // What was printed before an abort is kept.
    std::setvbuf(stdout, nullptr, _IONBF, 0);
    std::printf("good: %g\n", fwd_<good>(3));
    for(int i = 0; i < 3; i++)
    {
        float r = fwd_<bad>(3);
        const char* why = ck_jit_last_error();
        std::printf("bad: %g %s\n", r, why != nullptr && std::strstr(why, "bad") ? "kept" : "lost");
    }
    int v = 0;
    std::uint64_t before = ck_jit_thread_failures();
    launch_<good>(&v);
    std::uint64_t between = ck_jit_thread_failures();
    launch_<bad>(&v);
    std::printf("launch: %d, failures %d %d\n", v, int(between - before),
                int(ck_jit_thread_failures() - between));
    if(argc > 1)
    {
        // The blob was fixed meanwhile: the next call tries again.
        std::FILE* f = std::fopen(argv[1], "w");
        std::fputs("#include \"ops.hpp\"\n"
                   "template <>\nfloat fwd_<bad>(int x)\n{ return x * 5.0f; }\n"
                   "template <>\nvoid launch_<bad>(int* x)\n{ *x += 5; }\n",
                   f);
        std::fclose(f);
        std::printf("fixed: %g\n", fwd_<bad>(3));
    }
    return 0;
}
"##;

struct Program {
    path: PathBuf,
    bad_source: PathBuf,
}

fn build(t: &Tree) -> Program {
    t.write("ops.hpp", HEADER);
    t.write("kernels/k_good.cpp", GOOD);
    let bad_source = t.write("kernels/k_bad.cpp", BAD);
    let main = t.write("main.cpp", MAIN);
    let blobs = vec![
        ("k_good".to_string(), GOOD.to_string()),
        ("k_bad".to_string(), BAD.to_string()),
    ];
    let (stubs, n) = stub_source(&blobs).expect("stubs");
    assert_eq!(n, 4);
    let stubs = t.write("stubs.cpp", &stubs);
    let m = cxx_manifest(t, "stub_failures", "c++", &["k_bad", "k_good"], true);
    let manifest = t.write_manifest(&m);
    let capi = capi_staticlib().expect("libck_jit_capi.a beside the test binary (a dependency)");
    let path = t.path("program");
    link_with_stubs(t, &capi, &manifest, &[&stubs, &main], &path);
    Program { path, bad_source }
}

fn run(p: &Program, cache: &Path, args: &[&Path], on_failure: Option<&str>) -> Output {
    let mut cmd = Command::new(&p.path);
    cmd.args(args)
        .env("CK_JIT_CACHE_DIR", cache)
        .env_remove("CK_JIT_MANIFEST")
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_ON_FAILURE")
        .env_remove("CK_JIT_VERBOSE");
    if let Some(v) = on_failure {
        cmd.env("CK_JIT_ON_FAILURE", v);
    }
    cmd.output().expect("program runs")
}

#[test]
fn a_blob_that_cannot_be_had_returns_no_kernel_and_the_process_goes_on() {
    let t = Tree::new("stub-failures");
    let p = build(&t);
    let out = run(&p, &t.cache_dir(), &[], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("good: 6\n"), "{stdout}");
    // Three calls, three "no kernel" values; the reason kept each time.
    assert_eq!(stdout.matches("bad: -1 kept\n").count(), 3, "{stdout}");
    // The void launch that had no kernel is counted; the good one is not.
    assert!(stdout.contains("launch: 1, failures 0 1\n"), "{stdout}");
    // Said once per blob, naming it and the compiler's error, however
    // many calls and specialisations failed.
    assert_eq!(stderr.matches("compile failed").count(), 1, "{stderr}");
    assert!(
        stderr.contains("k_bad") && stderr.contains("MISSING"),
        "{stderr}"
    );
    assert!(!stderr.contains("ck-jit: ck-jit:"), "{stderr}");
}

#[test]
fn a_blob_fixed_while_the_process_runs_is_used_by_the_next_call() {
    let t = Tree::new("stub-failures-fixed");
    let p = build(&t);
    let out = run(&p, &t.cache_dir(), &[&p.bad_source], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("bad: -1 kept\n"), "{stdout}");
    assert!(stdout.contains("fixed: 15\n"), "{stdout}");
}

#[test]
fn on_failure_abort_aborts_as_before() {
    let t = Tree::new("stub-failures-abort");
    let p = build(&t);
    let out = run(&p, &t.cache_dir(), &[], Some("abort"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("good: 6\n") && !stdout.contains("bad:"),
        "{stdout}"
    );
    assert!(stderr.contains("CK_JIT_ON_FAILURE=abort"), "{stderr}");
}
