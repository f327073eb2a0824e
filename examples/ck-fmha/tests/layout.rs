//! The Rust argument structs have the layout of the C++ ones the blobs are
//! compiled against: a probe compiled with the host C++ compiler against
//! the stand-in CK headers prints every field's offset and each struct's
//! size and alignment, and they equal Rust's, field by field.

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::mem::{align_of, size_of};
use std::path::Path;
use std::process::Command;

use ck_fmha::{
    DropSeedOffset, FmhaBwdArgs, FmhaFwdAppendkvArgs, FmhaFwdArgs, FmhaFwdSplitkvArgs, StreamConfig,
};

/// A C++ type, its Rust counterpart's fields, size and alignment, and how a
/// Rust field name is spelled in C++.
struct Layout {
    cpp: &'static str,
    fields: &'static [(&'static str, usize)],
    size: usize,
    align: usize,
    suffix: &'static str,
}

fn layouts() -> Vec<Layout> {
    macro_rules! layout {
        ($cpp:literal, $rust:ty, $suffix:literal) => {
            Layout {
                cpp: $cpp,
                fields: <$rust>::FIELDS,
                size: size_of::<$rust>(),
                align: align_of::<$rust>(),
                suffix: $suffix,
            }
        };
    }
    vec![
        layout!("ck_tile::stream_config", StreamConfig, "_"),
        layout!("fmha_fwd_args", FmhaFwdArgs, ""),
        layout!("fmha_fwd_splitkv_args", FmhaFwdSplitkvArgs, ""),
        layout!("fmha_fwd_appendkv_args", FmhaFwdAppendkvArgs, ""),
        layout!("fmha_bwd_args", FmhaBwdArgs, ""),
        Layout {
            cpp: "fmha_standin::drop_seed_offset_t",
            fields: &[],
            size: size_of::<DropSeedOffset>(),
            align: align_of::<DropSeedOffset>(),
            suffix: "",
        },
    ]
}

#[test]
fn argument_structs_match_the_cpp_declarations_field_by_field() {
    let layouts = layouts();
    let mut src = String::from(
        "#include \"fmha_bwd.hpp\"\n#include \"fmha_fwd.hpp\"\n#include <cstddef>\n#include <cstdio>\n\nint main()\n{\n",
    );
    for l in &layouts {
        for (field, _) in l.fields {
            let _ = writeln!(
                src,
                "    std::printf(\"{0} {1} %zu\\n\", offsetof({0}, {1}{2}));",
                l.cpp, field, l.suffix
            );
        }
        let _ = writeln!(
            src,
            "    std::printf(\"{0} sizeof %zu\\n\", sizeof({0}));\n    std::printf(\"{0} alignof %zu\\n\", alignof({0}));",
            l.cpp
        );
    }
    src.push_str("    return 0;\n}\n");

    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ck-fmha-layout");
    std::fs::create_dir_all(&dir).unwrap();
    let probe_src = dir.join("probe.cpp");
    std::fs::write(&probe_src, &src).unwrap();
    let exe = dir.join("probe");
    let mut cmd = Command::new(common::cxx());
    // offsetof of a struct holding a std::variant is conditionally
    // supported; g++ and clang++ support it.
    cmd.args(["-std=c++17", "-Wall", "-Werror", "-Wno-invalid-offsetof"]);
    for inc in common::standin_includes() {
        cmd.arg("-I").arg(inc);
    }
    let out = cmd.arg(&probe_src).arg("-o").arg(&exe).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success());
    let cpp: BTreeMap<(String, String), usize> = String::from_utf8(run.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut p = l.split(' ');
            let (ty, field, n) = (p.next().unwrap(), p.next().unwrap(), p.next().unwrap());
            ((ty.to_string(), field.to_string()), n.parse().unwrap())
        })
        .collect();

    for l in &layouts {
        let key = |f: &str| (l.cpp.to_string(), f.to_string());
        for (field, offset) in l.fields {
            assert_eq!(cpp[&key(field)], *offset, "{}::{field}", l.cpp);
        }
        assert_eq!(cpp[&key("sizeof")], l.size, "sizeof({})", l.cpp);
        assert_eq!(cpp[&key("alignof")], l.align, "alignof({})", l.cpp);
    }
    // CK's full field lists, not a subset.
    let counts: Vec<usize> = layouts.iter().map(|l| l.fields.len()).collect();
    assert_eq!(counts, [8, 47, 54, 36, 72, 0]);
    assert_eq!(size_of::<DropSeedOffset>(), 24);
}
