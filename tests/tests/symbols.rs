//! Entry points resolved by exact name and by `.dynsym` prefix on objects
//! built by the real C/C++ compiler in the test, including a CK-style
//! Itanium-mangled template specialisation.

use std::process::Command;

use ck_jit_rt::__internals as symbol;
use ck_jit_rt::manifest::SymbolSpec;
use ck_jit_rt::Loaded;
use ck_jit_tests::{call, test_config, Tree};

const CK_STYLE: &str = r#"
namespace ck_tile { struct stream_config { int s; }; }
struct fmha_fwd_args { int x; };
template <int HDim, bool Mask> struct fmha_fwd_traits_ {};
template <typename Trait> float fmha_fwd_(const ck_tile::stream_config&, fmha_fwd_args);
using trait_0 = fmha_fwd_traits_<128, true>;
template <> float fmha_fwd_<trait_0>(const ck_tile::stream_config& s, fmha_fwd_args a) {
    return float(a.x * 2 + s.s);
}
static int helper(int x) { return x; }
extern "C" int plain_entry(int x) { return helper(x) + 100; }
"#;

fn build(t: &Tree, flags: &[&str]) -> std::path::PathBuf {
    let src = t.write("ck_style.cpp", CK_STYLE);
    let out = t.path("ck_style.so");
    let st = Command::new("c++")
        .args(["-O1", "-fPIC", "-shared"])
        .args(flags)
        .arg(&src)
        .arg("-o")
        .arg(&out)
        .status()
        .expect("c++ runs");
    assert!(st.success());
    out
}

#[test]
fn exact_and_prefix_resolution_on_a_real_object() {
    let t = Tree::new("symbols");
    let so = build(&t, &[]);
    let bytes = std::fs::read(&so).unwrap();
    let mangled = symbol::find_prefix(&bytes, "_Z9fmha_fwd_I")
        .unwrap()
        .expect("found by prefix");
    assert!(
        mangled.starts_with("_Z9fmha_fwd_I16fmha_fwd_traits_ILi128ELb1EEEf"),
        "{mangled}"
    );

    let lib = Loaded::open("ck_style", &so, &bytes).unwrap();
    let p = lib
        .resolve(&SymbolSpec::Exact("plain_entry".into()))
        .unwrap();
    assert_eq!(call(p, 1), 101);

    let p = lib
        .resolve(&SymbolSpec::Prefix("_Z9fmha_fwd_I".into()))
        .unwrap();
    #[repr(C)]
    struct Stream {
        s: i32,
    }
    #[repr(C)]
    struct Args {
        x: i32,
    }
    // SAFETY: the specialisation's signature is (const stream_config&, args) -> float.
    let f: extern "C" fn(*const Stream, Args) -> f32 = unsafe { std::mem::transmute(p) };
    assert_eq!(f(&Stream { s: 1 }, Args { x: 20 }), 41.0);

    let err = lib
        .resolve(&SymbolSpec::Prefix("_Z9no_such".into()))
        .unwrap_err();
    assert!(err.to_string().contains("plain_entry"), "{err}");
}

#[test]
fn hidden_visibility_hides_the_entry_and_the_runtime_strips_it() {
    let t = Tree::new("hidden");
    let so = build(&t, &["-fvisibility=hidden"]);
    let bytes = std::fs::read(&so).unwrap();
    assert_eq!(symbol::find_prefix(&bytes, "_Z9fmha_fwd_I").unwrap(), None);

    // Through the runtime, with -fvisibility=hidden in the manifest's flags.
    use ck_jit_build::manifest::{Blob, Group, Manifest};
    t.write("kernels/ck_style.cpp", CK_STYLE);
    let mut m = Manifest::new("t", t.dir.to_string_lossy());
    m.groups.push(Group {
        name: "fwd".into(),
        compiler: "c++".into(),
        args: [
            "-fvisibility=hidden",
            "-fPIC",
            "-shared",
            "{src}",
            "-o",
            "{out}",
        ]
        .map(String::from)
        .to_vec(),
        cwd: None,
        symbol: SymbolSpec::Prefix("_Z9fmha_fwd_I".into()),
        depfile: true,
        family: None,
        neutral: Default::default(),
    });
    m.blobs.push(Blob {
        name: "ck_style".into(),
        source: "kernels/ck_style.cpp".into(),
        group: 0,
        symbol: None,
        meta: Default::default(),
    });
    m.finish().unwrap();
    let rt = t.runtime(&m, test_config());
    assert!(rt.resolve("ck_style", None).is_ok());
    let p = rt
        .resolve("ck_style", Some(&SymbolSpec::Exact("plain_entry".into())))
        .unwrap();
    assert_eq!(call(p, 2), 102);
}

const VIRTUAL: &str = r#"
struct fmha_kernel {
    virtual float run(int x) const;
    virtual ~fmha_kernel();
};
struct fmha_fwd_kernel : fmha_kernel {
    float run(int x) const override;
};
float fmha_kernel::run(int x) const { return float(x); }
fmha_kernel::~fmha_kernel() {}
float fmha_fwd_kernel::run(int x) const { return float(x * 3); }
extern "C" float run_fwd(int x) {
    fmha_fwd_kernel k;
    const fmha_kernel& base = k;
    return base.run(x);
}
"#;

#[test]
fn vtables_and_typeinfo_are_never_chosen_for_a_mangled_prefix() {
    let t = Tree::new("virtual");
    let src = t.write("virtual.cpp", VIRTUAL);
    let so = t.path("virtual.so");
    let st = Command::new("c++")
        .args(["-O1", "-fPIC", "-shared"])
        .arg(&src)
        .arg("-o")
        .arg(&so)
        .status()
        .expect("c++ runs");
    assert!(st.success());
    let bytes = std::fs::read(&so).unwrap();
    let syms = symbol::dynamic_symbols(&bytes).unwrap();
    let is_data = |n: &str| ["_ZTV", "_ZTI", "_ZTS"].iter().any(|p| n.starts_with(p));
    // The object does export them (so the checks below can fail), as data.
    let data: Vec<&str> = syms
        .iter()
        .filter(|s| is_data(&s.name))
        .map(|s| s.name.as_str())
        .collect();
    for want in [
        "_ZTV11fmha_kernel",
        "_ZTI11fmha_kernel",
        "_ZTS11fmha_kernel",
    ] {
        assert!(data.contains(&want), "{want} not in {syms:?}");
    }
    assert!(syms
        .iter()
        .filter(|s| is_data(&s.name))
        .all(|s| !s.is_function));
    // No prefix of their names selects one: "_Z", "_ZT", "_ZTV", ... up to
    // the full name.
    for name in &data {
        for end in 2..=name.len() {
            let prefix = &name[..end];
            if let Some(found) = symbol::find_prefix(&bytes, prefix).unwrap() {
                assert!(!is_data(&found), "{prefix} chose {found}");
            }
        }
    }
    assert_eq!(symbol::find_prefix(&bytes, "_ZTV").unwrap(), None);
    let run = symbol::find_prefix(&bytes, "_Z")
        .unwrap()
        .expect("a function");
    assert!(run.starts_with("_ZN"), "{run}");

    // The loader uses the same rule, and its "not found" message lists
    // functions only.
    let lib = Loaded::open("virtual", &so, &bytes).unwrap();
    let err = lib.resolve(&SymbolSpec::Prefix("_ZTV".into())).unwrap_err();
    let text = err.to_string();
    assert!(!data.iter().any(|d| text.contains(d)), "{text}");
    assert!(text.contains("run_fwd"), "{text}");
    let p = lib.resolve(&SymbolSpec::Exact("run_fwd".into())).unwrap();
    // SAFETY: run_fwd is extern "C" float(int).
    let f: extern "C" fn(i32) -> f32 = unsafe { std::mem::transmute(p) };
    assert_eq!(f(5), 15.0);
}
