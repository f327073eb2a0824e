//! Dispatch rules read from CK's dispatchers (the format and evaluator are
//! [`super`]): for every function of a dispatcher that
//! calls blobs, its statements as a tree of conditions, locals and leaves,
//! so that a Rust caller decides as the C++ of the same version decides.
//!
//! Nothing here knows a dispatcher's shape or CK's traits. A function is
//! any definition `NAME[<ARGS>](...) {` whose body calls a blob template
//! (directly or through one of the dispatcher's own function templates, as
//! the `calls` module resolves them), or calls such a function (newer CK's
//! public `fmha_fwd` holds no blob call: it calls `fmha_fwd_v3`, then
//! `fmha_fwd_v2` on a negative result), or is called as a statement by one
//! that is read (a `fmha_fwd_v3` with no kernel in this build); the public
//! entry points the headers declare are thus read whatever internal split
//! a version uses. A statement that calls another function of the file as
//! a whole (`return f(...);`, `f(...);`, `[T] r = f(...);`) is a
//! [`Stmt::Invoke`] with its arguments, decided through that function;
//! functions called inside conditions (`get_num_cus`) or lambdas stay
//! calls the environment answers. Its statements are read as C++:
//! blocks, `if`/`else if`/`else` chains (conditions parsed into
//! expressions; `if constexpr (std::is_same_v<..>)` decided here),
//! `using` aliases, declarations (`const float x = 0.8;` becomes a local,
//! a lambda or an uninitialised variable a local whose value the caller
//! gives), `return`s, and statements that call blobs (the leaves). A loop
//! or `switch` that calls blobs is kept as an unsupported statement, an
//! error only when a decision reaches it; a condition the parser cannot
//! read is kept as its text, likewise.

use std::collections::{BTreeSet, HashMap};

use crate::calls::{
    self, call_at, call_specialisations, local_templates, matching_brace, LocalTemplate,
};
use crate::cpp::{self, is_punct, matching_angle, matching_paren, Tok, Token};
use crate::decl::{lex, parse_err, using_decl};
use crate::error::Error;
use crate::rules::{Arm, BinOp, Expr, Function, RulesFile, Stmt, RULES_FORMAT};

/// How deep blocks may nest in a dispatcher function (CK's nest 6 deep; an
/// `else if` chain does not nest).
const MAX_NESTING: usize = 64;

/// What [`dispatcher_rules`] read from one dispatcher.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatcherRules {
    /// The rules.
    pub rules: RulesFile,
    /// Calls no blob answers: line and specialisation.
    pub unresolved: Vec<(usize, String)>,
    /// Blob calls the rules reach (each call statement once).
    pub calls: usize,
}

/// Reads the rules of dispatcher `file` (its text `src`); `blob_of` maps
/// each specialisation the blobs define, in the normal form of
/// [`calls::specialisation_key`], to its blob's name.
pub fn dispatcher_rules(
    file: &str,
    src: &str,
    blob_of: &HashMap<String, String>,
) -> Result<DispatcherRules, Error> {
    let toks = lex(src)?;
    let templates: BTreeSet<&str> = blob_of
        .keys()
        .filter_map(|k| k.split_once('<').map(|(n, _)| n))
        .collect();
    let (locals, bodies) = local_templates(src, &toks, &templates)?;
    let mut w = Walker {
        src,
        toks: &toks,
        templates: &templates,
        locals: &locals,
        blob_of,
        aliases: HashMap::new(),
        exprs: Vec::new(),
        interned: HashMap::new(),
        conjuncts: HashMap::new(),
        blobs: Vec::new(),
        blob_ids: HashMap::new(),
        unresolved: Vec::new(),
        calls: 0,
        defined: BTreeSet::new(),
        def_words: BTreeSet::new(),
        read: BTreeSet::new(),
        wanted: BTreeSet::new(),
    };
    let defs = definitions(src, &toks, &bodies)?;
    w.defined = defs.iter().map(|d| d.name.clone()).collect();
    w.def_words = defs
        .iter()
        .map(|d| d.name.split('<').next().unwrap_or_default().to_string())
        .collect();
    w.mark_read(&defs);
    let mut functions = w.functions(&defs, &bodies)?;
    functions.sort_by_key(|f| f.line);
    Ok(DispatcherRules {
        rules: RulesFile {
            format: RULES_FORMAT,
            file: file.to_string(),
            blobs: w.blobs,
            exprs: w.exprs,
            functions,
        },
        unresolved: w.unresolved,
        calls: w.calls,
    })
}

/// The file's function definitions outside `bodies` (the dispatcher's
/// own templates are read where they are called).
fn definitions(src: &str, toks: &[Token], bodies: &[(usize, usize)]) -> Result<Vec<Def>, Error> {
    let mut defs = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        if let Some(&(_, end)) = bodies.iter().find(|(start, _)| *start == i) {
            i = end + 1;
            continue;
        }
        let Some((name, open)) = function_at(src, toks, i) else {
            i += 1;
            continue;
        };
        let close = matching_brace(src, toks, open)
            .ok_or_else(|| parse_err(toks[open].line, "unbalanced '{'"))?;
        if !bodies.iter().any(|&(start, _)| start == open) {
            defs.push(Def {
                name,
                at: i,
                open,
                close,
            });
        }
        i = close + 1;
    }
    Ok(defs)
}

/// A function definition of the dispatcher.
struct Def {
    /// Its name, normalised as [`function_at`] gives it.
    name: String,
    /// The index of its name.
    at: usize,
    /// Its body's braces.
    open: usize,
    close: usize,
}

/// The parameter names of the function whose name is at `i` (empty for a
/// parameter left unnamed): the last word of each parameter before a
/// default value, where there is more than one word.
fn params_at(src: &str, toks: &[Token], i: usize) -> Vec<String> {
    let mut j = i + 1;
    if is_punct(src, toks.get(j), "<") {
        match matching_angle(src, toks, j) {
            Some(c) => j = c + 1,
            None => return Vec::new(),
        }
    }
    let Some(close) = matching_paren(src, toks, j) else {
        return Vec::new();
    };
    cpp::split_commas(src, toks, j + 1, close)
        .into_iter()
        .filter(|&(a, b)| !(b == a + 1 && toks[a].text(src) == "void"))
        .map(|(a, b)| {
            let end = (a..b)
                .find(|&k| is_punct(src, toks.get(k), "="))
                .unwrap_or(b);
            match end.checked_sub(1).map(|k| &toks[k]) {
                Some(t) if end >= a + 2 && t.kind == Tok::Ident => t.text(src).to_string(),
                _ => String::new(),
            }
        })
        .collect()
}

/// Words that are followed by `(` without naming a function.
const NOT_FUNCTIONS: &[&str] = &[
    "if",
    "while",
    "for",
    "switch",
    "return",
    "sizeof",
    "decltype",
    "static_assert",
    "alignof",
    "catch",
];

/// A function definition whose name is at `i`: its name (with template
/// arguments, normalised) and the index of its body's `{`.
fn function_at(src: &str, toks: &[Token], i: usize) -> Option<(String, usize)> {
    let t = &toks[i];
    if t.kind != Tok::Ident || NOT_FUNCTIONS.contains(&t.text(src)) {
        return None;
    }
    if i > 0 && (is_punct(src, toks.get(i - 1), ".") || is_punct(src, toks.get(i - 1), "::")) {
        return None;
    }
    let mut j = i + 1;
    if is_punct(src, toks.get(j), "<") {
        j = matching_angle(src, toks, j)? + 1;
    }
    if !is_punct(src, toks.get(j), "(") {
        return None;
    }
    let mut k = matching_paren(src, toks, j)? + 1;
    while toks
        .get(k)
        .is_some_and(|t| t.kind == Tok::Ident && matches!(t.text(src), "const" | "noexcept"))
    {
        k += 1;
    }
    if !is_punct(src, toks.get(k), "{") {
        return None;
    }
    let none = |_: &str| -> Option<(&[Token], &str)> { None };
    let name = cpp::normalize(src, &toks[i..j], &none).ok()?;
    Some((name, k))
}

struct Walker<'s> {
    src: &'s str,
    toks: &'s [Token],
    templates: &'s BTreeSet<&'s str>,
    locals: &'s HashMap<String, LocalTemplate>,
    blob_of: &'s HashMap<String, String>,
    aliases: HashMap<&'s str, (usize, usize)>,
    exprs: Vec<Expr>,
    interned: HashMap<String, u32>,
    /// Condition parts already read, by their token text.
    conjuncts: HashMap<String, u32>,
    blobs: Vec<String>,
    blob_ids: HashMap<String, u32>,
    unresolved: Vec<(usize, String)>,
    calls: usize,
    /// Every function the file defines, by name.
    defined: BTreeSet<String>,
    /// Their names without template arguments, to test a word quickly.
    def_words: BTreeSet<String>,
    /// The functions read into rules.
    read: BTreeSet<String>,
    /// The functions a statement read so far calls.
    wanted: BTreeSet<String>,
}

impl<'s> Walker<'s> {
    /// Marks what is read: the functions that call blobs, those that
    /// call them (newer CK's public `fmha_fwd` calls `fmha_fwd_v3` and
    /// `fmha_fwd_v2`, which call the blobs), and whatever those call as a
    /// statement.
    fn mark_read(&mut self, defs: &[Def]) {
        for d in defs {
            if self.calls_in(d.open, d.close) {
                self.read.insert(d.name.clone());
            }
        }
        loop {
            let before = self.read.len();
            for d in defs {
                if !self.read.contains(&d.name) && self.invokes_in(d.open, d.close) {
                    self.read.insert(d.name.clone());
                }
            }
            if self.read.len() == before {
                break;
            }
        }
    }

    /// The functions read, in file order, aliases as the file declares
    /// them up to each function; functions first met as callees are read
    /// in another round.
    fn functions(
        &mut self,
        defs: &[Def],
        bodies: &[(usize, usize)],
    ) -> Result<Vec<Function>, Error> {
        let mut functions: Vec<Function> = Vec::new();
        loop {
            // File order, aliases as the file declares them up to each function.
            self.aliases.clear();
            let mut def = defs.iter().peekable();
            let mut i = 0;
            while i < self.toks.len() {
                if let Some(&(_, end)) = bodies.iter().find(|(start, _)| *start == i) {
                    i = end + 1;
                    continue;
                }
                if let Some(d) = def.peek().filter(|d| d.at == i) {
                    if self.read.contains(&d.name) && !functions.iter().any(|f| f.name == d.name) {
                        let body = self.block(d.open + 1, d.close, 0)?;
                        functions.push(Function {
                            name: d.name.clone(),
                            line: u32::try_from(self.toks[i].line).unwrap_or(u32::MAX),
                            params: params_at(self.src, self.toks, i),
                            body,
                        });
                    }
                    i = d.close + 1;
                    def.next();
                    continue;
                }
                if self.toks[i].kind == Tok::Ident && self.toks[i].text(self.src) == "using" {
                    if let Some((name_at, range, next)) = using_decl(self.src, self.toks, i) {
                        self.aliases
                            .insert(self.toks[name_at].text(self.src), range);
                        i = next;
                        continue;
                    }
                }
                i += 1;
            }
            // Functions first met as callees (a `fmha_fwd_v3` with no kernel
            // in this build calls no blob) are read in another round.
            let more: Vec<String> = self
                .wanted
                .iter()
                .filter(|n| !self.read.contains(*n))
                .cloned()
                .collect();
            if more.is_empty() {
                break;
            }
            self.read.extend(more);
        }
        Ok(functions)
    }

    fn text(&self, k: usize) -> &'s str {
        self.toks.get(k).map_or("", |t| t.text(self.src))
    }

    fn punct(&self, k: usize, p: &str) -> bool {
        is_punct(self.src, self.toks.get(k), p)
    }

    fn line(&self, k: usize) -> usize {
        self.toks.get(k).or(self.toks.last()).map_or(0, |t| t.line)
    }

    fn calls_in(&self, from: usize, to: usize) -> bool {
        (from..to).any(|k| call_at(self.src, self.toks, k, self.templates, self.locals).is_some())
    }

    /// A call at `k` of a function the file defines: its name and the
    /// index of its `(`.
    fn invoked_at(&self, k: usize) -> Option<(String, usize)> {
        let t = self.toks.get(k)?;
        if t.kind != Tok::Ident || !self.def_words.contains(t.text(self.src)) {
            return None;
        }
        if k > 0 && (self.punct(k - 1, ".") || self.punct(k - 1, "::") || self.punct(k - 1, ">")) {
            return None;
        }
        let mut j = k + 1;
        if self.punct(j, "<") {
            j = matching_angle(self.src, self.toks, j)? + 1;
        }
        if !self.punct(j, "(") {
            return None;
        }
        let none = |_: &str| -> Option<(&[Token], &str)> { None };
        let name = cpp::normalize(self.src, &self.toks[k..j], &none).ok()?;
        self.defined.contains(&name).then_some((name, j))
    }

    /// Whether `toks[from..to]` calls a function read into rules.
    fn invokes_in(&self, from: usize, to: usize) -> bool {
        (from..to).any(|k| {
            self.invoked_at(k)
                .is_some_and(|(name, _)| self.read.contains(&name))
        })
    }

    /// The statement `toks[i..end]` (its `;` last) as a call of another
    /// function of the file: `return f(...);`, `f(...);`, `[T] x = f(...);`.
    fn invoke(&mut self, i: usize, end: usize) -> Option<Stmt> {
        let semi = end.checked_sub(1).filter(|&s| self.punct(s, ";"))?;
        let returns = self.toks[i].kind == Tok::Ident && self.text(i) == "return";
        let mut s = if returns { i + 1 } else { i };
        let mut result = None;
        if !returns {
            let mut depth = 0i64;
            for k in s..semi {
                match self.text(k) {
                    "(" | "[" | "{" => depth += 1,
                    ")" | "]" | "}" => depth -= 1,
                    "=" if depth == 0
                        && self.toks[k].kind == Tok::Punct
                        && !self.joined(k, "=")
                        && !self.joined_before(k) =>
                    {
                        let name = k.checked_sub(1).filter(|&n| n >= s)?;
                        if self.toks[name].kind != Tok::Ident {
                            return None;
                        }
                        result = Some(self.text(name).to_string());
                        s = k + 1;
                        break;
                    }
                    _ => {}
                }
            }
        }
        let (function, open) = self.invoked_at(s)?;
        let close = matching_paren(self.src, self.toks, open)?;
        if close + 1 != semi {
            return None;
        }
        let mut args = Vec::new();
        for (a, b) in cpp::split_commas(self.src, self.toks, open + 1, close) {
            let arg = parse_expr(self, a, b).unwrap_or_else(|_| {
                let text = (a..b).map(|k| self.text(k)).collect::<Vec<_>>().join(" ");
                self.intern(Expr::Opaque(text))
            });
            args.push(arg);
        }
        self.wanted.insert(function.clone());
        Some(Stmt::Invoke {
            line: u32::try_from(self.line(i)).unwrap_or(u32::MAX),
            function,
            args,
            result,
            returns,
        })
    }

    /// The statements in `toks[from..to]`.
    fn block(&mut self, from: usize, to: usize, depth: usize) -> Result<Vec<Stmt>, Error> {
        if depth > MAX_NESTING {
            return Err(parse_err(self.line(from), "blocks nest too deeply"));
        }
        let mut out = Vec::new();
        let mut i = from;
        while i < to {
            i = self.statement(i, to, depth, &mut out)?;
        }
        Ok(out)
    }

    /// The index just past the statement starting at `i` (bounded by `to`).
    fn statement_end(&self, mut i: usize, to: usize) -> Result<usize, Error> {
        loop {
            if i >= to {
                return Err(parse_err(self.line(i), "statement runs past its block"));
            }
            let word = self.text(i);
            if self.punct(i, "{") {
                let end = matching_brace(self.src, self.toks, i)
                    .filter(|&e| e < to)
                    .ok_or_else(|| parse_err(self.line(i), "unbalanced '{'"))?;
                return Ok(end + 1);
            }
            if matches!(word, "if" | "while" | "for" | "switch") && self.toks[i].kind == Tok::Ident
            {
                let mut p = i + 1;
                if self.text(p) == "constexpr" {
                    p += 1;
                }
                let close = self
                    .punct(p, "(")
                    .then(|| matching_paren(self.src, self.toks, p))
                    .flatten()
                    .filter(|&c| c < to)
                    .ok_or_else(|| parse_err(self.line(i), format!("'{word}' without '(...)'")))?;
                let end = self.statement_end(close + 1, to)?;
                if word == "if" && self.text(end) == "else" {
                    // What follows `else`; an `else if` continues the loop
                    // instead of nesting.
                    i = end + 1;
                    continue;
                }
                return Ok(end);
            }
            return self.semicolon(i, to).map(|s| s + 1);
        }
    }

    /// The `;` ending the simple statement at `i`, outside brackets.
    fn semicolon(&self, i: usize, to: usize) -> Result<usize, Error> {
        let mut depth = 0i64;
        for k in i..to {
            let t = &self.toks[k];
            if t.kind != Tok::Punct {
                continue;
            }
            match t.text(self.src) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                ";" if depth == 0 => return Ok(k),
                _ => {}
            }
            if depth < 0 {
                break;
            }
        }
        Err(parse_err(self.line(i), "statement without ';'"))
    }

    /// Reads the statement at `i` into `out`; returns the index after it.
    fn statement(
        &mut self,
        mut i: usize,
        to: usize,
        depth: usize,
        out: &mut Vec<Stmt>,
    ) -> Result<usize, Error> {
        // Attributes: `[[maybe_unused]]`.
        while self.punct(i, "[") && self.punct(i + 1, "[") {
            let mut k = i + 2;
            while k + 1 < to && !(self.punct(k, "]") && self.punct(k + 1, "]")) {
                k += 1;
            }
            i = k + 2;
        }
        if i >= to {
            return Ok(to);
        }
        let t = self.toks[i];
        let word = t.text(self.src);
        if t.kind == Tok::Preproc || self.punct(i, ";") {
            return Ok(i + 1);
        }
        if self.punct(i, "{") {
            let end = self.statement_end(i, to)?;
            out.extend(self.block(i + 1, end - 1, depth + 1)?);
            return Ok(end);
        }
        if t.kind == Tok::Ident && word == "if" {
            return self.if_chain(i, to, depth, out);
        }
        if t.kind == Tok::Ident && word == "using" {
            if let Some((name_at, range, next)) = using_decl(self.src, self.toks, i) {
                self.aliases.insert(self.text(name_at), range);
                return Ok(next);
            }
        }
        let end = self.statement_end(i, to)?;
        let line = u32::try_from(t.line).unwrap_or(u32::MAX);
        if t.kind == Tok::Ident && matches!(word, "while" | "for" | "switch" | "do") {
            if self.calls_in(i, end) || self.invokes_in(i, end) {
                out.push(Stmt::Unsupported {
                    line,
                    what: format!("a '{word}' statement that calls blobs"),
                });
            }
            return Ok(end);
        }
        if let Some(invoke) = self.invoke(i, end) {
            out.push(invoke);
            return Ok(end);
        }
        if self.invokes_in(i, end) {
            out.push(Stmt::Unsupported {
                line,
                what: "a call of another dispatcher function inside an expression".into(),
            });
            return Ok(end);
        }
        if self.calls_in(i, end) {
            let blobs = self.resolve_calls(i, end)?;
            self.calls += 1;
            out.push(Stmt::Call { line, blobs });
            return Ok(end);
        }
        if t.kind == Tok::Ident && word == "return" {
            out.push(Stmt::Return { line });
            return Ok(end);
        }
        if let Some(local) = self.declaration(i, end - 1) {
            out.push(local);
        }
        Ok(end)
    }

    /// `if (...) S [else if (...) S]* [else S]` at `i`.
    fn if_chain(
        &mut self,
        mut i: usize,
        to: usize,
        depth: usize,
        out: &mut Vec<Stmt>,
    ) -> Result<usize, Error> {
        let mut arms: Vec<Arm> = Vec::new();
        loop {
            let constexpr = self.text(i + 1) == "constexpr";
            let open = if constexpr { i + 2 } else { i + 1 };
            let close = self
                .punct(open, "(")
                .then(|| matching_paren(self.src, self.toks, open))
                .flatten()
                .filter(|&c| c < to)
                .ok_or_else(|| parse_err(self.line(i), "'if' without '(...)'"))?;
            let then_end = self.statement_end(close + 1, to)?;
            let has_else = then_end < to && self.text(then_end) == "else";
            if constexpr {
                // Decided here, as the compiler decides it; the branch taken
                // is read in place of the whole `if`.
                let else_end = if has_else {
                    Some(self.statement_end(then_end + 1, to)?)
                } else {
                    None
                };
                let decided = self.decide_constexpr(open + 1, close);
                let end = else_end.unwrap_or(then_end);
                let mut taken = Vec::new();
                match decided {
                    Some(true) => {
                        taken.extend(self.block(close + 1, then_end, depth + 1)?);
                    }
                    Some(false) => {
                        if let Some(e) = else_end {
                            taken.extend(self.block(then_end + 1, e, depth + 1)?);
                        }
                    }
                    None => {
                        if self.calls_in(close + 1, end) || self.invokes_in(close + 1, end) {
                            taken.push(Stmt::Unsupported {
                                line: u32::try_from(self.line(i)).unwrap_or(u32::MAX),
                                what: "an 'if constexpr' whose condition is not known here".into(),
                            });
                        }
                    }
                }
                if arms.is_empty() {
                    out.extend(taken);
                } else {
                    // `else if constexpr`: the rest of the chain.
                    push_if(out, arms, taken);
                }
                return Ok(end);
            }
            let cond = self.condition(open + 1, close);
            let body = self.block(close + 1, then_end, depth + 1)?;
            arms.push(Arm { cond, body });
            if !has_else {
                push_if(out, arms, Vec::new());
                return Ok(then_end);
            }
            if self.text(then_end + 1) == "if" {
                i = then_end + 1;
                continue;
            }
            let else_end = self.statement_end(then_end + 1, to)?;
            let otherwise = self.block(then_end + 1, else_end, depth + 1)?;
            push_if(out, arms, otherwise);
            return Ok(else_end);
        }
    }

    fn decide_constexpr(&self, from: usize, to: usize) -> Option<bool> {
        let lookup = |n: &str| {
            self.aliases
                .get(n)
                .and_then(|&(a, b)| self.toks.get(a..b))
                .map(|s| (s, self.src))
        };
        let cond = cpp::normalize(self.src, &self.toks[from..to], &lookup).ok()?;
        calls::decide_is_same(&cond)
    }

    /// The blobs the calls in `toks[from..to]` name, in call order.
    fn resolve_calls(&mut self, from: usize, to: usize) -> Result<Vec<u32>, Error> {
        let mut ids = Vec::new();
        let mut k = from;
        while k < to {
            let Some(close) = call_at(self.src, self.toks, k, self.templates, self.locals) else {
                k += 1;
                continue;
            };
            let aliases = &self.aliases;
            let (src, toks) = (self.src, self.toks);
            let lookup = |n: &str| {
                aliases
                    .get(n)
                    .and_then(|&(a, b)| toks.get(a..b))
                    .map(|s| (s, src))
            };
            let specs = call_specialisations(
                src,
                toks,
                k,
                close,
                &lookup,
                self.locals,
                &mut HashMap::new(),
            )?;
            for c in specs.iter().filter(|c| !c.void) {
                let key = &c.key;
                match self.blob_of.get(key) {
                    Some(blob) => {
                        let next = u32::try_from(self.blobs.len()).unwrap_or(u32::MAX);
                        let id = *self.blob_ids.entry(blob.clone()).or_insert(next);
                        if id == next {
                            self.blobs.push(blob.clone());
                        }
                        if !ids.contains(&id) {
                            ids.push(id);
                        }
                    }
                    None => self.unresolved.push((toks[k].line, key.clone())),
                }
            }
            k = close + 1;
        }
        Ok(ids)
    }

    /// A declaration or assignment `... NAME = VALUE` / `TYPE NAME` in
    /// `toks[from..to]` (the `;` excluded) as a local.
    fn declaration(&mut self, from: usize, to: usize) -> Option<Stmt> {
        let mut depth = 0i64;
        let mut eq = None;
        for k in from..to {
            let t = &self.toks[k];
            if t.kind != Tok::Punct {
                continue;
            }
            match t.text(self.src) {
                "(" | "[" | "{" | "<" => depth += 1,
                ")" | "]" | "}" | ">" => depth -= 1,
                "=" if depth == 0 && !self.joined(k, "=") && !self.joined_before(k) => {
                    eq = Some(k);
                    break;
                }
                _ => {}
            }
        }
        match eq {
            Some(k) if k > from && self.toks[k - 1].kind == Tok::Ident => {
                let name = self.text(k - 1).to_string();
                let value = parse_expr(self, k + 1, to).ok();
                Some(Stmt::Let { name, value })
            }
            Some(_) => None,
            None => {
                // `unsigned num_cus;`: a type then a name.
                let last = to.checked_sub(1)?;
                (to - from >= 2
                    && self.toks[last].kind == Tok::Ident
                    && self.toks[last - 1].kind == Tok::Ident)
                    .then(|| Stmt::Let {
                        name: self.text(last).to_string(),
                        value: None,
                    })
            }
        }
    }

    /// Whether the punctuation at `k` is immediately followed by `next`
    /// (`=` then `=` is `==`).
    fn joined(&self, k: usize, next: &str) -> bool {
        self.punct(k + 1, next) && self.toks[k].end == self.toks[k + 1].start
    }

    /// Whether the `=` at `k` ends a two-character operator (`==`, `!=`,
    /// `<=`, `>=`).
    fn joined_before(&self, k: usize) -> bool {
        k > 0
            && self.toks[k - 1].kind == Tok::Punct
            && self.toks[k - 1].end == self.toks[k].start
            && matches!(self.text(k - 1), "=" | "!" | "<" | ">")
    }

    /// The condition in `toks[from..to]` as an expression index; each
    /// `&&` part is read once per distinct text, a part the parser cannot
    /// read is kept as its text, and `true` parts are dropped.
    fn condition(&mut self, from: usize, to: usize) -> u32 {
        let parts = self.split_and(from, to);
        let mut ids = Vec::new();
        for (a, b) in parts {
            let key: String = (a..b).map(|k| self.text(k)).collect::<Vec<_>>().join(" ");
            let id = match self.conjuncts.get(&key) {
                Some(&id) => id,
                None => {
                    let id = parse_expr(self, a, b).unwrap_or_else(|_| {
                        let text = key.clone();
                        self.intern(Expr::Opaque(text))
                    });
                    self.conjuncts.insert(key, id);
                    id
                }
            };
            if self.exprs.get(id as usize) != Some(&Expr::Bool(true)) {
                ids.push(id);
            }
        }
        match ids.len() {
            0 => self.intern(Expr::Bool(true)),
            1 => ids[0],
            _ => self.intern(Expr::All(ids)),
        }
    }

    /// The top-level `&&` operands of `toks[from..to]` (the whole range
    /// when a top-level `||` is present), each without its outer
    /// parentheses when they enclose it.
    fn split_and(&self, from: usize, to: usize) -> Vec<(usize, usize)> {
        let mut parts = Vec::new();
        let mut depth = 0i64;
        let mut start = from;
        let mut k = from;
        while k < to {
            match self.text(k) {
                "(" | "[" | "{" => depth += 1,
                ")" | "]" | "}" => depth -= 1,
                "|" if depth == 0 && self.joined(k, "|") => return vec![(from, to)],
                "&" if depth == 0 && self.joined(k, "&") => {
                    parts.push((start, k));
                    start = k + 2;
                    k += 1;
                }
                "or" if depth == 0 => return vec![(from, to)],
                "and" if depth == 0 => {
                    parts.push((start, k));
                    start = k + 1;
                }
                _ => {}
            }
            k += 1;
        }
        parts.push((start, to));
        parts
    }

    fn intern(&mut self, e: Expr) -> u32 {
        let key = format!("{e:?}");
        if let Some(&id) = self.interned.get(&key) {
            return id;
        }
        let id = u32::try_from(self.exprs.len()).unwrap_or(u32::MAX);
        self.exprs.push(e);
        self.interned.insert(key, id);
        id
    }
}

fn push_if(out: &mut Vec<Stmt>, arms: Vec<Arm>, otherwise: Vec<Stmt>) {
    out.push(Stmt::If { arms, otherwise });
}

/// Binary operators by precedence, loosest first.
const LEVELS: &[&[(&str, Option<BinOp>)]] = &[
    &[("||", None)],
    &[("&&", None)],
    &[("==", Some(BinOp::Eq)), ("!=", Some(BinOp::Ne))],
    &[
        ("<=", Some(BinOp::Le)),
        (">=", Some(BinOp::Ge)),
        ("<", Some(BinOp::Lt)),
        (">", Some(BinOp::Gt)),
    ],
    &[("+", Some(BinOp::Add)), ("-", Some(BinOp::Sub))],
    &[
        ("*", Some(BinOp::Mul)),
        ("/", Some(BinOp::Div)),
        ("%", Some(BinOp::Rem)),
    ],
];

/// Parses `toks[from..to]` as one expression.
fn parse_expr(w: &mut Walker<'_>, from: usize, to: usize) -> Result<u32, String> {
    let mut p = Parser {
        pos: from,
        to,
        depth: 0,
    };
    let e = p.level(w, 0)?;
    if p.pos != to {
        return Err(format!("unexpected '{}'", w.text(p.pos)));
    }
    Ok(e)
}

struct Parser {
    pos: usize,
    to: usize,
    depth: usize,
}

impl Parser {
    /// The operator at the cursor: one or two punctuation characters
    /// written together, or an alternative token (`and`, `or`, `not`);
    /// with how many tokens it takes.
    fn op(&self, w: &Walker<'_>) -> Option<(String, usize)> {
        if self.pos >= self.to {
            return None;
        }
        let first = w.text(self.pos);
        if w.toks[self.pos].kind == Tok::Ident {
            let alt = match first {
                "and" => "&&",
                "or" => "||",
                "not" => "!",
                "not_eq" => "!=",
                _ => return None,
            };
            return Some((alt.to_string(), 1));
        }
        if w.toks[self.pos].kind != Tok::Punct {
            return None;
        }
        if self.pos + 1 < self.to && w.toks[self.pos + 1].kind == Tok::Punct {
            let pair = format!("{first}{}", w.text(self.pos + 1));
            if w.toks[self.pos].end == w.toks[self.pos + 1].start
                && matches!(pair.as_str(), "||" | "&&" | "==" | "!=" | "<=" | ">=")
            {
                return Some((pair, 2));
            }
        }
        Some((first.to_string(), 1))
    }

    fn level(&mut self, w: &mut Walker<'_>, level: usize) -> Result<u32, String> {
        self.depth += 1;
        if self.depth > 100 {
            return Err("expression nests too deeply".into());
        }
        let result = if level == LEVELS.len() {
            self.unary(w)
        } else {
            self.binary(w, level)
        };
        self.depth -= 1;
        result
    }

    fn binary(&mut self, w: &mut Walker<'_>, level: usize) -> Result<u32, String> {
        let mut lhs = self.level(w, level + 1)?;
        let mut list = vec![lhs];
        while let Some((op, n)) = self.op(w) {
            let Some(&(_, bin)) = LEVELS[level].iter().find(|(t, _)| *t == op) else {
                break;
            };
            self.pos += n;
            let rhs = self.level(w, level + 1)?;
            match bin {
                Some(b) => {
                    lhs = w.intern(Expr::Bin(b, lhs, rhs));
                    list = vec![lhs];
                }
                None => list.push(rhs),
            }
        }
        if list.len() == 1 {
            return Ok(list[0]);
        }
        Ok(if LEVELS[level][0].0 == "||" {
            w.intern(Expr::Any(list))
        } else {
            w.intern(Expr::All(list))
        })
    }

    fn unary(&mut self, w: &mut Walker<'_>) -> Result<u32, String> {
        match self.op(w).as_ref().map(|(op, _)| op.as_str()) {
            Some("!") => {
                self.pos += 1;
                let x = self.level(w, LEVELS.len())?;
                Ok(w.intern(Expr::Not(x)))
            }
            Some("-") => {
                self.pos += 1;
                let x = self.level(w, LEVELS.len())?;
                Ok(match w.exprs.get(x as usize) {
                    Some(Expr::Int(v)) => {
                        let v = v.checked_neg().ok_or("integer overflow")?;
                        w.intern(Expr::Int(v))
                    }
                    _ => w.intern(Expr::Neg(x)),
                })
            }
            Some("+") => {
                self.pos += 1;
                self.level(w, LEVELS.len())
            }
            _ => self.postfix(w),
        }
    }

    fn postfix(&mut self, w: &mut Walker<'_>) -> Result<u32, String> {
        let mut e = self.primary(w)?;
        while self.pos < self.to && w.punct(self.pos, ".") {
            let name = w.text(self.pos + 1).to_string();
            if !w
                .toks
                .get(self.pos + 1)
                .is_some_and(|t| t.kind == Tok::Ident)
                || !w.punct(self.pos + 2, "(")
            {
                return Err("member access of a call's result".into());
            }
            self.pos += 2;
            let args = self.args(w)?;
            e = w.intern(Expr::Method(e, name, args));
        }
        Ok(e)
    }

    /// `( a, b, ... )` at the cursor.
    fn args(&mut self, w: &mut Walker<'_>) -> Result<Vec<u32>, String> {
        let close = matching_paren(w.src, w.toks, self.pos)
            .filter(|&c| c < self.to)
            .ok_or("unbalanced '('")?;
        let mut args = Vec::new();
        for (a, b) in cpp::split_commas(w.src, w.toks, self.pos + 1, close) {
            let mut inner = Parser {
                pos: a,
                to: b,
                depth: self.depth,
            };
            let x = inner.level(w, 0)?;
            if inner.pos != b {
                return Err(format!("unexpected '{}'", w.text(inner.pos)));
            }
            args.push(x);
        }
        self.pos = close + 1;
        Ok(args)
    }

    fn primary(&mut self, w: &mut Walker<'_>) -> Result<u32, String> {
        if self.pos >= self.to {
            return Err("expression ends early".into());
        }
        let t = w.toks[self.pos];
        let text = t.text(w.src);
        match t.kind {
            Tok::Punct if text == "(" => {
                let close = matching_paren(w.src, w.toks, self.pos)
                    .filter(|&c| c < self.to)
                    .ok_or("unbalanced '('")?;
                let mut inner = Parser {
                    pos: self.pos + 1,
                    to: close,
                    depth: self.depth,
                };
                let x = inner.level(w, 0)?;
                if inner.pos != close {
                    return Err(format!("unexpected '{}'", w.text(inner.pos)));
                }
                self.pos = close + 1;
                Ok(x)
            }
            Tok::Number => {
                self.pos += 1;
                number(text).map(|e| w.intern(e))
            }
            Tok::Literal if text.starts_with('"') && text.ends_with('"') && text.len() >= 2 => {
                self.pos += 1;
                let inner = &text[1..text.len() - 1];
                if inner.contains('\\') {
                    return Err("escapes in a string literal".into());
                }
                Ok(w.intern(Expr::Str(inner.to_string())))
            }
            Tok::Ident => {
                self.pos += 1;
                match text {
                    "true" => return Ok(w.intern(Expr::Bool(true))),
                    "false" => return Ok(w.intern(Expr::Bool(false))),
                    "nullptr" => return Ok(w.intern(Expr::Null)),
                    _ => {}
                }
                // `a::b::c`, then `.member`s.
                let mut path = text.to_string();
                while w.punct(self.pos, "::")
                    && w.toks
                        .get(self.pos + 1)
                        .is_some_and(|t| t.kind == Tok::Ident)
                {
                    path.push_str("::");
                    path.push_str(w.text(self.pos + 1));
                    self.pos += 2;
                }
                while w.punct(self.pos, ".")
                    && w.toks
                        .get(self.pos + 1)
                        .is_some_and(|t| t.kind == Tok::Ident)
                    && !w.punct(self.pos + 2, "(")
                {
                    path.push('.');
                    path.push_str(w.text(self.pos + 1));
                    self.pos += 2;
                }
                // `name<...>(` or `name<...>::` is a template-id (a cast, a
                // trait): not read here. `name <= x` and `name < x` are not.
                if w.punct(self.pos, "<") && !w.joined(self.pos, "=") {
                    let after = matching_angle(w.src, w.toks, self.pos).map(|c| c + 1);
                    if after.is_some_and(|a| w.punct(a, "(") || w.punct(a, "::")) {
                        return Err("a template-id in an expression".into());
                    }
                }
                if self.pos < self.to && w.punct(self.pos, "(") {
                    let args = self.args(w)?;
                    return Ok(w.intern(Expr::Call(path, args)));
                }
                Ok(w.intern(Expr::Name(path)))
            }
            _ => Err(format!("unexpected '{text}'")),
        }
    }
}

/// A C++ number literal.
fn number(text: &str) -> Result<Expr, String> {
    let bad = || format!("number '{text}'");
    let t = text.replace('\'', "");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        let digits = hex.trim_end_matches(['u', 'U', 'l', 'L']);
        return i64::from_str_radix(digits, 16)
            .map(Expr::Int)
            .map_err(|_| bad());
    }
    if t.contains(['.', 'e', 'E']) {
        let digits = t.trim_end_matches(['f', 'F', 'l', 'L']);
        return digits.parse::<f64>().map(Expr::Float).map_err(|_| bad());
    }
    let digits = t.trim_end_matches(['u', 'U', 'l', 'L']);
    digits.parse::<i64>().map(Expr::Int).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{Decision, Env, Value};

    struct Map(Vec<(&'static str, Value)>);

    impl Env for Map {
        fn value(&self, name: &str) -> Option<Value> {
            self.0
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.clone())
        }
        fn call(&self, f: &str, _: &[Value]) -> Option<Value> {
            match f {
                "ck_tile::get_device_name" => Some(Value::Str("gfx942".into())),
                "get_num_cus" => Some(Value::Bool(true)),
                _ => None,
            }
        }
    }

    fn blob_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    const API: &str = r#"
#include "fmha_fwd.hpp"
namespace {
bool get_num_cus(unsigned& num_cus) { int d; return hipGetDevice(&d) == 0; }
}
template <typename A_, typename B_, typename Arch>
float two_(const ck_tile::stream_config& s, fmha_args a)
{
    if(s.log_level_ > 0)
        std::cout << x_get_name_<A_, Arch>() << std::flush;
    return launch(s, [=](const ck_tile::stream_config& s_){ x_oneshot_<A_, Arch>(s_, a); },
                     [=](const ck_tile::stream_config& s_){ y_oneshot_<B_, Arch>(s_, a); });
}
float fmha_fwd(fmha_fwd_traits t, fmha_args a, const ck_tile::stream_config& s) {
    float r = -1;
    [[maybe_unused]] const float rate = 0.8; // minimum
    unsigned num_cus;
    if (!get_num_cus(num_cus)) {
        return r;
    }
    [[maybe_unused]] auto blocks = [&](unsigned m) { return a.batch * m; };
    [[maybe_unused]] const std::string device_name = ck_tile::get_device_name();
    if(device_name.compare(0, 4, "gfx9") == 0) {
        if(t.data_type.compare("fp16") == 0) {
            if(t.hdim_q <= 64 && t.hdim_v <= 64) {
                if((t.mask_type == mask_enum::no_mask) && (true /*a.seqlen_q % 64 != 0*/) && (a.seqlen_k % 64 == 0)) {
                    using trait_ = traits_<64, FmhaFwdFp16, false>;
                    return fmha_fwd_<trait_, ck_tile::gfx9_t>(s, a);
                }
                else if((t.mask_type == mask_enum::no_mask) && (a.seq_ptr != nullptr || a.seqlen_k % 64 != 0)) {
                    using trait_ = traits_<64, FmhaFwdFp16, true>;
                    if constexpr (std::is_same_v<FmhaFwdFp16, FmhaFwdFp8>) {
                        return -1;
                    } else {
                        r = two_<trait_, ctrait_<64>, ck_tile::gfx9_t>(s, a);
                        return r;
                    }
                }
                else if (get_num_blocks(128) < num_cus * rate) r = fmha_fwd_<traits_<32>, ck_tile::gfx9_t>(s, a);
                else {
                    return r;
                }
            }
        }
    }
    return r;
}
"#;

    fn rules() -> DispatcherRules {
        let b = blob_of(&[
            (
                "fmha_fwd_<traits_<64,FmhaFwdFp16,false>,ck_tile::gfx9_t>",
                "b_nopad",
            ),
            ("fmha_fwd_<traits_<32>,ck_tile::gfx9_t>", "b_32"),
            (
                "x_get_name_<traits_<64,FmhaFwdFp16,true>,ck_tile::gfx9_t>",
                "b_pad",
            ),
            (
                "x_oneshot_<traits_<64,FmhaFwdFp16,true>,ck_tile::gfx9_t>",
                "b_pad",
            ),
            ("y_oneshot_<ctrait_<64>,ck_tile::gfx9_t>", "b_combine"),
        ]);
        dispatcher_rules("api.cpp", API, &b).unwrap()
    }

    fn env(extra: &[(&'static str, Value)]) -> Map {
        let mut v = vec![
            ("t.data_type", Value::Str("fp16".into())),
            ("t.hdim_q", Value::Int(64)),
            ("t.hdim_v", Value::Int(64)),
            ("t.mask_type", Value::Enum("mask_enum::no_mask".into())),
            ("a.seq_ptr", Value::Null),
            ("num_cus", Value::Int(80)),
        ];
        v.extend_from_slice(extra);
        Map(v)
    }

    #[test]
    fn a_dispatcher_reads_as_a_tree_that_decides_like_the_cpp() {
        let r = rules();
        assert!(r.unresolved.is_empty(), "{:?}", r.unresolved);
        assert_eq!(r.calls, 3);
        let names: Vec<&str> = r.rules.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["fmha_fwd"]);
        let rules = RulesFile::parse(&r.rules.to_json()).unwrap();
        let decide = |e: &Map| rules.decide("fmha_fwd", e).unwrap();
        let d = decide(&env(&[("a.seqlen_k", Value::Int(128))]));
        assert_eq!(d.blobs(), ["b_nopad"]);
        // The dispatcher template's calls, `_get_name_` and both passes:
        // its blobs in call order.
        assert_eq!(
            decide(&env(&[("a.seqlen_k", Value::Int(100))])).blobs(),
            ["b_pad", "b_combine"]
        );
        // A different mask: the third arm asks for `get_num_blocks`.
        let e = Map(vec![
            ("t.data_type", Value::Str("fp16".into())),
            ("t.hdim_q", Value::Int(64)),
            ("t.hdim_v", Value::Int(64)),
            ("t.mask_type", Value::Enum("mask_enum::window".into())),
            ("num_cus", Value::Int(80)),
        ]);
        let err = rules.decide("fmha_fwd", &e).unwrap_err().to_string();
        assert!(
            err.contains("needs the result of `get_num_blocks(128)`"),
            "{err}"
        );
        // A type no arm takes falls to the final `return r;`.
        let e = env(&[("t.hdim_q", Value::Int(256)), ("a.seqlen_k", Value::Int(1))]);
        let e = Map(e.0.into_iter().rev().collect());
        assert!(matches!(decide(&e), Decision::NoBlob { .. }));
    }

    #[test]
    fn calls_without_a_blob_are_listed_with_their_lines() {
        let b = blob_of(&[("fmha_fwd_<traits_<32>,ck_tile::gfx9_t>", "b_32")]);
        let r = dispatcher_rules("api.cpp", API, &b).unwrap();
        // `x_oneshot_` and the others are not blob templates here.
        assert_eq!(r.unresolved.len(), 1, "{:?}", r.unresolved);
        assert_eq!(r.unresolved[0].0, 28);
        assert!(r.unresolved[0]
            .1
            .starts_with("fmha_fwd_<traits_<64,FmhaFwdFp16,false>"));
    }

    #[test]
    fn conditions_parse_with_cpp_precedence() {
        let src = "void f(T t) { if (t.a + 2 * 3 == 7 || !t.b && t.c != -1) { return x_<A>(t); }\n\
            if (t.a % 2 == 0 and not t.b or t.c) { return x_<A>(t); } }";
        let b = blob_of(&[("x_<A>", "bx")]);
        let r = dispatcher_rules("f.cpp", src, &b).unwrap().rules;
        let Stmt::If { arms, .. } = &r.functions[0].body[0] else {
            panic!("{:?}", r.functions)
        };
        assert_eq!(
            r.show(arms[0].cond),
            "(((t.a + (2 * 3)) == 7) || (!t.b && (t.c != -1)))"
        );
        let Stmt::If { arms, .. } = &r.functions[0].body[1] else {
            panic!("{:?}", r.functions)
        };
        assert_eq!(r.show(arms[0].cond), "((((t.a % 2) == 0) && !t.b) || t.c)");
    }

    #[test]
    fn what_cannot_be_read_is_kept_and_fails_only_when_reached() {
        let src = "void f(T t) {\n if (t.a) { return x_<A>(t); }\n\
            if (static_cast<int>(t.b) == 1) { return x_<A>(t); }\n\
            for (int i = 0; i < 2; ++i) { x_<A>(t); }\n}";
        let b = blob_of(&[("x_<A>", "bx")]);
        let r = dispatcher_rules("f.cpp", src, &b).unwrap().rules;
        let ok = Map(vec![("t.a", Value::Bool(true))]);
        assert_eq!(r.decide("f", &ok).unwrap().blobs(), ["bx"]);
        let no = Map(vec![("t.a", Value::Bool(false)), ("t.b", Value::Int(1))]);
        let err = r.decide("f", &no).unwrap_err().to_string();
        assert!(err.contains("cannot evaluate `static_cast"), "{err}");
        assert!(r.functions[0]
            .body
            .iter()
            .any(|s| matches!(s, Stmt::Unsupported { line: 4, .. })));
    }

    /// Newer CK's `fmha_fwd_api.cpp` (ROCm/rocm-libraries,
    /// `projects/composablekernel/example/ck_tile/01_fmha/codegen/ops/fmha_fwd.py`):
    /// two internal dispatchers and a public function that tries one, then
    /// the other; `{V3}` is the v3 dispatch.
    const SPLIT: &str = r#"
#include "fmha_fwd.hpp"
namespace {
bool get_num_cus(unsigned& num_cus) { int d; return hipGetDevice(&d) == 0; }
unsigned get_num_thread_blocks(unsigned b, unsigned m) { return b * m; }
} // namespace
namespace {
float fmha_fwd_v2([[maybe_unused]] fmha_fwd_traits t, [[maybe_unused]] fmha_fwd_args a, [[maybe_unused]] const ck_tile::stream_config& s) {
    float r = -1;
    unsigned num_cus;
    if(!get_num_cus(num_cus)) {
        return r;
    }
    [[maybe_unused]] auto get_num_blocks = [&](unsigned kM0) {
        return get_num_thread_blocks(a.batch, kM0);
    };
    if(t.hdim_q <= 64) {
        using trait_ = traits_<64>;
        return fmha_fwd_<trait_, ck_tile::gfx9_t>(s, a);
    }
    else if(t.hdim_q <= 128) {
        return fmha_fwd_<traits_<128>, ck_tile::gfx9_t>(s, a);
    }
    return r;
}
} // namespace
namespace {
float fmha_fwd_v3([[maybe_unused]] fmha_fwd_traits t, [[maybe_unused]] fmha_fwd_args a, [[maybe_unused]] const ck_tile::stream_config& s) {
    float r = -1;
    unsigned num_cus;
    if(!get_num_cus(num_cus)) {
        return r;
    }
{V3}
    return r;
}
} // namespace
{ENTRY}
"#;

    const NEWEST: &str = "
float fmha_fwd(fmha_fwd_traits traits, fmha_fwd_args args, const ck_tile::stream_config& config) {
    if (args.max_seqlen_q > 1) {
        float r = fmha_fwd_v3(traits, args, config);
        if (r >= 0) return r;
    }
    return fmha_fwd_v2(traits, args, config);
}";

    const V3_128: &str = "if(t.hdim_q == 128 && a.seqlen_k % 128 == 0) {
        using trait_ = traits_<128, v3>;
        return fmha_fwd_<trait_, ck_tile::gfx950_t>(s, a);
    }";

    fn split(v3: &str, entry: &str) -> RulesFile {
        let b = blob_of(&[
            ("fmha_fwd_<traits_<64>,ck_tile::gfx9_t>", "b64"),
            ("fmha_fwd_<traits_<128>,ck_tile::gfx9_t>", "b128"),
            ("fmha_fwd_<traits_<128,v3>,ck_tile::gfx950_t>", "b128_v3"),
        ]);
        let src = SPLIT.replace("{V3}", v3).replace("{ENTRY}", entry);
        let r = dispatcher_rules("fmha_fwd_api.cpp", &src, &b).unwrap();
        assert!(r.unresolved.is_empty(), "{:?}", r.unresolved);
        RulesFile::parse(&r.rules.to_json()).unwrap()
    }

    /// The traits and arguments, spelt with the parameter names `t` and
    /// `a` (`traits` and `args` for newer CK's `fmha_fwd`).
    fn fwd(t: &str, a: &str, hdim: i64, seqlen_q: i64, seqlen_k: i64) -> Map {
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        Map(vec![
            (leak(format!("{t}.hdim_q")), Value::Int(hdim)),
            (leak(format!("{a}.max_seqlen_q")), Value::Int(seqlen_q)),
            (leak(format!("{a}.seqlen_k")), Value::Int(seqlen_k)),
            ("num_cus", Value::Int(80)),
        ])
    }

    #[test]
    fn a_public_function_that_only_calls_dispatcher_functions_is_decided_through_them() {
        let r = split(V3_128, NEWEST);
        let names: Vec<&str> = r.functions.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["fmha_fwd_v2", "fmha_fwd_v3", "fmha_fwd"]);
        let f = r.function("fmha_fwd").unwrap();
        assert_eq!(f.params, ["traits", "args", "config"]);
        // The helpers called in conditions and lambdas stay calls the
        // environment answers.
        assert!(r.function("get_num_cus").is_none());
        let decide = |hdim, q, k| r.decide("fmha_fwd", &fwd("traits", "args", hdim, q, k));
        // One query row: v3 is not tried, v2 decides.
        assert_eq!(decide(128, 1, 256).unwrap().blobs(), ["b128"]);
        // v3 takes it: its kernel, and v2's where that one refuses the
        // arguments at run time.
        let d = decide(128, 64, 256).unwrap();
        assert_eq!(d.candidates(), [&["b128_v3"][..], &["b128"][..]]);
        assert!(matches!(d, Decision::Fallback { .. }));
        // v3 has no kernel for it (returns -1): v2's, and nothing else.
        assert_eq!(decide(64, 64, 256).unwrap().candidates(), [&["b64"][..]]);
        assert_eq!(decide(128, 64, 100).unwrap().candidates(), [&["b128"][..]]);
        // Neither has one.
        assert!(decide(256, 64, 256).unwrap().candidates().is_empty());
        // The internal functions decide on their own too, in their own
        // names.
        let d = r
            .decide("fmha_fwd_v3", &fwd("t", "a", 128, 64, 256))
            .unwrap();
        assert_eq!(d.blobs(), ["b128_v3"]);
    }

    #[test]
    fn a_v3_without_kernels_leaves_the_v2_decision_unchanged() {
        // CK writes v3 with an empty dispatch where no v3 kernel is built.
        let r = split("", NEWEST);
        assert!(r.function("fmha_fwd_v3").is_some());
        for (hdim, q) in [(64, 1), (64, 64), (128, 64), (256, 64)] {
            let public = r.decide("fmha_fwd", &fwd("traits", "args", hdim, q, 256));
            let v2 = r.decide("fmha_fwd_v2", &fwd("t", "a", hdim, q, 256));
            assert_eq!(public.unwrap().candidates(), v2.unwrap().candidates());
        }
    }

    #[test]
    fn a_fallback_on_a_negative_result_reads_in_every_spelling() {
        // Assigning the fallback's result and returning it once.
        let entry =
            "float fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config& s) {
            float r = fmha_fwd_v3(t, a, s);
            if (r < 0) r = fmha_fwd_v2(t, a, s);
            return r;
        }";
        let r = split(V3_128, entry);
        let d = r.decide("fmha_fwd", &fwd("t", "a", 128, 64, 256)).unwrap();
        assert_eq!(d.candidates(), [&["b128_v3"][..], &["b128"][..]]);
        let d = r.decide("fmha_fwd", &fwd("t", "a", 64, 64, 256)).unwrap();
        assert_eq!(d.candidates(), [&["b64"][..]]);
        // An intermediate CK: one or the other by a condition, no fallback
        // (`and`, `not`, locals of the public function).
        let entry = r#"float fmha_fwd(fmha_fwd_traits traits, fmha_fwd_args args, const ck_tile::stream_config& config) {
            const std::string device_name = ck_tile::get_device_name();
            const bool can_dispatch_v3 =
                (device_name.compare(0, 6, "gfx950") == 0) and ((false) or (traits.hdim_q == 128)) and
                (not (args.seqlen_k == 0));
            if(traits.hdim_q == 128)
            printf("can_dispatch_v3(=%d) -> ", can_dispatch_v3);
            if (true and can_dispatch_v3) {
                printf("dispatch to fmha_fwd_v3()\n");
                return fmha_fwd_v3(traits, args, config);
            } else {
                return fmha_fwd_v2(traits, args, config);
            }
        }"#;
        let r = split(V3_128, entry);
        // The environment says gfx942.
        let d = r
            .decide("fmha_fwd", &fwd("traits", "args", 128, 64, 256))
            .unwrap();
        assert_eq!(d.candidates(), [&["b128"][..]]);
    }

    #[test]
    fn a_public_function_calling_a_specialisation_is_decided_through_it() {
        let src = "template <> float fmha_bwd<2>(fmha_bwd_traits t, fmha_bwd_args a, const ck_tile::stream_config& s) {
            if (t.hdim_q <= 64) { return x_<A>(s, a); }
            return -1;
        }
        float fmha_bwd(fmha_bwd_traits t, fmha_bwd_args a, const ck_tile::stream_config& s) {
            return fmha_bwd<2>(t, a, s);
        }";
        let b = blob_of(&[("x_<A>", "bx")]);
        let r = dispatcher_rules("f.cpp", src, &b).unwrap().rules;
        let e = Map(vec![("t.hdim_q", Value::Int(64))]);
        assert_eq!(r.decide("fmha_bwd", &e).unwrap().blobs(), ["bx"]);
        let e = Map(vec![("t.hdim_q", Value::Int(128))]);
        assert!(matches!(
            r.decide("fmha_bwd", &e).unwrap(),
            Decision::NoBlob { .. }
        ));
    }

    #[test]
    fn kernels_run_after_kernels_and_calls_in_expressions_are_errors_when_reached() {
        let entry =
            "float fmha_fwd(fmha_fwd_traits t, fmha_fwd_args a, const ck_tile::stream_config& s) {
            float r = fmha_fwd_v3(t, a, s);
            r = fmha_fwd_v2(t, a, s);
            if (t.hdim_q == 1) { return 2 * fmha_fwd_v2(t, a, s); }
            return r;
        }";
        let r = split(V3_128, entry);
        let err = r
            .decide("fmha_fwd", &fwd("t", "a", 128, 64, 256))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("calls kernels after a call that ran kernels"),
            "{err}"
        );
        // v3 has none: v2's, as the C++ does.
        let d = r.decide("fmha_fwd", &fwd("t", "a", 64, 64, 256)).unwrap();
        assert_eq!(d.blobs(), ["b64"]);
        let err = r
            .decide("fmha_fwd", &fwd("t", "a", 1, 64, 256))
            .unwrap_err()
            .to_string();
        assert!(err.contains("inside an expression"), "{err}");
    }

    #[test]
    fn hostile_input_is_an_error_not_a_panic() {
        let b = blob_of(&[("x_<A>", "bx")]);
        for src in [
            "void f() { if (",
            "void f() { if (a) { x_<A>(",
            "void f() { x_<A>(t) }",
            "void f() { else x_<A>(t); }",
            "void f() { if (a) x_<A>(t) }",
        ] {
            let _ = dispatcher_rules("f.cpp", src, &b);
        }
        let deep = format!(
            "void f() {{ {} x_<A>(t); {} }}",
            "{".repeat(200),
            "}".repeat(200)
        );
        let err = dispatcher_rules("f.cpp", &deep, &b)
            .unwrap_err()
            .to_string();
        assert!(err.contains("nest too deeply"), "{err}");
        let chain: String = (0..5000)
            .map(|k| format!("if (t.a == {k}) {{ return x_<A>(t); }} else "))
            .collect();
        let src = format!("void f(T t) {{ {chain} {{ return 0; }} }}");
        let r = dispatcher_rules("f.cpp", &src, &b).unwrap();
        let Stmt::If { arms, otherwise } = &r.rules.functions[0].body[0] else {
            panic!()
        };
        assert_eq!((arms.len(), otherwise.len()), (5000, 1));
        let e = Map(vec![("t.a", Value::Int(4999))]);
        assert_eq!(r.rules.decide("f", &e).unwrap().blobs(), ["bx"]);
    }
}
