//! A C++ program calling a dispatcher in CK's shape through lazy stubs:
//! one template runs an operation's three kernels in order (CK's bwd:
//! `dot_do_o`, `dq_dk_dv`, `convert_dq`), two operations share the first
//! kernel. Built here with `c++`: the dispatcher, the blobs, the stubs
//! `stub_source_ordered` writes with the order `check_calls` reads, and
//! `libck_jit_capi.a`. Used by `tests/held_calls.rs` and the
//! `held-first-call` benchmark, which measures the stubs' warm call
//! against the same kernels called directly (`build_direct`) and through
//! the original tool's bwd path (`build_original`).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_jit_build::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_ck::__private::{
    call_order, check_calls, specialisation_key, specialisations, stub_source_ordered,
};
use ck_jit_ck::{stub_source, CallOrder};

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
/// and which kernels ran; then a million warm calls (`WARM_CALLS` where
/// the build defines it), and the time of one.
pub const FIRST_CALL: &str = r#"#include <chrono>
#include <cstdio>
#include "ops.hpp"
extern "C" int bwd(int which, log_t* log);

#ifndef WARM_CALLS
#define WARM_CALLS 1000000
#endif

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
    // Warm: every kernel of the call is loaded.
    const int n = WARM_CALLS;
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
        for s in specialisations(&text).expect("blob parses") {
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
    let order = call_order(&check.sequences, |t| void.contains(t));
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

/// The blob names the original tool's rewritten dispatcher passes for
/// each of [`BLOBS`]: CK's bwd `kernel_filename`s (taken from
/// `benches/data/ck-fmha-blobs.txt`), as long as the real ones, so that
/// building a `std::string` of one allocates as it does there.
pub const ORIGINAL_NAMES: [(&str, &str); 5] = [
    ("fmha_bwd_dot_do_o_d128_fp16_batch_o2.cpp", "bwd_dot_d0"),
    (
        "fmha_bwd_d128_fp16_batch_b16x128x128x16x128x16x32x128x128_r1x4x1_r4x1x1_r1x4x1_w16x16x32_w16x16x16_o1_kr_ktr_vr_iglp.cpp",
        "bwd_dq_q0",
    ),
    (
        "fmha_bwd_convert_dq_d128_fp16_b64x128_batch_o2.cpp",
        "bwd_convert_c0",
    ),
    (
        "fmha_bwd_d128_fp16_batch_b16x128x128x16x128x16x32x128x128_r1x4x1_r4x1x1_r1x4x1_w16x16x32_w16x16x16_o1_kr_ktr_vr_iglp_deterministic.cpp",
        "bwd_dq_q1",
    ),
    (
        "fmha_bwd_convert_dq_d128_fp16_b64x128_batch_o2_deterministic.cpp",
        "bwd_convert_c1",
    ),
];

/// [`API`] as the original tool's build rewrites it (ROCm/ck-jit,
/// `ck_api_rewrite.py`): each dispatch of the three-kernel template,
/// `return fmha_bwd_<dot, dq, convert>(s, a)`, becomes
/// `return ck_jit_bwd_call("dot blob", "dq blob", "convert blob", s, a)`,
/// the names string literals. `@..@` are replaced by `build_original`.
const ORIGINAL_API: &str = r#"#include "ops.hpp"

extern "C" float ck_jit_bwd_call(const char*, const char*, const char*, const cfg&, args);

extern "C" int bwd(int which, log_t* log)
{
    cfg s{0};
    args a{log};
    if(which == 0)
        return ck_jit_bwd_call("@DOT@", "@DQ0@", "@CONV0@", s, a);
    return ck_jit_bwd_call("@DOT@", "@DQ1@", "@CONV1@", s, a);
}
"#;

/// The original tool's runtime for bwd, reproduced from ROCm/ck-jit's
/// `ck_jit_runtime.cpp` (as of its commit 617a89b): `ck_jit_bwd_call` (what every bwd call runs),
/// `_get_state` and `get_bwd_dot_do_o_state` / `get_bwd_dq_dk_dv_state`
/// / `get_bwd_convert_dq_state` (the name lookups),
/// `compile_and_load_blob`, `find_blob_entry` and `find_sym_by_prefix`
/// (first call only), and CK's untimed `ck_tile::launch_kernel`. CK's
/// argument types are this program's; the compile script
/// (`ck_jit_compile.sh`) is the compiler command itself, run the same way
/// (`system`), into `$CK_JIT_CACHE_DIR/<stem>.so`. `@ENTRIES@` and
/// `@COMPILE@` are replaced by `build_original`.
const ORIGINAL_RUNTIME: &str = r#"// The bwd path of ROCm/ck-jit's ck_jit_runtime.cpp (ck_jit_bwd_call and
// what it calls), reproduced around this program's kernels.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <future>
#include <iterator>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <unordered_map>

#include "ops.hpp"

namespace {

// The embedded manifest: entries sorted by name, binary-searched.
struct BlobEntry
{
    const char* name;
    const char* source;
};

const BlobEntry kEntries[] = {
@ENTRIES@
};

const char* const kCompile = @COMPILE@;

struct BlobState
{
    std::once_flag init_flag;
    void* fn     = nullptr;
    void* handle = nullptr;
    std::string so_path;
};

// The dq blob's state carries its metadata functions' too (unused here).
struct BwdDqBlobState : BlobState
{
    std::once_flag meta_init_flag;
    void* fn_splits   = nullptr;
    void* fn_zero_acc = nullptr;
};

std::once_flag g_global_init;
std::string g_cache_dir;

void global_init()
{
    const char* env = ::getenv("CK_JIT_CACHE_DIR");
    g_cache_dir     = (env && env[0]) ? env : "/tmp/ck_jit";
}

const BlobEntry* find_blob_entry(const char* name)
{
    auto it = std::lower_bound(std::begin(kEntries), std::end(kEntries), name,
                               [](const BlobEntry& e, const char* n) { return std::strcmp(e.name, n) < 0; });
    if(it != std::end(kEntries) && std::strcmp(it->name, name) == 0)
        return it;
    return nullptr;
}

// The first STT_FUNC symbol of .dynsym starting with `prefix`, by dlsym.
void* find_sym_by_prefix(void* handle, const char* so_path, const char* prefix)
{
    int fd = ::open(so_path, O_RDONLY);
    if(fd < 0)
        return nullptr;
    struct stat st{};
    ::fstat(fd, &st);
    size_t size = static_cast<size_t>(st.st_size);
    void* map   = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if(map == MAP_FAILED)
        return nullptr;
    void* result     = nullptr;
    const char* base = static_cast<const char*>(map);
    const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(base);
    if(size >= sizeof(Elf64_Ehdr) && std::memcmp(ehdr->e_ident, ELFMAG, SELFMAG) == 0 &&
       ehdr->e_ident[EI_CLASS] == ELFCLASS64)
    {
        const auto* sh         = reinterpret_cast<const Elf64_Shdr*>(base + ehdr->e_shoff);
        const char* shstr      = base + sh[ehdr->e_shstrndx].sh_offset;
        const Elf64_Shdr* syms = nullptr;
        const Elf64_Shdr* strs = nullptr;
        for(int i = 0; i < ehdr->e_shnum; i++)
        {
            const char* n = shstr + sh[i].sh_name;
            if(sh[i].sh_type == SHT_DYNSYM && std::strcmp(n, ".dynsym") == 0)
                syms = &sh[i];
            else if(sh[i].sh_type == SHT_STRTAB && std::strcmp(n, ".dynstr") == 0)
                strs = &sh[i];
        }
        if(syms && strs)
        {
            const auto* sym  = reinterpret_cast<const Elf64_Sym*>(base + syms->sh_offset);
            const char* str  = base + strs->sh_offset;
            size_t count     = syms->sh_size / sizeof(Elf64_Sym);
            size_t prefix_len = std::strlen(prefix);
            for(size_t i = 0; i < count; i++)
            {
                if(ELF64_ST_TYPE(sym[i].st_info) != STT_FUNC)
                    continue;
                const char* name = str + sym[i].st_name;
                if(std::strncmp(name, prefix, prefix_len) == 0)
                {
                    result = ::dlsym(handle, name);
                    break;
                }
            }
        }
    }
    ::munmap(map, size);
    return result;
}

void* compile_and_load_blob(const std::string& blob_basename, const char* symbol_prefix, BlobState& state)
{
    std::call_once(g_global_init, global_init);
    std::string safe_name = blob_basename;
    for(char& c : safe_name)
        if(c == '/' || c == '\\')
            c = '_';
    std::string so_stem = safe_name;
    for(const char* ext : {".cpp", ".cu"})
    {
        size_t n = std::strlen(ext);
        if(so_stem.size() > n && so_stem.compare(so_stem.size() - n, n, ext) == 0)
        {
            so_stem.resize(so_stem.size() - n);
            break;
        }
    }
    const BlobEntry* entry = find_blob_entry(blob_basename.c_str());
    if(!entry)
    {
        std::fprintf(stderr, "no blob %s in the manifest\n", blob_basename.c_str());
        return nullptr;
    }
    std::string so_path = g_cache_dir + "/" + so_stem + ".so";
    struct stat st{};
    if(::stat(so_path.c_str(), &st) != 0)
    {
        std::string cmd = "mkdir -p '" + g_cache_dir + "' && " + kCompile + " '" + entry->source +
                          "' -o '" + so_path + "'";
        int rc = ::system(cmd.c_str());
        if(rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
        {
            std::fprintf(stderr, "compiling %s failed\n", blob_basename.c_str());
            return nullptr;
        }
    }
    void* handle = ::dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if(!handle)
    {
        std::fprintf(stderr, "dlopen(%s): %s\n", so_path.c_str(), ::dlerror());
        return nullptr;
    }
    state.handle  = handle;
    state.so_path = so_path;
    void* fn      = find_sym_by_prefix(handle, so_path.c_str(), symbol_prefix);
    if(!fn)
        std::fprintf(stderr, "no %s symbol in %s\n", symbol_prefix, so_path.c_str());
    return fn;
}

// Get-or-create the state of a blob: a std::string of the name, a shared
// lock, a hash-map lookup; the unique lock only the first time.
template <typename State>
State* get_state_(std::shared_mutex& mtx, std::unordered_map<std::string, State*>& map, const char* blob)
{
    std::string key(blob);
    {
        std::shared_lock lk(mtx);
        auto it = map.find(key);
        if(it != map.end())
            return it->second;
    }
    std::unique_lock lk(mtx);
    auto& ptr = map[key];
    if(!ptr)
        ptr = new State();
    return ptr;
}

BlobState* get_bwd_dot_do_o_state(const char* blob)
{
    static std::shared_mutex mtx;
    static std::unordered_map<std::string, BlobState*> map;
    return get_state_(mtx, map, blob);
}

BwdDqBlobState* get_bwd_dq_dk_dv_state(const char* blob)
{
    static std::shared_mutex mtx;
    static std::unordered_map<std::string, BwdDqBlobState*> map;
    return get_state_(mtx, map, blob);
}

BlobState* get_bwd_convert_dq_state(const char* blob)
{
    static std::shared_mutex mtx;
    static std::unordered_map<std::string, BlobState*> map;
    return get_state_(mtx, map, blob);
}

// ck_tile::launch_kernel with the stream's timing off: the callables in
// order (CK then checks the HIP error, which every CK path does alike).
template <typename... Callables>
float launch_kernel(const cfg& s, Callables&&... callables)
{
    (callables(s), ...);
    return 0;
}

} // namespace

extern "C" {

__attribute__((visibility("hidden"))) float ck_jit_bwd_call(const char* dot_do_o_blob,
                                                            const char* dq_dk_dv_blob,
                                                            const char* convert_dq_blob,
                                                            const cfg& s,
                                                            args a)
{
    using fn_t                = void (*)(const cfg&, args);
    BlobState* dot_state      = get_bwd_dot_do_o_state(dot_do_o_blob);
    BwdDqBlobState* dq_state  = get_bwd_dq_dk_dv_state(dq_dk_dv_blob);
    const bool has_conv       = convert_dq_blob && convert_dq_blob[0];
    BlobState* conv_state     = has_conv ? get_bwd_convert_dq_state(convert_dq_blob) : nullptr;

    std::string dot_blob_s  = dot_do_o_blob;
    std::string dq_blob_s   = dq_dk_dv_blob;
    std::string conv_blob_s = has_conv ? convert_dq_blob : "";

    auto fut_dot = std::async(std::launch::async, [&]() {
        std::call_once(dot_state->init_flag, [&]() {
            dot_state->fn = compile_and_load_blob(dot_blob_s, "_Z12dot_oneshot_I", *dot_state);
        });
    });
    auto fut_dq = std::async(std::launch::async, [&]() {
        std::call_once(dq_state->init_flag, [&]() {
            dq_state->fn = compile_and_load_blob(dq_blob_s, "_Z11dq_oneshot_I", *dq_state);
        });
    });
    std::future<void> fut_conv;
    if(conv_state)
    {
        fut_conv = std::async(std::launch::async, [&]() {
            std::call_once(conv_state->init_flag, [&]() {
                conv_state->fn = compile_and_load_blob(conv_blob_s, "_Z16convert_oneshot_I", *conv_state);
            });
        });
    }
    fut_dot.get();
    fut_dq.get();
    if(fut_conv.valid())
        fut_conv.get();

    if(!dot_state->fn)
    {
        std::fprintf(stderr, "bwd dot blob not resolved: %s\n", dot_do_o_blob);
        return -1.0f;
    }
    if(!dq_state->fn)
    {
        std::fprintf(stderr, "bwd dq blob not resolved: %s\n", dq_dk_dv_blob);
        return -1.0f;
    }
    if(!has_conv)
        return launch_kernel(
            s,
            [=](const cfg& s_) { reinterpret_cast<fn_t>(dot_state->fn)(s_, a); },
            [=](const cfg& s_) { reinterpret_cast<fn_t>(dq_state->fn)(s_, a); });
    if(!conv_state->fn)
    {
        std::fprintf(stderr, "bwd convert blob not resolved: %s\n", convert_dq_blob);
        return -1.0f;
    }
    return launch_kernel(
        s,
        [=](const cfg& s_) { reinterpret_cast<fn_t>(dot_state->fn)(s_, a); },
        [=](const cfg& s_) { reinterpret_cast<fn_t>(dq_state->fn)(s_, a); },
        [=](const cfg& s_) { reinterpret_cast<fn_t>(conv_state->fn)(s_, a); });
}

} // extern "C"
"#;

/// What [`build_original`] made.
#[derive(Debug, Clone)]
pub struct Original {
    /// The linked program.
    pub path: PathBuf,
    /// Where the compiler logs `start` and `end` of each compile.
    pub spans: PathBuf,
}

impl Original {
    /// The command running the program with its blobs compiled into (or
    /// found in) `cache`.
    pub fn command(&self, cache: &Path) -> Command {
        let mut cmd = Command::new(&self.path);
        cmd.env("CK_JIT_CACHE_DIR", cache);
        cmd
    }

    /// The most compiles at once, and how many ran.
    pub fn spans(&self) -> (usize, usize) {
        let text = fs::read_to_string(&self.spans).unwrap_or_default();
        let (most, runs, _) = crate::concurrency(&text, "start", "end");
        (most, runs)
    }
}

/// A C string literal of `s`.
fn c_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The same dispatcher and kernels through the original tool's runtime
/// for bwd, as it runs them (ROCm/ck-jit, `ck_jit_runtime.cpp`,
/// `ck_jit_bwd_call`; see `ORIGINAL_RUNTIME`): every `bwd` call looks
/// its three blobs up by name (a `std::string` of each, a shared lock of
/// each kind's `std::shared_mutex`, a `std::unordered_map` find), copies
/// the three names into `std::string`s, starts three
/// `std::async(std::launch::async, ...)` tasks that each pass the blob's
/// `std::once_flag`, waits on each future in turn, then calls the three
/// kernels in order through their pointers. The first call compiles the
/// three blobs at once (the compiler [`build`]'s manifest names, with the
/// same delays and flags), `dlopen`s them and finds each kernel by its
/// symbol prefix. The program is compiled with [`build`]'s compiler and
/// flags; `main` is built with `WARM_CALLS` defined as `warm_calls`.
/// Panics on any failure.
pub fn build_original(
    t: &Tree,
    main: &str,
    delays_ms: [u64; 3],
    overlap: bool,
    warm_calls: usize,
) -> Original {
    t.write("ops.hpp", HEADER);
    let mut entries = Vec::new();
    for (name, template, traits, id) in BLOBS {
        let source = t.write(
            &format!("kernels/{name}.cpp"),
            &blob_source(template, traits, id),
        );
        let ck = ORIGINAL_NAMES
            .iter()
            .find(|(_, blob)| *blob == name)
            .expect("a CK name for every blob")
            .0;
        entries.push((ck, source));
    }
    // Sorted as `strcmp` orders them, for the binary search.
    entries.sort();
    let table: String = entries
        .iter()
        .map(|(ck, source)| {
            format!(
                "    {{{}, {}}},\n",
                c_string(ck),
                c_string(&source.to_string_lossy())
            )
        })
        .collect();
    let (cxx, spans) = slow_cxx(t, delays_ms, overlap);
    let compile = format!(
        "'{}' -O1 -fPIC -shared '-I{}'",
        cxx.display(),
        t.dir.display()
    );
    let runtime = ORIGINAL_RUNTIME
        .replace("@ENTRIES@", table.trim_end())
        .replace("@COMPILE@", &c_string(&compile));
    let ck = |blob: &str| {
        ORIGINAL_NAMES
            .iter()
            .find(|(_, b)| *b == blob)
            .expect("a CK name")
            .0
    };
    let api = ORIGINAL_API
        .replace("@DOT@", ck("bwd_dot_d0"))
        .replace("@DQ0@", ck("bwd_dq_q0"))
        .replace("@CONV0@", ck("bwd_convert_c0"))
        .replace("@DQ1@", ck("bwd_dq_q1"))
        .replace("@CONV1@", ck("bwd_convert_c1"));
    let sources = [
        t.write("api.cpp", &api),
        t.write("runtime.cpp", &runtime),
        t.write("main.cpp", main),
    ];
    let path = t.path("bwd-original");
    let out = Command::new("c++")
        .args(["-std=c++17", "-O1", "-I"])
        .arg(&t.dir)
        .arg(format!("-DWARM_CALLS={warm_calls}"))
        .args(&sources)
        .args(["-lpthread", "-ldl", "-o"])
        .arg(&path)
        .output()
        .expect("c++ runs");
    assert!(
        out.status.success(),
        "linking the original runtime's program failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Original { path, spans }
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
