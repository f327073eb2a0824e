//! A C++ program calling a dispatcher in CK's shape through lazy stubs:
//! one template runs an operation's three kernels in order (CK's bwd:
//! `dot_do_o`, `dq_dk_dv`, `convert_dq`), two operations share the first
//! kernel. Built here with `c++`: the dispatcher, the blobs, the stubs
//! `stub_source_ordered` writes with the order `check_calls` reads, and
//! `libck_jit_capi.a`. Used by `tests/held_calls.rs` and the
//! `held-first-call` benchmark.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_jit_build::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_ck::calls::{check_calls, specialisation_key};
use ck_jit_ck::{decl, stub_source, stub_source_ordered, CallOrder};

use crate::Tree;

pub const HEADER: &str = r#"#pragma once
struct log_t { int n; int ids[64]; };
struct cfg { int stream; };
struct args { log_t* log; };
struct d0; struct q0; struct q1; struct c0; struct c1;
template <typename T> void dot_oneshot_(const cfg&, args);
template <typename T> void dq_oneshot_(const cfg&, args);
template <typename T> void convert_oneshot_(const cfg&, args);
template <typename T> int dot_id_();
"#;

/// A dispatcher in CK's shape: a template running an operation's three
/// kernels in order, called with the traits the arguments pick.
pub const API: &str = r#"#include "ops.hpp"

template <typename D, typename Q, typename C>
int run_(const cfg& s, args a)
{
    dot_oneshot_<D>(s, a);
    dq_oneshot_<Q>(s, a);
    convert_oneshot_<C>(s, a);
    return dot_id_<D>();
}

extern "C" int bwd(int which, log_t* log)
{
    cfg s{0};
    args a{log};
    if(which == 0)
        return run_<d0, q0, c0>(s, a);
    return run_<d0, q1, c1>(s, a);
}
"#;

pub const MAIN: &str = r#"#include <cstdio>
#include <thread>
#include "ops.hpp"
extern "C" int bwd(int which, log_t* log);

static void show(const char* what, const log_t& l)
{
    std::printf("%s:", what);
    for(int i = 0; i < l.n; i++)
        std::printf(" %d", l.ids[i]);
    std::printf("\n");
}

int main()
{
    log_t first{}, second{}, again{}, t1{}, t2{};
    bwd(0, &first);
    show("first", first);
    bwd(1, &second);
    show("second", second);
    bwd(0, &again);
    show("again", again);
    std::thread a([&] { for(int i = 0; i < 8; i++) bwd(0, &t1); });
    std::thread b([&] { for(int i = 0; i < 8; i++) bwd(1, &t2); });
    a.join();
    b.join();
    show("thread0", t1);
    show("thread1", t2);
    return 0;
}
"#;

/// A program that makes one call, `bwd(0)`, and prints how long it took
/// and which kernels ran; then a million warm calls, and the time of one.
pub const FIRST_CALL: &str = r#"#include <chrono>
#include <cstdio>
#include "ops.hpp"
extern "C" int bwd(int which, log_t* log);

int main()
{
    log_t l{};
    auto t0 = std::chrono::steady_clock::now();
    bwd(0, &l);
    auto t1 = std::chrono::steady_clock::now();
    std::printf("first call: %.3f ms\n", std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("ran:");
    for(int i = 0; i < l.n; i++)
        std::printf(" %d", l.ids[i]);
    std::printf("\n");
    // Warm: each call is three stub calls into loaded kernels.
    const int n = 1000000;
    log_t w{};
    auto t2 = std::chrono::steady_clock::now();
    for(int i = 0; i < n; i++)
        bwd(0, &w);
    auto t3 = std::chrono::steady_clock::now();
    std::printf("warm call: %.2f ns\n", std::chrono::duration<double, std::nano>(t3 - t2).count() / n);
    return w.n == 3 * n ? 0 : 1;
}
"#;

/// (blob, template it specialises, traits, id it logs).
pub const BLOBS: [(&str, &str, &str, i32); 5] = [
    ("bwd_dot_d0", "dot_oneshot_", "d0", 1),
    ("bwd_dq_q0", "dq_oneshot_", "q0", 2),
    ("bwd_convert_c0", "convert_oneshot_", "c0", 3),
    ("bwd_dq_q1", "dq_oneshot_", "q1", 4),
    ("bwd_convert_c1", "convert_oneshot_", "c1", 5),
];

fn blob_source(template: &str, traits: &str, id: i32) -> String {
    let mut s = format!(
        "#include \"ops.hpp\"\n\ntemplate <>\nvoid {template}<{traits}>(const cfg& s, args a)\n{{\n    \
         a.log->ids[a.log->n++ & 63] = {id};\n}}\n"
    );
    if template == "dot_oneshot_" {
        s.push_str(&format!(
            "\ntemplate <>\nint dot_id_<{traits}>()\n{{\n    return {id};\n}}\n"
        ));
    }
    s
}

/// How to build the program.
#[derive(Debug, Clone)]
pub struct Options {
    /// Record the dispatcher's `together` sets in the manifest.
    pub sets: bool,
    /// Write the stubs with the dispatcher's call order (held calls); else
    /// as `stub_source` does.
    pub ordered: bool,
    /// How long the compiler takes for a `dot`, `dq` and `convert` blob
    /// before it compiles, in ms.
    pub delays_ms: [u64; 3],
    /// The program's `main`: [`MAIN`] or [`FIRST_CALL`].
    pub main: &'static str,
    /// Hold each compile until the compiles started with it have started
    /// ([`crate::wait_for_siblings`]), for tests that count overlaps.
    pub overlap: bool,
    /// Compile with [`SLOW_PATH_HOOK`] included: every entry of a sequence
    /// stub's rare path calls `ck_jit_test_slow_path()`, which `main`
    /// then defines.
    pub count_slow_paths: bool,
}

/// A header defining the stubs' `CK_JIT_STUB_ON_SLOW_PATH()` hook as a
/// call of `ck_jit_test_slow_path()`, which the program defines.
pub const SLOW_PATH_HOOK: &str = r#"#pragma once
extern "C" void ck_jit_test_slow_path(void);
#define CK_JIT_STUB_ON_SLOW_PATH() ck_jit_test_slow_path()
"#;

/// What [`build`] made.
#[derive(Debug, Clone)]
pub struct Program {
    /// The linked program.
    pub path: PathBuf,
    /// The manifest its stubs name.
    pub manifest: PathBuf,
    /// The order read from the dispatcher.
    pub order: CallOrder,
    /// Where the compiler logs `start` and `end` of each compile.
    pub spans: PathBuf,
}

/// A C++ compiler that logs `start`/`end` around each compile, after
/// sleeping the blob's delay (and, with `overlap`, waiting for the
/// compiles started with it).
fn slow_cxx(t: &Tree, delays: [u64; 3], overlap: bool) -> (PathBuf, PathBuf) {
    let log = t.path("spans.log");
    let mut script = String::from("#!/bin/sh\n[ \"$1\" = --version ] && exec c++ --version\n");
    script.push_str(&format!("echo start >> {}\n", log.display()));
    if overlap {
        script.push_str(&crate::wait_for_siblings(&log));
    }
    for (kind, d) in ["dot", "dq", "convert"].iter().zip(delays) {
        script.push_str(&format!(
            "case \"$*\" in *bwd_{kind}_*) sleep {}.{:03};; esac\n",
            d / 1000,
            d % 1000
        ));
    }
    script.push_str(&format!(
        "c++ \"$@\"; rc=$?\necho end >> {}\nexit $rc\n",
        log.display()
    ));
    let cc = t.write("bin/slow-c++", &script);
    fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).expect("chmod");
    (cc, log)
}

/// Writes the sources into `t`, reads the dispatcher's calls, writes the
/// stubs and the manifest, and links the program against `capi`
/// (`libck_jit_capi.a`). Panics on any failure.
pub fn build(t: &Tree, capi: &Path, o: &Options) -> Program {
    t.write("ops.hpp", HEADER);
    let api = t.write("api.cpp", API);
    let main = t.write("main.cpp", o.main);
    let mut blobs = Vec::new();
    let mut owner = BTreeMap::new();
    let mut void = BTreeSet::new();
    for (name, template, traits, id) in BLOBS {
        let text = blob_source(template, traits, id);
        t.write(&format!("kernels/{name}.cpp"), &text);
        for s in decl::specialisations(&text).expect("blob parses") {
            if s.returns == "void" {
                void.insert(s.template.clone());
            }
            owner.insert(specialisation_key(&s.template, &s.args), name.to_string());
        }
        blobs.push((name.to_string(), text));
    }
    let defined = owner.keys().cloned().collect();
    let check = check_calls(&[(api.clone(), API.to_string())], &defined).expect("api parses");
    assert!(check.unresolved.is_empty(), "{:?}", check.unresolved);
    let order = CallOrder::new(&check.sequences, |t| void.contains(t));
    let (stubs, n) = if o.ordered {
        stub_source_ordered(&blobs, &order)
    } else {
        stub_source(&blobs)
    }
    .expect("stubs");
    assert_eq!(n, 6);
    let stubs = t.write("stubs.cpp", &stubs);

    let (cxx, spans) = slow_cxx(t, o.delays_ms, o.overlap);
    let names: Vec<&str> = BLOBS.iter().map(|(name, ..)| *name).collect();
    let mut m = cxx_manifest(t, "held_calls", &cxx.to_string_lossy(), &names, false);
    if o.sets {
        let named: Vec<Vec<String>> = check
            .groups
            .iter()
            .map(|g| g.iter().filter_map(|k| owner.get(k).cloned()).collect())
            .collect();
        m.set_together(&named).expect("sets");
    }
    let manifest = t.write_manifest(&m);

    let path = t.path("bwd-program");
    let mut flags = Vec::new();
    if o.count_slow_paths {
        let hook = t.write("slow_path_hook.hpp", SLOW_PATH_HOOK);
        flags.push("-include".to_string());
        flags.push(hook.to_string_lossy().into_owned());
    }
    link(t, capi, &manifest, &[&api, &stubs, &main], &flags, &path);
    Program {
        path,
        manifest,
        order,
        spans,
    }
}

/// A manifest of one group, `compiler -O1 -fPIC -shared -I{root}`, whose
/// blobs are `kernels/NAME.cpp` for each of `names`, finished.
pub fn cxx_manifest(
    t: &Tree,
    cache: &str,
    compiler: &str,
    names: &[&str],
    depfile: bool,
) -> Manifest {
    let mut m = Manifest::new(cache, t.dir.to_string_lossy());
    m.groups.push(Group {
        name: "k".into(),
        compiler: compiler.into(),
        args: [
            "-O1", "-fPIC", "-shared", "-I{root}", "{src}", "-o", "{out}",
        ]
        .map(String::from)
        .to_vec(),
        cwd: None,
        symbol: SymbolSpec::Exact("{name}".into()),
        depfile,
        family: None,
        neutral: Default::default(),
    });
    for name in names {
        m.blobs.push(Blob {
            name: name.to_string(),
            source: format!("kernels/{name}.cpp"),
            group: 0,
            symbol: None,
            meta: Default::default(),
        });
    }
    m.finish().expect("manifest");
    m
}

/// Links `sources` (C++, with stubs naming `manifest`) against `capi`
/// (`libck_jit_capi.a`) into `out`. Panics on failure.
pub fn link_with_stubs(t: &Tree, capi: &Path, manifest: &Path, sources: &[&Path], out: &Path) {
    link(t, capi, manifest, sources, &[], out)
}

/// [`link_with_stubs`], with `flags` given to the compiler too.
fn link(t: &Tree, capi: &Path, manifest: &Path, sources: &[&Path], flags: &[String], out: &Path) {
    let done = Command::new("c++")
        .args(["-std=c++17", "-O1", "-I"])
        .arg(&t.dir)
        .arg(format!("-DCK_JIT_STUB_MANIFEST=\"{}\"", manifest.display()))
        .args(flags)
        .args(sources)
        .arg(capi)
        .args(["-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .output()
        .expect("c++ runs");
    assert!(
        done.status.success(),
        "linking the program failed:\n{}",
        String::from_utf8_lossy(&done.stderr)
    );
}

/// The same program with the blobs compiled into it and called directly
/// (no stubs, no runtime): what the stubs' warm path is measured against.
/// Same compiler and flags as [`build`]'s program and blobs (`-O1`, one
/// object per source). Panics on any failure.
pub fn build_direct(t: &Tree, main: &str) -> PathBuf {
    t.write("ops.hpp", HEADER);
    let api = t.write("api.cpp", API);
    let main = t.write("main.cpp", main);
    let mut sources = vec![api, main];
    for (name, template, traits, id) in BLOBS {
        sources.push(t.write(
            &format!("kernels/{name}.cpp"),
            &blob_source(template, traits, id),
        ));
    }
    let path = t.path("bwd-direct");
    let out = Command::new("c++")
        .args(["-std=c++17", "-O1", "-I"])
        .arg(&t.dir)
        .args(&sources)
        .args(["-lpthread", "-o"])
        .arg(&path)
        .output()
        .expect("c++ runs");
    assert!(
        out.status.success(),
        "linking the direct program failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    path
}

/// The command running the program with the cache `cache` and
/// `CK_JIT_JOBS=jobs`, none of the caller's other `CK_JIT_` choices.
pub fn command(p: &Program, cache: &Path, jobs: usize) -> Command {
    let mut cmd = Command::new(&p.path);
    cmd.env("CK_JIT_CACHE_DIR", cache)
        .env("CK_JIT_JOBS", jobs.to_string())
        .env_remove("CK_JIT_MANIFEST")
        .env_remove("CK_JIT_OFFLINE")
        .env_remove("CK_JIT_ARCH");
    cmd
}

/// Runs [`command`]; returns its standard output. Panics if it fails.
pub fn run(p: &Program, cache: &Path, jobs: usize) -> String {
    let out = command(p, cache, jobs).output().expect("program runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}\n{stdout}\n{}",
        p.manifest.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The text after `what:` on its line of `out`.
pub fn line<'a>(out: &'a str, what: &str) -> &'a str {
    out.lines()
        .find_map(|l| l.strip_prefix(what).and_then(|l| l.strip_prefix(':')))
        .unwrap_or_else(|| panic!("no '{what}' in:\n{out}"))
        .trim()
}

/// The most compiles at once, and how many ran, in `p`'s compile log.
pub fn spans(p: &Program) -> (usize, usize) {
    let text = fs::read_to_string(&p.spans).unwrap_or_default();
    let (most, runs, _) = crate::concurrency(&text, "start", "end");
    (most, runs)
}
