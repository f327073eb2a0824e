//! A C++ exception thrown by a dispatcher never crosses the C glue of
//! `ck_jit_ck::ffi` (CK throws, "HIP Function Failed" among others): the
//! glue's entry point returns -1 and leaves the exception's message, or
//! one naming the dispatcher for an exception that is not a
//! `std::exception`, in `ck_jit_last_error`, and the caller goes on.
//!
//! The glue is generated from a CK-shaped tree of a few lines (one
//! dispatcher, `fmha_fwd`, with a traits struct holding a `std::string`
//! and one of CK's enums) and compiled with the system `c++` together with
//! a dispatcher that throws `std::runtime_error` or an `int` as its
//! argument asks. It is called by a C program linked against
//! `libck_jit_capi.a`, and by a Rust program that `include!`s the glue's
//! Rust side and links `libck_jit_capi.so`; each runs as a process of its
//! own, so an exception that escapes shows as that process aborting.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ck_jit_ck::ffi::glue;
use ck_jit_ck::FMHA_EXAMPLE_DIR;
use ck_jit_tests::{capi_staticlib, Tree};

const STREAM_CONFIG: &str = "#pragma once\n\
    typedef struct ihipStream_t* hipStream_t;\n\
    namespace ck_tile {\n\
    struct stream_config\n{\n    hipStream_t stream_id_ = nullptr;\n    bool time_kernel_ = false;\n};\n\
    } // namespace ck_tile\n";

const FMHA_FWD_HPP: &str = "#pragma once\n\
    #include <string>\n\
    #include \"ck_tile/host/stream_config.hpp\"\n\
    enum class mask_enum { no_mask = 0, mask_top_left };\n\
    struct fmha_fwd_traits\n{\n    int hdim_q;\n    std::string data_type;\n    mask_enum mask_type;\n};\n\
    struct fmha_fwd_args\n{\n    int seqlen_q;\n};\n\
    float fmha_fwd(fmha_fwd_traits, fmha_fwd_args, const ck_tile::stream_config&);\n";

/// The dispatcher: throws as `seqlen_q` says (1: a `std::exception`, 2:
/// an `int`), else returns a value that shows the traits arrived.
const DISPATCHER: &str = "#include <stdexcept>\n\
    #include \"fmha_fwd.hpp\"\n\
    float fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config&)\n{\n    \
    if(a.seqlen_q == 1)\n        throw std::runtime_error(\"HIP Function Failed\");\n    \
    if(a.seqlen_q == 2)\n        throw 42;\n    \
    return float(t.hdim_q) + (t.data_type == \"fp16\" ? 0.5f : 0.0f);\n}\n";

/// Calls `seqlen_q` 0, 1, 2, 0: a result, each kind of exception, and a
/// result again (which clears the error), printing what it got.
const C_MAIN: &str = "#include <stdio.h>\n\
    #include \"ck_jit.h\"\n\
    struct ck_jit_fmha_fwd_traits { int hdim_q; const char* data_type; int mask_type; };\n\
    struct fmha_fwd_args { int seqlen_q; };\n\
    struct stream_config { void* stream_id_; _Bool time_kernel_; };\n\
    float ck_jit_fmha_fwd(const struct ck_jit_fmha_fwd_traits*, const struct fmha_fwd_args*,\n\
                          const struct stream_config*);\n\
    int main(void)\n{\n    \
    setvbuf(stdout, NULL, _IONBF, 0);\n    \
    struct ck_jit_fmha_fwd_traits t = {64, \"fp16\", 0};\n    \
    struct stream_config s = {NULL, 0};\n    \
    int calls[] = {0, 1, 2, 0};\n    \
    for(int i = 0; i < 4; i++)\n    {\n        \
    struct fmha_fwd_args a = {calls[i]};\n        \
    float r = ck_jit_fmha_fwd(&t, &a, &s);\n        \
    const char* why = ck_jit_last_error();\n        \
    printf(\"%d: %g %s\\n\", calls[i], r, why != NULL ? why : \"(none)\");\n    }\n    \
    return 0;\n}\n";

/// The same calls from Rust, through the glue's generated declarations.
const RUST_MAIN: &str = "#![allow(dead_code)]\n\
    use std::ffi::{c_char, c_void, CStr};\n\
    use std::ptr;\n\
    include!(\"glue.rs\");\n\
    extern \"C\" {\n    fn ck_jit_last_error() -> *const c_char;\n}\n\
    fn main() {\n    \
    let t = CkJitFmhaFwdTraits { hdim_q: 64, data_type: c\"fp16\".as_ptr(), mask_type: 0 };\n    \
    let s = StreamConfig::default();\n    \
    for i in [0, 1, 2, 0] {\n        \
    let a = FmhaFwdArgs { seqlen_q: i };\n        \
    // SAFETY: the glue's entry point, with the structs it declares.\n        \
    let r = unsafe { ck_jit_fmha_fwd(&t, &a, &s) };\n        \
    // SAFETY: no arguments; NULL or this thread's message.\n        \
    let why = unsafe { ck_jit_last_error() };\n        \
    let why = if why.is_null() {\n            String::from(\"(none)\")\n        } else {\n            \
    // SAFETY: a NUL-terminated string, valid until the next call.\n            \
    unsafe { CStr::from_ptr(why) }.to_string_lossy().into_owned()\n        };\n        \
    println!(\"{i}: {r} {why}\");\n    }\n}\n";

/// What both programs must print: neither exception ends the process.
const EXPECTED: &str = "0: 64.5 (none)\n\
    1: -1 ck-jit: fmha_fwd: HIP Function Failed\n\
    2: -1 ck-jit: fmha_fwd threw an exception that is not a std::exception\n\
    0: 64.5 (none)\n";

/// The CK-shaped tree, the generated glue and the throwing dispatcher.
struct Sources {
    tree: Tree,
    includes: Vec<String>,
    cpp: Vec<PathBuf>,
}

fn sources(name: &str) -> Sources {
    let tree = Tree::new(name);
    tree.write("ck/include/ck_tile/host/stream_config.hpp", STREAM_CONFIG);
    tree.write(&format!("ck/{FMHA_EXAMPLE_DIR}/fmha_fwd.hpp"), FMHA_FWD_HPP);
    let g = glue(&tree.path("ck"), &["fmha_fwd"]).expect("glue of the small tree");
    tree.write("glue.rs", &g.rust);
    let cpp = vec![
        tree.write("glue.cpp", &g.cpp),
        tree.write("dispatcher.cpp", DISPATCHER),
    ];
    let includes = [
        tree.path(&format!("ck/{FMHA_EXAMPLE_DIR}")),
        tree.path("ck/include"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../ck-jit-capi/include"),
    ]
    .iter()
    .map(|d| format!("-I{}", d.display()))
    .collect();
    Sources {
        tree,
        includes,
        cpp,
    }
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what} cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The program's output, which must show that it ran to its end.
fn calls(program: &Path) -> String {
    let out = Command::new(program)
        .env_remove("CK_JIT_MANIFEST")
        .output()
        .expect("the program starts");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the program did not end normally ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn an_exception_of_a_dispatcher_called_from_c_is_an_error_result() {
    let s = sources("glue-exceptions-c");
    let capi = capi_staticlib().expect("libck_jit_capi.a beside the test binary (a dependency)");
    let main_o = s.tree.path("main.o");
    run(
        Command::new("cc")
            .args(["-std=c11", "-c"])
            .args(&s.includes)
            .arg(s.tree.write("main.c", C_MAIN))
            .arg("-o")
            .arg(&main_o),
        "cc main.c",
    );
    let program = s.tree.path("program-c");
    run(
        Command::new("c++")
            .args(["-std=c++17", "-O1"])
            .args(&s.includes)
            .arg(&main_o)
            .args(&s.cpp)
            .arg(&capi)
            .args(["-lpthread", "-ldl", "-lm", "-o"])
            .arg(&program),
        "linking the C program",
    );
    assert_eq!(calls(&program), EXPECTED);
}

#[test]
fn an_exception_of_a_dispatcher_called_from_rust_is_an_error_result() {
    let s = sources("glue-exceptions-rust");
    let capi = capi_staticlib().expect("libck_jit_capi.a beside the test binary (a dependency)");
    // The shared library beside it: a Rust program links the C ABI's
    // functions without a second copy of the standard library.
    let capi_dir = capi.parent().expect("a directory");
    assert!(
        capi_dir.join("libck_jit_capi.so").is_file(),
        "libck_jit_capi.so beside {}",
        capi.display()
    );
    let mut objects = Vec::new();
    for (i, cpp) in s.cpp.iter().enumerate() {
        let o = s.tree.path(&format!("glue{i}.o"));
        run(
            Command::new("c++")
                .args(["-std=c++17", "-O1", "-fPIC", "-c"])
                .args(&s.includes)
                .arg(cpp)
                .arg("-o")
                .arg(&o),
            "c++ -c",
        );
        objects.push(o);
    }
    run(
        Command::new("ar")
            .arg("rcs")
            .arg(s.tree.path("libglue.a"))
            .args(&objects),
        "ar",
    );
    let program = s.tree.path("program-rust");
    run(
        Command::new(rustc())
            .args(["--edition=2021", "-Cdebuginfo=0", "-L"])
            .arg(format!("native={}", s.tree.dir.display()))
            .args(["-l", "static=glue", "-l", "dylib=stdc++", "-L"])
            .arg(format!("native={}", capi_dir.display()))
            .args(["-l", "dylib=ck_jit_capi", "-C"])
            .arg(format!("link-arg=-Wl,-rpath,{}", capi_dir.display()))
            .arg(s.tree.write("main.rs", RUST_MAIN))
            .arg("-o")
            .arg(&program),
        "rustc main.rs",
    );
    assert_eq!(calls(&program), EXPECTED);
}

/// The rustc that built this test (the one beside its cargo).
fn rustc() -> PathBuf {
    if let Some(r) = std::env::var_os("RUSTC") {
        return r.into();
    }
    let beside = Path::new(env!("CARGO")).with_file_name("rustc");
    if beside.is_file() {
        beside
    } else {
        "rustc".into()
    }
}
