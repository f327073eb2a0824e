//! The generated `#[repr(C)]` structs against C++: the struct definitions
//! are cut out of the CK headers the build read, verbatim, and compiled by
//! the system C++ compiler with `ck_tile::index_t` and the few types they
//! use declared as CK declares them; every field's offset and size and
//! each struct's size must equal the Rust ones. `stream_config` (written
//! by hand) is checked the same way against `ck_tile/host/stream_config.hpp`.
//! Also: the bindings kept for builds without CK equal what the build
//! generates from CK 2025-11.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_fmha::{
    CkStruct, FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs, FmhaFwdSplitkvArgs, StreamConfig,
};

fn ck() -> Option<&'static Path> {
    let tree = ck_fmha::ck_tree();
    if tree.is_none() {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_none(),
            "CK_JIT_REQUIRE_CK_DATA is set but ck-fmha was built without a CK tree"
        );
        eprintln!("SKIPPED: ck-fmha was built without a CK tree (CK_FMHA_CK)");
    }
    tree
}

/// `struct NAME { ... };` cut out of `text`.
fn definition(text: &str, name: &str) -> String {
    let start = text
        .find(&format!("struct {name}\n"))
        .or_else(|| text.find(&format!("struct {name} ")))
        .unwrap_or_else(|| panic!("no struct {name}"));
    let end = start + text[start..].find("\n};").unwrap() + 3;
    text[start..end].to_string()
}

fn layout<S: CkStruct>() -> (&'static str, &'static [(&'static str, usize, usize)], usize) {
    (S::CK_NAME, S::LAYOUT, std::mem::size_of::<S>())
}

#[test]
fn every_field_sits_where_cpp_puts_it() {
    let Some(ck) = ck() else { return };
    let example = ck.join("example/ck_tile/01_fmha");
    let fwd = fs::read_to_string(example.join("fmha_fwd.hpp")).unwrap();
    let bwd = fs::read_to_string(example.join("fmha_bwd.hpp")).unwrap();
    let stream = fs::read_to_string(ck.join("include/ck_tile/host/stream_config.hpp")).unwrap();
    let structs = [
        layout::<FmhaFwdArgs>(),
        layout::<FmhaFwdSplitkvArgs>(),
        layout::<FmhaFwdAppendkvArgs>(),
        layout::<FmhaBwdArgs>(),
    ];
    let mut src = String::from(
        "#include <cstddef>\n#include <cstdint>\n#include <cstdio>\n#include <utility>\n\
         #include <variant>\n\
         namespace ck_tile {\nusing index_t = int32_t;\nusing long_index_t = int64_t;\n",
    );
    src.push_str("typedef struct ihipStream_t* hipStream_t;\n");
    src.push_str(&definition(&stream, "stream_config"));
    src.push_str("\n}\n");
    for (name, _, _) in &structs {
        let text = if name.starts_with("fmha_bwd") {
            &bwd
        } else {
            &fwd
        };
        src.push_str(&definition(text, name));
        src.push('\n');
    }
    src.push_str("#define F(s, f) std::printf(#s \" \" #f \" %zu %zu\\n\", offsetof(s, f), sizeof(((s*)0)->f))\n");
    src.push_str("int main() {\n");
    for (name, fields, _) in &structs {
        src.push_str(&format!(
            "std::printf(\"{name} %zu\\n\", sizeof({name}));\n"
        ));
        for (f, _, _) in *fields {
            src.push_str(&format!("F({name}, {f});\n"));
        }
    }
    src.push_str("std::printf(\"stream_config %zu\\n\", sizeof(ck_tile::stream_config));\n");
    for (f, _) in StreamConfig::OFFSETS {
        src.push_str(&format!(
            "std::printf(\"stream_config {f} %zu\\n\", offsetof(ck_tile::stream_config, {f}_));\n"
        ));
    }
    src.push_str("}\n");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("ck-fmha-layout");
    fs::create_dir_all(&dir).unwrap();
    let cpp = dir.join("layout.cpp");
    fs::write(&cpp, &src).unwrap();
    let exe = dir.join("layout");
    let out = Command::new("c++")
        .args(["-std=c++17", "-w", "-o"])
        .arg(&exe)
        .arg(&cpp)
        .output()
        .expect("c++");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let cpp: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            // "s f off size" or "s size": keep every number.
            let parts: Vec<&str> = l.split(' ').collect();
            match parts.len() {
                4 => Some((
                    format!("{} {}", parts[0], parts[1]),
                    format!("{} {}", parts[2], parts[3]),
                )),
                2 | 3 => Some((k.to_string(), v.to_string())),
                _ => None,
            }
        })
        .collect();
    let mut checked = 0;
    for (name, fields, size) in &structs {
        assert_eq!(cpp[*name], size.to_string(), "sizeof({name})");
        for (f, off, sz) in *fields {
            assert_eq!(
                cpp[&format!("{name} {f}")],
                format!("{off} {sz}"),
                "{name}::{f}"
            );
            checked += 1;
        }
    }
    assert_eq!(
        cpp["stream_config"],
        std::mem::size_of::<StreamConfig>().to_string()
    );
    for (f, off) in StreamConfig::OFFSETS {
        assert_eq!(
            cpp[&format!("stream_config {f}")],
            off.to_string(),
            "stream_config::{f}_"
        );
    }
    eprintln!(
        "{checked} fields of {} structs agree with C++",
        structs.len()
    );
}

#[test]
fn the_bindings_kept_for_builds_without_ck_are_ck_2025s() {
    let Some(ck) = ck() else { return };
    if !ck.ends_with("ck-2025-11") {
        eprintln!("SKIPPED: built from {}, not CK 2025-11", ck.display());
        return;
    }
    let generated = fs::read_to_string(concat!(env!("OUT_DIR"), "/bindings.rs")).unwrap();
    let kept =
        fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/bindings_ck.rs")).unwrap();
    assert!(
        generated == kept,
        "src/bindings_ck.rs is stale: copy OUT_DIR/bindings.rs over it"
    );
}
