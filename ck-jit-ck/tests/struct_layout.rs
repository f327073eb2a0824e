//! The Rust copies of CK's structs that `ffi::rust_structs` and
//! `ffi::glue` write, compiled by rustc, against CK's own struct text
//! compiled by the system C++ compiler, for both CK versions beside the
//! repository:
//!
//! - every `fmha_*_args` struct of `fmha_fwd.hpp` and `fmha_bwd.hpp` and
//!   `ck_tile::stream_config` (`#[repr(C)]`, passed to CK): each field's
//!   offset and size and each struct's size and alignment are what `c++`
//!   gives CK's text;
//! - the glue's C traits structs (`ck_jit_fmha_fwd_traits`, ...) against
//!   the glue's C++ text, the same way;
//! - every struct, the `fmha_*_traits` (plain Rust, read by the dispatch
//!   rules) included, has exactly CK's members in CK's order: the C++
//!   compiler checks the count (a structured binding of that many names)
//!   and each name (`offsetof`), and the order shows in the offsets.
//!
//! The probe is CK's text cut out of its headers, verbatim: the argument
//! and traits structs, the enums of the FMHA example's headers,
//! `ck_tile::stream_config`, with `index_t`, `long_index_t` and
//! `hipStream_t` declared as CK and HIP declare them. Neither side uses
//! ck-jit-ck's `decl` module, whose reading is what is under test.
#![cfg(feature = "build")]

mod real_ck;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_jit_ck::ffi::{
    camel, glue, rust_structs, write_rust_structs, StructSpec, STREAM_CONFIG_HEADER,
};
use ck_jit_ck::FMHA_EXAMPLE_DIR;

/// The dispatchers whose glue is checked: the four every CK version has.
const DISPATCHERS: &[&str] = &[
    "fmha_fwd",
    "fmha_fwd_splitkv",
    "fmha_fwd_appendkv",
    "fmha_bwd",
];

/// `std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*,
/// const void*>>` as a user of the generated text declares it (ck-fmha's
/// `DropSeedOffset`); its size is checked against C++ with the fields.
const DROP_SEED_OFFSET: &str = "#[repr(C)]\n#[derive(Debug, Clone, Copy, PartialEq)]\n\
     pub struct DropSeedOffset {\n    storage: [u64; 2],\n    index: u8,\n}\n\
     impl DropSeedOffset {\n    pub fn values(seed: u64, offset: u64) -> DropSeedOffset {\n        \
     DropSeedOffset { storage: [seed, offset], index: 0 }\n    }\n}\n";

/// One struct of the generated Rust and the C++ one it copies.
#[derive(Debug)]
struct Mirrored {
    /// The C++ name (`fmha_fwd_args`, `ck_tile::stream_config`).
    cpp: String,
    /// The Rust path in the probe program (`ck::FmhaFwdArgs`).
    rust: String,
    /// Whether it is `#[repr(C)]`, laid out as C++ lays it out.
    repr_c: bool,
    /// Its fields, in the generated order.
    fields: Vec<String>,
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

/// The `fmha_*_args` and `fmha_*_traits` structs `header` defines (the
/// `fmha_*_traits_` templates are not structs), in order.
fn defined_structs(header: &str) -> Vec<String> {
    header
        .lines()
        .filter_map(|l| l.strip_prefix("struct "))
        .map(str::trim)
        .filter(|n| n.starts_with("fmha_") && (n.ends_with("_args") || n.ends_with("_traits")))
        .map(String::from)
        .collect()
}

/// The fields of `pub struct NAME { ... }` in generated Rust `text`.
fn rust_fields(text: &str, name: &str) -> Vec<String> {
    let open = format!("pub struct {name} {{\n");
    let start = text
        .find(&open)
        .unwrap_or_else(|| panic!("the generated Rust has no struct {name}"))
        + open.len();
    let end = start + text[start..].find("\n}").unwrap();
    text[start..end]
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .filter_map(|l| l.split(':').next())
        .map(String::from)
        .collect()
}

/// Every `enum class NAME` at the start of a line in the FMHA example's
/// headers, as written.
fn enums(example: &Path) -> String {
    let mut files: Vec<PathBuf> = fs::read_dir(example)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "hpp"))
        .collect();
    files.sort();
    let mut out = String::new();
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

/// Runs `cmd`, failing the test with its output unless it succeeds;
/// returns its stdout.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `NAME size align` and `NAME FIELD offset size` lines as a map from the
/// name (and field) to the two numbers.
fn layout_lines(text: &str) -> BTreeMap<String, (usize, usize)> {
    text.lines()
        .map(|l| {
            let parts: Vec<&str> = l.split(' ').collect();
            let (key, nums) = parts.split_at(parts.len() - 2);
            (
                key.join(" "),
                (nums[0].parse().unwrap(), nums[1].parse().unwrap()),
            )
        })
        .collect()
}

/// The rustc that built this test (the one beside its cargo), for the
/// generated Rust.
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

/// What rustc makes of the generated Rust: every struct's size and
/// alignment and every field's offset and size.
fn rust_layout(dir: &Path, ck_rs: &str, glue_rs: &str, structs: &[Mirrored]) -> String {
    fs::write(dir.join("ck.rs"), ck_rs).unwrap();
    fs::write(dir.join("glue.rs"), glue_rs).unwrap();
    let mut src = String::from(
        "#![allow(dead_code, unused_imports, non_camel_case_types)]\n\
         use std::ffi::{c_char, c_void};\nuse std::mem::{align_of, offset_of, size_of};\n\
         use std::ptr;\n",
    );
    src.push_str(DROP_SEED_OFFSET);
    src.push_str(
        "mod ck {\n    use super::*;\n    include!(\"ck.rs\");\n}\n\
         mod glue {\n    use super::*;\n    include!(\"glue.rs\");\n}\n\
         fn field_size<T, F>(_: impl Fn(&T) -> &F) -> usize {\n    size_of::<F>()\n}\n\
         fn main() {\n",
    );
    for s in structs.iter().filter(|s| s.repr_c) {
        let (c, r) = (&s.cpp, &s.rust);
        src.push_str(&format!(
            "    println!(\"{c} {{}} {{}}\", size_of::<{r}>(), align_of::<{r}>());\n"
        ));
        for f in &s.fields {
            src.push_str(&format!(
                "    println!(\"{c} {f} {{}} {{}}\", offset_of!({r}, {f}), field_size(|s: &{r}| &s.{f}));\n"
            ));
        }
    }
    src.push_str("}\n");
    let main = dir.join("layout.rs");
    fs::write(&main, src).unwrap();
    let exe = dir.join("layout-rs");
    run(
        Command::new(rustc())
            .args(["--edition", "2021", "--crate-type", "bin", "-o"])
            .arg(&exe)
            .arg(&main),
        &format!("rustc on the generated Rust in {}", dir.display()),
    );
    run(&mut Command::new(&exe), "the Rust layout probe")
}

/// What `c++` makes of CK's struct text and the glue's: the same lines as
/// [`rust_layout`], for every struct (fields in the generated order). A
/// struct whose member count is not the generated one does not compile.
fn cpp_layout(dir: &Path, ck: &Path, glue_cpp: &str, structs: &[Mirrored]) -> String {
    let example = ck.join(FMHA_EXAMPLE_DIR);
    let headers: Vec<String> = ["fmha_fwd.hpp", "fmha_bwd.hpp"]
        .iter()
        .map(|h| fs::read_to_string(example.join(h)).unwrap())
        .collect();
    let stream = fs::read_to_string(ck.join(STREAM_CONFIG_HEADER)).unwrap();
    let mut src = String::from(
        "#include <cstddef>\n#include <cstdint>\n#include <cstdio>\n#include <string>\n\
         #include <utility>\n#include <variant>\n\
         typedef struct ihipStream_t* hipStream_t;\n\
         namespace ck_tile {\nusing index_t = int32_t;\nusing long_index_t = int64_t;\n",
    );
    src.push_str(&definition(&stream, "struct", "stream_config").unwrap());
    src.push_str("\n}\n");
    src.push_str(&enums(&example));
    let texts: Vec<&str> = headers
        .iter()
        .map(String::as_str)
        .chain([glue_cpp])
        .collect();
    for s in structs.iter().filter(|s| !s.cpp.contains("::")) {
        let text = texts
            .iter()
            .find_map(|t| definition(t, "struct", &s.cpp))
            .unwrap_or_else(|| panic!("no struct {} in the headers or the glue", s.cpp));
        src.push_str(&text);
        src.push('\n');
    }
    for (k, s) in structs.iter().enumerate() {
        let names: Vec<String> = (0..s.fields.len()).map(|i| format!("m{i}")).collect();
        src.push_str(&format!(
            "// {} has exactly {} members.\nvoid members_{k}({}& s) {{ auto& [{}] = s; }}\n",
            s.cpp,
            names.len(),
            s.cpp,
            names.join(", ")
        ));
    }
    src.push_str(
        "#define S(s) std::printf(\"%s %zu %zu\\n\", #s, sizeof(s), alignof(s))\n\
         #define F(s, f) std::printf(\"%s %s %zu %zu\\n\", #s, #f, offsetof(s, f), sizeof(((s*)0)->f))\n\
         int main() {\n",
    );
    for s in structs {
        src.push_str(&format!("S({});\n", s.cpp));
        for f in &s.fields {
            src.push_str(&format!("F({}, {f});\n", s.cpp));
        }
    }
    src.push_str("}\n");
    let cpp = dir.join("layout.cpp");
    fs::write(&cpp, src).unwrap();
    let exe = dir.join("layout-cpp");
    run(
        Command::new("c++")
            .args(["-std=c++17", "-w", "-o"])
            .arg(&exe)
            .arg(&cpp),
        &format!("c++ on the probe {}", cpp.display()),
    );
    run(&mut Command::new(&exe), "the C++ layout probe")
}

/// Generates one version's Rust copies, compiles both sides and compares;
/// returns what was compared, or `None` (a visible skip) without the data.
fn check(version: &str) -> Option<Vec<Mirrored>> {
    let ck = real_ck::ck_tree(version)?;
    let example = ck.join(FMHA_EXAMPLE_DIR);
    let mut specs = vec![StructSpec {
        header: STREAM_CONFIG_HEADER.to_string(),
        cpp: "stream_config".to_string(),
        rust: "StreamConfig".to_string(),
        repr_c: true,
    }];
    for h in ["fmha_fwd.hpp", "fmha_bwd.hpp"] {
        let text = fs::read_to_string(example.join(h)).unwrap();
        for name in defined_structs(&text) {
            let repr_c = name.ends_with("_args");
            specs.push(StructSpec::fmha(h, &name, repr_c));
        }
    }
    let ck_rs =
        rust_structs(&ck, &specs, false).unwrap_or_else(|e| panic!("{version}: rust_structs: {e}"));
    let g = glue(&ck, DISPATCHERS).unwrap_or_else(|e| panic!("{version}: glue: {e}"));

    let mut structs: Vec<Mirrored> = specs
        .iter()
        .map(|s| Mirrored {
            cpp: if s.cpp == "stream_config" {
                "ck_tile::stream_config".to_string()
            } else {
                s.cpp.clone()
            },
            rust: format!("ck::{}", s.rust),
            repr_c: s.repr_c,
            fields: rust_fields(&ck_rs, &s.rust),
        })
        .collect();
    for d in &g.dispatchers {
        let c = format!("ck_jit_{}", d.traits);
        let rust = camel(&c);
        structs.push(Mirrored {
            fields: rust_fields(&g.rust, &rust),
            cpp: c,
            rust: format!("glue::{rust}"),
            repr_c: true,
        });
    }

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("struct-layout-{version}"));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    let cpp = layout_lines(&cpp_layout(&dir, &ck, &g.cpp, &structs));
    let rust = layout_lines(&rust_layout(&dir, &ck_rs, &g.rust, &structs));

    let mut fields = 0;
    for s in &structs {
        // The members in CK's order: offsets rise along the generated
        // fields (names and count were checked by compiling the probe).
        let offsets: Vec<usize> = s
            .fields
            .iter()
            .map(|f| cpp[&format!("{} {f}", s.cpp)].0)
            .collect();
        assert!(
            offsets.windows(2).all(|w| w[0] < w[1]),
            "{version}: the fields of {} are not in CK's order: {:?}",
            s.cpp,
            s.fields.iter().zip(&offsets).collect::<Vec<_>>()
        );
        if !s.repr_c {
            continue;
        }
        assert_eq!(
            rust[&s.cpp], cpp[&s.cpp],
            "{version}: (size, alignment) of {} in Rust and C++",
            s.cpp
        );
        for f in &s.fields {
            let key = format!("{} {f}", s.cpp);
            assert_eq!(
                rust[&key], cpp[&key],
                "{version}: (offset, size) of {}::{f} in Rust and C++",
                s.cpp
            );
            fields += 1;
        }
    }
    let args = structs.iter().find(|s| s.cpp == "fmha_fwd_args").unwrap();
    eprintln!(
        "{version}: {} structs ({} #[repr(C)], {fields} fields) agree with c++; \
         fmha_fwd_args: {} fields, {} bytes",
        structs.len(),
        structs.iter().filter(|s| s.repr_c).count(),
        args.fields.len(),
        cpp["fmha_fwd_args"].0,
    );
    Some(structs)
}

fn names(structs: &[Mirrored]) -> Vec<&str> {
    structs.iter().map(|s| s.cpp.as_str()).collect()
}

#[test]
fn ck_2024_structs_are_laid_out_as_cpp_lays_them_out() {
    let Some(structs) = check(real_ck::CK_2024) else {
        return;
    };
    assert_eq!(
        names(&structs),
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
            "ck_jit_fmha_bwd_traits",
            "ck_jit_fmha_fwd_traits",
            "ck_jit_fmha_fwd_appendkv_traits",
            "ck_jit_fmha_fwd_splitkv_traits",
        ]
    );
    let fwd = structs.iter().find(|s| s.cpp == "fmha_fwd_args").unwrap();
    assert_eq!(fwd.fields.len(), 47);
}

#[test]
fn ck_2025_structs_are_laid_out_as_cpp_lays_them_out() {
    let Some(structs) = check(real_ck::CK_2025) else {
        return;
    };
    let names = names(&structs);
    for name in [
        "fmha_fwd_pagedkv_args",
        "fmha_batch_prefill_args",
        "fmha_fwd_pagedkv_traits",
        "ck_jit_fmha_fwd_traits",
    ] {
        assert!(names.contains(&name), "{name} is not checked: {names:?}");
    }
    let fwd = structs.iter().find(|s| s.cpp == "fmha_fwd_args").unwrap();
    assert_eq!(fwd.fields.len(), 52);
    // A member inside `#if 0` is not a member.
    let prefill = structs
        .iter()
        .find(|s| s.cpp == "fmha_batch_prefill_args")
        .unwrap();
    assert!(!prefill.fields.iter().any(|f| f == "kv_last_page_lens"));
}

#[test]
fn written_structs_are_kept_while_their_headers_are_unchanged() {
    let tmp = real_ck::Scratch::new("structs-kept");
    let Some(ck) = real_ck::ck_copy(real_ck::CK_2025, &tmp.path().join("ck")) else {
        return;
    };
    let specs = [
        StructSpec::fmha("fmha_fwd.hpp", "fmha_fwd_args", true),
        StructSpec::fmha("fmha_bwd.hpp", "fmha_bwd_traits", false),
    ];
    let out = tmp.path().join("bindings.rs");
    write_rust_structs(&ck, &specs, true, "// kept\n", &out).unwrap();
    let text = fs::read_to_string(&out).unwrap();
    assert_eq!(
        text,
        format!("// kept\n{}", rust_structs(&ck, &specs, true).unwrap())
    );

    // A header's bytes blanked, its size and mtime kept: not read again.
    let header = ck.join(FMHA_EXAMPLE_DIR).join("fmha_bwd.hpp");
    let (bytes, mtime) = (
        fs::read(&header).unwrap(),
        fs::metadata(&header).unwrap().modified().unwrap(),
    );
    let put = |b: &[u8]| {
        fs::write(&header, b).unwrap();
        let f = fs::File::options().write(true).open(&header).unwrap();
        f.set_modified(mtime).unwrap();
    };
    put(&vec![b' '; bytes.len()]);
    write_rust_structs(&ck, &specs, true, "// kept\n", &out).unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), text);
    // Another preamble is another file: made again, from the blank header.
    assert!(write_rust_structs(&ck, &specs, true, "// other\n", &out).is_err());
    put(&bytes);

    // The header edited: read again.
    let mut edited = bytes.clone();
    edited.extend_from_slice(b"\n// edited\n");
    fs::write(&header, &edited).unwrap();
    fs::write(&out, "").unwrap();
    write_rust_structs(&ck, &specs, true, "// kept\n", &out).unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), text);
}
