//! Just enough C++ lexing for CK's generated sources: tokens with their
//! byte spans and lines, template argument lists, type aliases, and a
//! normal form for types so that a dispatcher's `using trait_ = ...;` and a
//! blob's `using trait_0 = ...;` compare equal when they name the same type.
//!
//! Input is untrusted (it is fuzzed): every function returns an error or a
//! best effort, never panics, and recursion is bounded.

/// Token kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tok {
    /// Identifier or keyword.
    Ident,
    /// Number literal.
    Number,
    /// String or character literal.
    Literal,
    /// One punctuation character, or `::`.
    Punct,
    /// A whole preprocessor line (with continuations).
    Preproc,
}

/// A token: its kind, byte span in the source and 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub kind: Tok,
    pub start: usize,
    pub end: usize,
    pub line: usize,
}

impl Token {
    pub(crate) fn text<'a>(&self, src: &'a str) -> &'a str {
        src.get(self.start..self.end).unwrap_or("")
    }
}

/// A lexing error: line and reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LexError {
    pub line: usize,
    pub why: String,
}

/// Byte classes, looked up rather than worked out: the lexer runs over
/// every byte of CK's generated sources in a build script, which cargo
/// compiles without optimisation.
const IDENT_START: u8 = 1;
const IDENT_CONTINUE: u8 = 2;
const SPACE: u8 = 4;
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let c = i as u8;
        if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            t[i] |= IDENT_START | IDENT_CONTINUE;
        }
        if c.is_ascii_digit() {
            t[i] |= IDENT_CONTINUE;
        }
        if c.is_ascii_whitespace() {
            t[i] |= SPACE;
        }
        i += 1;
    }
    t
};

fn is_ident_start(c: u8) -> bool {
    CLASS[c as usize] & IDENT_START != 0
}

fn is_ident_continue(c: u8) -> bool {
    CLASS[c as usize] & IDENT_CONTINUE != 0
}

/// Splits `src` into tokens. Comments and whitespace are dropped; a
/// preprocessor directive is one token.
pub(crate) fn tokenize(src: &str) -> Result<Vec<Token>, LexError> {
    let mut lx = Lexer {
        b: src.as_bytes(),
        i: 0,
        line: 1,
    };
    let mut out = Vec::new();
    // Whether only whitespace was seen since the last line break, so a `#`
    // starts a directive.
    let mut line_start = true;
    while let Some(&c) = lx.b.get(lx.i) {
        if c == b'\n' {
            lx.line += 1;
            lx.i += 1;
            line_start = true;
            continue;
        }
        if CLASS[c as usize] & SPACE != 0 {
            lx.i += 1;
            continue;
        }
        if c == b'/' && lx.at(b"//") {
            lx.skip_to_line_end();
            continue;
        }
        if c == b'/' && lx.at(b"/*") {
            lx.skip_block_comment()?;
            continue;
        }
        let (start, line) = (lx.i, lx.line);
        let kind = if c == b'#' && line_start {
            lx.directive();
            Tok::Preproc
        } else {
            line_start = false;
            lx.token(c)?
        };
        out.push(Token {
            kind,
            start,
            end: lx.i,
            line,
        });
    }
    Ok(out)
}

/// The lexer's position: byte index and 1-based line.
struct Lexer<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
}

impl Lexer<'_> {
    fn at(&self, s: &[u8]) -> bool {
        self.b[self.i..].starts_with(s)
    }

    fn err(&self, line: usize, why: &str) -> LexError {
        LexError {
            line,
            why: why.into(),
        }
    }

    fn skip_to_line_end(&mut self) {
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            self.i += 1;
        }
    }

    fn skip_block_comment(&mut self) -> Result<(), LexError> {
        let open = self.line;
        self.i += 2;
        loop {
            if self.i + 1 >= self.b.len() {
                return Err(self.err(open, "unterminated /* comment"));
            }
            if self.at(b"*/") {
                self.i += 2;
                return Ok(());
            }
            if self.b[self.i] == b'\n' {
                self.line += 1;
            }
            self.i += 1;
        }
    }

    /// A whole directive line, with its backslash continuations.
    fn directive(&mut self) {
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            if self.at(b"\\\n") {
                self.line += 1;
                self.i += 2;
                continue;
            }
            self.i += 1;
        }
    }

    /// One token starting with `c` (not whitespace, a comment or a
    /// directive); its kind.
    fn token(&mut self, c: u8) -> Result<Tok, LexError> {
        if c == b'R' && self.at(b"R\"") {
            self.raw_string()?;
            return Ok(Tok::Literal);
        }
        if is_ident_start(c) {
            let b = self.b;
            let mut i = self.i;
            while i < b.len() && CLASS[b[i] as usize] & IDENT_CONTINUE != 0 {
                i += 1;
            }
            self.i = i;
            return Ok(Tok::Ident);
        }
        let digit_after = self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit);
        if c.is_ascii_digit() || (c == b'.' && digit_after) {
            self.number();
            return Ok(Tok::Number);
        }
        if c == b'"' || c == b'\'' {
            self.quoted(c)?;
            return Ok(Tok::Literal);
        }
        self.i += if c == b':' && self.at(b"::") { 2 } else { 1 };
        Ok(Tok::Punct)
    }

    /// A raw string `R"delim( ... )delim"`.
    fn raw_string(&mut self) -> Result<(), LexError> {
        let start_line = self.line;
        let open = self.i + 2;
        let Some(paren) = self.b[open..].iter().position(|&x| x == b'(') else {
            return Err(self.err(self.line, "malformed raw string"));
        };
        let delim = &self.b[open..open + paren];
        if delim.len() > 16 || delim.iter().any(|x| x.is_ascii_whitespace()) {
            return Err(self.err(self.line, "malformed raw string delimiter"));
        }
        let mut j = open + paren + 1;
        loop {
            if j >= self.b.len() {
                return Err(self.err(start_line, "unterminated raw string"));
            }
            if self.b[j] == b')'
                && self.b[j + 1..].starts_with(delim)
                && self.b.get(j + 1 + delim.len()) == Some(&b'"')
            {
                self.i = j + delim.len() + 2;
                return Ok(());
            }
            if self.b[j] == b'\n' {
                self.line += 1;
            }
            j += 1;
        }
    }

    /// A number: digits, letters, `.`, `'` separators, and a sign after an
    /// exponent.
    fn number(&mut self) {
        let b = self.b;
        while self.i < b.len()
            && (b[self.i].is_ascii_alphanumeric()
                || b[self.i] == b'.'
                || b[self.i] == b'\''
                || ((b[self.i] == b'+' || b[self.i] == b'-')
                    && matches!(b[self.i - 1], b'e' | b'E' | b'p' | b'P')))
        {
            self.i += 1;
        }
    }

    /// A string or character literal closed by `quote` on the same line.
    fn quoted(&mut self, quote: u8) -> Result<(), LexError> {
        let start_line = self.line;
        self.i += 1;
        loop {
            match self.b.get(self.i) {
                None | Some(b'\n') => return Err(self.err(start_line, "unterminated literal")),
                Some(b'\\') => self.i += 2,
                Some(&x) if x == quote => {
                    self.i += 1;
                    return Ok(());
                }
                Some(_) => self.i += 1,
            }
        }
    }
}

/// Whether token `t` is the punctuation `p`.
pub(crate) fn is_punct(src: &str, t: Option<&Token>, p: &str) -> bool {
    t.is_some_and(|t| t.kind == Tok::Punct && t.text(src) == p)
}

/// How far a template argument list, a call's arguments or a `using`
/// declaration may reach: far more than any generated code needs, and a
/// bound on the work hostile input can cause.
pub(crate) const MAX_SPAN_TOKENS: usize = 1 << 14;

/// The index of the `>` closing the `<` at `open`, skipping nested `<>`,
/// `()`, `[]` and `{}`. `None` when unbalanced or farther than
/// [`MAX_SPAN_TOKENS`].
pub(crate) fn matching_angle(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    let mut angle = 0usize;
    let mut other = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open).take(MAX_SPAN_TOKENS) {
        if t.kind != Tok::Punct {
            continue;
        }
        match t.text(src) {
            "(" | "[" | "{" => other += 1,
            ")" | "]" | "}" => {
                if other == 0 {
                    return None;
                }
                other -= 1;
            }
            "<" if other == 0 => angle += 1,
            ">" if other == 0 => {
                angle = angle.checked_sub(1)?;
                if angle == 0 {
                    return Some(i);
                }
            }
            ";" => return None,
            _ => {}
        }
    }
    None
}

/// The index of the `)` closing the `(` at `open` (within
/// [`MAX_SPAN_TOKENS`]).
pub(crate) fn matching_paren(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    matching_close(src, toks, open, ")", MAX_SPAN_TOKENS)
}

/// The index of the `}` closing the `{` at `open`, skipping nested
/// brackets; `None` when unbalanced. Not bounded: a dispatcher's body is
/// the whole if-chain over every blob (millions of tokens in CK 2024's
/// bwd), and one linear scan is what the lexing cost already.
pub(crate) fn matching_brace(src: &str, toks: &[Token], open: usize) -> Option<usize> {
    matching_close(src, toks, open, "}", usize::MAX)
}

/// The index of the bracket `close` that closes the one at `open`, within
/// `max` tokens; `None` when another kind of bracket closes it first.
fn matching_close(
    src: &str,
    toks: &[Token],
    open: usize,
    close: &str,
    max: usize,
) -> Option<usize> {
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate().skip(open).take(max) {
        if t.kind != Tok::Punct {
            continue;
        }
        match t.text(src) {
            "(" | "[" | "{" => depth += 1,
            text @ (")" | "]" | "}") => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return (text == close).then_some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// Splits `toks[from..to]` at top-level commas (outside `<>`, `()`, `[]`,
/// `{}`), giving index ranges.
pub(crate) fn split_commas(
    src: &str,
    toks: &[Token],
    from: usize,
    to: usize,
) -> Vec<(usize, usize)> {
    let mut parts = Vec::new();
    let mut depth = 0i64;
    let mut start = from;
    for (i, t) in toks.iter().enumerate().take(to).skip(from) {
        if t.kind != Tok::Punct {
            continue;
        }
        match t.text(src) {
            "<" | "(" | "[" | "{" => depth += 1,
            ">" | ")" | "]" | "}" => depth -= 1,
            "," if depth == 0 => {
                parts.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < to || !parts.is_empty() {
        parts.push((start, to));
    }
    parts
}

/// How deep alias expansion may go (a cycle or a hostile input stops here).
const MAX_ALIAS_DEPTH: usize = 16;
/// The most tokens a normalised type may have.
const MAX_TYPE_TOKENS: usize = 20_000;

/// The normal form of the type spelt by `toks` in `src`: aliases expanded
/// through `lookup` (a name followed or preceded by `::` is not an alias),
/// integer arithmetic between template-argument separators folded
/// (`128/2` is `64`), a leading global `::` dropped, and tokens joined with
/// a space only between two words.
pub(crate) fn normalize<'a, F>(src: &'a str, toks: &[Token], lookup: &F) -> Result<String, String>
where
    F: Fn(&str) -> Option<(&'a [Token], &'a str)>,
{
    let mut words: Vec<String> = Vec::new();
    expand(src, toks, lookup, 0, &mut words)?;
    let folded = fold(&words);
    Ok(join(&folded))
}

fn expand<'a, F>(
    src: &'a str,
    toks: &[Token],
    lookup: &F,
    depth: usize,
    out: &mut Vec<String>,
) -> Result<(), String>
where
    F: Fn(&str) -> Option<(&'a [Token], &'a str)>,
{
    if depth > MAX_ALIAS_DEPTH {
        return Err("type aliases nest too deeply (a cycle?)".into());
    }
    for (i, t) in toks.iter().enumerate() {
        if out.len() > MAX_TYPE_TOKENS {
            return Err("type is too long".into());
        }
        let text = t.text(src);
        let qualified =
            (i > 0 && is_punct(src, toks.get(i - 1), "::")) || is_punct(src, toks.get(i + 1), "::");
        if t.kind == Tok::Ident && !qualified {
            if let Some((inner, inner_src)) = lookup(text) {
                expand(inner_src, inner, lookup, depth + 1, out)?;
                continue;
            }
        }
        if text == "::"
            && (out.is_empty()
                || matches!(out.last().map(String::as_str), Some("<" | "," | "=" | "(")))
        {
            continue;
        }
        out.push(text.to_string());
    }
    Ok(())
}

fn is_word(s: &str) -> bool {
    s.bytes().next().is_some_and(is_ident_continue)
}

fn join(words: &[String]) -> String {
    let mut s = String::new();
    for (i, w) in words.iter().enumerate() {
        if i > 0 && is_word(&words[i - 1]) && is_word(w) {
            s.push(' ');
        }
        s.push_str(w);
    }
    s
}

/// Folds each run of integer arithmetic between `<`, `>` and `,`.
fn fold(words: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut seg: Vec<&str> = Vec::new();
    let flush = |seg: &mut Vec<&str>, out: &mut Vec<String>| {
        match (seg.len() > 1).then(|| eval(seg)).flatten() {
            Some(v) => out.push(v.to_string()),
            None => out.extend(seg.iter().map(|s| s.to_string())),
        }
        seg.clear();
    };
    for w in words {
        if matches!(w.as_str(), "<" | ">" | ",") {
            flush(&mut seg, &mut out);
            out.push(w.clone());
        } else {
            seg.push(w);
        }
    }
    flush(&mut seg, &mut out);
    out
}

fn int_literal(s: &str) -> Option<i128> {
    let t = s.trim_end_matches(['u', 'U', 'l', 'L']).replace('\'', "");
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return i128::from_str_radix(hex, 16).ok();
    }
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    t.parse().ok()
}

/// Evaluates integer `+ - * / %` with parentheses; `None` unless the whole
/// run is such an expression and every step is defined.
fn eval(seg: &[&str]) -> Option<i128> {
    if seg.iter().any(|s| {
        !(int_literal(s).is_some() || matches!(*s, "+" | "-" | "*" | "/" | "%" | "(" | ")"))
    }) {
        return None;
    }
    let mut p = Eval {
        seg,
        at: 0,
        depth: 0,
    };
    let v = p.sum()?;
    (p.at == seg.len()).then_some(v)
}

struct Eval<'s> {
    seg: &'s [&'s str],
    at: usize,
    depth: usize,
}

impl<'s> Eval<'s> {
    fn peek(&self) -> Option<&'s str> {
        self.seg.get(self.at).copied()
    }

    fn sum(&mut self) -> Option<i128> {
        let mut v = self.product()?;
        while let Some(op @ ("+" | "-")) = self.peek() {
            self.at += 1;
            let r = self.product()?;
            v = if op == "+" {
                v.checked_add(r)?
            } else {
                v.checked_sub(r)?
            };
        }
        Some(v)
    }

    fn product(&mut self) -> Option<i128> {
        let mut v = self.unary()?;
        while let Some(op @ ("*" | "/" | "%")) = self.peek() {
            self.at += 1;
            let r = self.unary()?;
            v = match op {
                "*" => v.checked_mul(r)?,
                "/" => v.checked_div(r)?,
                _ => v.checked_rem(r)?,
            };
        }
        Some(v)
    }

    fn unary(&mut self) -> Option<i128> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        let v = match self.peek()? {
            "-" => {
                self.at += 1;
                self.unary()?.checked_neg()
            }
            "+" => {
                self.at += 1;
                self.unary()
            }
            "(" => {
                self.at += 1;
                let v = self.sum()?;
                if self.peek() != Some(")") {
                    return None;
                }
                self.at += 1;
                Some(v)
            }
            lit => {
                let v = int_literal(lit)?;
                self.at += 1;
                Some(v)
            }
        };
        self.depth -= 1;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<String> {
        tokenize(src)
            .unwrap()
            .iter()
            .map(|t| t.text(src).to_string())
            .collect()
    }

    #[test]
    fn tokens_skip_comments_and_keep_directives_whole() {
        let src = "#include \"a.hpp\"\n// c\nusing x = a::b<1, /* k */ 2>; \"s\\\"q\" 'c' R\"x(y)\")x\"\n  #define Q \\\n 1\n";
        assert_eq!(
            texts(src),
            [
                "#include \"a.hpp\"",
                "using",
                "x",
                "=",
                "a",
                "::",
                "b",
                "<",
                "1",
                ",",
                "2",
                ">",
                ";",
                "\"s\\\"q\"",
                "'c'",
                "R\"x(y)\")x\"",
                "#define Q \\\n 1"
            ]
        );
        let toks = tokenize("a\n\nb").unwrap();
        assert_eq!((toks[0].line, toks[1].line), (1, 3));
    }

    #[test]
    fn lexing_errors_are_reported() {
        for bad in ["/* open", "\"open", "'x", "R\"(open", "R\"abc"] {
            assert!(tokenize(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn normal_form_folds_arithmetic_and_whitespace() {
        let norm = |s: &str| {
            let toks = tokenize(s).unwrap();
            normalize(s, &toks, &|_: &str| None).unwrap()
        };
        assert_eq!(
            norm("t_<128, ck_tile::M<false>,  64/2, (1+2)*3, x - 1, -4 >"),
            "t_<128,ck_tile::M<false>,32,9,x-1,-4>"
        );
        assert_eq!(norm(":: a ::b< unsigned  int >"), "a::b<unsigned int>");
        assert_eq!(norm("t<1/0>"), "t<1/0>");
    }

    #[test]
    fn aliases_expand_unless_qualified() {
        let src = "m_ t<m_, ns::m_, m_::x>";
        let alias = "ck::Mask<true>";
        let alias_toks = tokenize(alias).unwrap();
        let toks = tokenize(src).unwrap();
        let lookup = |n: &str| (n == "m_").then_some((alias_toks.as_slice(), alias));
        assert_eq!(
            normalize(src, &toks, &lookup).unwrap(),
            "ck::Mask<true>t<ck::Mask<true>,ns::m_,m_::x>"
        );
        let cyc = "a";
        let cyc_toks = tokenize(cyc).unwrap();
        let lookup = |n: &str| (n == "a").then_some((cyc_toks.as_slice(), cyc));
        assert!(normalize(cyc, &cyc_toks, &lookup).is_err());
    }
}
