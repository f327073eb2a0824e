//! Queries written as text, for command lines and configuration: the
//! comparisons of [`Query`] in the compact form a person types
//! (`dtype=bf16`, `hdim>=128`, `lse`, `!dropout`) and in the form a query
//! displays (`hdim >= 128, has lse`), so a displayed query reads back as
//! the same query. Never reads a family.

use std::str::FromStr;

use ck_jit_manifest::escape;

use super::{Clause, Cmp, Preference, Query};
use crate::error::Error;

/// What every condition may look like, for error messages.
const FORMS: &str = "expected KEY=VALUE, KEY!=VALUE, KEY>=N, KEY>N, KEY<=N, KEY<N, \
                     KEY (a set flag) or !KEY (an unset flag), e.g. hdim>=128";

impl FromStr for Query {
    type Err = Error;

    /// Reads conditions separated by commas, each one of `key=value`,
    /// `key!=value`, `key>=n`, `key>n`, `key<=n`, `key<n` (`n` a decimal
    /// integer), `key` (the flag is set, [`Query::has`]) or `!key` (it is
    /// not, [`Query::lacks`]); spaces around the parts do not matter, so
    /// the displayed form (`has lse`, `lacks dropout`, `prefer min tile`)
    /// reads back too. `any` or an empty text is the query every blob
    /// matches. A value cannot contain a comma.
    ///
    /// ```
    /// use ck_jit_rt::Query;
    ///
    /// let q: Query = "dtype=bf16, hdim>=128, lse, !dropout".parse()?;
    /// assert_eq!(q, Query::new().eq("dtype", "bf16").ge("hdim", 128).has("lse").lacks("dropout"));
    /// assert_eq!(q.to_string().parse::<Query>()?, q);
    /// # Ok::<(), ck_jit_rt::Error>(())
    /// ```
    fn from_str(text: &str) -> Result<Query, Error> {
        let mut q = Query::new();
        if text.trim() == "any" {
            return Ok(q);
        }
        for part in text.split(',') {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            match condition(part)? {
                Term::Clause(c) => q.clauses.push(c),
                Term::Preference(p) => q.prefs.push(p),
            }
        }
        Ok(q)
    }
}

enum Term {
    Clause(Clause),
    Preference(Preference),
}

fn condition(text: &str) -> Result<Term, Error> {
    let err = |why: &str| Error::BadQuery {
        condition: text.to_string(),
        why: why.to_string(),
    };
    let key = |k: &str| -> Result<String, Error> {
        let k = k.trim();
        if k.is_empty() {
            Err(err(&format!("the key is empty; {FORMS}")))
        } else if k.contains(char::is_whitespace) || k.contains(['=', '<', '>', '!']) {
            Err(err(&format!("'{}' is not a key; {FORMS}", escape(k))))
        } else {
            Ok(k.to_string())
        }
    };
    // The longest operator first: `>=` before `>`, `!=` before `=`.
    for (op, cmp) in [
        (">=", Cmp::Ge),
        ("<=", Cmp::Le),
        (">", Cmp::Gt),
        ("<", Cmp::Lt),
    ] {
        if let Some((k, n)) = text.split_once(op) {
            if k.contains(['=', '!']) {
                break;
            }
            let n = n.trim().parse::<i64>().map_err(|_| {
                err(&format!(
                    "'{op}' compares integers, and '{}' is not one (e.g. hdim{op}128)",
                    escape(n.trim())
                ))
            })?;
            return Ok(Term::Clause(Clause::Cmp(key(k)?, cmp, n)));
        }
    }
    // A typo of an operator (`dtype==f32`, `unroll=>4`) or a missing
    // comma (`dtype=bf16 hdim>=128`) is an error, not a value.
    let value = |op: &str, k: &str, v: &str| -> Result<String, Error> {
        let v = v.trim();
        if let Some(c) = v.chars().next().filter(|c| "=<>!".contains(*c)) {
            return Err(err(&format!(
                "the value '{}' starts with '{c}': write {}{op}VALUE; {FORMS}",
                escape(v),
                escape(k.trim())
            )));
        }
        if let Some((_, rest)) = v.split_once(char::is_whitespace) {
            if rest.contains(['=', '<', '>']) {
                return Err(err(&format!(
                    "'{}' reads as two conditions: separate them with a comma",
                    escape(text)
                )));
            }
        }
        Ok(v.to_string())
    };
    if let Some((k, v)) = text.split_once("!=") {
        return Ok(Term::Clause(Clause::Ne(key(k)?, value("!=", k, v)?)));
    }
    if let Some((k, v)) = text.split_once('=') {
        return Ok(Term::Clause(Clause::Eq(key(k)?, value("=", k, v)?)));
    }
    if let Some(k) = text.strip_prefix('!') {
        return Ok(Term::Clause(Clause::Lacks(key(k)?)));
    }
    let words: Vec<&str> = text.split_whitespace().collect();
    match words.as_slice() {
        ["has", k] => Ok(Term::Clause(Clause::Has(key(k)?))),
        ["lacks", k] => Ok(Term::Clause(Clause::Lacks(key(k)?))),
        ["prefer", "min", k] => Ok(Term::Preference(Preference::Min(key(k)?))),
        ["prefer", "max", k] => Ok(Term::Preference(Preference::Max(key(k)?))),
        [k] => Ok(Term::Clause(Clause::Has(key(k)?))),
        _ => Err(err(FORMS)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Query, String> {
        text.parse::<Query>().map_err(|e| e.to_string())
    }

    #[test]
    fn every_comparison_reads_in_its_compact_form() {
        assert_eq!(
            parse("dtype=bf16,mode!=group,hdim>=128,tile>32,d<=256,w<4,lse,!dropout").unwrap(),
            Query::new()
                .eq("dtype", "bf16")
                .ne("mode", "group")
                .ge("hdim", 128)
                .gt("tile", 32)
                .le("d", 256)
                .lt("w", 4)
                .has("lse")
                .lacks("dropout")
        );
        assert_eq!(parse(" hdim >= -2 ").unwrap(), Query::new().ge("hdim", -2));
        assert_eq!(parse("k=").unwrap(), Query::new().eq("k", ""));
        assert_eq!(parse("").unwrap(), Query::new());
        assert_eq!(parse("any").unwrap(), Query::new());
    }

    #[test]
    fn a_displayed_query_reads_back_as_itself() {
        let q = Query::new()
            .eq("a", 1)
            .ne("b", "x")
            .gt("c", -2)
            .lt("d", 3)
            .has("f")
            .lacks("e")
            .prefer_min("f")
            .prefer_max("g");
        assert_eq!(parse(&q.to_string()).unwrap(), q);
    }

    #[test]
    fn a_bad_condition_says_which_and_what_was_expected() {
        assert_eq!(
            parse("hdim>=big").unwrap_err(),
            "cannot read the condition 'hdim>=big': '>=' compares integers, \
             and 'big' is not one (e.g. hdim>=128)"
        );
        let e = parse("dtype=bf16, =x").unwrap_err();
        assert!(
            e.starts_with("cannot read the condition '=x': the key is empty; expected KEY=VALUE"),
            "{e}"
        );
        let e = parse("two words").unwrap_err();
        assert!(e.contains("'two words'") && e.contains("KEY>=N"), "{e}");
        let e = parse("!").unwrap_err();
        assert!(e.contains("the key is empty"), "{e}");
    }

    /// Typos of an operator and a missing comma were read as values
    /// (`dtype==f32` as `dtype = "=f32"`).
    #[test]
    fn operator_typos_and_a_missing_comma_are_errors_not_values() {
        let e = parse("dtype==f32").unwrap_err();
        assert!(
            e.contains("the value '=f32' starts with '='") && e.contains("write dtype=VALUE"),
            "{e}"
        );
        let e = parse("unroll=>4").unwrap_err();
        assert!(e.contains("the value '>4' starts with '>'"), "{e}");
        let e = parse("dtype!==f32").unwrap_err();
        assert!(e.contains("starts with '='"), "{e}");
        let e = parse("dtype=bf16 hdim>=128").unwrap_err();
        assert!(e.contains("separate them with a comma"), "{e}");
        // Values C++ spells with brackets or colons still read.
        assert!(parse("mask=ck_tile::SimplifiedGenericAttentionMask<false>").is_ok());
        assert!(parse("dtype = bf16 , hdim >= 128").is_ok());
    }
}
