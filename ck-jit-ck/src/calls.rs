//! Which blob specialisations CK's dispatchers call, checked against those
//! the recorded blobs define, before anything is compiled: a call no blob
//! answers is reported with its file and line (otherwise it would surface
//! as an undefined symbol when the lazy dispatcher is linked).
//!
//! Nothing here knows a dispatcher's shape. A call is a template-id
//! followed by `(`, `NAME<ARGS>(`, whose NAME a blob specialises; its
//! arguments are normalised through the `using` declarations seen before
//! it (at any depth: CK writes `using trait_ = ...;` right before each
//! call). A call inside a function template of the dispatcher itself
//! (`fmha_bwd_<dot_do_o_trait_, ..., Arch>` calling the three blobs) is
//! checked at each call of that template, its parameters replaced by the
//! arguments given there; `std::conditional_t<B, X, void>` is decided, and
//! a call whose arguments come out `void` is one the template does not make
//! (CK guards it with `if constexpr`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub(crate) use super::cpp::matching_brace;
use super::cpp::{self, is_punct, matching_angle, split_commas, Tok, Token};
use super::decl::{self, lex, parse_err, using_decl};
use super::error::Error;

/// What [`check_calls`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CallCheck {
    /// Blob specialisations the dispatchers call (each call site, and each
    /// instantiation of a dispatcher template, counted once).
    pub calls: usize,
    /// Calls no blob answers: file, line, and the specialisation.
    pub unresolved: Vec<(PathBuf, usize, String)>,
    /// What each call site (or each instantiation of a dispatcher
    /// template) runs together: the specialisations it calls, in normal
    /// form, sorted; sets repeated across sites are kept once.
    pub groups: Vec<Vec<String>>,
    /// The same calls as runs in source order, each call of a run made
    /// whenever the one before it is (nothing between them branches or
    /// leaves: CK's `launch_kernel(s, [=]{ dot_do_o }, [=]{ dq_dk_dv },
    /// [=]{ convert_dq })` is one run; the two branches of an `if
    /// constexpr` are separate runs); repeats kept, runs repeated across
    /// sites kept once. What [`CallOrder`](super::CallOrder) reads.
    pub sequences: Vec<Vec<String>>,
}

/// A blob call in a dispatcher template's body: the blob template, its
/// argument token ranges, and whether it runs right after the call before
/// it whenever that one runs (see [`follows`]).
type BodyCall = (String, Vec<(usize, usize)>, bool);

/// A function template a dispatcher defines, and the blob calls in it.
pub(crate) struct LocalTemplate {
    params: Vec<String>,
    calls: Vec<BodyCall>,
    /// Substituted argument text to its normal form, comparisons and
    /// `std::conditional_t` decided: CK calls one such template thousands
    /// of times with few distinct arguments (bwd's launch template, once
    /// per traits combination).
    decided: Mutex<HashMap<String, String>>,
}

impl LocalTemplate {
    /// The argument `toks` of a call in the body spell with the
    /// parameters replaced by `args`, in normal form, decided.
    fn argument(&self, src: &str, toks: &[Token], args: &[String]) -> Result<String, String> {
        let text = substitute(src, toks, &self.params, args);
        if let Some(done) = self.decided.lock().ok().and_then(|m| m.get(&text).cloned()) {
            return Ok(done);
        }
        let spelled = cpp::tokenize(&text).map_err(|e| e.why)?;
        let none = |_: &str| -> Option<(&[Token], &str)> { None };
        let normal = cpp::normalize(&text, &spelled, &none)?;
        let done = decide_conditional(&fold_comparisons(&normal));
        if let Ok(mut m) = self.decided.lock() {
            m.insert(text, done.clone());
        }
        Ok(done)
    }
}

/// Whether the call at `toks[at]` runs whenever the call at `toks[prev]`
/// before it in the same body has run: nothing between them can branch
/// or leave (no `if`, `else`, loop, `switch`, `return`, `throw`, jump,
/// `?` or short-circuit operator). CK's `launch_kernel(s, [=]{ a }, [=]{
/// b })` is such a pair; the two branches of an `if constexpr` are not.
fn follows(src: &str, toks: &[Token], prev: usize, at: usize) -> bool {
    const BRANCHES: [&str; 15] = [
        "if", "else", "for", "while", "do", "switch", "case", "return", "throw", "goto", "break",
        "continue", "?", "&&", "||",
    ];
    toks[prev + 1..at]
        .iter()
        .all(|t| !BRANCHES.contains(&t.text(src)))
}

/// Checks every call of a blob template in `dispatchers` (path, text)
/// against `defined`: the specialisations the blobs define, as
/// `NAME<ARG,ARG>` in normal form.
pub fn check_calls(
    dispatchers: &[(PathBuf, String)],
    defined: &BTreeSet<String>,
) -> Result<CallCheck, Error> {
    let templates = templates_of(defined);
    let mut found = Vec::with_capacity(dispatchers.len());
    for (path, src) in dispatchers {
        found.push(extract(path, src, &templates)?);
    }
    Ok(resolve(&found.iter().collect::<Vec<_>>(), &templates, defined))
}

/// The template names of `defined` specialisations.
pub(crate) fn templates_of(defined: &BTreeSet<String>) -> BTreeSet<&str> {
    defined
        .iter()
        .filter_map(|d| d.split_once('<').map(|(n, _)| n))
        .collect()
}

/// The calls one dispatcher makes of any of a set of templates (those
/// [`extract`] was given), before they are looked up: what can be read
/// from the dispatcher alone, so before every blob is read. [`resolve`]
/// then keeps those of the templates blobs specialise.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extracted {
    path: PathBuf,
    /// Every call site (or instantiation of a dispatcher template): its
    /// line and the calls it makes.
    sites: Vec<(usize, Vec<SiteCall>)>,
}

/// One call a site makes, as the body that makes it says: the template,
/// the specialisation called (see [`specialisation_key`]), whether nothing between it and the call
/// before it in the body can branch or leave, and whether its arguments
/// came out `void` (a call the template does not make).
#[derive(Debug, Clone)]
pub(crate) struct SiteCall {
    pub(crate) template: String,
    pub(crate) key: String,
    after: bool,
    pub(crate) void: bool,
}

/// Reads the calls in `src` (a dispatcher, with the launch templates of
/// the headers it includes appended) of any of `templates` (see
/// [`check_calls`] for what counts as a call). Given more templates than
/// blobs specialise, [`resolve`] leaves out the calls of the others as
/// if they had not been read: a call of one of them inside a dispatcher
/// template breaks no run, as a call that comes out `void` does not.
pub(crate) fn extract(
    path: &Path,
    src: &str,
    templates: &BTreeSet<&str>,
) -> Result<Extracted, Error> {
    let mut found = Extracted {
        path: path.to_path_buf(),
        sites: Vec::new(),
    };
    extract_sites(src, templates, &mut found.sites).map_err(|e| e.in_file(path))?;
    Ok(found)
}

/// The calls `found` makes of `templates` (those blobs specialise; a
/// subset of those [`extract`] was given), checked against `defined`.
pub(crate) fn resolve(
    found: &[&Extracted],
    templates: &BTreeSet<&str>,
    defined: &BTreeSet<String>,
) -> CallCheck {
    let mut out = CallCheck::default();
    for f in found {
        for (line, calls) in &f.sites {
            let mut group = Vec::new();
            // Runs of calls each of which follows the one before it.
            let mut runs: Vec<Vec<String>> = Vec::new();
            // Whether every call since the last one kept followed its
            // predecessor.
            let mut chained = false;
            for c in calls {
                chained &= c.after;
                if c.void || !templates.contains(c.template.as_str()) {
                    continue;
                }
                let after = chained;
                chained = true;
                if let Some(key) = record(&f.path, *line, &c.key, defined, &mut out) {
                    match runs.last_mut() {
                        Some(run) if after => run.push(key.clone()),
                        _ => runs.push(vec![key.clone()]),
                    }
                    group.push(key);
                }
            }
            out.sequences.extend(runs);
            group.sort();
            group.dedup();
            if !group.is_empty() {
                out.groups.push(group);
            }
        }
    }
    out.groups.sort();
    out.groups.dedup();
    out.sequences.sort();
    out.sequences.dedup();
    out
}

/// The specialisation `template<args>` in the blobs' normal form, integer
/// comparisons decided (a dispatcher writes `(0 > 0)` where the blob has
/// `false`).
pub fn specialisation_key(template: &str, args: &[String]) -> String {
    let args: Vec<String> = args.iter().map(|a| fold_comparisons(a)).collect();
    format!("{template}<{}>", args.join(","))
}

/// `(N op M)` of two integers, for the six comparisons, as `true`/`false`.
fn fold_comparisons(arg: &str) -> String {
    let mut s = arg.to_string();
    let mut from = 0;
    while let Some(rel) = s[from..].find('(') {
        let open = from + rel;
        let Some(close) = s[open..].find(')').map(|c| open + c) else {
            break;
        };
        let inner = &s[open + 1..close];
        let decided = ["==", "!=", ">=", "<=", ">", "<"].iter().find_map(|op| {
            let (a, b) = inner.split_once(op)?;
            let (a, b) = (a.trim().parse::<i64>().ok()?, b.trim().parse::<i64>().ok()?);
            Some(match *op {
                "==" => a == b,
                "!=" => a != b,
                ">=" => a >= b,
                "<=" => a <= b,
                ">" => a > b,
                _ => a < b,
            })
        });
        match decided {
            Some(v) => {
                s.replace_range(open..=close, if v { "true" } else { "false" });
                from = 0;
            }
            None => from = open + 1,
        }
    }
    s
}

/// A dispatcher's own function templates (by name) and their bodies'
/// token spans `(open brace, close brace)`.
pub(crate) type Locals = (HashMap<String, LocalTemplate>, Vec<(usize, usize)>);

/// Finds the dispatcher's function templates and the blob calls in each.
pub(crate) fn local_templates(
    src: &str,
    toks: &[Token],
    blob_templates: &BTreeSet<&str>,
) -> Result<Locals, Error> {
    let mut locals: HashMap<String, LocalTemplate> = HashMap::new();
    let mut bodies: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        if t.kind == Tok::Ident
            && t.text(src) == "template"
            && is_punct(src, toks.get(i + 1), "<")
            && !is_punct(src, toks.get(i + 2), ">")
        {
            if let Some(close) = matching_angle(src, toks, i + 1) {
                let params: Vec<String> = split_commas(src, toks, i + 2, close)
                    .into_iter()
                    .filter_map(|(a, b)| {
                        toks[a..b]
                            .iter()
                            .rev()
                            .find(|t| t.kind == Tok::Ident)
                            .map(|t| t.text(src).to_string())
                    })
                    .collect();
                // `RET NAME(...) {`: the name before the first `(`, the body
                // from the next `{` to its match.
                let mut j = close + 1;
                let mut name = None;
                while let Some(tj) = toks.get(j).filter(|_| j - close < cpp::MAX_SPAN_TOKENS) {
                    if is_punct(src, Some(tj), ";") {
                        break;
                    }
                    if name.is_none() && is_punct(src, Some(tj), "(") {
                        name = toks
                            .get(j - 1)
                            .filter(|n| n.kind == Tok::Ident)
                            .map(|n| n.text(src).to_string());
                    }
                    if is_punct(src, Some(tj), "{") {
                        break;
                    }
                    j += 1;
                }
                if let (Some(name), true) = (name, is_punct(src, toks.get(j), "{")) {
                    if let Some(end) = matching_brace(src, toks, j) {
                        bodies.push((j, end));
                        let mut calls = Vec::new();
                        let mut prev = None;
                        for (at, blob) in blob_calls(src, toks, j, end, blob_templates) {
                            let close = matching_angle(src, toks, at + 1)
                                .ok_or_else(|| parse_err(toks[at].line, "unbalanced '<'"))?;
                            let after = prev.is_some_and(|p| follows(src, toks, p, at));
                            calls.push((
                                blob.to_string(),
                                split_commas(src, toks, at + 2, close),
                                after,
                            ));
                            prev = Some(at);
                        }
                        locals.insert(
                            name,
                            LocalTemplate {
                                params,
                                calls,
                                decided: Mutex::default(),
                            },
                        );
                        i = end + 1;
                        continue;
                    }
                }
                i = close + 1;
                continue;
            }
        }
        i += 1;
    }
    Ok((locals, bodies))
}

/// The blob calls (template, arguments in normal form) the call
/// `NAME<...>(` at `at` (its `>` at `close`) makes: itself when NAME is a
/// blob template, or the calls in the body of the dispatcher's template
/// NAME with its parameters replaced, each with whether it follows the
/// one before it in that body and whether its arguments came out `void`
/// (a call the template does not make).
pub(crate) fn call_specialisations<'a, F>(
    src: &'a str,
    toks: &[Token],
    at: usize,
    close: usize,
    lookup: &F,
    locals: &HashMap<String, LocalTemplate>,
    normal: &mut HashMap<String, String>,
) -> Result<Vec<SiteCall>, Error>
where
    F: Fn(&str) -> Option<(&'a [Token], &'a str)>,
{
    let name = toks[at].text(src);
    let line = toks[at].line;
    let mut args = Vec::new();
    for (a, b) in split_commas(src, toks, at + 2, close) {
        let key = spelled_with_aliases(src, &toks[a..b], lookup);
        if let Some(n) = key.as_ref().and_then(|k| normal.get(k)) {
            args.push(n.clone());
            continue;
        }
        let n = cpp::normalize(src, &toks[a..b], lookup).map_err(|why| parse_err(line, why))?;
        if let Some(k) = key {
            normal.insert(k, n.clone());
        }
        args.push(n);
    }
    let Some(lt) = locals.get(name) else {
        return Ok(vec![SiteCall {
            template: name.to_string(),
            key: specialisation_key(name, &args),
            after: false,
            void: false,
        }]);
    };
    let mut out = Vec::new();
    for (inner, ranges, after) in &lt.calls {
        let mut inner_args = Vec::new();
        for &(a, b) in ranges {
            let arg = lt
                .argument(src, &toks[a..b], &args)
                .map_err(|why| parse_err(line, why))?;
            inner_args.push(arg);
        }
        let void = inner_args.iter().any(|a| a == "void");
        out.push(SiteCall {
            template: inner.clone(),
            key: specialisation_key(inner, &inner_args),
            after: *after,
            void,
        });
    }
    Ok(out)
}

/// What the argument `toks` spell with each alias among them replaced by
/// its definition, a key under which its normal form can be kept: the
/// same key, the same normal form. `None` when a definition itself names
/// an alias (then the key would have to follow it).
fn spelled_with_aliases<'a, F>(src: &str, toks: &[Token], lookup: &F) -> Option<String>
where
    F: Fn(&str) -> Option<(&'a [Token], &'a str)>,
{
    let mut key = String::new();
    for t in toks {
        let word = t.text(src);
        key.push_str(word);
        key.push(' ');
        if t.kind != Tok::Ident {
            continue;
        }
        let Some((def, def_src)) = lookup(word) else {
            continue;
        };
        key.push_str("= ");
        for d in def {
            let w = d.text(def_src);
            if d.kind == Tok::Ident && lookup(w).is_some() {
                return None;
            }
            key.push_str(w);
            key.push(' ');
        }
        key.push_str("; ");
    }
    Some(key)
}

/// Whether `toks[i]` starts a call `NAME<...>(` of a blob template or of
/// one of `locals`; the index of its `>` if so.
pub(crate) fn call_at(
    src: &str,
    toks: &[Token],
    i: usize,
    blob_templates: &BTreeSet<&str>,
    locals: &HashMap<String, LocalTemplate>,
) -> Option<usize> {
    let t = &toks[i];
    if t.kind != Tok::Ident || !is_punct(src, toks.get(i + 1), "<") {
        return None;
    }
    let name = t.text(src);
    if !(blob_templates.contains(name) || locals.contains_key(name)) {
        return None;
    }
    let close = matching_angle(src, toks, i + 1)?;
    is_punct(src, toks.get(close + 1), "(").then_some(close)
}

fn extract_sites(
    src: &str,
    blob_templates: &BTreeSet<&str>,
    sites: &mut Vec<(usize, Vec<SiteCall>)>,
) -> Result<(), Error> {
    let toks = lex(src)?;
    let (locals, bodies) = local_templates(src, &toks, blob_templates)?;
    let bodies: HashMap<usize, usize> = bodies.into_iter().collect();

    // Every call outside those bodies, aliases as seen so far; the branch
    // an `if constexpr` discards is skipped (CK writes
    // `if constexpr (std::is_same_v<FmhaFwdFp8, FmhaFwdFp8>) return -1;
    // else { ... }` for combinations it has no kernel for).
    let mut aliases: HashMap<&str, (usize, usize)> = HashMap::new();
    // Call arguments in normal form, by what they spell (see
    // `spelled_with_aliases`): CK's dispatchers make thousands of calls
    // with a few thousand distinct traits.
    let mut normal: HashMap<String, String> = HashMap::new();
    // Where a skipped span starts, and where it ends.
    let mut discarded: HashMap<usize, usize> = HashMap::new();
    let mut i = 0;
    while i < toks.len() {
        // Both kinds of span start at a `{`.
        let brace = src.as_bytes().get(toks[i].start) == Some(&b'{');
        if let Some(&end) = brace
            .then(|| bodies.get(&i).or_else(|| discarded.get(&i)))
            .flatten()
        {
            i = end + 1;
            continue;
        }
        let t = &toks[i];
        if t.kind == Tok::Ident
            && t.text(src) == "if"
            && toks.get(i + 1).is_some_and(|c| c.text(src) == "constexpr")
            && is_punct(src, toks.get(i + 2), "(")
        {
            if let Some(paren) = cpp::matching_paren(src, &toks, i + 2) {
                let lookup = |n: &str| {
                    aliases
                        .get(n)
                        .and_then(|&(a, b)| toks.get(a..b))
                        .map(|s| (s, src))
                };
                let cond = cpp::normalize(src, &toks[i + 3..paren], &lookup).ok();
                if let Some(value) = cond.as_deref().and_then(decide_is_same) {
                    let then_end = is_punct(src, toks.get(paren + 1), "{")
                        .then(|| matching_brace(src, &toks, paren + 1))
                        .flatten();
                    if let Some(then_end) = then_end {
                        let has_else = toks
                            .get(then_end + 1)
                            .is_some_and(|e| e.text(src) == "else")
                            && is_punct(src, toks.get(then_end + 2), "{");
                        if !value {
                            discarded.insert(paren + 1, then_end);
                        } else if has_else {
                            if let Some(else_end) = matching_brace(src, &toks, then_end + 2) {
                                discarded.insert(then_end + 2, else_end);
                            }
                        }
                    }
                }
                i = paren + 1;
                continue;
            }
        }
        if t.kind == Tok::Ident && t.text(src) == "using" {
            if let Some((name_at, range, next)) = using_decl(src, &toks, i) {
                aliases.insert(toks[name_at].text(src), range);
                i = next;
                continue;
            }
        }
        let Some(close) = call_at(src, &toks, i, blob_templates, &locals) else {
            i += 1;
            continue;
        };
        let lookup = |n: &str| {
            aliases
                .get(n)
                .and_then(|&(a, b)| toks.get(a..b))
                .map(|s| (s, src))
        };
        let calls = call_specialisations(src, &toks, i, close, &lookup, &locals, &mut normal)?;
        sites.push((t.line, calls));
        i = close + 1;
    }
    Ok(())
}

fn record(
    path: &Path,
    line: usize,
    key: &str,
    defined: &BTreeSet<String>,
    out: &mut CallCheck,
) -> Option<String> {
    out.calls += 1;
    if defined.contains(key) {
        Some(key.to_string())
    } else {
        out.unresolved.push((path.to_path_buf(), line, key.to_string()));
        None
    }
}

/// The text `toks` spell with each template parameter replaced, once, by
/// its argument (a parameter may share its name with a global template,
/// as CK's `fmha_fwd_splitkv_traits_` does: the argument is not looked at
/// again), tokens separated by spaces.
fn substitute(src: &str, toks: &[Token], params: &[String], args: &[String]) -> String {
    let mut text = String::new();
    for (k, t) in toks.iter().enumerate() {
        let word = t.text(src);
        let qualified =
            (k > 0 && is_punct(src, toks.get(k - 1), "::")) || is_punct(src, toks.get(k + 1), "::");
        let arg = (t.kind == Tok::Ident && !qualified)
            .then(|| params.iter().position(|p| p == word))
            .flatten()
            .and_then(|i| args.get(i));
        text.push_str(arg.map_or(word, String::as_str));
        text.push(' ');
    }
    text
}

/// The value of `std::is_same_v<X,Y>` or `!std::is_same_v<X,Y>` of two
/// types in normal form; `None` for any other condition.
pub(crate) fn decide_is_same(cond: &str) -> Option<bool> {
    let (negated, rest) = match cond.strip_prefix('!') {
        Some(r) => (true, r),
        None => (false, cond),
    };
    let (name, args) = decl::split_instantiation(rest)?;
    if name != "std::is_same_v" || args.len() != 2 {
        return None;
    }
    Some((args[0] == args[1]) != negated)
}

/// `std::conditional_t<true,X,Y>` is `X`, `<false,X,Y>` is `Y`; anything
/// else unchanged.
fn decide_conditional(arg: &str) -> String {
    if !arg.contains("conditional_t") {
        return arg.to_string();
    }
    match decl::split_instantiation(arg) {
        Some((name, a)) if name == "std::conditional_t" && a.len() == 3 => match a[0].as_str() {
            "true" => a[1].clone(),
            "false" => a[2].clone(),
            _ => arg.to_string(),
        },
        _ => arg.to_string(),
    }
}

/// Positions of `NAME<` in `toks[from..to]` whose NAME a blob specialises.
fn blob_calls<'s>(
    src: &'s str,
    toks: &[Token],
    from: usize,
    to: usize,
    blob_templates: &BTreeSet<&str>,
) -> Vec<(usize, &'s str)> {
    (from..to)
        .filter(|&k| {
            toks[k].kind == Tok::Ident
                && blob_templates.contains(toks[k].text(src))
                && is_punct(src, toks.get(k + 1), "<")
        })
        .map(|k| (k, toks[k].text(src)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defined(keys: &[&str]) -> BTreeSet<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn the_branch_an_if_constexpr_discards_is_not_checked() {
        let api = "float f(int t) {\n\
            using a_ = ta_<1>;\n\
            if constexpr (std::is_same_v<Fp8, Fp8>) { return -1; } else { return x_<a_>(s); }\n\
            if constexpr (!std::is_same_v<Fp8, Fp16>) { return y_<a_>(s); } else { return x_<a_>(s); }\n}\n";
        let d = defined(&["x_<other>", "y_<other>"]);
        let r = check_calls(&[("f.cpp".into(), api.into())], &d).unwrap();
        assert_eq!(r.calls, 1, "{:?}", r.unresolved);
        assert_eq!(r.unresolved[0].2, "y_<ta_<1>>");
    }

    #[test]
    fn runs_break_where_the_code_between_two_calls_can_branch_or_leave() {
        let api = "template <typename A_, typename B_>\n\
            float op_(int s) {\n\
              launch(s, [=](int s_) { a_<A_>(s_); }, [=](int s_) { b_<B_>(s_); });\n\
              if (s > 1) { c_<A_>(s); }\n\
              d_<B_>(s);\n\
              return e_<A_>(s);\n}\n\
            float op(int t) {\n  return op_<ta_<1>, tb_<2>>(t);\n}\n";
        let d = defined(&[
            "a_<ta_<1>>",
            "b_<tb_<2>>",
            "c_<ta_<1>>",
            "d_<tb_<2>>",
            "e_<ta_<1>>",
        ]);
        let r = check_calls(&[("op.cpp".into(), api.into())], &d).unwrap();
        assert!(r.unresolved.is_empty(), "{:?}", r.unresolved);
        let mut want = vec![
            vec!["a_<ta_<1>>".to_string(), "b_<tb_<2>>".to_string()],
            vec!["c_<ta_<1>>".to_string(), "d_<tb_<2>>".to_string()],
            vec!["e_<ta_<1>>".to_string()],
        ];
        want.sort();
        assert_eq!(r.sequences, want);
        // The set is still the whole call.
        assert_eq!(r.groups.len(), 1);
        assert_eq!(r.groups[0].len(), 5);
    }

    #[test]
    fn calls_read_for_every_declared_template_resolve_as_if_read_for_the_blobs_alone() {
        // `q_` is a template the headers declare and no blob specialises:
        // read early (for every declared template) its calls drop out, and
        // the runs around them are those a reading for the blobs'
        // templates alone gives.
        let api = "template <typename A_, typename B_>\n\
            float op_(int s) {\n\
              launch(s, [=](int s_) { a_<A_>(s_); }, [=](int s_) { q_<B_>(s_); }, [=](int s_) { b_<B_>(s_); });\n\
              if (s > 1) { q_<A_>(s); }\n\
              c_<A_>(s);\n\
              return q_<A_>(s);\n}\n\
            float op(int t) {\n  q_<tb_<2>>(t);\n  return op_<ta_<1>, tb_<2>>(t);\n}\n";
        let d = defined(&["a_<ta_<1>>", "b_<tb_<2>>", "c_<ta_<1>>"]);
        let alone = check_calls(&[("op.cpp".into(), api.into())], &d).unwrap();
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(alone.calls, 3, "{alone:?}");
        assert!(alone.unresolved.is_empty(), "{alone:?}");
        assert_eq!(
            alone.sequences,
            vec![s(&["a_<ta_<1>>", "b_<tb_<2>>"]), s(&["c_<ta_<1>>"])]
        );
        let declared: BTreeSet<&str> = ["a_", "b_", "c_", "q_"].into();
        let early = extract(Path::new("op.cpp"), api, &declared).unwrap();
        assert_eq!(resolve(&[&early], &templates_of(&d), &d), alone);
        // Resolved for every declared template, the calls of `q_` count.
        let mut all = d.clone();
        all.insert("q_<tb_<2>>".into());
        all.insert("q_<ta_<1>>".into());
        let every = resolve(&[&early], &declared, &all);
        assert_eq!(every.calls, 7, "{every:?}");
    }

    #[test]
    fn integer_comparisons_are_decided() {
        assert_eq!(
            fold_comparisons("t_<1,(0>0),(2>=2),(3==4),(x>1)>"),
            "t_<1,false,true,false,(x>1)>"
        );
        assert_eq!(fold_comparisons("((1<2))"), "(true)");
    }

    #[test]
    fn direct_calls_resolve_through_the_aliases_before_them() {
        let api = "float fmha_fwd(int t) {\n\
            if (t == 1) {\n    using trait_ = fmha_fwd_traits_<64, FmhaFwdFp16, ck_tile::SimplifiedGenericAttentionMask<false>>;\n    return fmha_fwd_<trait_, ck_tile::gfx9_t>(s, a);\n}\n\
            if (t == 2) {\n    using trait_ = fmha_fwd_traits_<128, FmhaFwdFp16, ck_tile::SimplifiedGenericAttentionMask<false>>;\n    return fmha_fwd_<trait_, ck_tile::gfx9_t>(s, a);\n}\n}\n";
        let d = defined(&[
            "fmha_fwd_<fmha_fwd_traits_<64,FmhaFwdFp16,ck_tile::SimplifiedGenericAttentionMask<false>>,ck_tile::gfx9_t>",
        ]);
        let r = check_calls(&[("api.cpp".into(), api.into())], &d).unwrap();
        assert_eq!(r.calls, 2);
        assert_eq!(r.unresolved.len(), 1);
        let (file, line, call) = &r.unresolved[0];
        assert_eq!((file.to_str().unwrap(), *line), ("api.cpp", 8));
        assert!(call.contains("<128,"), "{call}");
    }

    #[test]
    fn a_dispatcher_template_is_checked_at_each_call_with_conditionals_decided() {
        let api = "template <typename A_, typename B_, typename C_, typename Arch>\n\
            float fmha_bwd_(int s) {\n\
              x_oneshot_<A_, Arch>(s);\n\
              if constexpr (!std::is_same_v<C_, void>) { z_oneshot_<C_, Arch>(s); }\n\
              return y_<B_, Arch>(s);\n}\n\
            float fmha_bwd(int t) {\n\
              using a_ = ta_<1>;\n  using b_ = tb_<2>;\n  using c_ = tc_<3>;\n\
              r = fmha_bwd_<a_, b_, std::conditional_t<false, c_, void>, ck_tile::gfx9_t>(s);\n\
              r = fmha_bwd_<a_, b_, std::conditional_t<true, c_, void>, ck_tile::gfx9_t>(s);\n}\n";
        let d = defined(&[
            "x_oneshot_<ta_<1>,ck_tile::gfx9_t>",
            "y_<tb_<2>,ck_tile::gfx9_t>",
            "z_oneshot_<other,ck_tile::gfx9_t>",
        ]);
        let r = check_calls(&[("bwd.cpp".into(), api.into())], &d).unwrap();
        // First call: x and y (z is void); second: x, y and z.
        assert_eq!(r.calls, 5);
        assert_eq!(r.unresolved.len(), 1, "{:?}", r.unresolved);
        assert_eq!(r.unresolved[0].1, 12);
        assert_eq!(r.unresolved[0].2, "z_oneshot_<tc_<3>,ck_tile::gfx9_t>");
    }
}
