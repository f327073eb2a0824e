//! [`CkTypes`]: CK's FMHA argument and traits structs and
//! `ck_tile::stream_config`, generated with bindgen from the CK tree at
//! hand, so the Rust side follows whatever the version declares.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::clang;
use super::error::{shown, Error};
use super::generated::{announce_inputs, generate_printing, generate_to, Bindings};
use super::items;
use crate::cargo::CargoOutput;
use crate::env;

/// Where CK keeps the FMHA example (headers and generator) in its tree.
const FMHA_EXAMPLE_DIR: &str = "example/ck_tile/01_fmha";
/// Where an aiter checkout keeps CK.
const AITER_CK_DIR: &str = "3rdparty/composable_kernel";

/// The FMHA headers read, one translation unit each: they cannot be
/// parsed together (both define `FmhaMasks`). The first must exist.
const HEADERS: &[&str] = &["fmha_fwd.hpp", "fmha_bwd.hpp"];

/// What is bound: the FMHA argument and traits structs (not the
/// `fmha_*_traits_` templates) and the stream configuration.
const ROOT_PATTERN: &str = "fmha_[A-Za-z0-9_]+_(args|traits)";
const STREAM_CONFIG: (&str, &str) = ("ck_tile_stream_config", "ck_tile::stream_config");

/// Generates Rust types for a CK version's FMHA argument and traits
/// structs (`fmha_fwd_args`, `fmha_fwd_traits`, and every other
/// `fmha_*_args` / `fmha_*_traits` that `fmha_fwd.hpp` and `fmha_bwd.hpp`
/// declare: split-KV, append-KV, paged-KV, batch prefill, backward, as the
/// version has them) and for `ck_tile::stream_config`, with bindgen, from
/// the CK tree's own headers.
///
/// The headers are parsed as HIP host code (`-x hip --cuda-host-only`, as
/// `hipcc` sees them for the host), one translation unit per header, with
/// CK's include directories and the HIP headers ([`hip_include`]). Only
/// the structs above and what they use are emitted:
///
/// - names are bindgen's flat ones: `fmha_fwd_args`,
///   `ck_tile_stream_config`, `ck_tile_index_t`, `hipStream_t`;
/// - CK's enums (`mask_enum`, `bias_enum`, `rope_enum`, ...) become Rust
///   enums (`#[repr(i32)] enum mask_enum { no_mask = 0, ... }`): these
///   structs go from Rust to CK, and a Rust enum only holds a value CK
///   declares;
/// - standard library members (`std::string`, `std::variant<...>`) are
///   opaque byte arrays of the right size and alignment
///   (`__BindgenOpaqueArray8<[u8; 24]>`), the definitions bindgen emits for
///   the standard templates themselves are left out;
/// - every struct gets `Default` (all zero: CK's default member
///   initialisers are not read) and bindgen's compile-time layout checks
///   against clang's layout.
///
/// The CK tree can be a composable_kernel checkout or an aiter checkout
/// (CK under `3rdparty/composable_kernel`). Parsing CK needs libclang 17 or
/// newer (older ones reject `static_assert(false)` in CK's templates):
/// `pip install libclang==18.1.1` and `LIBCLANG_PATH` set to its
/// `clang/native` directory is one way; see [the module
/// docs](super#libclang).
///
/// [`hip_include`]: CkTypes::hip_include
///
/// # Example
///
/// ```no_run
/// // build.rs, with ck-jit-build's `bindgen` feature
/// use ck_jit_build::bindings::CkTypes;
///
/// fn main() {
///     CkTypes::new()
///         .ck("third_party/composable_kernel")
///         .hip_include("/opt/rocm/include")
///         .write("ck_types.rs"); // $OUT_DIR/ck_types.rs
/// }
/// ```
///
/// ```ignore
/// // src/lib.rs
/// pub mod ck {
///     #![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]
///     include!(concat!(env!("OUT_DIR"), "/ck_types.rs"));
/// }
///
/// let mut args = ck::fmha_fwd_args::default();
/// args.seqlen_q = 128;
/// args.mask_type = ck::mask_enum::mask_top_left as i32;
/// ```
#[derive(Debug, Clone)]
pub struct CkTypes {
    ck: Option<PathBuf>,
    hip_include: Option<PathBuf>,
    resource_dir: Option<PathBuf>,
    std: String,
    clang_args: Vec<String>,
    cargo_metadata: bool,
}

impl Default for CkTypes {
    fn default() -> CkTypes {
        CkTypes::new()
    }
}

impl CkTypes {
    /// A generator with no CK tree yet, C++17, and `cargo:` lines on.
    pub fn new() -> CkTypes {
        CkTypes {
            ck: None,
            hip_include: None,
            resource_dir: None,
            std: "c++17".into(),
            clang_args: Vec::new(),
            cargo_metadata: true,
        }
    }

    /// The CK tree (required): a composable_kernel checkout, or an aiter
    /// checkout with CK in `3rdparty/composable_kernel`.
    ///
    /// ```no_run
    /// ck_jit_build::bindings::CkTypes::new().ck("../composable_kernel");
    /// ```
    pub fn ck<P: AsRef<Path>>(&mut self, tree: P) -> &mut CkTypes {
        self.ck = Some(tree.as_ref().to_path_buf());
        self
    }

    /// The directory holding `hip/hip_runtime.h`, which CK's headers
    /// include. Default: `$ROCM_PATH/include`, `$HIP_PATH/include` or
    /// `/opt/rocm/include`, the first that has it.
    ///
    /// ```no_run
    /// ck_jit_build::bindings::CkTypes::new().hip_include("/opt/rocm-6.2.0/include");
    /// ```
    pub fn hip_include<P: AsRef<Path>>(&mut self, dir: P) -> &mut CkTypes {
        self.hip_include = Some(dir.as_ref().to_path_buf());
        self
    }

    /// clang's resource directory (its `stddef.h` and HIP wrapper headers),
    /// passed as `-resource-dir`. Default: the one beside libclang, else
    /// the one a `clang` on `PATH` reports (`clang -print-resource-dir`).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::CkTypes::new().resource_dir("/usr/lib/llvm-18/lib/clang/18");
    /// ```
    pub fn resource_dir<P: AsRef<Path>>(&mut self, dir: P) -> &mut CkTypes {
        self.resource_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// The C++ standard to parse with (`-std=`), default `c++17` as CK's
    /// build uses.
    ///
    /// ```no_run
    /// ck_jit_build::bindings::CkTypes::new().std("c++20");
    /// ```
    pub fn std(&mut self, std: &str) -> &mut CkTypes {
        self.std = std.to_string();
        self
    }

    /// One more argument for clang, after the others (`-DNAME=1`,
    /// `-I...`).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::CkTypes::new().clang_arg("-DCK_TILE_FMHA_FWD_FAST_EXP2=1");
    /// ```
    pub fn clang_arg(&mut self, arg: &str) -> &mut CkTypes {
        self.clang_args.push(arg.to_string());
        self
    }

    /// Whether to print `cargo:rerun-if-changed` for every file clang read
    /// and `cargo:rerun-if-env-changed` for every variable consulted
    /// (default true; turn off outside build scripts).
    ///
    /// ```no_run
    /// ck_jit_build::bindings::CkTypes::new().cargo_metadata(false);
    /// ```
    pub fn cargo_metadata(&mut self, print: bool) -> &mut CkTypes {
        self.cargo_metadata = print;
        self
    }

    /// Generates the bindings.
    ///
    /// # Errors
    ///
    /// [`Error::Libclang`] without a loadable libclang, [`Error::Input`]
    /// for a tree that is not CK, [`Error::NoHipHeaders`],
    /// [`Error::Clang`] when clang cannot parse the headers,
    /// [`Error::Output`] when a struct a header declares was not generated.
    pub fn try_generate(&self) -> Result<Bindings, Error> {
        generate_printing(self.cargo_metadata, |cargo| self.generate_with(cargo))
    }

    /// [`try_generate`](CkTypes::try_generate), then writes the source to
    /// `file` (under `OUT_DIR` when relative) unless it is unchanged.
    ///
    /// # Errors
    ///
    /// As [`try_generate`](CkTypes::try_generate), and [`Error::Env`]
    /// without `OUT_DIR` for a relative file, [`Error::Write`].
    pub fn try_write<P: AsRef<Path>>(&self, file: P) -> Result<Bindings, Error> {
        generate_to(file.as_ref(), || self.try_generate())
    }

    /// [`try_generate`](CkTypes::try_generate), panicking on error.
    ///
    /// # Panics
    ///
    /// With the error's message, which fails the build script.
    pub fn generate(&self) -> Bindings {
        self.try_generate()
            .unwrap_or_else(|e| panic!("ck-jit-build: {e}"))
    }

    /// [`try_write`](CkTypes::try_write), panicking on error.
    ///
    /// # Panics
    ///
    /// With the error's message, which fails the build script.
    pub fn write<P: AsRef<Path>>(&self, file: P) -> Bindings {
        self.try_write(file)
            .unwrap_or_else(|e| panic!("ck-jit-build: {e}"))
    }

    fn generate_with(&self, cargo: &mut CargoOutput<'_>) -> Result<Bindings, Error> {
        let ck = resolve_ck(self.ck.as_deref())?;
        let example = ck.join(FMHA_EXAMPLE_DIR);
        let hip = self.hip_headers(cargo)?;
        let lib = clang::load(cargo)?;
        let resource_dir = clang::resource_dir(self.resource_dir.as_deref(), &lib, cargo);

        let mut args: Vec<String> = ["-x", "hip", "--cuda-host-only", "-nogpulib", "-nogpuinc"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        args.push(format!("-std={}", self.std));
        if let Some(rd) = &resource_dir {
            args.push("-resource-dir".into());
            args.push(rd.display().to_string());
        }
        // What the HIP driver adds itself when it finds a ROCm
        // installation; -nogpuinc keeps it from looking for one, so only
        // the header directory is needed.
        args.push("-isystem".into());
        args.push(hip.display().to_string());
        args.push("-include".into());
        args.push("__clang_hip_runtime_wrapper.h".into());
        args.push(format!("-I{}", ck.join("include").display()));
        args.push(format!("-I{}", example.display()));
        args.extend(self.clang_args.iter().cloned());

        let mut files = Vec::new();
        let mut declared: Vec<(String, String)> =
            vec![(STREAM_CONFIG.0.to_string(), STREAM_CONFIG.1.to_string())];
        let mut inputs: Vec<PathBuf> = Vec::new();
        for (k, header) in HEADERS.iter().enumerate() {
            let path = example.join(header);
            if !path.is_file() {
                if k == 0 {
                    return Err(Error::Input {
                        path: ck.clone(),
                        why: format!("has no {FMHA_EXAMPLE_DIR}/{header}"),
                    });
                }
                continue;
            }
            let text = fs::read_to_string(&path).map_err(|e| Error::Input {
                path: path.clone(),
                why: format!("cannot be read: {e}"),
            })?;
            for name in declared_structs(&text) {
                if !declared.iter().any(|(n, _)| *n == name) {
                    declared.push((name.clone(), name));
                }
            }
            let probe = format!(
                "#include \"ck_tile/host/stream_config.hpp\"\n#include \"{}\"\n",
                path.display()
            );
            let builder = clang::builder(&args)
                .header_contents(&format!("ck_jit_{header}"), &probe)
                .allowlist_type(ROOT_PATTERN)
                .allowlist_type(STREAM_CONFIG.1)
                .opaque_type("std::.*")
                .default_enum_style(bindgen::EnumVariation::Rust {
                    non_exhaustive: false,
                });
            let t0 = Instant::now();
            let parsed = clang::generate(builder, &shown(&path), &lib, cargo)?;
            log_time(header, t0.elapsed());
            for f in parsed.files {
                if !inputs.contains(&f) {
                    inputs.push(f);
                }
            }
            files.push(parsed.file);
        }

        let input = format!("CK's FMHA headers in '{}'", shown(&example));
        let merged = items::merge(files).map_err(|why| Error::Output {
            input: input.clone(),
            why,
        })?;
        let root = regex_lite::Regex::new(&format!("^(?:{ROOT_PATTERN}|{})$", STREAM_CONFIG.0))
            .map_err(|e| Error::Output {
                input: input.clone(),
                why: e.to_string(),
            })?;
        let roots: BTreeSet<String> = merged
            .iter()
            .filter_map(items::defined_name)
            .filter(|n| root.is_match(n))
            .collect();
        let kept = items::prune(merged, &roots);
        let mut structs = Vec::new();
        for (name, cpp) in &declared {
            let s = items::bound_struct(&kept, name, cpp).ok_or_else(|| Error::Output {
                input: input.clone(),
                why: format!("the headers define struct {cpp}, which bindgen did not generate"),
            })?;
            structs.push(s);
        }
        let header = format!(
            "// CK's FMHA argument and traits structs and ck_tile::stream_config, generated\n\
             // by ck-jit-build with bindgen from '{}'. Do not edit.\n\n",
            shown(&ck)
        );
        let source = items::render(&header, kept);
        if self.cargo_metadata {
            announce_inputs(&inputs, cargo);
        }
        Ok(Bindings {
            source,
            structs,
            kernels: Vec::new(),
            inputs,
        })
    }

    /// The HIP header directory: the one given, else the first standard
    /// place that has `hip/hip_runtime.h`.
    fn hip_headers(&self, cargo: &mut CargoOutput<'_>) -> Result<PathBuf, Error> {
        if let Some(dir) = &self.hip_include {
            if !dir.join("hip/hip_runtime.h").is_file() {
                return Err(Error::Input {
                    path: dir.clone(),
                    why: "has no hip/hip_runtime.h".into(),
                });
            }
            return Ok(dir.clone());
        }
        let mut looked_at = Vec::new();
        for var in ["ROCM_PATH", "HIP_PATH"] {
            if let Some(root) = env::var(var, cargo).filter(|v| !v.is_empty()) {
                looked_at.push(PathBuf::from(root).join("include"));
            }
        }
        looked_at.push(PathBuf::from("/opt/rocm/include"));
        match looked_at
            .iter()
            .find(|d| d.join("hip/hip_runtime.h").is_file())
        {
            Some(d) => Ok(d.clone()),
            None => Err(Error::NoHipHeaders { looked_at }),
        }
    }
}

/// The CK tree of `tree`: itself, or the CK inside an aiter checkout.
fn resolve_ck(tree: Option<&Path>) -> Result<PathBuf, Error> {
    let tree = tree.ok_or_else(|| Error::Input {
        path: PathBuf::new(),
        why: "is not a CK tree: none was given (CkTypes::ck)".into(),
    })?;
    let canon = fs::canonicalize(tree).map_err(|e| Error::Input {
        path: tree.to_path_buf(),
        why: if e.kind() == io::ErrorKind::NotFound {
            "does not exist".into()
        } else {
            e.to_string()
        },
    })?;
    let aiter_ck = canon.join(AITER_CK_DIR);
    let ck = if aiter_ck.join(FMHA_EXAMPLE_DIR).is_dir() {
        aiter_ck
    } else {
        canon
    };
    if !ck.join("include/ck_tile").is_dir() || !ck.join(FMHA_EXAMPLE_DIR).is_dir() {
        return Err(Error::Input {
            path: tree.to_path_buf(),
            why: format!(
                "is not a composable_kernel (or aiter) checkout: it needs include/ck_tile and \
                 {FMHA_EXAMPLE_DIR}"
            ),
        });
    }
    Ok(ck)
}

/// The `fmha_*_args` / `fmha_*_traits` structs a header defines (not
/// declares), in order.
fn declared_structs(text: &str) -> Vec<String> {
    let re = regex_lite::Regex::new(&format!(
        r"(?m)^[ \t]*struct[ \t]+({ROOT_PATTERN})[ \t]*(?:\{{|$)"
    ));
    let Ok(re) = re else { return Vec::new() };
    re.captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str().to_string())
        .collect()
}

/// How long a header took, in the build script's output (not a `cargo:`
/// line).
fn log_time(header: &str, took: std::time::Duration) {
    let _ = writeln!(
        io::stderr(),
        "ck-jit-build: bindgen parsed {header} in {took:.2?}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_structs_are_definitions_matching_the_pattern() {
        let text = "struct fmha_fwd_args\n{\n};\nstruct fmha_fwd_args;\n\
                    template <int H>\nstruct fmha_fwd_traits_\n{};\n\
                    struct fmha_bwd_traits {\n};\nstruct FmhaMasks\n{};\n\
                    using fmha_batch_prefill_traits = fmha_fwd_traits;\n";
        assert_eq!(declared_structs(text), ["fmha_fwd_args", "fmha_bwd_traits"]);
    }

    #[test]
    fn a_tree_without_ck_is_refused_naming_it() {
        let e = resolve_ck(Some(Path::new("/nonexistent/ck"))).unwrap_err();
        assert!(
            e.to_string().contains("'/nonexistent/ck' does not exist"),
            "{e}"
        );
        let e = resolve_ck(Some(Path::new("/"))).unwrap_err();
        assert!(e.to_string().contains("include/ck_tile"), "{e}");
        assert!(resolve_ck(None).is_err());
    }
}
