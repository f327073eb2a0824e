//! CK's own dispatchers, called from Rust: the C entry points ("glue")
//! over `fmha_fwd(traits, args, stream_config)` and its siblings, the Rust
//! mirrors of the structs they take, and the build that compiles CK's
//! dispatchers, their lazy stubs and the glue into the crate with the `cc`
//! crate.
//!
//! CK's dispatchers take a traits struct holding a `std::string` by value
//! and a `ck_tile::stream_config` by reference: not a C signature. The glue
//! gives each dispatcher the headers declare (a function taking
//! `fmha_*_traits`, `fmha_*_args` and `const ck_tile::stream_config&`,
//! found in the version's headers, not listed here) a C entry point,
//! `ck_jit_<name>(const ck_jit_<traits>*, const <args>*, const
//! ck_tile::stream_config*)`, whose traits struct has the same members with
//! `const char*` for strings and `int` for CK's enums. Everything is read
//! from the headers of the CK version at hand, so a member CK adds is in
//! the glue of that version.
//!
//! No C++ exception leaves a C entry point (CK throws, "HIP Function
//! Failed" among others, and one crossing `extern "C"` into Rust aborts
//! the process): each catches everything its dispatcher throws and
//! returns -1 (a `void` one just returns), leaving the message in
//! `ck_jit_last_error` through `ck_jit_set_last_error` of ck-jit-capi:
//! `what()` of a `std::exception`, else one naming the dispatcher. A call
//! starts by clearing that message, so after it the message is the
//! failure's own, or a lazy stub's whose blob could not be had.
//!
//! The Rust side ([`Glue::rust`]) has the `#[repr(C)]` mirrors of the
//! traits, args and `stream_config` structs and the `extern "C"`
//! declarations; a member type it cannot mirror is an error naming it.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::decl::{struct_fields, Field};
use super::derived;
use super::error::{io_err, Error};
use super::preset::{CkFmhaFiles, FMHA_EXAMPLE_DIR};
use ck_jit_build::assemble::write_if_changed;

/// The header of `ck_tile::stream_config`, relative to the CK tree.
pub const STREAM_CONFIG_HEADER: &str = "include/ck_tile/host/stream_config.hpp";

/// One of CK's structs to mirror in Rust.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StructSpec {
    /// The header that declares it, relative to the CK tree
    /// (`example/ck_tile/01_fmha/fmha_fwd.hpp`).
    pub header: String,
    /// Its C++ name (`fmha_fwd_args`).
    pub cpp: String,
    /// The Rust name (`FmhaFwdArgs`).
    pub rust: String,
    /// `#[repr(C)]`, every member laid out as C++ lays it out (for structs
    /// passed to C++); else a plain struct with `String` for strings and
    /// CK's enums (their enumerator's qualified name).
    pub repr_c: bool,
}

impl StructSpec {
    /// A struct of the FMHA example's header `header` (`fmha_fwd.hpp`),
    /// with the Rust name in CamelCase.
    pub fn fmha(header: &str, cpp: &str, repr_c: bool) -> StructSpec {
        StructSpec {
            header: format!("{FMHA_EXAMPLE_DIR}/{header}"),
            cpp: cpp.to_string(),
            rust: camel(cpp),
            repr_c,
        }
    }
}

/// `fmha_fwd_args` → `FmhaFwdArgs`.
pub fn camel(cpp: &str) -> String {
    cpp.split(['_', ':'])
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// How a member type is mirrored.
#[derive(Debug, Clone, Copy)]
struct Mirror {
    ty: &'static str,
    default: &'static str,
    value: &'static str,
}

fn rust_type(cpp: &str, repr_c: bool) -> Option<Mirror> {
    let m = |ty, default, value| Some(Mirror { ty, default, value });
    match cpp {
        "const void*" => m("*const c_void", "ptr::null()", "ptr"),
        "void*" | "hipStream_t" => m("*mut c_void", "ptr::null_mut()", "ptr"),
        "ck_tile::index_t" | "int" | "int32_t" | "std::int32_t" => m("i32", "0", "int"),
        "ck_tile::long_index_t" | "int64_t" | "std::int64_t" => m("i64", "0", "int"),
        "uint32_t" | "std::uint32_t" | "unsigned" | "unsigned int" => m("u32", "0", "int"),
        "uint64_t" | "std::uint64_t" => m("u64", "0", "int_u64"),
        "float" => m("f32", "0.0", "float"),
        "bool" => m("bool", "false", "bool"),
        "std::variant<std::pair<uint64_t,uint64_t>,std::pair<const void*,const void*>>" => {
            m("DropSeedOffset", "DropSeedOffset::values(0, 0)", "none")
        }
        "std::string" if !repr_c => m("String", "String::new()", "string"),
        // An enum of CK's (`mask_enum`): its enumerator's qualified name.
        t if !repr_c && is_ck_enum(t) => m("String", "String::new()", "enumerator"),
        _ => None,
    }
}

fn is_ck_enum(t: &str) -> bool {
    t.ends_with("_enum") && !t.contains(['<', ' ', '*'])
}

/// The data members of `spec`'s struct in the CK tree `ck`.
fn fields_of(ck: &Path, header: &str, cpp: &str) -> Result<(PathBuf, Vec<Field>), Error> {
    let path = ck.join(header);
    let text = fs::read_to_string(&path).map_err(io_err(&path))?;
    let fields = struct_fields(&text, cpp).map_err(|e| e.in_file(&path))?;
    Ok((path, fields))
}

/// Rust mirrors of `specs` as the CK tree `ck` declares them, every data
/// member in CK's order. With `rules_impl`, each also implements a
/// `CkStruct` trait (`CK_NAME`, `FIELDS`, `LAYOUT` for `#[repr(C)]` ones,
/// `field(name) -> Option<Value>`) that the including module declares,
/// for evaluating dispatch rules over them. The text expects `c_void`,
/// `ptr` and, where a struct has CK's dropout seed, `DropSeedOffset` in
/// scope.
pub fn rust_structs(ck: &Path, specs: &[StructSpec], rules_impl: bool) -> Result<String, Error> {
    let mut out = String::new();
    for s in specs {
        let (path, fields) = fields_of(ck, &s.header, &s.cpp)?;
        let mut mapped = Vec::new();
        for f in &fields {
            let m = rust_type(&f.ty, s.repr_c).ok_or_else(|| Error::Parse {
                file: Some(path.clone()),
                line: f.line,
                why: format!(
                    "{}::{} has type `{}`, which has no Rust mirror",
                    s.cpp, f.name, f.ty
                ),
            })?;
            mapped.push((f, m));
        }
        write_struct(&mut out, s, &mapped, rules_impl);
    }
    Ok(out)
}

/// [`rust_structs`] written to `path` after `preamble` (a comment saying
/// where the file comes from, say); an unchanged file is not rewritten.
///
/// A stamp beside it (`.ck_jit_structs_<file name>.stamp`) records the
/// headers' sizes and mtimes: a rerun that finds them, the specs and the
/// file as they were reads no header.
///
/// # Example
///
/// ```no_run
/// use ck_jit_ck::ffi::{write_rust_structs, StructSpec};
/// let spec = StructSpec {
///     header: "example/ck_tile/01_fmha/fmha_fwd.hpp".into(),
///     cpp: "fmha_fwd_args".into(),
///     rust: "FmhaFwdArgs".into(),
///     repr_c: true,
/// };
/// let out = std::path::Path::new(&std::env::var("OUT_DIR")?).join("bindings.rs");
/// write_rust_structs("ck".as_ref(), &[spec], true, "// CK's structs\n", &out)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_rust_structs(
    ck: &Path,
    specs: &[StructSpec],
    rules_impl: bool,
    preamble: &str,
    path: &Path,
) -> Result<(), Error> {
    let mut made_from = format!("{specs:?}\n{rules_impl}\n{preamble}\n");
    let headers: BTreeSet<&str> = specs.iter().map(|s| s.header.as_str()).collect();
    for h in headers {
        let header = ck.join(h);
        let m = fs::metadata(&header).map_err(io_err(&header))?;
        made_from.push_str(&format!("{} {}\n", header.display(), derived::identity(&m)));
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let dir = path.parent().unwrap_or(Path::new("."));
    let stamp = name.and_then(|n| {
        derived::Stamp::new(
            dir,
            &format!("structs_{n}"),
            Some(&derived::digest(&made_from)),
        )
    });
    if stamp.as_ref().and_then(derived::Stamp::load).is_some() {
        return Ok(());
    }
    if let Some(stamp) = &stamp {
        stamp.forget();
    }
    let text = format!("{preamble}{}", rust_structs(ck, specs, rules_impl)?);
    write_if_changed(path, text).map_err(io_err(path))?;
    if let Some(stamp) = stamp {
        stamp.keep(&[path.to_path_buf()], "");
    }
    Ok(())
}

fn write_struct(out: &mut String, s: &StructSpec, fields: &[(&Field, Mirror)], rules_impl: bool) {
    let StructSpec {
        header,
        cpp,
        rust,
        repr_c,
    } = s;
    let header = header.rsplit('/').next().unwrap_or(header);
    let _ = writeln!(
        out,
        "/// CK's `{cpp}` (`{header}`), every data member in CK's order{}.",
        if *repr_c {
            ", laid out as C++ lays it out"
        } else {
            ": what its dispatcher's conditions read"
        }
    );
    if *repr_c {
        out.push_str("#[repr(C)]\n#[derive(Debug, Clone, Copy, PartialEq)]\n");
    } else {
        out.push_str("#[derive(Debug, Clone, PartialEq)]\n");
    }
    let _ = writeln!(out, "pub struct {rust} {{");
    for (f, m) in fields {
        let _ = writeln!(out, "    /// `{} {}`", f.ty, f.name);
        let _ = writeln!(out, "    pub {}: {},", f.name, m.ty);
    }
    out.push_str("}\n\n");
    // Generated for every struct alike, whether or not a derive would do.
    out.push_str("#[allow(clippy::derivable_impls)]\n");
    let _ = writeln!(
        out,
        "impl Default for {rust} {{\n    fn default() -> {rust} {{\n        {rust} {{"
    );
    for (f, m) in fields {
        let d = f.default.as_deref();
        let default = match (d, m.ty) {
            (Some("true"), "bool") => "true",
            (Some("false"), "bool") => "false",
            (Some(d), "i32" | "i64" | "u32" | "u64") if d.parse::<i64>().is_ok() => d,
            _ => m.default,
        };
        let _ = writeln!(out, "            {}: {default},", f.name);
    }
    out.push_str("        }\n    }\n}\n\n");
    if !rules_impl {
        return;
    }
    let _ = writeln!(out, "impl CkStruct for {rust} {{");
    let _ = writeln!(out, "    const CK_NAME: &'static str = \"{cpp}\";");
    out.push_str("    const FIELDS: &'static [&'static str] = &[");
    for (f, _) in fields {
        let _ = write!(out, "\"{}\", ", f.name);
    }
    out.push_str("];\n");
    if *repr_c {
        out.push_str("    const LAYOUT: &'static [(&'static str, usize, usize)] = &[");
        for (f, m) in fields {
            let _ = write!(
                out,
                "(\"{0}\", std::mem::offset_of!({rust}, {0}), std::mem::size_of::<{1}>()), ",
                f.name, m.ty
            );
        }
        out.push_str("];\n");
    }
    out.push_str("    fn field(&self, name: &str) -> Option<Value> {\n        match name {\n");
    for (f, m) in fields {
        let value = match m.value {
            "ptr" => format!(
                "Some(if self.{0}.is_null() {{ Value::Null }} else {{ Value::Ptr }})",
                f.name
            ),
            "int" => format!("Some(Value::Int(i64::from(self.{})))", f.name),
            "int_u64" => format!("i64::try_from(self.{}).ok().map(Value::Int)", f.name),
            "float" => format!("Some(Value::Float(f64::from(self.{})))", f.name),
            "bool" => format!("Some(Value::Bool(self.{}))", f.name),
            "string" => format!("Some(Value::Str(self.{}.clone()))", f.name),
            "enumerator" => format!("Some(Value::Enum(self.{}.clone()))", f.name),
            _ => "None".to_string(),
        };
        let _ = writeln!(out, "            \"{}\" => {value},", f.name);
    }
    out.push_str("            _ => None,\n        }\n    }\n}\n\n");
}

/// A dispatcher a version's headers declare: `RET NAME(TRAITS[&], ARGS,
/// const ck_tile::stream_config&)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dispatcher {
    /// The header, relative to the CK tree.
    pub header: String,
    /// `fmha_fwd`.
    pub name: String,
    /// `float`.
    pub returns: String,
    /// `fmha_fwd_traits`.
    pub traits: String,
    /// `fmha_fwd_args`.
    pub args: String,
}

/// The dispatchers the FMHA headers of the CK tree `ck` declare, sorted by
/// name.
pub fn dispatchers(ck: &Path) -> Result<Vec<Dispatcher>, Error> {
    let example = ck.join(FMHA_EXAMPLE_DIR);
    let mut headers: Vec<PathBuf> = fs::read_dir(&example)
        .map_err(io_err(&example))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "hpp"))
        .collect();
    headers.sort();
    let re = regex_lite::Regex::new(
        r"\b(float|void|int)\s+(fmha_\w+)\s*\(\s*(fmha_\w+_traits)\s*&?\s*\w*\s*,\s*(fmha_\w+_args)\s*\w*\s*,\s*const\s+ck_tile\s*::\s*stream_config\s*&\s*\w*\s*\)\s*;",
    )
    .expect("valid pattern");
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for h in headers {
        let text = fs::read_to_string(&h).map_err(io_err(&h))?;
        let header = format!(
            "{FMHA_EXAMPLE_DIR}/{}",
            h.file_name().and_then(|n| n.to_str()).unwrap_or_default()
        );
        for c in re.captures_iter(&text) {
            let name = c[2].to_string();
            if seen.insert(name.clone()) {
                out.push(Dispatcher {
                    header: header.clone(),
                    name,
                    returns: c[1].to_string(),
                    traits: c[3].to_string(),
                    args: c[4].to_string(),
                });
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The glue of one CK version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glue {
    /// The C++ source of the C entry points. It includes the header of
    /// every dispatcher it wraps; CK's `fmha_fwd.hpp` and `fmha_bwd.hpp`
    /// cannot be included together (both define `FmhaMasks`), so a source
    /// to compile wraps the dispatchers of one header.
    pub cpp: String,
    /// The Rust mirrors and `extern "C"` declarations (`include!` it in a
    /// module with `use std::ffi::{c_char, c_void}; use std::ptr;` and, for
    /// a version whose args carry CK's dropout seed, a `DropSeedOffset`).
    pub rust: String,
    /// The dispatchers it wraps.
    pub dispatchers: Vec<Dispatcher>,
}

/// The C entry points over every dispatcher the FMHA headers of the CK
/// tree `ck` declare (or only those named in `only`, when not empty).
pub fn glue(ck: &Path, only: &[&str]) -> Result<Glue, Error> {
    let ds = selected_dispatchers(ck, only)?;
    let mut cpp = glue_prelude(&ds);
    let mut rust = String::from(
        "// Generated by ck-jit-ck from CK's FMHA headers: C entry points over\n\
         // CK's dispatchers and the structs they take.\n\n",
    );
    let mut specs = vec![StructSpec {
        header: STREAM_CONFIG_HEADER.to_string(),
        cpp: "stream_config".to_string(),
        rust: "StreamConfig".to_string(),
        repr_c: true,
    }];
    let mut externs = String::from("extern \"C\" {\n");
    for d in &ds {
        let c_traits = format!("ck_jit_{}", d.traits);
        let r_traits = camel(&c_traits);
        let assign = traits_mirror(ck, d, &c_traits, &r_traits, &mut cpp, &mut rust)?;
        entry_point(d, &c_traits, &assign, &mut cpp);
        extern_decl(d, &r_traits, &mut externs);
        if !specs.iter().any(|s| s.cpp == d.args) {
            specs.push(StructSpec {
                header: d.header.clone(),
                cpp: d.args.clone(),
                rust: camel(&d.args),
                repr_c: true,
            });
        }
    }
    cpp.push_str("} // extern \"C\"\n");
    externs.push_str("}\n");
    rust.push_str(&rust_structs(ck, &specs, false)?);
    rust.push_str(&externs);
    Ok(Glue {
        cpp,
        rust,
        dispatchers: ds,
    })
}

/// The dispatchers the headers of `ck` declare, only those named in
/// `only` when not empty; a name they do not declare is an error.
fn selected_dispatchers(ck: &Path, only: &[&str]) -> Result<Vec<Dispatcher>, Error> {
    let mut ds = dispatchers(ck)?;
    if !only.is_empty() {
        if let Some(bad) = only.iter().find(|n| !ds.iter().any(|d| d.name == **n)) {
            let have: Vec<&str> = ds.iter().map(|d| d.name.as_str()).collect();
            return Err(Error::SourceTree {
                path: ck.join(FMHA_EXAMPLE_DIR),
                why: format!(
                    "its headers declare no dispatcher '{bad}' (they declare: {})",
                    have.join(", ")
                ),
            });
        }
        ds.retain(|d| only.contains(&d.name.as_str()));
    }
    Ok(ds)
}

/// The start of the C++ side of the glue: the headers that declare the
/// dispatchers, the runtime's error hooks and the helper that records a
/// caught exception, up to the opening of `extern "C"`.
fn glue_prelude(ds: &[Dispatcher]) -> String {
    let mut cpp = String::from(
        "// Generated by ck-jit-ck: C entry points over CK's dispatchers, whose\n\
         // traits (with a std::string) cannot cross a C boundary.\n",
    );
    let headers: BTreeSet<&str> = ds.iter().map(|d| d.header.as_str()).collect();
    for h in &headers {
        let file = h.rsplit('/').next().unwrap_or(h);
        let _ = writeln!(cpp, "#include \"{file}\"");
    }
    cpp.push_str(
        "#include <cstdint>\n#include <exception>\n#include <string>\n\n\
         // ck_jit.h: how many times a lazy stub of this thread had no kernel,\n\
         // and the message ck_jit_last_error returns (NULL clears it).\n\
         extern \"C\" std::uint64_t ck_jit_thread_failures(void);\n\
         extern \"C\" void ck_jit_set_last_error(const char* message);\n\n\
         namespace {\n\n\
         // Leaves \"ck-jit: <dispatcher>: <what>\" for ck_jit_last_error.\n\
         void ck_jit_glue_failed(const char* dispatcher, const char* what) noexcept\n\
         {\n    \
         if(what == nullptr)\n        what = \"an exception without a message\";\n    \
         try\n    {\n        \
         ck_jit_set_last_error((std::string(\"ck-jit: \") + dispatcher + \": \" + what).c_str());\n    \
         }\n    \
         catch(...)\n    {\n        \
         ck_jit_set_last_error(what);\n    \
         }\n\
         }\n\n\
         } // namespace\n\n\
         extern \"C\" {\n\n",
    );
    cpp
}

/// The C mirror of a dispatcher's traits (`c_traits` in C++, `r_traits`
/// in Rust), appended to `cpp` and `rust`; returns the C++ statements
/// that fill CK's traits `x` from the mirror `t`.
fn traits_mirror(
    ck: &Path,
    d: &Dispatcher,
    c_traits: &str,
    r_traits: &str,
    cpp: &mut String,
    rust: &mut String,
) -> Result<String, Error> {
    let (path, fields) = fields_of(ck, &d.header, &d.traits)?;
    let _ = writeln!(cpp, "struct {c_traits}\n{{");
    let _ = writeln!(
        rust,
        "/// `{}` as C passes it: `std::string` members as C strings, CK's\n\
         /// enums as their `int` values.\n#[repr(C)]\n#[derive(Debug, Clone, Copy)]\npub struct {r_traits} {{",
        d.traits
    );
    let mut assign = String::new();
    for f in &fields {
        let (c_ty, r_ty, set) = match f.ty.as_str() {
            "std::string" => (
                "const char*",
                "*const c_char",
                format!(
                    "        x.{0} = t->{0} != nullptr ? t->{0} : \"\";\n",
                    f.name
                ),
            ),
            t if is_ck_enum(t) => (
                "int",
                "i32",
                format!("        x.{0} = static_cast<{t}>(t->{0});\n", f.name),
            ),
            t => {
                let m = rust_type(t, true).ok_or_else(|| Error::Parse {
                    file: Some(path.clone()),
                    line: f.line,
                    why: format!(
                        "{}::{} has type `{t}`, which has no C mirror",
                        d.traits, f.name
                    ),
                })?;
                (t, m.ty, format!("        x.{0} = t->{0};\n", f.name))
            }
        };
        let _ = writeln!(cpp, "    {c_ty} {};", f.name);
        let _ = writeln!(
            rust,
            "    /// `{} {}`\n    pub {}: {r_ty},",
            f.ty, f.name, f.name
        );
        assign.push_str(&set);
    }
    cpp.push_str("};\n\n");
    rust.push_str("}\n\n");
    Ok(assign)
}

/// The C entry point `ck_jit_<dispatcher>`, appended to `cpp`: it fills
/// CK's traits with `assign`, calls the dispatcher and catches what it
/// throws.
fn entry_point(d: &Dispatcher, c_traits: &str, assign: &str, cpp: &mut String) {
    // A launch inside that had no kernel (a `void` one cannot say so)
    // makes the call fail as a missing kernel does: a negative value.
    let returns = matches!(d.returns.as_str(), "float" | "int");
    let call = if returns {
        format!(
            "        const std::uint64_t before = ck_jit_thread_failures();\n        \
             {ret} r = {name}(x, *a, *s);\n        \
             return ck_jit_thread_failures() != before && r >= 0 ? {ret}(-1) : r;\n",
            ret = d.returns,
            name = d.name,
        )
    } else {
        format!("        {}(x, *a, *s);\n        return;\n", d.name)
    };
    let failed = if returns {
        format!("    return {}(-1);\n", d.returns)
    } else {
        String::new()
    };
    // Everything that can throw is inside the `try`: the traits'
    // strings too.
    let _ = write!(
        cpp,
        "{ret} ck_jit_{name}(const {c_traits}* t, const {args}* a, const ck_tile::stream_config* s)\n{{\n    \
         ck_jit_set_last_error(nullptr);\n    \
         try\n    {{\n        \
         {traits} x{{}};\n{assign}{call}    }}\n    \
         catch(const std::exception& e)\n    {{\n        \
         ck_jit_glue_failed(\"{name}\", e.what());\n    }}\n    \
         catch(...)\n    {{\n        \
         ck_jit_set_last_error(\"ck-jit: {name} threw an exception that is not a std::exception\");\n    \
         }}\n{failed}}}\n\n",
        ret = d.returns,
        name = d.name,
        args = d.args,
        traits = d.traits,
    );
}

/// The Rust declaration of the entry point, appended to `externs`.
fn extern_decl(d: &Dispatcher, r_traits: &str, externs: &mut String) {
    let returns = matches!(d.returns.as_str(), "float" | "int");
    let ret = match d.returns.as_str() {
        "float" => " -> f32",
        "int" => " -> i32",
        _ => "",
    };
    let caught = if returns {
        "-1, with its message in `ck_jit_last_error`"
    } else {
        "its message in `ck_jit_last_error`"
    };
    let _ = writeln!(
        externs,
        "    /// CK's `{name}({traits}, {args}, const ck_tile::stream_config&)`;\n    \
         /// a C++ exception it throws is caught: {caught}.\n    \
         pub fn ck_jit_{name}(t: *const {r_traits}, a: *const {r_args}, s: *const StreamConfig){ret};",
        name = d.name,
        traits = d.traits,
        args = d.args,
        r_args = camel(&d.args),
    );
}

/// What [`compile_dispatchers`] built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledDispatchers {
    /// The sources compiled: CK's dispatchers, the stubs, the glue.
    pub sources: Vec<PathBuf>,
    /// The Rust side of the glue, to `include!`.
    pub rust: PathBuf,
    /// The static library's name (`cargo:rustc-link-lib=static=` it is).
    pub library: String,
    /// The dispatchers the glue wraps.
    pub dispatchers: Vec<String>,
    /// The blobs each dispatcher call runs together, by name: what the
    /// manifest written by [`CkFmha::try_write`](super::CkFmha::try_write)
    /// records.
    pub together: Vec<Vec<String>>,
}

/// Compiles CK's dispatchers of `files` unchanged, the lazy stubs of their
/// blobs ([`write_stubs`](super::write_stubs)) and the [`glue`] into the
/// static library `library`, with the `cc` crate and the HIP compiler
/// `compiler`, for the crate whose build script calls it (it prints the
/// `cargo:` link lines). The compile flags are those of the manifest's
/// first group (CK's flags, the architecture, the include directories),
/// so the dispatchers see the blobs' declarations as the blobs do; `extra`
/// flags come last. Writes into `out_dir`: `stubs/`, `ck_jit_glue.rs` and
/// the C++ side of the glue, one `ck_jit_glue_<header>.cpp` per header
/// that declares a wrapped dispatcher (`ck_jit_glue_fmha_fwd.cpp`).
///
/// The stubs resolve blobs through the C ABI's process-wide runtime: the
/// crate depends on `ck-jit-capi` and registers its embedded runtime
/// (`ck_jit_capi::register(ck_jit_runtime())`) before the first call, or
/// the process sets `CK_JIT_MANIFEST`. The HIP runtime (`amdhip64`) is
/// linked by the caller.
pub fn compile_dispatchers(
    files: &CkFmhaFiles,
    compiler: &Path,
    library: &str,
    out_dir: &Path,
    extra: &[&str],
) -> Result<CompiledDispatchers, Error> {
    let ck = files.ck_root.clone().ok_or_else(|| Error::SourceTree {
        path: files.generated_dir.clone(),
        why: "no CK tree is known for these files (generated with source())".into(),
    })?;
    let stubs = super::write_stubs(files, &out_dir.join("stubs"))?;
    let names: Vec<String> = files
        .dispatchers()
        .filter_map(|p| p.file_stem().and_then(|s| s.to_str()).map(String::from))
        .collect();
    // The glue wraps the dispatchers whose sources were generated
    // (`fmha_fwd_api.cpp` defines `fmha_fwd`).
    let all = dispatchers(&ck)?;
    let wanted: Vec<&str> = all
        .iter()
        .filter(|d| names.iter().any(|n| n == &format!("{}_api", d.name)))
        .map(|d| d.name.as_str())
        .collect();
    let g = glue(&ck, &wanted)?;
    let glue_rs = out_dir.join("ck_jit_glue.rs");
    ck_jit_build::assemble::write_if_changed(&glue_rs, &g.rust).map_err(io_err(&glue_rs))?;
    let glue_cpp = write_glue_sources(&ck, &g, out_dir)?;

    let manifest = files.try_manifest()?;
    let group = manifest.groups.first().ok_or_else(|| Error::NoBlobs {
        dir: files.generated_dir.clone(),
    })?;
    let mut build = dispatcher_build(group, &manifest.root, compiler, out_dir);
    for f in extra {
        build.flag(f);
    }
    let mut sources: Vec<PathBuf> = files.dispatchers().map(Path::to_path_buf).collect();
    sources.extend(stubs.files.iter().cloned());
    sources.extend(glue_cpp);
    build.include(ck.join(FMHA_EXAMPLE_DIR));
    for s in &sources {
        build.file(s);
    }
    build
        .try_compile(library)
        .map_err(|e| Error::DispatcherBuild {
            compiler: compiler.to_path_buf(),
            why: e.to_string(),
        })?;
    // What the compiled dispatchers need, whatever the CK version's shape:
    // every blob specialisation they leave undefined has a stub.
    let archive = out_dir.join("ck_jit_obj").join(format!("lib{library}.a"));
    files.check_objects(std::slice::from_ref(&archive), &archive)?;
    Ok(CompiledDispatchers {
        sources,
        rust: glue_rs,
        library: library.to_string(),
        dispatchers: g.dispatchers.iter().map(|d| d.name.clone()).collect(),
        together: stubs.together,
    })
}

/// Writes the C++ side of the glue `g` into `out_dir` and returns the
/// sources' paths: one source per header, as CK's FMHA headers are not
/// made to be included together (`fmha_fwd.hpp` and `fmha_bwd.hpp` both
/// define `FmhaMasks`), as CK's own sources never do.
fn write_glue_sources(ck: &Path, g: &Glue, out_dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut glue_cpp = Vec::new();
    let headers: BTreeSet<&str> = g.dispatchers.iter().map(|d| d.header.as_str()).collect();
    for h in headers {
        let only: Vec<&str> = g
            .dispatchers
            .iter()
            .filter(|d| d.header == h)
            .map(|d| d.name.as_str())
            .collect();
        let stem = Path::new(h)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or(h);
        let path = out_dir.join(format!("ck_jit_glue_{stem}.cpp"));
        ck_jit_build::assemble::write_if_changed(&path, &glue(ck, &only)?.cpp)
            .map_err(io_err(&path))?;
        glue_cpp.push(path);
    }
    Ok(glue_cpp)
}

/// The `cc` build of the dispatchers with `compiler` and the flags of the
/// manifest group `group` (its `{root}` as `root`), without what makes a
/// blob's shared object (`-o`, `-shared`, `-fPIC`, the placeholders).
fn dispatcher_build(
    group: &ck_jit_build::manifest::Group,
    root: &str,
    compiler: &Path,
    out_dir: &Path,
) -> cc::Build {
    let root = Path::new(root);
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .compiler(compiler)
        .cargo_metadata(true)
        .warnings(false)
        .out_dir(out_dir.join("ck_jit_obj"));
    let mut skip_next = false;
    for a in &group.args {
        if skip_next {
            skip_next = false;
            continue;
        }
        match a.as_str() {
            "-o" => skip_next = true,
            "{src}" | "{out}" | "-shared" | "-fPIC" => {}
            a => {
                let a = a.replace("{root}", &root.to_string_lossy());
                build.flag(&a);
            }
        }
    }
    build
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_camel_case() {
        assert_eq!(camel("fmha_fwd_args"), "FmhaFwdArgs");
        assert_eq!(camel("ck_jit_fmha_bwd_traits"), "CkJitFmhaBwdTraits");
        assert_eq!(camel("stream_config"), "StreamConfig");
    }
}
