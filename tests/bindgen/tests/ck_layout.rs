//! CK's structs as bindgen generated them (in this crate's `build.rs`,
//! compiled by rustc) against the system C++ compiler, for both CK
//! versions beside the repository: every field's offset and size and each
//! struct's size and alignment must be what `c++` gives CK's own struct
//! text. The structs and fields must also be exactly those the headers
//! define (`ck_jit_ck::decl::struct_fields`, an independent reader).
//!
//! The probe is CK's text cut out of its headers, verbatim: the argument
//! and traits structs (`fmha_fwd.hpp`, `fmha_bwd.hpp`), the enums of the
//! FMHA example's headers, `ck_tile::stream_config`, with `index_t`,
//! `long_index_t` and `hipStream_t` declared as CK and HIP declare them.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ck_jit_bindgen_tests::{ck_2024_10_23, ck_2025_11, Layout};
use ck_jit_ck::decl::struct_fields;

fn ck_tree(version: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/ck")
        .join(version)
}

/// The layouts of a version, or `None` (with a visible skip) where the
/// build could not generate them; never `None` when the bindings are
/// required.
fn generated(
    version: &str,
    skipped: Option<&str>,
    layouts: fn() -> Vec<Layout>,
) -> Option<Vec<Layout>> {
    if let Some(why) = skipped {
        assert!(
            std::env::var("CK_JIT_REQUIRE_BINDGEN").map_or(true, |v| v != "1"),
            "CK_JIT_REQUIRE_BINDGEN=1 but the bindings of {version} were not generated: {why}"
        );
        eprintln!("SKIPPED: no bindings of {version}: {why}");
        return None;
    }
    Some(layouts())
}

/// `KEYWORD NAME ... };` cut out of `text`, if it is there.
fn definition(text: &str, keyword: &str, name: &str) -> Option<String> {
    let start = [format!("{keyword} {name}\n"), format!("{keyword} {name} ")]
        .iter()
        .filter_map(|p| text.find(p.as_str()))
        .find(|&at| at == 0 || text[..at].ends_with('\n'))?;
    let end = start + text[start..].find("\n};")? + 3;
    Some(text[start..end].to_string())
}

/// Every `enum class NAME` at the start of a line in the FMHA example's
/// headers, as written.
fn enums(example: &Path) -> String {
    let mut out = String::new();
    let mut files: Vec<PathBuf> = fs::read_dir(example)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "hpp"))
        .collect();
    files.sort();
    for f in files {
        let text = fs::read_to_string(&f).unwrap();
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("enum class ") {
                let name = name.split_whitespace().next().unwrap();
                out.push_str(&definition(&text, "enum class", name).unwrap());
                out.push('\n');
            }
        }
    }
    out
}

/// What `c++` says of each struct (`NAME` -> `size align`) and field
/// (`NAME FIELD` -> `offset size`).
fn cpp_layout(version: &str, layouts: &[Layout]) -> BTreeMap<String, String> {
    let ck = ck_tree(version);
    let example = ck.join("example/ck_tile/01_fmha");
    let fwd = fs::read_to_string(example.join("fmha_fwd.hpp")).unwrap();
    let bwd = fs::read_to_string(example.join("fmha_bwd.hpp")).unwrap();
    let stream = fs::read_to_string(ck.join("include/ck_tile/host/stream_config.hpp")).unwrap();
    let mut src = String::from(
        "#include <cstddef>\n#include <cstdint>\n#include <cstdio>\n#include <string>\n\
         #include <utility>\n#include <variant>\n\
         typedef struct ihipStream_t* hipStream_t;\n\
         namespace ck_tile {\nusing index_t = int32_t;\nusing long_index_t = int64_t;\n",
    );
    src.push_str(&definition(&stream, "struct", "stream_config").unwrap());
    src.push_str("\n}\n");
    src.push_str(&enums(&example));
    for l in layouts.iter().filter(|l| !l.cpp.contains("::")) {
        let text = definition(&fwd, "struct", l.cpp)
            .or_else(|| definition(&bwd, "struct", l.cpp))
            .unwrap_or_else(|| panic!("{version}: no struct {} in the headers", l.cpp));
        src.push_str(&text);
        src.push('\n');
    }
    src.push_str(
        "#define S(s) std::printf(\"%s %zu %zu\\n\", #s, sizeof(s), alignof(s))\n\
         #define F(s, f) std::printf(\"%s %s %zu %zu\\n\", #s, #f, offsetof(s, f), sizeof(((s*)0)->f))\n\
         int main() {\n",
    );
    for l in layouts {
        src.push_str(&format!("S({});\n", l.cpp));
        for f in &l.fields {
            src.push_str(&format!("F({}, {});\n", l.cpp, f.cpp));
        }
    }
    src.push_str("}\n");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("bindgen-layout-{version}"));
    fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("layout.cpp");
    fs::write(&cpp, &src).unwrap();
    let exe = dir.join("layout");
    let out = Command::new("c++")
        .args(["-std=c++17", "-w", "-o"])
        .arg(&exe)
        .arg(&cpp)
        .output()
        .expect("c++ runs");
    assert!(
        out.status.success(),
        "{version}: the probe {} does not compile:\n{}",
        cpp.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            let (key, value) = parts.split_at(parts.len() - 2);
            (key.join(" "), value.join(" "))
        })
        .collect()
}

/// Compares one version; returns the number of structs and fields checked.
fn check(version: &str, layouts: &[Layout]) -> (usize, usize) {
    let cpp = cpp_layout(version, layouts);
    let mut fields = 0;
    for l in layouts {
        assert_eq!(
            cpp[l.cpp],
            format!("{} {}", l.size, l.align),
            "{version}: size and alignment of {}",
            l.cpp
        );
        for f in &l.fields {
            assert_eq!(
                cpp[&format!("{} {}", l.cpp, f.cpp)],
                format!("{} {}", f.offset, f.size),
                "{version}: offset and size of {}::{}",
                l.cpp,
                f.cpp
            );
            fields += 1;
        }
    }
    (layouts.len(), fields)
}

/// `text` through the C preprocessor: a struct's `#if 0` members are not
/// members.
fn preprocessed(text: &str) -> String {
    let mut child = Command::new("c++")
        .args(["-E", "-P", "-x", "c++", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("c++ runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap()
}

/// The structs bound are those the headers define, field for field (as
/// the preprocessor leaves them).
fn same_fields_as_the_headers(version: &str, layouts: &[Layout]) {
    let ck = ck_tree(version);
    let example = ck.join("example/ck_tile/01_fmha");
    let mut defined = Vec::new();
    for h in ["fmha_fwd.hpp", "fmha_bwd.hpp"] {
        let text = fs::read_to_string(example.join(h)).unwrap();
        for line in text.lines() {
            let Some(name) = line.strip_prefix("struct fmha_") else {
                continue;
            };
            let name = format!("fmha_{}", name.trim());
            if name.ends_with("_args") || name.ends_with("_traits") {
                let text = preprocessed(&definition(&text, "struct", &name).unwrap());
                let fields: Vec<String> = struct_fields(&text, &name)
                    .unwrap()
                    .into_iter()
                    .map(|f| f.name)
                    .collect();
                defined.push((name, fields));
            }
        }
    }
    let bound: Vec<(String, Vec<String>)> = layouts
        .iter()
        .filter(|l| l.cpp.starts_with("fmha_"))
        .map(|l| {
            (
                l.cpp.to_string(),
                l.fields.iter().map(|f| f.cpp.to_string()).collect(),
            )
        })
        .collect();
    assert_eq!(bound, defined, "{version}");
    assert!(layouts.iter().any(|l| l.cpp == "ck_tile::stream_config"));
}

fn version(
    version: &str,
    skipped: Option<&str>,
    ms: u128,
    layouts: fn() -> Vec<Layout>,
) -> Option<Vec<Layout>> {
    let layouts = generated(version, skipped, layouts)?;
    same_fields_as_the_headers(version, &layouts);
    let (structs, fields) = check(version, &layouts);
    let args = layouts.iter().find(|l| l.cpp == "fmha_fwd_args").unwrap();
    eprintln!(
        "{version}: {structs} structs, {fields} fields agree with c++ \
         (fmha_fwd_args: {} fields, {} bytes); bindgen took {:.2} s in the build script",
        args.fields.len(),
        args.size,
        ms as f64 / 1000.0
    );
    Some(layouts)
}

#[test]
fn ck_2024_structs_are_laid_out_as_cpp_lays_them_out() {
    use ck_2024_10_23 as v;
    let Some(layouts) = version("ck-2024-10-23", v::SKIPPED, v::GENERATED_MS, v::layouts) else {
        return;
    };
    let names: Vec<&str> = layouts.iter().map(|l| l.cpp).collect();
    assert_eq!(
        names,
        [
            "ck_tile::stream_config",
            "fmha_fwd_args",
            "fmha_fwd_splitkv_args",
            "fmha_fwd_appendkv_args",
            "fmha_fwd_traits",
            "fmha_fwd_splitkv_traits",
            "fmha_fwd_appendkv_traits",
            "fmha_bwd_args",
            "fmha_bwd_traits",
        ]
    );
}

#[test]
fn ck_2025_structs_are_laid_out_as_cpp_lays_them_out() {
    use ck_2025_11 as v;
    let Some(layouts) = version("ck-2025-11", v::SKIPPED, v::GENERATED_MS, v::layouts) else {
        return;
    };
    for name in [
        "fmha_fwd_pagedkv_args",
        "fmha_batch_prefill_args",
        "fmha_fwd_pagedkv_traits",
    ] {
        assert!(layouts.iter().any(|l| l.cpp == name), "{name}");
    }
}

#[test]
fn the_two_versions_bind_different_structs() {
    let (Some(old), Some(new)) = (
        generated(
            "ck-2024-10-23",
            ck_2024_10_23::SKIPPED,
            ck_2024_10_23::layouts,
        ),
        generated("ck-2025-11", ck_2025_11::SKIPPED, ck_2025_11::layouts),
    ) else {
        return;
    };
    let fwd = |l: &[Layout]| l.iter().find(|l| l.cpp == "fmha_fwd_args").unwrap().clone();
    assert_eq!(fwd(&old).fields.len(), 47);
    assert_eq!(fwd(&new).fields.len(), 52);
    assert_ne!(fwd(&old).size, fwd(&new).size);
}

#[test]
fn generated_types_are_usable_from_rust() {
    let Some(_) = generated("ck-2025-11", ck_2025_11::SKIPPED, ck_2025_11::layouts) else {
        return;
    };
    // Compiled only where the build generated the types.
    #[cfg(ck_2025_11)]
    {
        use ck_2025_11 as v;
        // CK's enums are Rust enums with CK's values; the structs default
        // to zero.
        assert_eq!(v::mask_enum::mask_bottom_right as i32, 2);
        assert_eq!(v::bias_enum::alibi as i32, 2);
        let args = v::fmha_fwd_args {
            seqlen_q: 128,
            mask_type: v::mask_enum::mask_top_left as v::ck_tile_index_t,
            ..Default::default()
        };
        assert_eq!(args.seqlen_k, 0);
        assert!(args.q_ptr.is_null());
        let traits = v::fmha_fwd_traits {
            mask_type: v::mask_enum::window_generic,
            ..Default::default()
        };
        assert_eq!(traits.bias_type, v::bias_enum::no_bias);
        let s = v::ck_tile_stream_config::default();
        assert!(s.stream_id_.is_null());
    }
}
