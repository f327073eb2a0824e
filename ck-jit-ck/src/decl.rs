//! What CK's sources *declare*, read instead of guessed from file names:
//! the template declarations of a version's headers (each traits struct's
//! parameter names, each entry template's parameters), the explicit
//! specialisations each generated blob defines (its entry and siblings such
//! as `_oneshot_` or `_get_name_`, with their template arguments), and the
//! generator's own symbol tables (`codegen/cpp_symbol_map.py`), which give
//! the short names CK's code generator uses for C++ values.
//!
//! Nothing here knows a CK version: a new traits parameter, a new entry
//! template or a new direction shows up in the declarations and flows into
//! the metadata unchanged. Input is untrusted: every function returns an
//! error or a best effort, never panics.

use std::collections::{BTreeMap, HashMap};

use super::cpp::{self, is_punct, matching_angle, matching_paren, split_commas, Tok, Token};
use super::error::Error;
use super::guard::Skeleton;

/// A `template <...> struct NAME` or `template <...> RET NAME(...)`
/// declaration (not a specialisation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateDecl {
    /// The template's name.
    pub name: String,
    /// Whether it declares a class template (else a function template).
    pub is_class: bool,
    /// Its parameters, in order.
    pub params: Vec<TemplateParam>,
    /// A function template's definition as written, `template` to the
    /// closing `}` of its body, where this declaration defines it (a
    /// header's launch template: what it calls is what a dispatcher
    /// calling it needs).
    pub definition: Option<String>,
}

/// One template parameter: its name, whether it takes a type, and its
/// default argument, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateParam {
    /// The declared name (`HDim_`, `kHasLogitsSoftCap_`, `Arch`).
    pub name: String,
    /// Whether it takes a type (`typename X`, `class X`, a template
    /// template parameter) rather than a value (`bool X`, `index_t X`).
    pub is_type: bool,
    /// The default argument, normalised (`false`, `void`).
    pub default: Option<String>,
}

impl TemplateParam {
    /// The name without CK's trailing underscore (`HDim_` -> `HDim`).
    pub fn key(&self) -> &str {
        self.name.strip_suffix('_').unwrap_or(&self.name)
    }
}

/// An explicit specialisation a source defines at namespace scope:
/// `template <> RET NAME<ARGS...>(PARAMS)`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Specialisation {
    /// The specialised template (`fmha_fwd_`, `fmha_fwd_oneshot_`).
    pub template: String,
    /// Each template argument in normal form, aliases of the file expanded.
    pub args: Vec<String>,
    /// 1-based line of the `template`.
    pub line: usize,
    /// Byte range of the declaration, from `template` to the closing `)`
    /// of its parameters.
    pub span: (usize, usize),
    /// The return type as written (`float`, `std::string`).
    pub returns: String,
    /// Each function parameter as written (`const ck_tile::stream_config& s`).
    pub params: Vec<String>,
}

/// A data member of a struct (`ck_tile::index_t seqlen_q;`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its type in normal form (`ck_tile::index_t`, `const void*`,
    /// `std::variant<std::pair<uint64_t,uint64_t>,...>`).
    pub ty: String,
    /// Its name.
    pub name: String,
    /// Its default member initializer as written, if any (`nullptr`).
    pub default: Option<String>,
    /// The line of its name.
    pub line: usize,
}

/// The data members of `struct NAME { ... };` in a header, in declaration
/// order (member functions, `static` members, nested types and aliases
/// left out): what a binding of CK's argument and traits structs
/// (`fmha_fwd_args`, `fmha_fwd_traits`) must mirror, read from the
/// version at hand.
///
/// Preprocessor conditionals inside the struct are followed as far as they
/// can be without a preprocessor: an `#if 0` branch is left out, its
/// `#else` kept; of any other conditional the first branch is kept.
pub fn struct_fields(src: &str, name: &str) -> Result<Vec<Field>, Error> {
    let toks = without_directives(src, &lex(src)?);
    let open = (0..toks.len())
        .find(|&i| {
            toks[i].kind == Tok::Ident
                && matches!(toks[i].text(src), "struct" | "class")
                && toks.get(i + 1).is_some_and(|n| n.text(src) == name)
                && is_punct(src, toks.get(i + 2), "{")
        })
        .map(|i| i + 2)
        .ok_or_else(|| parse_err(0, format!("no definition of struct {name}")))?;
    let mut out = Vec::new();
    let mut depth = 0i64;
    let mut start = open + 1;
    for k in open..toks.len() {
        let t = &toks[k];
        if t.kind != Tok::Punct {
            continue;
        }
        match t.text(src) {
            "(" | "[" | "{" | "<" => depth += 1,
            ")" | "]" | ">" => depth -= 1,
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return Ok(out);
                }
                if depth == 1 && !is_punct(src, toks.get(k + 1), ";") {
                    // The end of a member function's body.
                    start = k + 1;
                }
            }
            ";" if depth == 1 => {
                if let Some(f) = member(src, &toks[start..k])? {
                    out.push(f);
                }
                start = k + 1;
            }
            _ => {}
        }
    }
    Err(parse_err(
        toks[open].line,
        format!("struct {name} is not closed"),
    ))
}

/// `toks` without preprocessor directives and without the branches of
/// conditionals that are left out (see [`struct_fields`]).
fn without_directives(src: &str, toks: &[Token]) -> Vec<Token> {
    // Per open conditional: whether its current branch is left out.
    let mut skipped: Vec<bool> = Vec::new();
    let mut out = Vec::with_capacity(toks.len());
    for t in toks {
        if t.kind != Tok::Preproc {
            if !skipped.iter().any(|s| *s) {
                out.push(*t);
            }
            continue;
        }
        let d = t.text(src).trim_start_matches('#').trim_start();
        let word = d
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .next()
            .unwrap_or("");
        let cond = d[word.len()..].trim_start();
        match word {
            "if" => skipped.push(
                cond.starts_with('0')
                    && !cond[1..].starts_with(|c: char| c.is_ascii_alphanumeric()),
            ),
            "ifdef" | "ifndef" => skipped.push(false),
            "else" | "elif" | "elifdef" | "elifndef" => {
                if let Some(top) = skipped.last_mut() {
                    *top = !*top;
                }
            }
            "endif" => {
                skipped.pop();
            }
            _ => {}
        }
    }
    out
}

/// One member declaration (without its `;`) as a data member, if it is one.
fn member(src: &str, toks: &[Token]) -> Result<Option<Field>, Error> {
    let Some(first) = toks.first() else {
        return Ok(None);
    };
    if first.kind == Tok::Preproc
        || matches!(
            first.text(src),
            "static" | "using" | "typedef" | "struct" | "class" | "enum" | "friend" | "template"
        )
    {
        return Ok(None);
    }
    // The declarator ends at a top-level `=` or `{` (a default).
    let mut depth = 0i64;
    let mut end = toks.len();
    for (k, t) in toks.iter().enumerate() {
        match t.text(src) {
            "<" | "[" => depth += 1,
            ">" | "]" => depth -= 1,
            "(" if depth == 0 => return Ok(None), // a member function
            "=" | "{" if depth == 0 => {
                end = k;
                break;
            }
            _ => {}
        }
    }
    let decl = &toks[..end];
    let Some((name_tok, ty)) = decl.split_last() else {
        return Ok(None);
    };
    if name_tok.kind != Tok::Ident || ty.is_empty() {
        return Ok(None);
    }
    let ty = plain(src, ty).map_err(|why| parse_err(name_tok.line, why))?;
    let default = (end < toks.len()).then(|| {
        let rest = &toks[end + usize::from(toks[end].text(src) == "=")..];
        let text: Vec<&str> = rest.iter().map(|t| t.text(src)).collect();
        let text = text.join(" ");
        let text = text.trim();
        match text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
            Some(braced) => braced.trim().to_string(),
            None => text.to_string(),
        }
    });
    Ok(Some(Field {
        ty,
        name: name_tok.text(src).to_string(),
        default,
        line: name_tok.line,
    }))
}

/// `src`'s tokens, a lexing error as [`Error::Parse`].
pub(crate) fn lex(src: &str) -> Result<Vec<Token>, Error> {
    cpp::tokenize(src).map_err(|e| Error::Parse {
        file: None,
        line: e.line,
        why: e.why,
    })
}

/// An [`Error::Parse`] at `line` of a file not yet named.
pub(crate) fn parse_err(line: usize, why: impl Into<String>) -> Error {
    Error::Parse {
        file: None,
        line,
        why: why.into(),
    }
}

/// The normal form of a type that uses no alias of the file.
fn plain<'a>(src: &'a str, toks: &[Token]) -> Result<String, String> {
    let none = |_: &str| -> Option<(&'a [Token], &'a str)> { None };
    cpp::normalize(src, toks, &none)
}

/// Every template declaration in a header (`fmha_fwd.hpp`, ...), partial
/// and explicit specialisations left out.
pub fn template_declarations(src: &str) -> Result<Vec<TemplateDecl>, Error> {
    let toks = lex(src)?;
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if !(t.kind == Tok::Ident
            && t.text(src) == "template"
            && is_punct(src, toks.get(i + 1), "<"))
        {
            i += 1;
            continue;
        }
        let Some(close) = matching_angle(src, &toks, i + 1) else {
            i += 1;
            continue;
        };
        if close == i + 2 {
            // `template <>`: a specialisation, not a declaration.
            i = close + 1;
            continue;
        }
        let mut params = Vec::new();
        for (a, b) in split_commas(src, &toks, i + 2, close) {
            let part = &toks[a..b];
            let eq = part.iter().position(|t| is_punct(src, Some(t), "="));
            let head = &part[..eq.unwrap_or(part.len())];
            let Some(name) = head.iter().rev().find(|t| t.kind == Tok::Ident) else {
                continue;
            };
            let default = match eq {
                Some(e) => {
                    Some(plain(src, &part[e + 1..]).map_err(|why| parse_err(name.line, why))?)
                }
                None => None,
            };
            let is_type = head
                .first()
                .is_some_and(|t| matches!(t.text(src), "typename" | "class" | "template"));
            params.push(TemplateParam {
                name: name.text(src).to_string(),
                is_type,
                default,
            });
        }
        // What is declared: `struct NAME` / `class NAME`, or a function
        // whose name is the identifier before the first `(`.
        let mut j = close + 1;
        let mut decl = None;
        let mut definition = None;
        while let Some(tj) = toks.get(j).filter(|_| j - close < cpp::MAX_SPAN_TOKENS) {
            let text = tj.text(src);
            if tj.kind == Tok::Punct && matches!(text, ";" | "{" | "=") {
                break;
            }
            if tj.kind == Tok::Ident && matches!(text, "struct" | "class" | "union") {
                if let Some(n) = toks.get(j + 1).filter(|n| n.kind == Tok::Ident) {
                    // `struct NAME<...>` is a partial specialisation.
                    if !is_punct(src, toks.get(j + 2), "<") {
                        decl = Some((n.text(src).to_string(), true));
                    }
                }
                break;
            }
            if is_punct(src, Some(tj), "(") {
                if let Some(n) = j.checked_sub(1).and_then(|p| toks.get(p)) {
                    if n.kind == Tok::Ident {
                        decl = Some((n.text(src).to_string(), false));
                        definition = function_body_end(src, &toks, j)
                            .and_then(|end| src.get(t.start..end))
                            .map(str::to_string);
                    }
                }
                break;
            }
            j += 1;
        }
        if let Some((name, is_class)) = decl {
            out.push(TemplateDecl {
                name,
                is_class,
                params,
                definition,
            });
        }
        i = close + 1;
    }
    Ok(out)
}

/// Where the body of the function whose parameter list opens at token
/// `open` ends (the byte after its `}`; the body follows the `)` and any
/// qualifiers or trailing return type), or `None` for a declaration
/// ending in `;`.
fn function_body_end(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    let close = cpp::matching_paren(src, toks, open)?;
    let mut k = close + 1;
    while let Some(t) = toks.get(k).filter(|_| k - close < cpp::MAX_SPAN_TOKENS) {
        if t.kind == Tok::Punct && matches!(t.text(src), ";" | "=") {
            return None;
        }
        if is_punct(src, Some(t), "{") {
            let end = cpp::matching_brace(src, toks, k)?;
            return Some(toks[end].end);
        }
        k += 1;
    }
    None
}

/// What a blob source declares at namespace scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BlobSource {
    /// Its explicit specialisations.
    pub specialisations: Vec<Specialisation>,
    /// Its `ck_tile::sequence<...>` aliases (tile shapes, warp layouts):
    /// the alias name and the numbers joined by `x`
    /// (`fmha_block_tile_0` -> `128x64x32x128x32x128`).
    pub sequences: Vec<(String, String)>,
    /// Its conditional directives and where each specialisation is among
    /// them (CK's `#if !defined(__HIP_DEVICE_COMPILE__) ||
    /// (defined(__gfx9__))` around them): what decides which compiles keep
    /// them.
    pub skeleton: Skeleton,
}

/// Every explicit specialisation a blob defines at namespace scope, its
/// template arguments expanded through the file's namespace-scope `using`
/// declarations (`trait_0`, `fmha_mask_0`, ... are aliases).
pub fn specialisations(src: &str) -> Result<Vec<Specialisation>, Error> {
    Ok(blob_source(src)?.specialisations)
}

/// The tokens' texts, one space between each: a key for what they spell.
fn join_tokens(src: &str, toks: &[Token]) -> String {
    let mut s = String::new();
    for t in toks {
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(t.text(src));
    }
    s
}

/// [`specialisations`], and the tile shapes the blob names.
pub fn blob_source(src: &str) -> Result<BlobSource, Error> {
    let toks = lex(src)?;
    let mut aliases: HashMap<&str, (usize, usize)> = HashMap::new();
    // Arguments already normalised under the aliases seen so far: CK's
    // blobs specialise several templates for the same traits.
    let mut normal: HashMap<String, String> = HashMap::new();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut sequences = Vec::new();
    let mut directives: Vec<(usize, &str)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match (t.kind, t.text(src)) {
            (Tok::Preproc, text) => directives.push((t.line, text)),
            (Tok::Punct, "{") => depth += 1,
            (Tok::Punct, "}") => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| parse_err(t.line, "unbalanced '}'"))?;
            }
            (Tok::Ident, "using") if depth == 0 => {
                if let Some((name_at, range, next)) = using_decl(src, &toks, i) {
                    aliases.insert(toks[name_at].text(src), range);
                    normal.clear();
                    if let Some(dims) = sequence(src, &toks[range.0..range.1]) {
                        sequences.push((toks[name_at].text(src).to_string(), dims));
                    }
                    i = next;
                    continue;
                }
            }
            (Tok::Ident, "template")
                if depth == 0
                    && is_punct(src, toks.get(i + 1), "<")
                    && is_punct(src, toks.get(i + 2), ">") =>
            {
                let (spec, j) = specialisation_at(src, &toks, i, &aliases, &mut normal)?;
                out.extend(spec);
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    let marks: Vec<usize> = out.iter().map(|s| s.line).collect();
    let skeleton = Skeleton::new(directives, &marks).map_err(|e| parse_err(e.line, e.why))?;
    Ok(BlobSource {
        specialisations: out,
        sequences,
        skeleton,
    })
}

/// The explicit specialisation whose `template <>` is token `i`, if it
/// names a function with its argument list (`template <> RET
/// NAME<ARGS>(`), its arguments normalised under `aliases` (`normal`
/// keeps those already normalised); and the token where reading stops.
fn specialisation_at(
    src: &str,
    toks: &[Token],
    i: usize,
    aliases: &HashMap<&str, (usize, usize)>,
    normal: &mut HashMap<String, String>,
) -> Result<(Option<Specialisation>, usize), Error> {
    let t = &toks[i];
    let lookup = |n: &str| {
        aliases
            .get(n)
            .and_then(|&(a, b)| toks.get(a..b))
            .map(|s| (s, src))
    };
    // `template <> RET NAME<ARGS>(`: NAME is the identifier
    // whose argument list is followed by `(`.
    let mut spec = None;
    let mut j = i + 3;
    while let Some(tj) = toks.get(j).filter(|_| j - i < cpp::MAX_SPAN_TOKENS) {
        if tj.kind == Tok::Punct && matches!(tj.text(src), ";" | "{" | "(") {
            break;
        }
        if tj.kind == Tok::Ident && is_punct(src, toks.get(j + 1), "<") {
            let close = matching_angle(src, toks, j + 1).ok_or_else(|| {
                parse_err(tj.line, "unbalanced '<' in a specialisation")
            })?;
            if is_punct(src, toks.get(close + 1), "(") {
                let paren = matching_paren(src, toks, close + 1).ok_or_else(|| {
                    parse_err(tj.line, "unbalanced '(' in a specialisation")
                })?;
                let mut args = Vec::new();
                for (a, b) in split_commas(src, toks, j + 2, close) {
                    let spelled = join_tokens(src, &toks[a..b]);
                    if let Some(n) = normal.get(&spelled) {
                        args.push(n.clone());
                        continue;
                    }
                    let n = cpp::normalize(src, &toks[a..b], &lookup)
                        .map_err(|why| parse_err(tj.line, why))?;
                    normal.insert(spelled, n.clone());
                    args.push(n);
                }
                let text = |a: usize, b: usize| -> String {
                    toks.get(a..b)
                        .unwrap_or(&[])
                        .iter()
                        .map(|t| t.text(src))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let params = split_commas(src, toks, close + 2, paren)
                    .into_iter()
                    .map(|(a, b)| text(a, b))
                    .filter(|p| !p.is_empty() && p != "void")
                    .collect();
                spec = Some(Specialisation {
                    template: tj.text(src).to_string(),
                    args,
                    line: t.line,
                    span: (t.start, toks[paren].end),
                    returns: text(i + 3, j),
                    params,
                });
                j = paren;
                break;
            }
            j = close;
        }
        j += 1;
    }
    Ok((spec, j))
}

/// `ck_tile::sequence<1, 2, 3>` as `1x2x3`; `None` for any other type.
fn sequence(src: &str, toks: &[Token]) -> Option<String> {
    let text: String = toks.iter().map(|t| t.text(src)).collect();
    let inner = text
        .strip_prefix("ck_tile::sequence<")
        .or_else(|| text.strip_prefix("::ck_tile::sequence<"))?
        .strip_suffix('>')?;
    let dims: Vec<&str> = inner.split(',').collect();
    dims.iter()
        .all(|d| {
            !d.is_empty()
                && d.trim_start_matches('-')
                    .bytes()
                    .all(|b| b.is_ascii_digit())
        })
        .then(|| dims.join("x"))
}

/// `using NAME = TYPE ;` at token `i` (the `using`): the name's index, the
/// type's token range, and the index after the `;`.
pub(crate) fn using_decl(
    src: &str,
    toks: &[Token],
    i: usize,
) -> Option<(usize, (usize, usize), usize)> {
    toks.get(i + 1).filter(|t| t.kind == Tok::Ident)?;
    if !is_punct(src, toks.get(i + 2), "=") {
        return None;
    }
    let mut depth = 0i64;
    let mut j = i + 3;
    while let Some(t) = toks.get(j).filter(|_| j - i < cpp::MAX_SPAN_TOKENS) {
        if t.kind == Tok::Punct {
            match t.text(src) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                ";" if depth == 0 => return Some((i + 1, (i + 3, j), j + 1)),
                _ => {}
            }
        }
        if depth < 0 {
            return None;
        }
        j += 1;
    }
    None
}

/// The template name and arguments of a type in normal form
/// (`fmha_fwd_traits_<128,FmhaFwdBf16,...>`), or `None` for a type that is
/// not a template instantiation.
pub fn split_instantiation(ty: &str) -> Option<(String, Vec<String>)> {
    let toks = cpp::tokenize(ty).ok()?;
    let name_at = toks
        .iter()
        .position(|t| is_punct(ty, Some(t), "<"))?
        .checked_sub(1)?;
    let close = matching_angle(ty, &toks, name_at + 1)?;
    if close + 1 != toks.len() {
        return None;
    }
    let name: String = toks[..=name_at].iter().map(|t| t.text(ty)).collect();
    let args = split_commas(ty, &toks, name_at + 2, close)
        .into_iter()
        .filter_map(|(a, b)| plain(ty, toks.get(a..b)?).ok())
        .collect();
    Some((name, args))
}

/// The generator's tables of C++ spellings (`BIAS_MAP = {"no":
/// "ck_tile::BlockAttentionBiasEnum::NO_BIAS", ...}` in
/// `codegen/cpp_symbol_map.py`): every top-level assignment of a dict whose
/// keys and values are all string literals, by table name.
pub fn symbol_tables(python: &str) -> BTreeMap<String, Vec<(String, String)>> {
    let mut out = BTreeMap::new();
    let mut rest = python;
    while let Some(eq) = rest.find("= {") {
        let line_start = rest[..eq].rfind('\n').map_or(0, |p| p + 1);
        let name = rest[line_start..eq].trim();
        let body_start = eq + 3;
        let Some(close) = rest[body_start..].find('}') else {
            break;
        };
        let body = &rest[body_start..body_start + close];
        rest = &rest[body_start + close + 1..];
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            continue;
        }
        if let Some(pairs) = string_pairs(body) {
            out.insert(name.to_string(), pairs);
        }
    }
    out
}

/// `"k": "v", ...` (comments and trailing commas allowed), or `None` when
/// anything else is in the dict.
fn string_pairs(body: &str) -> Option<Vec<(String, String)>> {
    let mut strings = Vec::new();
    let mut seps = Vec::new();
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                let q = b[i];
                let end = body[i + 1..].find(q as char)? + i + 1;
                strings.push(body[i + 1..end].to_string());
                i = end + 1;
            }
            b'#' => i = body[i..].find('\n').map_or(b.len(), |p| i + p),
            b':' | b',' => {
                seps.push(b[i]);
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            _ => return None,
        }
    }
    if strings.len() % 2 != 0 || strings.is_empty() {
        return None;
    }
    // Separators must alternate `:` `,` (a trailing `,` allowed).
    for (k, s) in seps.iter().enumerate() {
        if *s != if k % 2 == 0 { b':' } else { b',' } {
            return None;
        }
    }
    Some(
        strings
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_fields_follow_if_0_and_keep_members_after_a_directive() {
        // CK 2025-11's fmha_batch_prefill_args.
        let src = "struct fmha_batch_prefill_args\n{\n    void* kv_page_indices;\n\
                   #if 0 // we assume page_block_size=1 for now\n    void* kv_last_page_lens;\n\
                   \x20   ck_tile::index_t page_block_size;\n#endif\n\n    float scale_s;\n\
                   #ifdef CK_X\n    int a;\n#else\n    int b;\n#endif\n    int c;\n};\n";
        let names: Vec<String> = struct_fields(src, "fmha_batch_prefill_args")
            .unwrap()
            .into_iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(names, ["kv_page_indices", "scale_s", "a", "c"]);
    }

    #[test]
    fn struct_fields_are_the_data_members_in_order() {
        let src = "struct other { int x; };\n\
            struct fmha_args\n{\n    const void* q_ptr; // q\n\
            const void* seqstart_q_ptr =\n        nullptr;\n\
            ck_tile::index_t seqlen_q;\n    static constexpr int k = 1;\n\
            using T = int;\n    float f() const { return 1; }\n\
            std::variant<std::pair<uint64_t, uint64_t>, std::pair<const void*, const void*>>\n        drop_seed_offset;\n\
            bool skip{false};\n};\n";
        let f = struct_fields(src, "fmha_args").unwrap();
        let got: Vec<(&str, &str, Option<&str>)> = f
            .iter()
            .map(|f| (f.ty.as_str(), f.name.as_str(), f.default.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("const void*", "q_ptr", None),
                ("const void*", "seqstart_q_ptr", Some("nullptr")),
                ("ck_tile::index_t", "seqlen_q", None),
                (
                    "std::variant<std::pair<uint64_t,uint64_t>,std::pair<const void*,const void*>>",
                    "drop_seed_offset",
                    None
                ),
                ("bool", "skip", Some("false")),
            ]
        );
        assert_eq!(f[2].line, 7);
        assert!(struct_fields(src, "missing").is_err());
        assert!(struct_fields("struct a { int x;", "a").is_err());
    }

    #[test]
    fn a_blobs_skeleton_decides_its_specialisations_per_compile() {
        use crate::macros::{Macros, Pass};
        let spec = "template<> float fmha_fwd_<int>(int a) { return 0; }\n";
        let kept = |src: &str, target: &str| {
            blob_source(src)
                .unwrap()
                .skeleton
                .try_run(&mut Macros::predefined(target, Pass::Device, None))
        };
        // CK 2025-11's split-KV blob: one guard, an `#endif` with a comment;
        // `__gfx9__` comes from CK's config.hpp, which this test leaves out,
        // so only the compiler's upper-case family macro is seen.
        let src = format!(
            "#include <iostream>\n#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__GFX9__))\n\
             using t = int;\n{spec}#endif // !defined(__HIP_DEVICE_COMPILE__) || (defined(__GFX9__))\n"
        );
        assert_eq!(kept(&src, "gfx950"), Ok(vec![true]));
        assert_eq!(kept(&src, "gfx1100"), Ok(vec![false]));
        assert!(blob_source(spec).unwrap().skeleton.is_trivial());
        // A conditional around something else decides nothing of the
        // specialisations, and is not evaluated where it is skipped.
        let other = format!("#if 0\n#if __clang_major__ >= 20\nusing x = int;\n#endif\n#endif\n{spec}");
        assert_eq!(kept(&other, "gfx942"), Ok(vec![true]));
        // Nested conditionals, `#ifdef`, an `#else` branch, `#elif`.
        let src = format!(
            "#ifdef __HIP_DEVICE_COMPILE__\n#if defined(__gfx950__)\nusing a = int;\n#else\n{spec}#endif\n#endif\n"
        );
        assert_eq!(kept(&src, "gfx942"), Ok(vec![true]));
        assert_eq!(kept(&src, "gfx950"), Ok(vec![false]));
        // A condition the build cannot decide is an error at its line.
        let src = format!("\n#if __clang_major__ >= 20\n{spec}#endif\n");
        let e = kept(&src, "gfx942").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.why.contains("macro '__clang_major__'"), "{e:?}");
        // A malformed blob is an error when read, at the compiler's line.
        let src = format!("#include <x>\n#ifdef __clang__\n{spec}");
        match blob_source(&src).unwrap_err() {
            Error::Parse { line, why, .. } => {
                assert_eq!(line, 2);
                assert!(why.contains("unterminated #ifdef"), "{why}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn declarations_give_parameter_names_and_defaults() {
        let src = "template <ck_tile::index_t HDim_, typename DataType_, bool kPad_ = false>\n\
                   struct fmha_x_traits_ { static constexpr int a = 1; };\n\
                   template <typename Traits_, typename Arch = void>\n\
                   float fmha_x_(const ck_tile::stream_config&, fmha_x_args);\n\
                   template <typename T> struct fmha_x_traits_<T*> {};\n\
                   template <> float fmha_x_<int>(const ck_tile::stream_config&, fmha_x_args);\n";
        let d = template_declarations(src).unwrap();
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].name, "fmha_x_traits_");
        assert!(d[0].is_class);
        let names: Vec<&str> = d[0].params.iter().map(TemplateParam::key).collect();
        assert_eq!(names, ["HDim", "DataType", "kPad"]);
        assert_eq!(d[0].params[2].default.as_deref(), Some("false"));
        assert_eq!(d[1].name, "fmha_x_");
        assert!(!d[1].is_class);
        assert_eq!(d[1].params[1].name, "Arch");
        assert_eq!(d[1].params[1].default.as_deref(), Some("void"));
    }

    #[test]
    fn specialisations_expand_the_files_aliases() {
        let src = "using fmha_mask_0 = ck_tile::SimplifiedGenericAttentionMask<true>;\n\
                   using trait_0 = fmha_fwd_traits_<128, FmhaFwdBf16, fmha_mask_0, 64/2>;\n\
                   template<>\n\
                   float fmha_fwd_<trait_0, ck_tile::gfx9_t>(const ck_tile::stream_config& s, fmha_fwd_args a)\n\
                   { return 0; }\n\
                   template<> std::string fmha_fwd_get_name_<trait_0>() { return \"\"; }\n";
        let b = blob_source(&format!(
            "using fmha_block_tile_0 = ck_tile::sequence<128, 64, 32>;\n{src}"
        ))
        .unwrap();
        assert_eq!(
            b.sequences,
            [("fmha_block_tile_0".to_string(), "128x64x32".to_string())]
        );
        let s = specialisations(src).unwrap();
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].template, "fmha_fwd_");
        assert_eq!(s[0].line, 3);
        assert_eq!(
            s[0].args,
            [
                "fmha_fwd_traits_<128,FmhaFwdBf16,ck_tile::SimplifiedGenericAttentionMask<true>,32>",
                "ck_tile::gfx9_t"
            ]
        );
        assert!(src[s[0].span.0..s[0].span.1].ends_with("fmha_fwd_args a)"));
        assert_eq!(s[0].returns, "float");
        assert_eq!(
            s[0].params,
            ["const ck_tile :: stream_config & s", "fmha_fwd_args a"]
        );
        assert_eq!(s[1].returns, "std :: string");
        assert!(s[1].params.is_empty());
        assert_eq!(s[1].template, "fmha_fwd_get_name_");
        let (name, args) = split_instantiation(&s[0].args[0]).unwrap();
        assert_eq!(name, "fmha_fwd_traits_");
        assert_eq!(args[2], "ck_tile::SimplifiedGenericAttentionMask<true>");
        assert_eq!(args.len(), 4);
    }

    #[test]
    fn symbol_tables_are_the_string_dicts() {
        let py = "X = 1\nBIAS_MAP = {\n    \"no\": \"ck_tile::BlockAttentionBiasEnum::NO_BIAS\",\n    \
                  'alibi': 'ck_tile::BlockAttentionBiasEnum::ALIBI',  # slopes\n}\n\
                  def f():\n    return {a: b}\nMODE_MAP = {\"batch\": \"false\", \"group\": \"true\"}\n\
                  ODD = {\"a\": 1}\n";
        let t = symbol_tables(py);
        assert_eq!(t.len(), 2, "{t:?}");
        assert_eq!(t["BIAS_MAP"][1].0, "alibi");
        assert_eq!(t["MODE_MAP"][0], ("batch".into(), "false".into()));
    }

    #[test]
    fn hostile_input_is_an_error_or_nothing_never_a_panic() {
        for src in [
            "template <",
            "template <> float f<",
            "template <> float f<int>(",
            "using x = ; template <> x<x>(",
            "}}}",
            "template <typename A = > struct",
            "\"",
        ] {
            let _ = template_declarations(src);
            let _ = specialisations(src);
            let _ = split_instantiation(src);
            let _ = symbol_tables(src);
        }
    }
}
