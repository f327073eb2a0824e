//! A blob's preprocessor guard and which GPU targets it admits.
//!
//! CK wraps the specialisations of a blob in a condition on the device
//! pass's architecture macros (`#if !defined(__HIP_DEVICE_COMPILE__) ||
//! (defined(__gfx9__) && !defined(__gfx950__))`): a target whose device
//! pass drops them has no kernel in the blob, whatever its file name says.
//! This module reads such a condition and decides it for a target from the
//! macros the target defines ([`target_macros`]); it never runs a
//! preprocessor and never guesses a macro's value: a condition it cannot
//! decide is an error, so a blob is never dropped on a misreading.

use std::fmt;

/// A preprocessor condition made of `defined`, `!`, `&&`, `||`,
/// parentheses and integer literals: what CK's generators write around a
/// blob's specialisations.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
pub enum Guard {
    /// An integer literal: true unless zero (`#if 0`, `#if 1`).
    Const(bool),
    /// `defined(NAME)` or `defined NAME`.
    Defined(String),
    /// `!x`.
    Not(Box<Guard>),
    /// `a && b && ...`.
    And(Vec<Guard>),
    /// `a || b || ...`.
    Or(Vec<Guard>),
}

impl Guard {
    /// Parses the condition of an `#if` or `#elif` (without the directive).
    ///
    /// A bare macro name, a comparison or arithmetic is an error: its value
    /// depends on the compile's flags, which a blob's guard must not.
    ///
    /// # Example
    ///
    /// ```
    /// use ck_jit_ck::guard::Guard;
    /// let g = Guard::parse("defined(__gfx9__) && !defined(__gfx950__)").unwrap();
    /// assert!(g.admits("gfx942"));
    /// assert!(!g.admits("gfx950"));
    /// ```
    pub fn parse(condition: &str) -> Result<Guard, String> {
        let parsed = tokens(condition).and_then(|toks| {
            let mut p = Parser { toks: &toks, at: 0 };
            let g = p.or()?;
            match p.toks.get(p.at) {
                None => Ok(g),
                Some(t) => Err(format!("unexpected '{t}'")),
            }
        });
        parsed.map_err(|e| format!("{e} in guard '{}'", condition.trim()))
    }

    /// Whether the device pass for `target` keeps what this guards: the
    /// condition evaluated with the target's macros ([`target_macros`])
    /// and `__HIP_DEVICE_COMPILE__` defined, every other macro undefined.
    /// The host pass keeps everything CK guards, so only the device pass
    /// decides whether a target has the kernel.
    pub fn admits(&self, target: &str) -> bool {
        let macros = target_macros(target);
        self.eval(&|name: &str| {
            name == "__HIP_DEVICE_COMPILE__" || macros.iter().any(|m| m == name)
        })
    }

    /// The condition with `is_defined` deciding each `defined(NAME)`.
    pub fn eval(&self, is_defined: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Guard::Const(b) => *b,
            Guard::Defined(name) => is_defined(name),
            Guard::Not(g) => !g.eval(is_defined),
            Guard::And(gs) => gs.iter().all(|g| g.eval(is_defined)),
            Guard::Or(gs) => gs.iter().any(|g| g.eval(is_defined)),
        }
    }

    /// Both conditions: what a specialisation inside nested conditionals
    /// needs.
    pub fn and(self, other: Guard) -> Guard {
        let mut all = Vec::new();
        for g in [self, other] {
            match g {
                Guard::And(gs) => all.extend(gs),
                g => all.push(g),
            }
        }
        Guard::And(all)
    }

    /// The negation: what an `#else` branch needs of the branches before it.
    pub fn negate(self) -> Guard {
        match self {
            Guard::Not(g) => *g,
            g => Guard::Not(Box::new(g)),
        }
    }
}

impl fmt::Display for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |f: &mut fmt::Formatter<'_>, gs: &[Guard], op: &str| {
            for (i, g) in gs.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                match g {
                    Guard::And(_) | Guard::Or(_) => write!(f, "({g})")?,
                    g => write!(f, "{g}")?,
                }
            }
            Ok(())
        };
        match self {
            Guard::Const(b) => write!(f, "{}", u8::from(*b)),
            Guard::Defined(n) => write!(f, "defined({n})"),
            Guard::Not(g) => match **g {
                Guard::And(_) | Guard::Or(_) => write!(f, "!({g})"),
                _ => write!(f, "!{g}"),
            },
            Guard::And(gs) => list(f, gs, "&&"),
            Guard::Or(gs) => list(f, gs, "||"),
        }
    }
}

/// The architecture macros a HIP device pass for `target` defines: the
/// target's own (`__gfx942__`) and its family's, `gfx` and the major
/// version (`__gfx9__` for `gfx942`, `gfx950` and `gfx90a`, `__gfx11__` for
/// `gfx1100`, `__gfx12__` for `gfx1201`). A processor name ends in two
/// characters of minor version and stepping, so the major version is the
/// rest. A generic target (`gfx9-4-generic`) defines `__gfx9_4_generic__`
/// and its family's; feature suffixes (`gfx942:xnack-`) are ignored.
///
/// # Example
///
/// ```
/// assert_eq!(
///     ck_jit_ck::guard::target_macros("gfx1100"),
///     ["__gfx1100__", "__gfx11__"]
/// );
/// ```
pub fn target_macros(target: &str) -> Vec<String> {
    let name = target.split(':').next().unwrap_or(target);
    let Some(version) = name.strip_prefix("gfx") else {
        return vec![format!("__{}__", name.replace('-', "_"))];
    };
    let mut out = vec![format!("__{}__", name.replace('-', "_"))];
    let major = match version.split_once('-') {
        // `gfx9-4-generic`, `gfx10-3-generic`: the major version comes first.
        Some((major, _)) => major,
        None => version.get(..version.len().saturating_sub(2)).unwrap_or(""),
    };
    if !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()) {
        let family = format!("__gfx{major}__");
        if !out.contains(&family) {
            out.push(family);
        }
    }
    out
}

/// The tokens of a condition: identifiers, numbers and the operators a
/// guard may use.
fn tokens(src: &str) -> Result<Vec<String>, String> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'\\' && b.get(i + 1).is_some_and(|n| *n == b'\n' || *n == b'\r') {
            // A continued directive line.
            i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            break;
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = src[i + 2..]
                .find("*/")
                .ok_or_else(|| "unterminated comment".to_string())?;
            i += 2 + end + 2;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(src[start..i].to_string());
        } else if src[i..].starts_with("&&") || src[i..].starts_with("||") {
            out.push(src[i..i + 2].to_string());
            i += 2;
        } else if matches!(c, b'!' | b'(' | b')') && !src[i..].starts_with("!=") {
            out.push((c as char).to_string());
            i += 1;
        } else {
            let op: String = src[i..]
                .chars()
                .take_while(|c| !c.is_ascii_alphanumeric() && !c.is_whitespace())
                .collect();
            return Err(format!("unsupported operator '{op}'"));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    toks: &'a [String],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.at).map(String::as_str)
    }

    fn next(&mut self) -> Option<&str> {
        let t = self.toks.get(self.at).map(String::as_str);
        self.at += 1;
        t
    }

    fn or(&mut self) -> Result<Guard, String> {
        let mut terms = vec![self.and()?];
        while self.peek() == Some("||") {
            self.at += 1;
            terms.push(self.and()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Guard::Or(terms)
        })
    }

    fn and(&mut self) -> Result<Guard, String> {
        let mut terms = vec![self.unary()?];
        while self.peek() == Some("&&") {
            self.at += 1;
            terms.push(self.unary()?);
        }
        Ok(if terms.len() == 1 {
            terms.remove(0)
        } else {
            Guard::And(terms)
        })
    }

    fn unary(&mut self) -> Result<Guard, String> {
        match self.next() {
            Some("!") => Ok(self.unary()?.negate()),
            Some("(") => {
                let g = self.or()?;
                match self.next() {
                    Some(")") => Ok(g),
                    _ => Err("expected ')'".into()),
                }
            }
            Some("defined") => {
                let parens = self.peek() == Some("(");
                if parens {
                    self.at += 1;
                }
                let name = match self.next() {
                    Some(n) if is_ident(n) => n.to_string(),
                    _ => return Err("expected a macro name after 'defined'".into()),
                };
                if parens && self.next() != Some(")") {
                    return Err(format!("expected ')' after 'defined({name}'"));
                }
                Ok(Guard::Defined(name))
            }
            Some(n) if n.bytes().all(|b| b.is_ascii_digit()) => {
                Ok(Guard::Const(n.bytes().any(|b| b != b'0')))
            }
            Some(n) if is_ident(n) => Err(format!(
                "the value of macro '{n}' depends on the compile, not the target"
            )),
            Some(t) => Err(format!("unexpected '{t}'")),
            None => Err("the condition ends early".into()),
        }
    }
}

fn is_ident(s: &str) -> bool {
    s.bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CK 2025-11's three guards (codegen/ops/*.py `preprocessor_check`),
    /// as its generated blobs write them.
    const GFX9: &str = "!defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__))";
    const GFX9_NOT_950: &str =
        "!defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__) && !defined(__gfx950__))";
    const GFX950: &str = "!defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx950__))";

    fn admitted(cond: &str, targets: &[&str]) -> Vec<String> {
        let g = Guard::parse(cond).unwrap();
        targets
            .iter()
            .filter(|t| g.admits(t))
            .map(|t| t.to_string())
            .collect()
    }

    #[test]
    fn cks_guards_admit_the_targets_their_device_passes_keep() {
        let all = ["gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1201"];
        assert_eq!(admitted(GFX9, &all), ["gfx90a", "gfx942", "gfx950"]);
        assert_eq!(admitted(GFX9_NOT_950, &all), ["gfx90a", "gfx942"]);
        assert_eq!(admitted(GFX950, &all), ["gfx950"]);
        assert_eq!(
            admitted("defined(__gfx12__)", &all),
            ["gfx1201"],
            "a gfx12 guard"
        );
        assert_eq!(admitted("defined __gfx11__", &all), ["gfx1100"]);
    }

    #[test]
    fn a_target_defines_its_own_macro_and_its_major_family() {
        assert_eq!(target_macros("gfx942"), ["__gfx942__", "__gfx9__"]);
        assert_eq!(target_macros("gfx950"), ["__gfx950__", "__gfx9__"]);
        assert_eq!(target_macros("gfx90a"), ["__gfx90a__", "__gfx9__"]);
        assert_eq!(target_macros("gfx1030"), ["__gfx1030__", "__gfx10__"]);
        assert_eq!(target_macros("gfx1151"), ["__gfx1151__", "__gfx11__"]);
        assert_eq!(target_macros("gfx1201"), ["__gfx1201__", "__gfx12__"]);
        assert_eq!(target_macros("gfx942:xnack-"), ["__gfx942__", "__gfx9__"]);
        assert_eq!(
            target_macros("gfx9-4-generic"),
            ["__gfx9_4_generic__", "__gfx9__"]
        );
    }

    #[test]
    fn precedence_negation_and_constants_follow_the_preprocessor() {
        // `&&` binds tighter than `||`.
        let g = Guard::parse("defined(A) || defined(B) && defined(C)").unwrap();
        let only_a = |n: &str| n == "A";
        assert!(g.eval(&only_a));
        let only_b = |n: &str| n == "B";
        assert!(!g.eval(&only_b));
        assert!(!Guard::parse("0").unwrap().admits("gfx942"));
        assert!(Guard::parse("1").unwrap().admits("gfx942"));
        assert!(!Guard::parse("!(defined(__gfx9__) || 0)")
            .unwrap()
            .admits("gfx942"));
        assert!(Guard::parse("defined(__gfx9__) /* why */ // trailing")
            .unwrap()
            .admits("gfx90a"));
        assert_eq!(
            Guard::parse(GFX9_NOT_950).unwrap().to_string(),
            "!defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__) && !defined(__gfx950__))"
        );
    }

    #[test]
    fn conditions_that_depend_on_the_compile_are_errors() {
        for (bad, why) in [
            ("__clang_major__ >= 20", "unsupported operator '>='"),
            ("__clang_major__", "depends on the compile"),
            ("CK_TILE_FMHA_FWD_FAST_EXP2", "depends on the compile"),
            ("defined(__gfx9__) &&", "ends early"),
            ("(defined(__gfx9__)", "expected ')'"),
            ("defined()", "expected a macro name"),
            ("defined(A) defined(B)", "unexpected 'defined'"),
            ("1 + 1", "unsupported operator '+'"),
            ("A != 1", "unsupported operator '!='"),
        ] {
            let e = Guard::parse(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
            assert!(e.contains(&format!("in guard '{bad}'")), "{bad}: {e}");
        }
    }
}
