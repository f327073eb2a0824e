//! Lazy dispatchers for C++ consumers, whatever shape CK gives them: CK's
//! own dispatchers (`fmha_*_api.cpp`) are compiled unchanged, and linked
//! with generated *stubs*: one definition of every explicit specialisation
//! the recorded blobs define, each resolving its blob through ck-jit's C
//! ABI (`ck_jit_resolve_prefix` of `ck_jit.h`, or `ck_jit_resolve_with`
//! and the manifest path the macro `CK_JIT_STUB_MANIFEST` gives, when the
//! stubs are compiled with it) on its first call and forwarding every call
//! to it.
//!
//! A stub has the declaration of the specialisation it stands for (its
//! return type, template arguments with the blob's aliases expanded, and
//! parameters, as the blob writes them), so the dispatcher's call links to
//! it exactly as it would to the blob; how many template arguments an
//! entry takes, whether it is called from an `if constexpr` or a
//! per-architecture section, is the compiler's business, not this module's.
//! A dispatcher call for which no blob exists is reported, with its file
//! and line, before anything is written (see [`super::calls`]).
//!
//! After the first call a stub costs a function-local static's guard check
//! and an indirect call.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use super::decl::{self, Specialisation};
use super::error::{io_err, Error};
use super::kind::mangled_template_prefix;
use super::preset::{CkFmhaFiles, Role};
use crate::record::write_if_changed;

/// How many blobs one stub file defines at most. Every file parses CK's
/// headers again, which costs more than its specialisations: one file per
/// group is cheapest (CK 2025-11's 3,932 fwd blobs: 16.6 s of CPU in one
/// file, 68 s in eight).
pub const BLOBS_PER_STUB_FILE: usize = 4096;

/// The stub sources written for a set of blobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stubs {
    /// The files written, sorted.
    pub files: Vec<PathBuf>,
    /// How many specialisations they define in all.
    pub specialisations: usize,
    /// The blobs each dispatcher call runs together (CK's bwd kernels, a
    /// splitkv pair; [`CallCheck::groups`](super::calls::CallCheck)), by
    /// name: what [`Manifest::together`](crate::manifest::Manifest) records.
    pub together: Vec<Vec<String>>,
}

/// Writes stub sources for every recorded blob of `files` into `dir`
/// (created if needed; unchanged files are not rewritten), grouped by
/// manifest group, [`BLOBS_PER_STUB_FILE`] blobs a file.
///
/// Every dispatcher's calls are checked first
/// ([`CkFmhaFiles::check_dispatchers`]): calls no blob answers are one
/// error listing each with its file and line, and nothing is written.
pub fn write_stubs(files: &CkFmhaFiles, dir: &Path) -> Result<Stubs, Error> {
    let check = files.check_dispatchers()?;
    if !check.unresolved.is_empty() {
        return Err(Error::UnresolvedCalls {
            calls: check.unresolved,
        });
    }
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    let together = check.groups;
    let mut by_group: BTreeMap<String, Vec<(&str, &Path)>> = BTreeMap::new();
    for f in &files.files {
        if let Role::Blob(_) = &f.role {
            let name = f
                .path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default();
            let group = files
                .manifest
                .blob(name)
                .map(|b| files.manifest.group_of(b).name.clone())
                .unwrap_or_default();
            by_group.entry(group).or_default().push((name, &f.path));
        }
    }
    let mut out = Stubs {
        together,
        ..Stubs::default()
    };
    for (group, blobs) in by_group {
        for (i, chunk) in blobs.chunks(BLOBS_PER_STUB_FILE).enumerate() {
            let mut sources = Vec::with_capacity(chunk.len());
            for (name, path) in chunk {
                let text = fs::read_to_string(path).map_err(io_err(path))?;
                sources.push((name.to_string(), text));
            }
            let (text, n) = stub_source(&sources).map_err(|e| match e {
                Error::Parse {
                    file: None,
                    line,
                    why,
                } => Error::Parse {
                    file: Some(dir.join(format!("{group}_{i}"))),
                    line,
                    why,
                },
                other => other,
            })?;
            let path = dir.join(format!("ck_jit_stubs_{group}_{i}.cpp"));
            write_if_changed(&path, &text).map_err(io_err(&path))?;
            out.files.push(path);
            out.specialisations += n;
        }
    }
    out.files.sort();
    Ok(out)
}

/// The stub source for `blobs` (name, source text): their `#include`s,
/// then one forwarding definition per specialisation. Returns the text and
/// how many specialisations it defines.
pub fn stub_source(blobs: &[(String, String)]) -> Result<(String, usize), Error> {
    let mut includes: Vec<String> = Vec::new();
    let mut bodies = String::new();
    let mut n = 0;
    for (name, text) in blobs {
        for line in text.lines() {
            let l = line.trim();
            if l.starts_with("#include") && !includes.iter().any(|i| i == l) {
                includes.push(l.to_string());
            }
        }
        for s in decl::specialisations(text)? {
            write_stub(&mut bodies, name, &s);
            n += 1;
        }
    }
    let mut out = String::from(
        "// Generated by ck-jit-build. Every explicit specialisation the blobs\n\
         // below define, as a definition that compiles and loads its blob\n\
         // through ck-jit on first call (ck_jit.h) and forwards to it. Compile\n\
         // with CK's own dispatchers, unchanged, and link with ck-jit-capi.\n\n",
    );
    // The functions of ck_jit.h the stubs call, declared here so that
    // a stub file compiles without the header on its include path.
    out.push_str(
        "#include <cstdio>\n#include <cstdlib>\n\n\
         extern \"C\" {\n\
         typedef void (*ck_jit_fn)(void);\n\
         ck_jit_fn ck_jit_resolve_prefix(const char* blob, const char* symbol_prefix);\n\
         ck_jit_fn ck_jit_resolve_with(const char* manifest, const char* blob, const char* symbol_prefix);\n\
         const char* ck_jit_last_error(void);\n\
         }\n",
    );
    for i in &includes {
        out.push_str(i);
        out.push('\n');
    }
    out.push_str(
        "\n#if !defined(__HIP_DEVICE_COMPILE__)\n\nnamespace {\n\n\
         [[noreturn]] void ck_jit_stub_fail(const char* blob)\n{\n    \
         const char* why = ck_jit_last_error();\n    \
         std::fprintf(stderr, \"ck-jit: blob %s: %s\\n\", blob, why != nullptr ? why : \"cannot be loaded\");\n    \
         std::abort();\n}\n\n\
         template <class F>\nF ck_jit_stub_resolve(const char* blob, const char* prefix)\n{\n    \
         #ifdef CK_JIT_STUB_MANIFEST\n    \
         ck_jit_fn fn = ck_jit_resolve_with(CK_JIT_STUB_MANIFEST, blob, prefix);\n\
         #else\n    \
         ck_jit_fn fn = ck_jit_resolve_prefix(blob, prefix);\n\
         #endif\n    \
         if(fn == nullptr)\n        ck_jit_stub_fail(blob);\n    \
         return reinterpret_cast<F>(fn);\n}\n\n} // namespace\n\n",
    );
    out.push_str(&bodies);
    out.push_str("#endif // !__HIP_DEVICE_COMPILE__\n");
    Ok((out, n))
}

/// One forwarding definition.
fn write_stub(out: &mut String, blob: &str, s: &Specialisation) {
    let args = s.args.join(", ");
    let target = format!("{}<{args}>", s.template);
    let mut params = Vec::new();
    let mut names = Vec::new();
    for (i, p) in s.params.iter().enumerate() {
        let toks: Vec<&str> = p.split_whitespace().collect();
        let named = toks.len() >= 2
            && toks.last().is_some_and(|t| {
                t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
            && toks[toks.len() - 2] != "::";
        if named {
            params.push(p.clone());
            names.push(toks[toks.len() - 1].to_string());
        } else {
            params.push(format!("{p} p{i}"));
            names.push(format!("p{i}"));
        }
    }
    let _ = write!(
        out,
        "// {blob}\ntemplate <>\n{} {target}({})\n{{\n    \
         static const auto fn = ck_jit_stub_resolve<decltype(&{target})>(\"{blob}\", \"{}\");\n    \
         return fn({});\n}}\n\n",
        s.returns,
        params.join(", "),
        mangled_template_prefix(&s.template),
        names.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_specialisation_becomes_a_forwarder_with_its_own_declaration() {
        let blob = "#include \"fmha_fwd.hpp\"\n\
            using fmha_mask_0 = ck_tile::SimplifiedGenericAttentionMask<true>;\n\
            using trait_0 = fmha_fwd_traits_<128, FmhaFwdBf16, fmha_mask_0>;\n\
            template<>\nfloat fmha_fwd_<trait_0, ck_tile::gfx9_t>(const ck_tile::stream_config& s, fmha_fwd_args a)\n{ return 1; }\n\
            template<>\nstd::string fmha_fwd_get_name_<trait_0, ck_tile::gfx9_t>()\n{ return {}; }\n\
            template<>\nvoid fmha_x_<trait_0>(const ck_tile::stream_config&, int)\n{}\n";
        let (text, n) = stub_source(&[("b1".into(), blob.into())]).unwrap();
        assert_eq!(n, 3);
        assert!(text.contains("#include \"fmha_fwd.hpp\"\n"), "{text}");
        assert!(text.contains(
            "template <>\nfloat fmha_fwd_<fmha_fwd_traits_<128,FmhaFwdBf16,ck_tile::SimplifiedGenericAttentionMask<true>>, ck_tile::gfx9_t>(const ck_tile :: stream_config & s, fmha_fwd_args a)\n"
        ), "{text}");
        assert!(
            text.contains("(\"b1\", \"_Z9fmha_fwd_I\");\n    return fn(s, a);"),
            "{text}"
        );
        assert!(
            text.contains("(\"b1\", \"_Z18fmha_fwd_get_name_I\");\n    return fn();"),
            "{text}"
        );
        // Unnamed parameters are named so they can be forwarded.
        assert!(
            text.contains("(const ck_tile :: stream_config & p0, int p1)"),
            "{text}"
        );
        assert!(text.contains("return fn(p0, p1);"), "{text}");
    }
}
