//! Composing queries: the requirement of a region of fused operations is
//! the conjunction of what each operation needs, and two constraints that
//! no metadata value can meet together are a [`Conflict`], found from the
//! constraints alone, before any family is looked at.
//!
//! A conflict is only ever reported when it is certain: `dtype = fp16` and
//! `dtype = bf16`, `hdim >= 128` and `hdim <= 64`, `has lse` and `lacks
//! lse`. Pairs that a strange value could still meet both of (`hdim != 128`
//! with `hdim >= 128, hdim <= 128` is met by `0128`) are left to the family
//! to answer. This module never reads a family.

use super::{Clause, Cmp, Query};
use crate::error::{Conflict, Error};

impl Query {
    /// This query and `other` together: every constraint of both (each
    /// once) and the preferences of `self`, then those of `other` on keys
    /// `self` has no preference for. What a region of fused operations
    /// needs is the composition of what each of them needs.
    ///
    /// ```
    /// use ck_jit_rt::Query;
    ///
    /// let gemm = Query::new().eq("dtype", "fp16").ge("k_tile", 32);
    /// let bias = Query::new().has("bias").eq("dtype", "fp16");
    /// let region = gemm.clone().and(&bias)?;
    /// assert_eq!(region.to_string(), "dtype = fp16, k_tile >= 32, has bias");
    ///
    /// let err = region.and(&Query::new().eq("dtype", "bf16")).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "dtype = fp16 conflicts with dtype = bf16: no value of dtype meets both"
    /// );
    /// # Ok::<(), ck_jit_rt::Error>(())
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Conflict`] naming the first pair of constraints (one of
    /// `self` or an earlier one of `other`, and one of `other`) that no
    /// value meets together; `self` is consumed either way.
    pub fn and(mut self, other: &Query) -> Result<Query, Error> {
        for clause in &other.clauses {
            self.add_clause(clause).map_err(Error::Conflict)?;
        }
        for pref in &other.prefs {
            if !self.prefs.iter().any(|p| p.key() == pref.key()) {
                self.prefs.push(pref.clone());
            }
        }
        Ok(self)
    }

    /// The first pair of this query's own constraints that no value meets
    /// together (a query built with `eq("dtype", "fp16").eq("dtype",
    /// "bf16")`), if any.
    pub fn conflict(&self) -> Option<Conflict> {
        self.clauses.iter().enumerate().find_map(|(i, c)| {
            self.clauses[..i]
                .iter()
                .find(|earlier| !compatible(earlier, c))
                .map(|earlier| Conflict::between(earlier, c))
        })
    }

    /// Adds `clause` unless an equal one is there; a conflict leaves the
    /// query as it was.
    pub(super) fn add_clause(&mut self, clause: &Clause) -> Result<bool, Conflict> {
        if let Some(earlier) = self.conflicting(clause) {
            return Err(Conflict::between(earlier, clause));
        }
        if self.clauses.contains(clause) {
            return Ok(false);
        }
        self.clauses.push(clause.clone());
        Ok(true)
    }

    /// Whether a constraint or preference of the query is about `key`.
    pub(super) fn mentions(&self, key: &str) -> bool {
        self.clauses.iter().any(|c| c.key() == key) || self.prefs.iter().any(|p| p.key() == key)
    }

    /// The first constraint that `clause` cannot be met together with.
    pub(super) fn conflicting(&self, clause: &Clause) -> Option<&Clause> {
        self.clauses.iter().find(|c| !compatible(c, clause))
    }
}

impl Conflict {
    pub(super) fn between(first: &Clause, second: &Clause) -> Conflict {
        Conflict {
            key: first.key().to_string(),
            first: first.to_string(),
            second: second.to_string(),
        }
    }
}

/// Whether some value (or a missing key) could meet both `a` and `b`.
///
/// Checking pairs is enough for the conflicts this reports: each clause
/// admits an interval of integers, a single text or a flag state, and
/// intervals that meet pairwise meet all together.
pub(super) fn compatible(a: &Clause, b: &Clause) -> bool {
    use Clause::{Cmp as Bound, Eq, Has, Lacks, Ne};
    if a.key() != b.key() {
        return true;
    }
    match (a, b) {
        (Eq(_, x), Eq(_, y)) => x == y,
        (Eq(_, x), Ne(_, y)) | (Ne(_, y), Eq(_, x)) => x != y,
        (Eq(_, v), other @ (Bound(..) | Has(_) | Lacks(_)))
        | (other @ (Bound(..) | Has(_) | Lacks(_)), Eq(_, v)) => other.matches_value(Some(v)),
        (Has(_), Lacks(_)) | (Lacks(_), Has(_)) => false,
        (Bound(_, op_a, n), Bound(_, op_b, m)) => {
            let (lo_a, hi_a) = interval(*op_a, *n);
            let (lo_b, hi_b) = interval(*op_b, *m);
            lo_a.max(lo_b) <= hi_a.min(hi_b)
        }
        // The only integer text that is not a set flag is "0".
        (Bound(_, op, n), Lacks(_)) | (Lacks(_), Bound(_, op, n)) => {
            let (lo, hi) = interval(*op, *n);
            lo <= 0 && 0 <= hi
        }
        // `has` and `!=` are met by too many texts to rule anything out.
        (Bound(..), Has(_) | Ne(..))
        | (Has(_) | Ne(..), Bound(..))
        | (Ne(..), Ne(..) | Has(_) | Lacks(_))
        | (Has(_) | Lacks(_), Ne(..))
        | (Has(_), Has(_))
        | (Lacks(_), Lacks(_)) => true,
    }
}

/// The integers `op n` admits, as an inclusive interval (wider than `i64`
/// so that `> i64::MAX` is empty rather than wrapping).
fn interval(op: Cmp, n: i64) -> (i128, i128) {
    let n = i128::from(n);
    let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    match op {
        Cmp::Ge => (n, max),
        Cmp::Gt => (n + 1, max),
        Cmp::Le => (min, n),
        Cmp::Lt => (min, n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conflict(a: Query, b: Query) -> Option<(String, String)> {
        match a.and(&b) {
            Ok(_) => None,
            Err(Error::Conflict(c)) => Some((c.first().to_string(), c.second().to_string())),
            Err(e) => panic!("not a conflict: {e}"),
        }
    }

    fn pair(a: &str, b: &str) -> Option<(String, String)> {
        Some((a.to_string(), b.to_string()))
    }

    #[test]
    fn equal_texts_compose_and_different_ones_conflict() {
        let q = Query::new().eq("dtype", "fp16");
        assert_eq!(
            q.clone().and(&Query::new().eq("dtype", "fp16")).unwrap(),
            q,
            "a repeated constraint is kept once"
        );
        assert_eq!(
            conflict(q.clone(), Query::new().eq("dtype", "bf16")),
            pair("dtype = fp16", "dtype = bf16")
        );
        assert_eq!(
            conflict(q.clone(), Query::new().ne("dtype", "fp16")),
            pair("dtype = fp16", "dtype != fp16")
        );
        assert_eq!(conflict(q, Query::new().ne("dtype", "bf16")), None);
    }

    #[test]
    fn integer_bounds_conflict_when_their_intervals_are_disjoint() {
        let ge = Query::new().ge("hdim", 128);
        assert_eq!(
            conflict(ge.clone(), Query::new().le("hdim", 64)),
            pair("hdim >= 128", "hdim <= 64")
        );
        assert_eq!(conflict(ge.clone(), Query::new().le("hdim", 128)), None);
        assert_eq!(
            conflict(ge.clone(), Query::new().lt("hdim", 128)),
            pair("hdim >= 128", "hdim < 128")
        );
        assert_eq!(
            conflict(Query::new().gt("n", 3), Query::new().lt("n", 5)),
            None
        );
        assert_eq!(
            conflict(Query::new().gt("n", 3), Query::new().lt("n", 4)),
            pair("n > 3", "n < 4")
        );
        assert_eq!(
            conflict(Query::new().gt("n", i64::MAX), Query::new().ge("n", 0)),
            pair("n > 9223372036854775807", "n >= 0"),
            "no integer is above the largest"
        );
        assert_eq!(
            conflict(ge.clone(), Query::new().eq("hdim", 64)),
            pair("hdim >= 128", "hdim = 64")
        );
        assert_eq!(
            conflict(ge.clone(), Query::new().eq("hdim", "any")),
            pair("hdim >= 128", "hdim = any"),
            "a bound needs an integer"
        );
        assert_eq!(conflict(ge, Query::new().eq("hdim", 256)), None);
    }

    #[test]
    fn flags_conflict_with_their_opposite_and_with_texts_that_say_otherwise() {
        assert_eq!(
            conflict(Query::new().has("lse"), Query::new().lacks("lse")),
            pair("has lse", "lacks lse")
        );
        assert_eq!(
            conflict(Query::new().eq("lse", "0"), Query::new().has("lse")),
            pair("lse = 0", "has lse")
        );
        assert_eq!(
            conflict(Query::new().eq("lse", "yes"), Query::new().lacks("lse")),
            pair("lse = yes", "lacks lse")
        );
        assert_eq!(
            conflict(Query::new().lacks("n"), Query::new().ge("n", 1)),
            pair("lacks n", "n >= 1")
        );
        assert_eq!(
            conflict(Query::new().lacks("n"), Query::new().le("n", 0)),
            None,
            "0 is an integer and not a set flag"
        );
        assert_eq!(
            conflict(Query::new().has("lse"), Query::new().ne("lse", "1")),
            None
        );
    }

    #[test]
    fn constraints_on_different_keys_never_conflict() {
        let q = Query::new().eq("a", 1).has("b").ge("c", 5);
        let r = q
            .clone()
            .and(&Query::new().eq("d", 0).lacks("e").le("f", 1))
            .unwrap();
        assert_eq!(
            r.to_string(),
            "a = 1, has b, c >= 5, d = 0, lacks e, f <= 1"
        );
        assert_eq!(r.conflict(), None);
        let built = q.eq("b", 0);
        assert_eq!(
            built.conflict().map(|c| c.to_string()),
            Some("has b conflicts with b = 0: no value of b meets both".to_string()),
            "a query built with conflicting constraints knows it"
        );
    }

    #[test]
    fn the_first_query_keeps_its_preferences_and_a_conflict_names_both_sides() {
        let q = Query::new()
            .prefer_max("tile")
            .and(&Query::new().prefer_min("tile").prefer_min("waves"))
            .unwrap();
        assert_eq!(q.to_string(), "prefer max tile, prefer min waves");
        let err = Query::new()
            .eq("dtype", "fp16")
            .and(&Query::new().has("lse").eq("dtype", "bf16"))
            .unwrap_err();
        assert!(
            matches!(&err, Error::Conflict(c) if c.key() == "dtype"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "dtype = fp16 conflicts with dtype = bf16: no value of dtype meets both"
        );
    }
}
