//! Rewriting CK's API dispatchers for C++ consumers: each direct call of a
//! blob's template (`fmha_fwd_<trait_>(s, a)`, the split-KV pair
//! `fmha_fwd_splitkv_<traits_, traits2_>(s, a)`, the three backward kernels
//! `fmha_bwd_<dot_do_o_trait_, dq_dk_dv_trait_, convert_dq_trait_>(s, a)`,
//! `fmha_fwd_appendkv_<trait_>(s, a)`) becomes a call through ck-jit's C
//! ABI (`ck_jit_resolve("<blob>")` from `ck_jit.h`), the blob found by
//! matching the call's template arguments to the `using trait_0 = ...;`
//! each blob declares.
//!
//! The rewrite changes nothing else in the file. A call that matches no
//! blob is an error naming its line and arguments, never skipped. The
//! parser never panics: malformed input is an [`Error::Parse`].

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use super::cpp::{self, is_punct, matching_angle, matching_paren, split_commas, Tok, Token};
use super::decl::{lex, parse_err, using_decl};
use super::error::{io_err, Error};
use super::kind::Kind;

/// Every blob's declared traits, to resolve dispatcher calls.
///
/// Built from blob sources: each `template <> ... <entry><ALIAS>(...)`
/// specialisation at namespace scope gives the normalised type `ALIAS`
/// names (through the file's namespace-scope `using` declarations) and the
/// blob kind of the entry.
///
/// # Example
///
/// ```
/// use ck_jit_build::ck::BlobIndex;
///
/// let mut index = BlobIndex::new();
/// index.add_source(
///     "fmha_fwd_d64_fp16_batch_b128x64x32x64x32x64_r4x1x1_w32x32x16_qr_vr",
///     "using fmha_mask_0 = ck_tile::SimplifiedGenericAttentionMask<false>;\n\
///      using trait_0 = fmha_fwd_traits_<64, FmhaFwdFp16, fmha_mask_0>;\n\
///      template<> float fmha_fwd_<trait_0>(const ck_tile::stream_config& s, fmha_fwd_args a) { return 0; }\n",
/// )?;
/// assert_eq!(index.len(), 1);
/// # Ok::<(), ck_jit_build::ck::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct BlobIndex {
    by_traits: HashMap<String, (String, Kind)>,
}

/// The blob functions CK defines per kind, to recognise specialisations.
fn blob_function_kind(name: &str) -> Option<Kind> {
    for kind in Kind::ALL {
        let base = kind.traits_template().trim_end_matches("traits_");
        // `fmha_fwd_` -> fmha_fwd_, fmha_fwd_oneshot_, fmha_fwd_get_name_.
        if name == base
            || name
                .strip_prefix(base)
                .is_some_and(|rest| matches!(rest, "oneshot_" | "get_name_"))
        {
            return Some(kind);
        }
    }
    None
}

/// A dispatcher-level call and the blob kinds of its template arguments.
fn dispatch_call(name: &str) -> Option<&'static [Kind]> {
    match name {
        "fmha_fwd_" => Some(&[Kind::Fwd]),
        "fmha_fwd_appendkv_" => Some(&[Kind::FwdAppendkv]),
        "fmha_fwd_splitkv_" => Some(&[Kind::FwdSplitkv, Kind::FwdSplitkvCombine]),
        "fmha_bwd_" => Some(&[Kind::BwdDotDoO, Kind::BwdDqDkDv, Kind::BwdConvertDq]),
        _ => None,
    }
}

impl BlobIndex {
    /// An empty index.
    pub fn new() -> BlobIndex {
        BlobIndex::default()
    }

    /// How many distinct traits are indexed.
    pub fn len(&self) -> usize {
        self.by_traits.len()
    }

    /// Whether nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.by_traits.is_empty()
    }

    /// The blob declaring `traits` (in normal form), with its kind.
    pub fn lookup(&self, traits: &str) -> Option<(&str, Kind)> {
        self.by_traits.get(traits).map(|(n, k)| (n.as_str(), *k))
    }

    /// Indexes the blob at `path` (named after its file stem).
    pub fn add_file(&mut self, path: &Path) -> Result<(), Error> {
        let text = fs::read_to_string(path).map_err(io_err(path))?;
        let stem = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| Error::FileName {
                path: path.to_path_buf(),
                why: "has no UTF-8 file stem".into(),
            })?;
        self.add_source(stem, &text).map_err(|e| e.in_file(path))
    }

    /// Indexes blob `name` whose source is `src`. A source declaring no
    /// blob specialisation adds nothing; two blobs declaring the same
    /// traits are an error.
    pub fn add_source(&mut self, name: &str, src: &str) -> Result<(), Error> {
        let toks = lex(src)?;
        let mut aliases: HashMap<&str, (usize, usize)> = HashMap::new();
        let mut depth = 0usize;
        let mut i = 0;
        let mut found: Vec<(String, Kind)> = Vec::new();
        while i < toks.len() {
            let t = &toks[i];
            let text = t.text(src);
            match (t.kind, text) {
                (Tok::Punct, "{") => depth += 1,
                (Tok::Punct, "}") => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| parse_err(t.line, "unbalanced '}'"))?;
                }
                (Tok::Ident, "using") if depth == 0 => {
                    if let Some((name_at, range, next)) = using_decl(src, &toks, i) {
                        aliases.insert(toks[name_at].text(src), range);
                        i = next;
                        continue;
                    }
                }
                (Tok::Ident, "template")
                    if depth == 0
                        && is_punct(src, toks.get(i + 1), "<")
                        && is_punct(src, toks.get(i + 2), ">") =>
                {
                    // `template <> RET NAME<ARGS>(`: find NAME before `(`.
                    let mut j = i + 3;
                    while let Some(tj) = toks.get(j).filter(|_| j - i < cpp::MAX_SPAN_TOKENS) {
                        if tj.kind == Tok::Punct && matches!(tj.text(src), ";" | "{" | "(") {
                            break;
                        }
                        if tj.kind == Tok::Ident && is_punct(src, toks.get(j + 1), "<") {
                            if let Some(kind) = blob_function_kind(tj.text(src)) {
                                let close = matching_angle(src, &toks, j + 1).ok_or_else(|| {
                                    parse_err(tj.line, "unbalanced '<' in a specialisation")
                                })?;
                                let lookup = |n: &str| {
                                    aliases
                                        .get(n)
                                        .and_then(|&(a, b)| toks.get(a..b))
                                        .map(|s| (s, src))
                                };
                                let inner = toks.get(j + 2..close).unwrap_or(&[]);
                                let traits = cpp::normalize(src, inner, &lookup)
                                    .map_err(|why| parse_err(tj.line, why))?;
                                found.push((traits, kind));
                                j = close;
                            }
                        }
                        j += 1;
                    }
                    i = j;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        found.sort();
        found.dedup();
        for (traits, kind) in found {
            if let Some((first, _)) = self.by_traits.get(&traits) {
                if first != name {
                    return Err(Error::DuplicateTraits {
                        traits,
                        first: first.clone(),
                        second: name.to_string(),
                    });
                }
                continue;
            }
            self.by_traits.insert(traits, (name.to_string(), kind));
        }
        Ok(())
    }
}

/// One rewritten call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RewrittenCall {
    /// 1-based line of the call in the original.
    pub line: usize,
    /// The dispatcher template called (`fmha_fwd_`, `fmha_bwd_`, ...).
    pub call: String,
    /// The blobs it now resolves, in template-argument order.
    pub blobs: Vec<String>,
}

/// A rewritten dispatcher.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The new source.
    pub text: String,
    /// Every call rewritten, in source order.
    pub calls: Vec<RewrittenCall>,
}

/// Helpers the rewritten calls use, inserted once before the first
/// declaration. `ck_jit.h` comes with the runtime.
const PRELUDE: &str = r#"// ck-jit: calls of blob templates below resolve their blob through
// ck_jit_resolve() (ck_jit.h) on first use and keep the pointer per call site.
#include "ck_jit.h"
#include <atomic>
#include <cstdio>
#include <iostream>

namespace ck_jit_dispatch {
// The blob's entry point, resolved on the first call through `slot` and
// kept there; a failed resolve is reported on stderr and retried next call.
template <typename F>
inline F resolve(std::atomic<ck_jit_fn>& slot, const char* blob) noexcept
{
    ck_jit_fn f = slot.load(std::memory_order_acquire);
    if(f == nullptr)
    {
        f = ck_jit_resolve(blob);
        if(f == nullptr)
        {
            const char* e = ck_jit_last_error();
            std::fprintf(stderr, "ck-jit: cannot load blob '%s': %s\n", blob, e != nullptr ? e : "unknown error");
            return nullptr;
        }
        slot.store(f, std::memory_order_release);
    }
    return reinterpret_cast<F>(f);
}
} // namespace ck_jit_dispatch

"#;

/// Rewrites the CK API dispatcher `src` so that every call of a blob
/// template resolves its blob through ck-jit's C ABI, blobs found in
/// `index`.
///
/// Each call becomes an immediately invoked lambda with a function-local
/// `static std::atomic<ck_jit_fn>` per blob (constant-initialised, so
/// thread-safe without a guard; a failed resolve is retried on the next
/// call rather than cached): the warm path is one acquire load and an
/// indirect call. The function pointer type is
/// `decltype(&<entry><ARG>)`, taken from the template's declaration in
/// CK's header, so it always matches the blob's definition. What each call
/// becomes:
///
/// - `fmha_fwd_<T>(s, a)`, `fmha_fwd_appendkv_<T>(s, a)`: the blob's `float`
///   launcher, `-1` when it cannot be loaded (CK's "no kernel" value).
/// - `fmha_bwd_<D, Q, C>(s, a)`: the three blobs' `float` launchers in
///   order, their times summed (CK times the three as one launch).
/// - `fmha_fwd_splitkv_<T, C>(s, a)`: the two blobs' `_oneshot_` launchers
///   in one `ck_tile::launch_kernel`, as CK's own `fmha_fwd_splitkv_` does.
///
/// # Errors
///
/// [`Error::UnmatchedCall`] naming the line and the normalised traits for
/// a call no blob declares, [`Error::WrongKind`] when the blob declaring
/// them is of another kind;
/// [`Error::Parse`] for unbalanced or unexpected syntax.
///
/// # Example
///
/// ```
/// use ck_jit_build::ck::{rewrite_dispatcher, BlobIndex};
///
/// let mut index = BlobIndex::new();
/// index.add_source("fmha_fwd_d64_x", "using trait_0 = fmha_fwd_traits_<64, 128/2>;\n\
///     template<> float fmha_fwd_<trait_0>(const ck_tile::stream_config&, fmha_fwd_args) { return 0; }")?;
/// let api = "float fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config& s) {\n\
///     if(t.hdim_q <= 64) { using trait_ = fmha_fwd_traits_<64, 64>; return fmha_fwd_<trait_>(s, a); }\n\
///     return -1; }";
/// let out = rewrite_dispatcher(api, &index)?;
/// assert_eq!(out.calls[0].blobs, ["fmha_fwd_d64_x"]);
/// assert!(out.text.contains("ck_jit_resolve") && out.text.contains("\"fmha_fwd_d64_x\""));
///
/// let api = api.replace("<64, 64>", "<64, 32>");
/// let err = rewrite_dispatcher(&api, &index).unwrap_err().to_string();
/// assert!(err.contains("line 2") && err.contains("fmha_fwd_traits_<64,32>"), "{err}");
/// # Ok::<(), ck_jit_build::ck::Error>(())
/// ```
pub fn rewrite_dispatcher(src: &str, index: &BlobIndex) -> Result<Rewritten, Error> {
    let toks = lex(src)?;
    // Innermost scope last; each maps an alias to its type's token range.
    let mut scopes: Vec<HashMap<&str, (usize, usize)>> = vec![HashMap::new()];
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut calls = Vec::new();
    let mut first_decl: Option<usize> = None;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let text = t.text(src);
        if t.kind != Tok::Preproc && first_decl.is_none() {
            first_decl = Some(i);
        }
        match (t.kind, text) {
            (Tok::Punct, "{") => scopes.push(HashMap::new()),
            (Tok::Punct, "}") => {
                if scopes.len() <= 1 {
                    return Err(parse_err(t.line, "unbalanced '}'"));
                }
                scopes.pop();
            }
            (Tok::Ident, "using") => {
                if let Some((name_at, range, next)) = using_decl(src, &toks, i) {
                    if let Some(scope) = scopes.last_mut() {
                        scope.insert(toks[name_at].text(src), range);
                    }
                    i = next;
                    continue;
                }
            }
            (Tok::Ident, name) if is_punct(src, toks.get(i + 1), "<") => {
                if let Some(kinds) = dispatch_call(name) {
                    let qualified_member = i > 0
                        && (is_punct(src, toks.get(i - 1), ".")
                            || is_punct(src, toks.get(i - 1), "->"));
                    let close = matching_angle(src, &toks, i + 1);
                    let paren = close.filter(|&c| is_punct(src, toks.get(c + 1), "("));
                    if let (false, Some(close), Some(_)) = (qualified_member, close, paren) {
                        let end = matching_paren(src, &toks, close + 1).ok_or_else(|| {
                            parse_err(t.line, format!("unbalanced '(' in the call of {name}"))
                        })?;
                        let (code, call) =
                            rewrite_call(src, &toks, &scopes, index, i, close, end, kinds)?;
                        let start = t.start;
                        let stop = toks[end].end;
                        edits.push((start, stop, code));
                        calls.push(call);
                        i = end + 1;
                        continue;
                    }
                }
            }
            _ => {}
        }
        i += 1;
    }
    if scopes.len() != 1 {
        let line = toks.last().map_or(1, |t| t.line);
        return Err(parse_err(line, "unbalanced '{' at the end of the file"));
    }
    let mut out = String::with_capacity(src.len() + edits.len() * 400 + PRELUDE.len());
    let mut at = 0;
    if !edits.is_empty() {
        // Before the first declaration, at the start of its line.
        let pos = first_decl
            .and_then(|k| toks.get(k))
            .map_or(0, |t| src[..t.start].rfind('\n').map_or(0, |n| n + 1));
        out.push_str(&src[..pos]);
        out.push_str(PRELUDE);
        at = pos;
    }
    for (start, stop, code) in edits {
        out.push_str(&src[at..start]);
        out.push_str(&code);
        at = stop;
    }
    out.push_str(&src[at..]);
    Ok(Rewritten { text: out, calls })
}

/// The replacement of the call `toks[name..=end]` (`close` is its `>`).
#[allow(clippy::too_many_arguments)]
fn rewrite_call(
    src: &str,
    toks: &[Token],
    scopes: &[HashMap<&str, (usize, usize)>],
    index: &BlobIndex,
    name: usize,
    close: usize,
    end: usize,
    kinds: &[Kind],
) -> Result<(String, RewrittenCall), Error> {
    let call_tok = toks[name];
    let call = call_tok.text(src);
    let line = call_tok.line;
    let targs = split_commas(src, toks, name + 2, close);
    if targs.len() != kinds.len() {
        return Err(parse_err(
            line,
            format!(
                "{call}<...> takes {} template arguments here, found {}",
                kinds.len(),
                targs.len()
            ),
        ));
    }
    let args = split_commas(src, toks, close + 2, end);
    if args.len() != 2 {
        return Err(parse_err(
            line,
            format!(
                "expected {call}<...>(stream_config, args), found {} arguments",
                args.len()
            ),
        ));
    }
    let text_of = |(a, b): (usize, usize)| -> &str {
        match (toks.get(a), b.checked_sub(1).and_then(|l| toks.get(l))) {
            (Some(first), Some(last)) if a < b => src.get(first.start..last.end).unwrap_or(""),
            _ => "",
        }
    };
    let lookup = |n: &str| {
        scopes
            .iter()
            .rev()
            .find_map(|s| s.get(n))
            .and_then(|&(a, b)| toks.get(a..b))
            .map(|s| (s, src))
    };
    let mut blobs = Vec::new();
    for (&(a, b), &kind) in targs.iter().zip(kinds) {
        let traits = cpp::normalize(src, toks.get(a..b).unwrap_or(&[]), &lookup)
            .map_err(|why| parse_err(line, why))?;
        match index.lookup(&traits) {
            Some((blob, k)) if k == kind => blobs.push(blob.to_string()),
            Some((blob, found)) => {
                return Err(Error::WrongKind {
                    file: None,
                    line,
                    call: call.to_string(),
                    blob: blob.to_string(),
                    found,
                    needed: kind,
                })
            }
            None => {
                return Err(Error::UnmatchedCall {
                    file: None,
                    line,
                    call: call.to_string(),
                    args: traits,
                })
            }
        }
    }
    let s_arg = text_of(args[0]);
    let a_arg = text_of(args[1]);
    let targ_text: Vec<&str> = targs.iter().map(|&r| text_of(r)).collect();

    // The lambda's body is indented one level deeper than the call's line.
    let line_start = src[..call_tok.start].rfind('\n').map_or(0, |n| n + 1);
    let indent: String = src[line_start..call_tok.start]
        .chars()
        .take_while(|c| *c == ' ' || *c == '\t')
        .collect();
    let body = format!("{indent}    ");
    let mut code = String::from("[&]() -> float {\n");
    for (k, ((kind, blob), targ)) in kinds.iter().zip(&blobs).zip(&targ_text).enumerate() {
        let entry = kind.entry_function();
        code.push_str(&format!(
            "{body}static std::atomic<ck_jit_fn> ck_jit_slot{k}_{{nullptr}};\n\
             {body}using ck_jit_fn{k}_t_ = decltype(&{entry}<{targ}>);\n\
             {body}const ck_jit_fn{k}_t_ f{k}_ =\n\
             {body}    ck_jit_dispatch::resolve<ck_jit_fn{k}_t_>(ck_jit_slot{k}_, \"{blob}\");\n"
        ));
    }
    let missing: Vec<String> = (0..kinds.len())
        .map(|k| format!("f{k}_ == nullptr"))
        .collect();
    code.push_str(&format!(
        "{body}if({}) {{ return -1.0f; }}\n",
        missing.join(" || ")
    ));
    if kinds.iter().all(|k| k.entry_returns_float()) {
        // One statement per kernel: they must launch in this order.
        code.push_str(&format!("{body}float t_ = f0_({s_arg}, {a_arg});\n"));
        for k in 1..kinds.len() {
            code.push_str(&format!("{body}t_ += f{k}_({s_arg}, {a_arg});\n"));
        }
        code.push_str(&format!("{body}return t_;\n"));
    } else {
        let names: Vec<String> = blobs.iter().map(|b| format!("\", \" << \"{b}\"")).collect();
        code.push_str(&format!(
            "{body}if(({s_arg}).log_level_ > 0) {{ std::cout << {} << std::flush; }}\n",
            names.join(" << ")
        ));
        code.push_str(&format!("{body}return ck_tile::launch_kernel({s_arg}"));
        for k in 0..kinds.len() {
            code.push_str(&format!(
                ",\n{body}    [=](const ck_tile::stream_config& s_) {{ f{k}_(s_, {a_arg}); }}"
            ));
        }
        code.push_str(");\n");
    }
    code.push_str(&format!("{indent}}}()"));
    Ok((
        code,
        RewrittenCall {
            line,
            call: call.to_string(),
            blobs,
        },
    ))
}

impl Error {
    /// The error with `file` as the file it is about (parse and unmatched
    /// call errors).
    pub(crate) fn in_file(self, path: &Path) -> Error {
        match self {
            Error::Parse {
                file: None,
                line,
                why,
            } => Error::Parse {
                file: Some(PathBuf::from(path)),
                line,
                why,
            },
            Error::UnmatchedCall {
                file: None,
                line,
                call,
                args,
            } => Error::UnmatchedCall {
                file: Some(PathBuf::from(path)),
                line,
                call,
                args,
            },
            Error::WrongKind {
                file: None,
                line,
                call,
                blob,
                found,
                needed,
            } => Error::WrongKind {
                file: Some(PathBuf::from(path)),
                line,
                call,
                blob,
                found,
                needed,
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOB: &str = "// auto generated\n#include \"fmha_fwd.hpp\"\n\
        using fmha_dtype_0 = FmhaFwdFp16;\n\
        using fmha_mask_0 = ck_tile::SimplifiedGenericAttentionMask<false>;\n\
        namespace { template <bool X> struct kernel_runner { using fmha_trait = int; }; }\n\
        using trait_0 = fmha_fwd_splitkv_combine_traits_<64, fmha_dtype_0, false, 32, 32,\n    true, false, true, false>;\n\
        template<> void fmha_fwd_splitkv_combine_oneshot_<trait_0>(const ck_tile::stream_config& s, fmha_fwd_splitkv_args a) { kernel_runner<true>::run(s, a); }\n\
        template<> std::string fmha_fwd_splitkv_combine_get_name_<trait_0>() { return \"x\"; }\n";

    #[test]
    fn blobs_are_indexed_by_expanded_traits() {
        let mut index = BlobIndex::new();
        index.add_source("combine_blob", BLOB).unwrap();
        assert_eq!(index.len(), 1);
        let (name, kind) = index
            .lookup("fmha_fwd_splitkv_combine_traits_<64,FmhaFwdFp16,false,32,32,true,false,true,false>")
            .unwrap();
        assert_eq!((name, kind), ("combine_blob", Kind::FwdSplitkvCombine));
        // The same file again is fine; another blob with the same traits is not.
        index.add_source("combine_blob", BLOB).unwrap();
        assert!(matches!(
            index.add_source("other", BLOB),
            Err(Error::DuplicateTraits { .. })
        ));
    }

    #[test]
    fn nested_scopes_resolve_the_nearest_alias() {
        let mut index = BlobIndex::new();
        for (name, traits) in [
            ("b_t", "fmha_fwd_traits_<1, true>"),
            ("b_f", "fmha_fwd_traits_<1, false>"),
        ] {
            index
                .add_source(
                    name,
                    &format!("using trait_0 = {traits};\ntemplate<> float fmha_fwd_<trait_0>(const S&, A) {{ return 0; }}"),
                )
                .unwrap();
        }
        let api = "float f(T t, A a, S s) {\n\
            using trait_ = fmha_fwd_traits_<1, false>;\n\
            if (t.x) { using trait_ = fmha_fwd_traits_<1, true>; return fmha_fwd_<trait_>(s, a); }\n\
            return fmha_fwd_<trait_>(s, a);\n}\n";
        let out = rewrite_dispatcher(api, &index).unwrap();
        let blobs: Vec<_> = out
            .calls
            .iter()
            .map(|c| (c.line, c.blobs[0].as_str()))
            .collect();
        assert_eq!(blobs, [(3, "b_t"), (4, "b_f")]);
        assert_eq!(out.text.matches("ck_jit_resolve(blob)").count(), 1);
        assert!(!out.text.contains("fmha_fwd_<trait_>(s, a)"));
    }

    /// xorshift64: deterministic pseudo-random numbers for the fuzz loops.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn random_token_soup_and_mutations_never_panic() {
        const PIECES: &[&str] = &[
            "using",
            "trait_",
            "trait_0",
            "=",
            ";",
            "<",
            ">",
            ",",
            "(",
            ")",
            "{",
            "}",
            "template",
            "fmha_fwd_",
            "fmha_bwd_",
            "fmha_fwd_splitkv_",
            "fmha_fwd_traits_",
            "s",
            "a",
            "64",
            "/",
            "2",
            "::",
            "ck_tile",
            "true",
            "\"",
            "'",
            "/*",
            "*/",
            "//",
            "\n",
            "#include x\n",
            "R\"(",
            ")\"",
            "é",
            "0x1F",
            "-",
            "*",
            "%",
            "float",
            "return",
            ".",
            "->",
        ];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut index = BlobIndex::new();
        index.add_source("b", BLOB).unwrap();
        for _ in 0..3000 {
            let n = rng.below(60);
            let mut s = String::new();
            for _ in 0..n {
                s.push_str(PIECES[rng.below(PIECES.len())]);
                if rng.below(3) == 0 {
                    s.push(' ');
                }
            }
            let _ = rewrite_dispatcher(&s, &index);
            let _ = BlobIndex::new().add_source("x", &s);
        }
        // Byte-level damage to a real-looking blob and dispatcher.
        let api = "float f(T t, A a, S s) { if (t.x) { using traits_ = fmha_fwd_splitkv_traits_<1>;\n\
            using traits2_ = fmha_fwd_splitkv_combine_traits_<64, FmhaFwdFp16, false, 64/2, 64/2, true, false, true, false>;\n\
            return fmha_fwd_splitkv_<traits_, traits2_>(s, a); } return -1; }";
        for source in [BLOB, api] {
            for _ in 0..2000 {
                let mut bytes = source.as_bytes().to_vec();
                for _ in 0..1 + rng.below(4) {
                    let at = rng.below(bytes.len());
                    match rng.below(3) {
                        0 => {
                            bytes.remove(at);
                        }
                        1 => bytes.insert(at, b"<>{}();,/\"'"[rng.below(11)]),
                        _ => bytes[at] = b"<>{}();,/\"'"[rng.below(11)],
                    }
                }
                let s = String::from_utf8_lossy(&bytes);
                let _ = rewrite_dispatcher(&s, &index);
                let _ = BlobIndex::new().add_source("x", &s);
            }
        }
    }

    #[test]
    fn hostile_input_is_an_error_not_a_panic() {
        let index = BlobIndex::new();
        for bad in [
            "}",
            "{",
            "fmha_fwd_<",
            "fmha_fwd_<x>(",
            "fmha_fwd_<x>(s, a)",
            "fmha_fwd_<x, y>(s, a)",
            "using t = fmha_fwd_traits_<1>; fmha_fwd_<t>(s)",
            "\"",
            "/*",
            "using = ;",
            "using a = a; fmha_fwd_<a>(s, a)",
        ] {
            let _ = rewrite_dispatcher(bad, &index);
            let mut i = BlobIndex::new();
            let _ = i.add_source("x", bad);
            let _ = i.add_source("x", &format!("template <> float fmha_fwd_<{bad}>() {{}}"));
        }
        // Every prefix of a real-looking file: no panic.
        let text = format!("{BLOB}\nfloat f() {{ using trait_ = fmha_fwd_traits_<1>; return fmha_fwd_<trait_>(s, a); }}");
        for cut in 0..text.len() {
            if text.is_char_boundary(cut) {
                let _ = rewrite_dispatcher(&text[..cut], &index);
                let _ = BlobIndex::new().add_source("x", &text[..cut]);
            }
        }
    }
}
