//! Trees of small blobs for the benches that load, miss and stampede,
//! with the manifest `ck-jit-build` writes for them (the same code path a
//! downstream `build.rs` takes, run outside cargo).
//!
//! Every blob `<name>` exports `int <name>(int x)` returning
//! `x * 3 + <index>`, so a probe can check it called the right one. Blobs
//! are C by default; HIP and CUDA blobs ([`Lang`]) also hold a trivial
//! `__global__` kernel, so their objects carry device code and link the GPU
//! runtime as a real GPU blob does, while the entry point launches nothing
//! (a machine without a GPU can load and call them).

use std::fs;
use std::path::{Path, PathBuf};

use ck_jit_build::{BlobGroup, Build};

/// A generated tree: its root, blob names and manifest.
#[derive(Debug, Clone)]
pub struct CTree {
    /// The tree root.
    pub root: PathBuf,
    /// Blob names, in index order.
    pub names: Vec<String>,
    /// The manifest file.
    pub manifest: PathBuf,
}

/// The language of a tree's blobs, which decides the file extension, the
/// source around the entry point and the flags every blob gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lang {
    /// `.c`, for a host C compiler (`-O2`).
    #[default]
    C,
    /// `.hip`, for `hipcc` (`-O3 -std=c++17`, as the hip-kernels example).
    Hip,
    /// `.cu`, for `nvcc` (`-O3 -std=c++17 ... -Xcompiler -fPIC -shared`, as
    /// the cuda-kernels example, with nvcc's default runtime linking).
    Cuda,
}

impl Lang {
    /// The source file extension.
    pub fn ext(self) -> &'static str {
        match self {
            Lang::C => "c",
            Lang::Hip => "hip",
            Lang::Cuda => "cu",
        }
    }

    /// The usual language of a compiler, from its file name: `nvcc` CUDA,
    /// `hipcc` HIP, anything else C.
    pub fn of_compiler(compiler: &str) -> Lang {
        let name = compiler.rsplit('/').next().unwrap_or(compiler);
        if name.contains("nvcc") {
            Lang::Cuda
        } else if name.contains("hipcc") {
            Lang::Hip
        } else {
            Lang::C
        }
    }
}

/// How a tree's blobs look and compile.
#[derive(Debug, Clone)]
pub struct CTreeSpec<'a> {
    /// Blob name prefix: blobs are `<prefix>_<i>`.
    pub prefix: &'a str,
    /// How many blobs.
    pub count: usize,
    /// Extra functions per blob, each a small loop, all called by the
    /// entry point: 0 for the smallest object, a few hundred for a compile
    /// of a noticeable length.
    pub weight: usize,
    /// The compiler program (or path) recorded in the manifest.
    pub compiler: &'a str,
    /// Extra compiler flags (after the language's own, e.g. the GPU
    /// architecture).
    pub flags: &'a [&'a str],
    /// The blobs' language.
    pub lang: Lang,
}

/// The value blob `index` returns for `x`.
pub fn expected(index: usize, x: i32) -> i32 {
    x.wrapping_mul(3).wrapping_add(index as i32)
}

/// The C source of blob `name` with index `index`.
pub fn source(name: &str, index: usize, weight: usize) -> String {
    source_for(Lang::C, name, index, weight)
}

/// The source of blob `name` with index `index` in `lang`. A GPU blob's
/// kernel sits on one line (`__global__ void <name>_kernel(...)`), and its
/// entry point has C linkage.
pub fn source_for(lang: Lang, name: &str, index: usize, weight: usize) -> String {
    let mut s = String::new();
    if lang == Lang::Hip {
        s.push_str("#include <hip/hip_runtime.h>\n");
    }
    s.push_str("#include \"bench_blob.h\"\n\n");
    for j in 0..weight {
        s.push_str(&format!(
            "static int part_{j}(int x) {{\n    int a = x;\n    for (int i = 0; i < {n}; ++i)\n        a = bench_mix(a, i + {j});\n    return a;\n}}\n\n",
            n = 8 + j % 5
        ));
    }
    if weight > 0 {
        // The parts are kept alive through a volatile store, so the
        // compiler has to compile every one of them.
        s.push_str("static volatile int bench_sink;\n\n");
    }
    if lang != Lang::C {
        s.push_str(&format!(
            "__global__ void {name}_kernel(int* out, int x) {{ *out = BENCH_RESULT(x, {index}); }}\n\n"
        ));
        s.push_str("extern \"C\" ");
    }
    s.push_str(&format!("int {name}(int x) {{\n"));
    if weight > 0 {
        s.push_str("    int keep = 0;\n");
        for j in 0..weight {
            s.push_str(&format!("    keep |= part_{j}(x);\n"));
        }
        s.push_str("    bench_sink = keep;\n");
    }
    s.push_str(&format!("    return BENCH_RESULT(x, {index});\n}}\n"));
    s
}

const HEADER: &str = "\
/* Shared by every generated bench blob: one header to hash, as a real
   blob reads many. */
#ifndef BENCH_BLOB_H
#define BENCH_BLOB_H
static inline int bench_mix(int a, int i) { return (a * 31) ^ (a >> 3) ^ i; }
#define BENCH_RESULT(x, index) ((x) * 3 + (index))
#endif
";

/// Writes the tree under `root` (which should be empty) and its manifest
/// (`root/out/ck_jit_manifest.json`).
pub fn c_tree(root: &Path, spec: &CTreeSpec<'_>) -> Result<CTree, String> {
    let kernels = root.join("kernels");
    let include = root.join("include");
    for d in [&kernels, &include] {
        fs::create_dir_all(d).map_err(|e| format!("creating {}: {e}", d.display()))?;
    }
    let header = include.join("bench_blob.h");
    fs::write(&header, HEADER).map_err(|e| format!("writing {}: {e}", header.display()))?;
    let names: Vec<String> = (0..spec.count)
        .map(|i| format!("{}_{i}", spec.prefix))
        .collect();
    for (i, name) in names.iter().enumerate() {
        let p = kernels.join(format!("{name}.{}", spec.lang.ext()));
        fs::write(&p, source_for(spec.lang, name, i, spec.weight))
            .map_err(|e| format!("writing {}: {e}", p.display()))?;
    }
    let mut group = BlobGroup::new(spec.lang.ext());
    group
        .glob(&format!("kernels/*.{}", spec.lang.ext()))
        .compiler(spec.compiler);
    match spec.lang {
        Lang::C => group.flags(["-O2"]),
        Lang::Hip => group.flags(["-O3", "-std=c++17"]),
        Lang::Cuda => group.flags(["-O3", "-std=c++17"]),
    };
    group.flags(spec.flags.iter().copied()).include("include");
    if spec.lang == Lang::Cuda {
        // nvcc takes -fPIC through to the host compiler only.
        group
            .shared(false)
            .flags(["-Xcompiler", "-fPIC", "-shared"]);
    }
    let manifest = Build::new()
        .root(root)
        .out_dir(root.join("out"))
        .name(&format!("ck_jit_bench_{}", spec.prefix))
        .cargo_metadata(false)
        .group(group)
        .try_write()
        .map_err(|e| e.to_string())?;
    Ok(CTree {
        root: root.to_path_buf(),
        names,
        manifest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_export_the_blob_name_and_call_every_part() {
        let s = source("k_7", 7, 3);
        assert!(s.contains("int k_7(int x)"), "{s}");
        assert_eq!(s.matches("keep |= part_").count(), 3);
        assert!(s.contains("BENCH_RESULT(x, 7)"));
        assert_eq!(expected(7, 2), 13);
    }

    #[test]
    fn gpu_sources_hold_a_kernel_and_a_c_linkage_entry_point() {
        let s = source_for(Lang::Hip, "h_1", 1, 0);
        assert!(s.starts_with("#include <hip/hip_runtime.h>"), "{s}");
        assert!(s.contains("__global__ void h_1_kernel(int* out, int x) {"));
        assert!(s.contains("extern \"C\" int h_1(int x)"), "{s}");
        let s = source_for(Lang::Cuda, "c_2", 2, 1);
        assert!(!s.contains("hip_runtime"), "{s}");
        assert!(s.contains("__global__ void c_2_kernel") && s.contains("extern \"C\" int c_2("));
        assert_eq!(Lang::of_compiler("/opt/cuda/bin/nvcc"), Lang::Cuda);
        assert_eq!(Lang::of_compiler("hipcc"), Lang::Hip);
        assert_eq!(Lang::of_compiler("cc"), Lang::C);
    }
}
