//! The controlling expression of an `#if` or `#elif`, evaluated by the C++
//! preprocessor's rules: object-like macros expanded, `defined X` and
//! `defined(X)`, `true`/`false` as 1/0, every other identifier 0, integer
//! and character literals, unary `! ~ - +`, the binary operators of C++ with
//! its precedence, `?:` and the comma, in `intmax_t`/`uintmax_t`
//! arithmetic (64 bits, wrapping as GCC's and Clang's do, a division by
//! zero an error).
//!
//! It decides what a compile keeps of a blob from a macro set
//! ([`Macros`]); it never guesses: a macro whose value or definedness the
//! build cannot know (the compiler's version, a macro a header sets from
//! the HIP version) is an error naming it, as is anything the
//! preprocessor itself rejects. Like the preprocessor, it reports no error
//! from an operand it does not evaluate (`1 || 1/0`).

use crate::macros::{Def, Macros};
use crate::Error;

/// The value of an expression: 64 bits and whether they are unsigned, as
/// the preprocessor computes in `intmax_t` or `uintmax_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Value {
    /// The bits.
    pub bits: u64,
    /// Whether the value is a `uintmax_t`.
    pub unsigned: bool,
}

impl Value {
    fn signed(v: i64) -> Value {
        Value {
            bits: v as u64,
            unsigned: false,
        }
    }

    fn truth(b: bool) -> Value {
        Value::signed(i64::from(b))
    }

    /// Whether it is non-zero: whether an `#if` on it keeps its group.
    pub fn is_true(self) -> bool {
        self.bits != 0
    }

    /// The value as the preprocessor would print it.
    pub fn as_i128(self) -> i128 {
        if self.unsigned {
            i128::from(self.bits)
        } else {
            i128::from(self.bits as i64)
        }
    }
}

/// Why a condition could not be evaluated: the preprocessor rejects it, or
/// it reads a macro the build cannot know. Public as [`Error::Condition`]
/// and [`Error::UnknownMacro`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CondError {
    /// The preprocessor would reject it (a syntax error, a division by
    /// zero): its message.
    Invalid(String),
    /// It depends on macro `name`, whose value or definedness is not known
    /// at build time, for the reason given.
    Unknown {
        /// The macro.
        name: String,
        /// Why it is not known.
        why: String,
    },
}

impl std::fmt::Display for CondError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CondError::Invalid(why) => f.write_str(why),
            CondError::Unknown { name, why } => write!(
                f,
                "the condition depends on macro '{name}', which is not known at build time ({why})"
            ),
        }
    }
}

impl From<CondError> for Error {
    fn from(e: CondError) -> Error {
        match e {
            CondError::Invalid(why) => Error::Condition { why },
            CondError::Unknown { name, why } => Error::UnknownMacro { name, why },
        }
    }
}

fn invalid(why: impl Into<String>) -> CondError {
    CondError::Invalid(why.into())
}

/// Evaluates the expression of an `#if` (the text after the directive's
/// name, continued lines joined or not) with `macros`.
///
/// # Example
///
/// ```
/// use ck_jit_ck::cond::evaluate;
/// use ck_jit_ck::macros::Macros;
/// let mut m = Macros::new();
/// m.define("__gfx942__", "1");
/// assert!(evaluate("defined(__gfx942__) && (true || 1 / 0)", &m).unwrap().is_true());
/// assert!(evaluate("1 / 0", &m).is_err());
/// ```
///
/// # Errors
///
/// [`Error::Condition`] for what the preprocessor rejects,
/// [`Error::UnknownMacro`] for a macro the build cannot know.
pub fn evaluate(expr: &str, macros: &Macros) -> Result<Value, Error> {
    try_evaluate(expr, macros).map_err(Error::from)
}

/// [`evaluate`], with the reason as the evaluator has it.
pub(crate) fn try_evaluate(expr: &str, macros: &Macros) -> Result<Value, CondError> {
    let toks = lex(expr)?;
    let mut expanded = Vec::with_capacity(toks.len());
    expand(&toks, macros, &mut Vec::new(), &mut expanded)?;
    if expanded.is_empty() {
        return Err(invalid("#if with no expression"));
    }
    let mut p = Parser {
        toks: &expanded,
        at: 0,
        macros,
    };
    let v = p.comma(true)?;
    match p.toks.get(p.at) {
        None => Ok(v),
        Some(t) => Err(invalid(format!("missing binary operator before token '{t}'"))),
    }
}

/// A token of a condition.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// A preprocessing number as written (`0x10ull`, `1.5`).
    Number(String),
    /// A character literal's value.
    Char(i64),
    Punct(&'static str),
    /// A macro whose value is not known, and why: an error only where it
    /// is evaluated.
    Unknown(String, String),
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Ident(s) | Tok::Number(s) | Tok::Unknown(s, _) => f.write_str(s),
            Tok::Char(c) => write!(f, "'{c}'"),
            Tok::Punct(p) => f.write_str(p),
        }
    }
}

/// Punctuators of C++ that are no operator of a condition, longest
/// first: the preprocessor reads `--1` as `--` `1`, an error, never as
/// two minus signs.
const INVALID_PUNCTS: &[&str] = &[
    "<<=", ">>=", "...", "->*", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "->",
    "::", ".*", "##",
];

/// Punctuators longest first, so that `<<` is never read as `<` `<`.
const PUNCTS: &[&str] = &[
    "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "(", ")", "!", "~", "-", "+", "*", "/", "%",
    "<", ">", "&", "^", "|", "?", ":", ",",
];

fn lex(src: &str) -> Result<Vec<Tok>, CondError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        // Blanks, and the backslash of a continued line.
        if c.is_ascii_whitespace() || (c == b'\\' && matches!(b.get(i + 1), Some(b'\n' | b'\r'))) {
            i += 1;
        } else if src[i..].starts_with("//") {
            break;
        } else if src[i..].starts_with("/*") {
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| invalid("unterminated comment"))?;
            i += 2 + end + 2;
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(src[start..i].to_string()));
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            // A pp-number: digits, letters, `_`, `.`, `'` and a sign after
            // an exponent letter.
            let start = i;
            i += 1;
            while i < b.len() {
                let d = b[i];
                let sign = matches!(d, b'+' | b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P');
                if sign || d.is_ascii_alphanumeric() || d == b'_' || d == b'.' || d == b'\'' {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Tok::Number(src[start..i].to_string()));
        } else if c == b'\'' {
            let (v, len) = char_literal(&src[i..])?;
            out.push(Tok::Char(v));
            i += len;
        } else if let Some(p) = INVALID_PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            return Err(invalid(format!(
                "token '{p}' is not valid in preprocessor expressions"
            )));
        } else if let Some(p) = PUNCTS.iter().find(|p| src[i..].starts_with(**p)) {
            out.push(Tok::Punct(p));
            i += p.len();
        } else {
            let t: String = src[i..].chars().take(1).collect();
            return Err(invalid(format!("token '{t}' is not valid in preprocessor expressions")));
        }
    }
    Ok(out)
}

/// A character literal at the start of `s` (`'a'`, `'\n'`, `'\x41'`):
/// its value as a `char`, signed as on x86 (GCC and Clang give `'\xff'`
/// -1), and its length.
fn char_literal(s: &str) -> Result<(i64, usize), CondError> {
    let b = s.as_bytes();
    let bad = || invalid("missing terminating ' character");
    let mut i = 1;
    let mut chars: Vec<u8> = Vec::new();
    loop {
        match b.get(i) {
            None | Some(b'\n') => return Err(bad()),
            Some(b'\'') => break,
            Some(b'\\') => {
                let e = *b.get(i + 1).ok_or_else(bad)?;
                i += 2;
                let v = match e {
                    b'n' => b'\n',
                    b't' => b'\t',
                    b'r' => b'\r',
                    b'0'..=b'7' => {
                        let mut v = u32::from(e - b'0');
                        let mut n = 1;
                        while n < 3 && b.get(i).is_some_and(|d| (b'0'..=b'7').contains(d)) {
                            v = v * 8 + u32::from(b[i] - b'0');
                            i += 1;
                            n += 1;
                        }
                        v as u8
                    }
                    b'x' => {
                        let mut v: u32 = 0;
                        let start = i;
                        while let Some(d) = b.get(i).and_then(|d| (*d as char).to_digit(16)) {
                            v = v.wrapping_mul(16).wrapping_add(d);
                            i += 1;
                        }
                        if i == start {
                            return Err(invalid("\\x used with no following hex digits"));
                        }
                        v as u8
                    }
                    b'a' => 7,
                    b'b' => 8,
                    b'f' => 12,
                    b'v' => 11,
                    b'\\' | b'\'' | b'"' | b'?' => e,
                    _ => return Err(invalid(format!("unknown escape sequence '\\{}'", e as char))),
                };
                chars.push(v);
            }
            Some(c) if c.is_ascii() => {
                chars.push(*c);
                i += 1;
            }
            Some(_) => return Err(invalid("a non-ASCII character literal is not supported")),
        }
    }
    match chars.as_slice() {
        [] => Err(invalid("empty character constant")),
        [c] => Ok((i64::from(*c as i8), i + 1)),
        // A multi-character constant is an `int` of the bytes in order.
        many => {
            let v = many.iter().fold(0u32, |v, c| (v << 8) | u32::from(*c));
            Ok((i64::from(v as i32), i + 1))
        }
    }
}

/// `toks` with every object-like macro replaced by its expansion,
/// `defined`'s operands left as written (a macro being expanded is not
/// expanded again inside itself, as the preprocessor paints it blue).
fn expand(
    toks: &[Tok],
    macros: &Macros,
    active: &mut Vec<String>,
    out: &mut Vec<Tok>,
) -> Result<(), CondError> {
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        match t {
            Tok::Ident(name) if name == "defined" => {
                // `defined X` or `defined ( X )`, copied unexpanded.
                let n = if toks.get(i + 1) == Some(&Tok::Punct("(")) { 4 } else { 2 };
                let end = (i + n).min(toks.len());
                out.extend_from_slice(&toks[i..end]);
                i = end;
                continue;
            }
            Tok::Ident(name) if !active.contains(name) => match macros.get(name) {
                Some(Def::Object(body)) => {
                    let body = lex(body)?;
                    active.push(name.clone());
                    expand(&body, macros, active, out)?;
                    active.pop();
                }
                // Without arguments a function-like macro's name is not
                // expanded: an identifier, 0.
                Some(Def::Function) if toks.get(i + 1) != Some(&Tok::Punct("(")) => {
                    out.push(t.clone())
                }
                Some(Def::Function) => {
                    return Err(invalid(format!(
                        "function-like macro '{name}' in a condition is not supported"
                    )))
                }
                Some(Def::Unknown { why, .. }) => out.push(Tok::Unknown(name.clone(), why.clone())),
                None => out.push(t.clone()),
            },
            _ => out.push(t.clone()),
        }
        i += 1;
    }
    Ok(())
}

/// A recursive-descent evaluator: each level parses one precedence level
/// of C++ and evaluates as it goes; `live` is false inside an operand the
/// preprocessor does not evaluate (`0 && x`), where no error is reported.
struct Parser<'a> {
    toks: &'a [Tok],
    at: usize,
    macros: &'a Macros,
}

/// The binary operators by precedence, loosest first (below `?:`).
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser<'_> {
    fn peek_punct(&self) -> Option<&'static str> {
        match self.toks.get(self.at) {
            Some(Tok::Punct(p)) => Some(p),
            _ => None,
        }
    }

    fn expect(&mut self, p: &str, why: &str) -> Result<(), CondError> {
        if self.peek_punct() == Some(p) {
            self.at += 1;
            Ok(())
        } else {
            Err(invalid(why.to_string()))
        }
    }

    fn comma(&mut self, live: bool) -> Result<Value, CondError> {
        let mut v = self.conditional(live)?;
        while self.peek_punct() == Some(",") {
            self.at += 1;
            v = self.conditional(live)?;
        }
        Ok(v)
    }

    fn conditional(&mut self, live: bool) -> Result<Value, CondError> {
        let c = self.binary(0, live)?;
        if self.peek_punct() != Some("?") {
            return Ok(c);
        }
        self.at += 1;
        let a = self.comma(live && c.is_true())?;
        self.expect(":", "'?' without following ':'")?;
        let b = self.conditional(live && !c.is_true())?;
        let unsigned = a.unsigned || b.unsigned;
        let bits = if c.is_true() { a.bits } else { b.bits };
        Ok(Value { bits, unsigned })
    }

    fn binary(&mut self, level: usize, live: bool) -> Result<Value, CondError> {
        let Some(ops) = LEVELS.get(level) else {
            return self.unary(live);
        };
        let mut lhs = self.binary(level + 1, live)?;
        while let Some(op) = self.peek_punct().filter(|p| ops.contains(p)) {
            self.at += 1;
            // The right operand of `&&` and `||` is evaluated only when
            // the left one does not decide.
            let rhs_live = match op {
                "&&" => live && lhs.is_true(),
                "||" => live && !lhs.is_true(),
                _ => live,
            };
            if self.at >= self.toks.len() {
                return Err(invalid(format!("operator '{op}' has no right operand")));
            }
            let rhs = self.binary(level + 1, rhs_live)?;
            lhs = apply(op, lhs, rhs, rhs_live)?;
        }
        Ok(lhs)
    }

    fn unary(&mut self, live: bool) -> Result<Value, CondError> {
        let Some(t) = self.toks.get(self.at) else {
            return Err(invalid("the condition ends early"));
        };
        self.at += 1;
        match t {
            Tok::Punct(op @ ("!" | "~" | "-" | "+")) => {
                if self.at >= self.toks.len() {
                    return Err(invalid(format!("operator '{op}' has no right operand")));
                }
                let v = self.unary(live)?;
                Ok(match *op {
                    "!" => Value::truth(!v.is_true()),
                    "~" => Value {
                        bits: !v.bits,
                        unsigned: v.unsigned,
                    },
                    "-" => Value {
                        bits: v.bits.wrapping_neg(),
                        unsigned: v.unsigned,
                    },
                    _ => v,
                })
            }
            Tok::Punct("(") => {
                if self.peek_punct() == Some(")") {
                    return Err(invalid("missing expression between '(' and ')'"));
                }
                let v = self.comma(live)?;
                self.expect(")", "missing ')' in expression")?;
                Ok(v)
            }
            Tok::Punct(p) => Err(invalid(format!("operator '{p}' has no left operand"))),
            Tok::Number(n) => number(n),
            Tok::Char(c) => Ok(Value::signed(*c)),
            Tok::Unknown(name, why) => {
                if live {
                    Err(CondError::Unknown {
                        name: name.clone(),
                        why: why.clone(),
                    })
                } else {
                    Ok(Value::signed(0))
                }
            }
            Tok::Ident(name) if name == "defined" => {
                let parens = self.peek_punct() == Some("(");
                if parens {
                    self.at += 1;
                }
                let Some(Tok::Ident(operand)) = self.toks.get(self.at) else {
                    return Err(invalid("operator 'defined' requires an identifier"));
                };
                self.at += 1;
                if parens {
                    self.expect(")", "missing ')' after 'defined'")?;
                }
                match self.macros.get(operand) {
                    Some(Def::Unknown {
                        defined: None, why, ..
                    }) if live => Err(CondError::Unknown {
                        name: operand.clone(),
                        why: why.clone(),
                    }),
                    Some(Def::Unknown { defined, .. }) => {
                        Ok(Value::truth(defined.unwrap_or(false)))
                    }
                    Some(_) => Ok(Value::truth(true)),
                    None => Ok(Value::truth(false)),
                }
            }
            Tok::Ident(name) => {
                if self.peek_punct() == Some("(") {
                    return Err(invalid(format!(
                        "missing binary operator before token '(' (after '{name}')"
                    )));
                }
                // In C++ `true` and `false` are 1 and 0; any other
                // identifier left after expansion is 0.
                Ok(Value::truth(name == "true"))
            }
        }
    }
}

/// `lhs op rhs` with the usual arithmetic conversions of the preprocessor:
/// unsigned when either side is, except for shifts (the left side's) and
/// the comparisons and logical operators (a signed 0 or 1).
fn apply(op: &str, lhs: Value, rhs: Value, live: bool) -> Result<Value, CondError> {
    let unsigned = lhs.unsigned || rhs.unsigned;
    let (a, b) = (lhs.bits, rhs.bits);
    let (sa, sb) = (a as i64, b as i64);
    let v = |bits: u64| Value { bits, unsigned };
    Ok(match op {
        "||" => Value::truth(lhs.is_true() || rhs.is_true()),
        "&&" => Value::truth(lhs.is_true() && rhs.is_true()),
        "|" => v(a | b),
        "^" => v(a ^ b),
        "&" => v(a & b),
        "==" => Value::truth(a == b),
        "!=" => Value::truth(a != b),
        "<" | ">" | "<=" | ">=" => {
            let ord = if unsigned { a.cmp(&b) } else { sa.cmp(&sb) };
            Value::truth(match op {
                "<" => ord.is_lt(),
                ">" => ord.is_gt(),
                "<=" => ord.is_le(),
                _ => ord.is_ge(),
            })
        }
        "<<" | ">>" => shift(op == "<<", lhs, rhs),
        "+" => v(a.wrapping_add(b)),
        "-" => v(a.wrapping_sub(b)),
        "*" => v(a.wrapping_mul(b)),
        "/" | "%" => {
            if b == 0 {
                if live {
                    return Err(invalid("division by zero in #if"));
                }
                return Ok(v(0));
            }
            let div = op == "/";
            match (unsigned, div) {
                (true, true) => v(a / b),
                (true, false) => v(a % b),
                (false, true) => v(sa.wrapping_div(sb) as u64),
                (false, false) => v(sa.wrapping_rem(sb) as u64),
            }
        }
        _ => return Err(invalid(format!("operator '{op}' is not supported"))),
    })
}

/// A shift as GCC computes it: a negative signed count shifts the other
/// way; a count of 64 or more leaves 0, or -1 for a negative signed value
/// shifted right.
fn shift(left: bool, lhs: Value, rhs: Value) -> Value {
    let (left, n) = if !rhs.unsigned && (rhs.bits as i64) < 0 {
        (!left, (rhs.bits as i64).unsigned_abs())
    } else {
        (left, rhs.bits)
    };
    let negative = !lhs.unsigned && (lhs.bits as i64) < 0;
    let bits = match (left, n >= 64) {
        (true, true) => 0,
        (true, false) => lhs.bits << n,
        (false, true) => {
            if negative {
                u64::MAX
            } else {
                0
            }
        }
        (false, false) => {
            if lhs.unsigned {
                lhs.bits >> n
            } else {
                ((lhs.bits as i64) >> n) as u64
            }
        }
    };
    Value {
        bits,
        unsigned: lhs.unsigned,
    }
}

/// An integer literal: decimal, `0x` hex, `0b` binary or octal, digit
/// separators `'`, suffixes `u`, `l`, `ll` in any case and order. A value
/// too large for `intmax_t` is unsigned, as GCC and Clang take it.
fn number(text: &str) -> Result<Value, CondError> {
    let t: String = text.chars().filter(|c| *c != '\'').collect();
    let lower = t.to_ascii_lowercase();
    let (radix, digits) = if let Some(h) = lower.strip_prefix("0x") {
        (16, h)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b)
    } else if lower.starts_with('0') && lower.len() > 1 {
        (8, &lower[1..])
    } else {
        (10, lower.as_str())
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let (body, suffix) = digits.split_at(end);
    if radix != 10 && radix != 8 && body.is_empty() {
        return Err(invalid(format!("invalid integer constant '{text}'")));
    }
    let floating = radix != 16 && (suffix.starts_with(['.', 'e']) || lower.contains('.'));
    if floating || (radix == 16 && suffix.starts_with(['.', 'p'])) {
        return Err(invalid(format!(
            "floating constant '{text}' in preprocessor expression"
        )));
    }
    let mut unsigned_suffix = false;
    let mut longs = 0;
    let mut rest = suffix;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('u').filter(|_| !unsigned_suffix) {
            unsigned_suffix = true;
            rest = r;
        } else if let Some(r) = rest.strip_prefix("ll").filter(|_| longs == 0) {
            // `lL` is no suffix: both letters must have one case.
            if !suffix_case_matches(text, "ll") {
                return Err(invalid(format!("invalid suffix on integer constant '{text}'")));
            }
            longs = 2;
            rest = r;
        } else if let Some(r) = rest.strip_prefix('l').filter(|_| longs == 0) {
            longs = 1;
            rest = r;
        } else {
            return Err(invalid(format!(
                "invalid suffix '{suffix}' on integer constant '{text}'"
            )));
        }
    }
    let digits = if body.is_empty() { "0" } else { body };
    let bits = u64::from_str_radix(digits, radix).map_err(|_| {
        invalid(format!("integer constant '{text}' is too large for its type"))
    })?;
    let unsigned = unsigned_suffix || bits > i64::MAX as u64;
    Ok(Value { bits, unsigned })
}

/// Whether the `ll` suffix of `text` is `ll` or `LL`, not mixed.
fn suffix_case_matches(text: &str, _: &str) -> bool {
    !(text.contains("lL") || text.contains("Ll"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expr: &str) -> Result<i128, CondError> {
        let mut m = Macros::new();
        m.define("ONE", "1");
        m.define("TWO", "ONE + ONE");
        m.define("SELF", "SELF + 1");
        m.define("EMPTY", "");
        m.define_unknown("__clang_major__", Some(true), "the compiler's version");
        m.define_unknown("MAYBE", None, "set by a header from the HIP version");
        try_evaluate(expr, &m).map(Value::as_i128)
    }

    #[test]
    fn arithmetic_follows_cpp_precedence_and_types() {
        for (e, want) in [
            ("1 + 2 * 3", 7),
            ("(1 + 2) * 3", 9),
            ("1 << 2 + 1", 8),
            ("1 | 2 ^ 3 & 4", 3),
            ("10 - 4 - 3", 3),
            ("7 / 2 % 3", 0),
            ("-7 / 2", -3),
            ("-7 % 3", -1),
            ("-1 < 0", 1),
            ("-1 < 0u", 0),
            ("-1 > 0u", 1),
            ("0xffffffffffffffff == -1", 1),
            ("18446744073709551615 > 0", 1),
            ("0x10 + 010 + 0b11 + 1'000", 1027),
            ("100ULL + 1lu", 101),
            ("~0", -1),
            ("~0u == 18446744073709551615", 1),
            ("-1 >> 70", -1),
            ("1 << 64", 0),
            ("1 << -1", 0),
            ("8 >> -1", 16),
            ("1 ? 2 : 3", 2),
            ("0 ? 2 : 1 ? 4 : 5", 4),
            ("0 ? 1 : -1u > 0", 1),
            ("(1, 2)", 2),
            ("!0 + !5", 1),
            ("'a' + '\\n'", 107),
            ("'\\xff'", -1),
            ("'ab'", 24930),
            ("9223372036854775807 + 1 < 0", 1),
        ] {
            assert_eq!(eval(e), Ok(want), "{e}");
        }
    }

    #[test]
    fn defined_true_false_and_unknown_identifiers() {
        for (e, want) in [
            ("defined ONE && defined(TWO)", 1),
            ("defined NOPE || defined(NOPE)", 0),
            ("true", 1),
            ("false || !true", 0),
            ("NOPE", 0),
            ("NOPE + 3", 3),
            ("TWO * 3", 4), // text replacement: 1 + 1 * 3
            ("SELF", 1),
            ("EMPTY 1", 1),
            ("defined(__clang_major__)", 1),
            ("0 && __clang_major__ > 3", 0),
            ("1 || defined(MAYBE)", 1),
            ("!defined(__HIP_DEVICE_COMPILE__) || (true)", 1),
        ] {
            assert_eq!(eval(e), Ok(want), "{e}");
        }
    }

    #[test]
    fn what_the_preprocessor_rejects_or_the_build_cannot_know_is_an_error() {
        for (e, why) in [
            ("1 / 0", "division by zero"),
            ("5 % (1 - 1)", "division by zero"),
            ("", "no expression"),
            ("1 +", "no right operand"),
            ("(1", "missing ')'"),
            ("()", "missing expression"),
            ("1 2", "missing binary operator"),
            ("1.0", "floating constant"),
            ("1 = 1", "not valid"),
            ("--1", "token '--' is not valid"),
            ("1 +++1", "token '++' is not valid"),
            ("\"s\"", "not valid"),
            ("1 ? 2", "without following ':'"),
            ("defined", "requires an identifier"),
            ("defined(1)", "requires an identifier"),
            ("F(1)", "missing binary operator"),
            ("99999999999999999999", "too large"),
            ("1zz", "invalid suffix"),
            ("__clang_major__ >= 20", "'__clang_major__'"),
            ("defined(MAYBE)", "'MAYBE'"),
        ] {
            let e2 = eval(e).unwrap_err().to_string();
            assert!(e2.contains(why), "{e}: {e2}");
        }
        // Not evaluated, not reported.
        assert_eq!(eval("0 && 1 / 0"), Ok(0));
        assert_eq!(eval("1 ? 1 : 1 / 0"), Ok(1));
    }
}
