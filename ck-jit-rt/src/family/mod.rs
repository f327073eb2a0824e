//! Kernel families: the blobs of one manifest group that share one entry
//! point signature and differ in what they support, and the selection of
//! one of them by attributes.
//!
//! A [`Query`] states what an operation needs (the query's attributes); a
//! blob's metadata states what a kernel supports. Selection matches the two
//! once, by name and string comparison, and hands out a [`Kernel`]: a
//! `Copy` handle that points straight at the member's slot, so a call
//! through it costs one acquire load and an indirect call, with no string
//! hashing, lock or allocation. Nothing in this module may add work to that
//! warm path ([`Kernel::get`]); everything else here is cold.
//!
//! # Preference order
//!
//! When several members meet a query, [`Query`] orders them by, in turn:
//!
//! 1. the query's explicit preferences ([`Query::prefer_min`],
//!    [`Query::prefer_max`]), in the order given;
//! 2. the tightest fit of each numeric constraint, in the order given: the
//!    smallest value for [`Query::ge`] and [`Query::gt`] (`hdim >= 128`
//!    prefers 128 over 256), the largest for [`Query::le`] and
//!    [`Query::lt`];
//! 3. the `priority` metadata key, higher first (missing or not an integer
//!    counts as 0);
//! 4. the blob name, ascending.
//!
//! The order is total (blob names are unique), so a query over one
//! manifest always selects the same blob.
//!
//! # The device in use
//!
//! Only members that run on the device compiles are for (`CK_JIT_ARCH`,
//! else detected) are selected: a member whose `arch` metadata names
//! another target or family, or whose group is recorded for targets none
//! of which run on the device, is no candidate (it would be compiled out
//! or fail to load there). With no device known every member is one. See
//! `FamilyData::judge_runs`.
//!
//! # Regions of fused operations
//!
//! Queries compose ([`Query::and`]); two constraints that no value meets
//! together are a [`Conflict`]. A [`Selector`] takes a region's operations
//! one at a time, keeps the members that support their composition, and
//! answers each with the best kernel so far ([`Step::Selectable`]) or with
//! why the region must be closed first ([`Step::Flush`]).
//!
//! # The room
//!
//! Owns: families, their members' slots, queries and selection
//! (`compose`, `parse`, `selector`).
//!
//! May use: [`runtime`](crate::Runtime) (a member is resolved as any
//! declared kernel is), [`gpu`](crate::arch) (the device a selection
//! asks for), [`error`](crate::Error). Only `declared` and the crate
//! root sit above it.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::marker::PhantomData;

use ck_jit_manifest::compact::{Names, Table};
use ck_jit_manifest::{closest, escape, neutral_relation, Blob, Manifest};
use once_cell::sync::OnceCell;

use crate::error::Error;
use crate::runtime::embed::Embedded;
pub use crate::runtime::slot::SymbolOverride;
use crate::runtime::slot::{Slot, Source};
use crate::runtime::Runtime;

mod compose;
mod parse;
mod selector;

use crate::error::Report;
pub use crate::error::{Conflict, NoMatch};
pub use selector::{Flush, FlushReason, Region, Selector, Step};

/// The metadata key that orders otherwise equal members (higher first).
pub const PRIORITY_KEY: &str = "priority";

/// Metadata values that make a flag false for [`Query::has`] (compared
/// without regard to ASCII case); any other value, including one that
/// merely names the flag, makes it true.
pub const FALSE_VALUES: [&str; 5] = ["", "0", "false", "no", "off"];

/// What an operation needs from a kernel, matched against what each blob
/// of a family supports (its metadata), with hints for choosing among
/// several that do.
///
/// Built by value:
///
/// ```
/// use ck_jit_rt::Query;
///
/// let q = Query::new()
///     .eq("dtype", "bf16")
///     .ge("hdim", 128)
///     .has("lse")
///     .prefer_max("tile_m");
/// assert_eq!(q.to_string(), "dtype = bf16, hdim >= 128, has lse, prefer max tile_m");
/// ```
///
/// Comparisons ([`ge`](Query::ge), [`gt`](Query::gt), [`le`](Query::le),
/// [`lt`](Query::lt)) parse the blob's value as a decimal integer; a blob
/// whose value is missing or not an integer does not match them. See the
/// [module docs](crate::family) for the order in which matching blobs are
/// preferred.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Query {
    clauses: Vec<Clause>,
    prefs: Vec<Preference>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Clause {
    Eq(String, String),
    Ne(String, String),
    Cmp(String, Cmp, i64),
    Has(String),
    Lacks(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Cmp {
    Ge,
    Gt,
    Le,
    Lt,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Preference {
    Min(String),
    Max(String),
}

impl Preference {
    fn key(&self) -> &str {
        match self {
            Preference::Min(k) | Preference::Max(k) => k,
        }
    }
}

/// A blob's name and metadata, as selection sees it.
type Candidate<'a> = (&'a str, &'a BTreeMap<String, String>);

impl Query {
    /// A query every blob matches.
    pub fn new() -> Query {
        Query::default()
    }

    /// Requires the metadata value of `key` to be exactly `value`.
    pub fn eq(mut self, key: impl Into<String>, value: impl fmt::Display) -> Query {
        self.clauses.push(Clause::Eq(key.into(), value.to_string()));
        self
    }

    /// Requires the metadata value of `key` to be missing or other than
    /// `value`.
    pub fn ne(mut self, key: impl Into<String>, value: impl fmt::Display) -> Query {
        self.clauses.push(Clause::Ne(key.into(), value.to_string()));
        self
    }

    /// Requires the value of `key`, as an integer, to be at least `n`;
    /// prefers the smallest such value.
    pub fn ge(self, key: impl Into<String>, n: i64) -> Query {
        self.cmp(key, Cmp::Ge, n)
    }

    /// Requires the value of `key`, as an integer, to be greater than `n`;
    /// prefers the smallest such value.
    pub fn gt(self, key: impl Into<String>, n: i64) -> Query {
        self.cmp(key, Cmp::Gt, n)
    }

    /// Requires the value of `key`, as an integer, to be at most `n`;
    /// prefers the largest such value.
    pub fn le(self, key: impl Into<String>, n: i64) -> Query {
        self.cmp(key, Cmp::Le, n)
    }

    /// Requires the value of `key`, as an integer, to be less than `n`;
    /// prefers the largest such value.
    pub fn lt(self, key: impl Into<String>, n: i64) -> Query {
        self.cmp(key, Cmp::Lt, n)
    }

    fn cmp(mut self, key: impl Into<String>, op: Cmp, n: i64) -> Query {
        self.clauses.push(Clause::Cmp(key.into(), op, n));
        self
    }

    /// Requires the flag `key`: present, with a value that is not one of
    /// [`FALSE_VALUES`]. `lse = "1"`, `"true"`, `"yes"` or `"lse"` (a file
    /// name pattern capturing the flag's own text) all set it; `"0"`,
    /// `"false"`, `"no"`, `"off"`, an empty value or no key at all do not.
    /// For a key with several named values use [`Query::eq`].
    pub fn has(mut self, key: impl Into<String>) -> Query {
        self.clauses.push(Clause::Has(key.into()));
        self
    }

    /// Requires the flag `key` to be unset: the opposite of [`Query::has`].
    pub fn lacks(mut self, key: impl Into<String>) -> Query {
        self.clauses.push(Clause::Lacks(key.into()));
        self
    }

    /// Among matching blobs, prefers the smallest integer value of `key`
    /// (blobs without one come last).
    pub fn prefer_min(mut self, key: impl Into<String>) -> Query {
        self.prefs.push(Preference::Min(key.into()));
        self
    }

    /// Among matching blobs, prefers the largest integer value of `key`
    /// (blobs without one come last).
    pub fn prefer_max(mut self, key: impl Into<String>) -> Query {
        self.prefs.push(Preference::Max(key.into()));
        self
    }

    /// Every key the query constrains or prefers.
    pub fn keys(&self) -> BTreeSet<&str> {
        let mut keys: BTreeSet<&str> = self.clauses.iter().map(Clause::key).collect();
        keys.extend(self.prefs.iter().map(|p| match p {
            Preference::Min(k) | Preference::Max(k) => k.as_str(),
        }));
        keys
    }

    /// This query, plus `key = value` for each neutral value whose key it
    /// does not mention: what a family selection applies, so that a query
    /// silent about a trait gets the trait's neutral variant (no soft-cap,
    /// no sink) rather than whichever variant sorts first.
    ///
    /// A neutral value that relates its key to another
    /// ([`neutral_relation`]: `hdim_v` at least `hdim`) adds, for each
    /// lower bound the query puts on the other key (`hdim = 192`, `hdim >=
    /// 100`), the same lower bound on its key, so a query for one head
    /// dimension gets a kernel whose V head covers it too, as CK's
    /// dispatcher checks both; a query without one adds nothing.
    pub fn with_neutral(&self, neutral: &BTreeMap<String, String>) -> Query {
        let mentioned = self.keys();
        let mut q = self.clone();
        for (k, v) in neutral {
            if mentioned.contains(k.as_str()) {
                continue;
            }
            match neutral_relation(v) {
                Some(other) => q.clauses.extend(self.at_least_as(k, other)),
                None => q.clauses.push(Clause::Eq(k.clone(), v.clone())),
            }
        }
        q
    }

    /// `key >= n` (or `> n`) for each lower bound this query puts on
    /// `other`: `other = n` (an integer), `other >= n`, `other > n`.
    fn at_least_as(&self, key: &str, other: &str) -> Vec<Clause> {
        self.clauses
            .iter()
            .filter_map(|c| match c {
                Clause::Eq(k, v) if k == other => {
                    Some(Clause::Cmp(key.to_string(), Cmp::Ge, v.parse().ok()?))
                }
                Clause::Cmp(k, op @ (Cmp::Ge | Cmp::Gt), n) if k == other => {
                    Some(Clause::Cmp(key.to_string(), *op, *n))
                }
                _ => None,
            })
            .collect()
    }

    /// Whether a blob with metadata `meta` meets every constraint.
    pub fn matches(&self, meta: &BTreeMap<String, String>) -> bool {
        self.clauses.iter().all(|c| c.matches(meta))
    }

    /// The blobs of `family` (manifest group name) in `manifest` that meet
    /// the query, best first.
    pub fn rank_in<'m>(&self, manifest: &'m Manifest, family: &str) -> Vec<&'m Blob> {
        let blobs = family_blobs(manifest, family);
        let candidates: Vec<Candidate> = blobs.iter().map(|b| (&*b.name, &b.meta)).collect();
        self.with_neutral(&family_neutral(manifest, family))
            .order(&candidates)
            .into_iter()
            .map(|i| blobs[i])
            .collect()
    }

    /// The best blob of `family` in `manifest` for this query.
    ///
    /// # Errors
    ///
    /// When none matches, [`Error::NoMatch`] saying, per constraint, how
    /// many blobs it let through and the values it saw instead.
    pub fn select_in<'m>(&self, manifest: &'m Manifest, family: &str) -> Result<&'m Blob, Error> {
        let blobs = family_blobs(manifest, family);
        let candidates: Vec<Candidate> = blobs.iter().map(|b| (&*b.name, &b.meta)).collect();
        let q = self.with_neutral(&family_neutral(manifest, family));
        match q.order(&candidates).first() {
            Some(&i) => Ok(blobs[i]),
            None => Err(q
                .explain(family, &candidates, || family_names(manifest))
                .into()),
        }
    }

    /// Indices of the matching candidates, best first.
    fn order(&self, candidates: &[Candidate]) -> Vec<usize> {
        let mut matching: Vec<usize> = (0..candidates.len())
            .filter(|&i| self.matches(candidates[i].1))
            .collect();
        matching.sort_by(|&a, &b| self.prefer(candidates[a], candidates[b]));
        matching
    }

    /// The preference order of the module docs; `Less` means `a` first.
    fn prefer(&self, a: Candidate, b: Candidate) -> std::cmp::Ordering {
        self.prefer_by(|k| number(a.1, k), |k| number(b.1, k))
            .then_with(|| a.0.cmp(b.0))
    }

    /// The preference order of two blobs by their numeric values (`num_a`,
    /// `num_b`: a key's value as an integer), before the name.
    fn prefer_by(
        &self,
        num_a: impl Fn(&str) -> Option<i64>,
        num_b: impl Fn(&str) -> Option<i64>,
    ) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Equal, Greater, Less};
        for pref in &self.prefs {
            let (key, smaller_first) = match pref {
                Preference::Min(k) => (k, true),
                Preference::Max(k) => (k, false),
            };
            let ord = match (num_a(key), num_b(key)) {
                (Some(x), Some(y)) if smaller_first => x.cmp(&y),
                (Some(x), Some(y)) => y.cmp(&x),
                (Some(_), None) => Less,
                (None, Some(_)) => Greater,
                (None, None) => Equal,
            };
            if ord != Equal {
                return ord;
            }
        }
        for clause in &self.clauses {
            let Clause::Cmp(key, op, _) = clause else {
                continue;
            };
            // Both values exist: the candidates matched this clause.
            let (x, y) = (num_a(key), num_b(key));
            let ord = match op {
                Cmp::Ge | Cmp::Gt => x.cmp(&y),
                Cmp::Le | Cmp::Lt => y.cmp(&x),
            };
            if ord != Equal {
                return ord;
            }
        }
        let priority = |num: &dyn Fn(&str) -> Option<i64>| num(PRIORITY_KEY).unwrap_or(0);
        priority(&num_b).cmp(&priority(&num_a))
    }

    /// The members of `table` that meet every clause, best first: the
    /// same order as over the members' metadata maps, computed on codes
    /// (each clause is evaluated once per distinct value, then each member
    /// costs one table read per clause).
    fn order_table(&self, table: &Table, runs: Option<&[bool]>) -> Vec<usize> {
        let key_index = |key: &str| table.keys.binary_search_by(|k| k.as_str().cmp(key)).ok();
        // Per clause: its key's column and which codes pass (index 0:
        // missing).
        let mut tests: Vec<(usize, Vec<bool>)> = Vec::with_capacity(self.clauses.len());
        for clause in &self.clauses {
            match key_index(clause.key()) {
                Some(k) => {
                    let mut pass = vec![clause.matches_value(None)];
                    pass.extend(table.dicts[k].iter().map(|v| clause.matches_value(Some(v))));
                    tests.push((k, pass));
                }
                // No member has the key: it is missing in every one.
                None if clause.matches_value(None) => {}
                None => return Vec::new(),
            }
        }
        let mut matching: Vec<usize> = (0..table.len())
            .filter(|&m| runs.is_none_or(|r| r.get(m).copied().unwrap_or(true)))
            .filter(|&m| {
                tests.iter().all(|(k, pass)| {
                    let c = table.code(m, *k) as usize;
                    pass.get(c).copied().unwrap_or(pass[0])
                })
            })
            .collect();
        if matching.len() > 1 {
            // Integer values of the keys the order reads, per code.
            let mut keys: Vec<&str> = self
                .prefs
                .iter()
                .map(|p| match p {
                    Preference::Min(k) | Preference::Max(k) => k.as_str(),
                })
                .collect();
            keys.extend(self.clauses.iter().filter_map(|c| match c {
                Clause::Cmp(k, _, _) => Some(k.as_str()),
                _ => None,
            }));
            keys.push(PRIORITY_KEY);
            // (key, its column, the integer of each of its values)
            type Numbers<'k> = Vec<(&'k str, Option<usize>, Vec<Option<i64>>)>;
            let numbers: Numbers = keys
                .into_iter()
                .map(|key| {
                    let k = key_index(key);
                    let values = k.map_or_else(Vec::new, |k| {
                        table.dicts[k].iter().map(|v| v.parse().ok()).collect()
                    });
                    (key, k, values)
                })
                .collect();
            let num = |m: usize, key: &str| -> Option<i64> {
                let (_, k, values) = numbers.iter().find(|(name, _, _)| *name == key)?;
                let c = table.code(m, (*k)?) as usize;
                values.get(c.checked_sub(1)?).copied().flatten()
            };
            // Members are in name order: the index breaks ties by name.
            matching.sort_by(|&a, &b| {
                self.prefer_by(|k| num(a, k), |k| num(b, k))
                    .then_with(|| a.cmp(&b))
            });
        }
        matching
    }

    fn explain(
        &self,
        family: &str,
        candidates: &[Candidate],
        families: impl FnOnce() -> Vec<String>,
    ) -> NoMatch {
        let total = candidates.len();
        let mut constraints = Vec::new();
        let mut together = None;
        if total > 0 {
            let all: Vec<usize> = (0..total).collect();
            for clause in &self.clauses {
                constraints.push(clause.report(candidates, &all, "values seen"));
            }
            if self
                .clauses
                .iter()
                .all(|c| candidates.iter().any(|m| c.matches(m.1)))
            {
                together = Some(self.narrowing(candidates));
            }
        }
        // A key no candidate has is more likely misspelt than unmet.
        let mut unknown_keys = Vec::new();
        if total > 0 {
            let known: BTreeSet<&str> = candidates
                .iter()
                .flat_map(|c| c.1.keys().map(String::as_str))
                .collect();
            for key in self.keys() {
                if key != PRIORITY_KEY && !known.contains(key) {
                    let near = closest(known.iter().copied(), key, 3)
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                    unknown_keys.push((key.to_string(), near));
                }
            }
        }
        let (families, suggestions) = if total == 0 {
            let names = families();
            let near: Vec<String> = closest(names.iter().map(String::as_str), family, 3)
                .into_iter()
                .map(str::to_string)
                .collect();
            (names, near)
        } else {
            (Vec::new(), Vec::new())
        };
        NoMatch(Box::new(Report {
            family: family.to_string(),
            query: self.to_string(),
            total,
            constraints,
            together,
            unknown_keys,
            families,
            suggestions,
            device: None,
        }))
    }

    /// Applies the constraints one after another and describes the one
    /// that leaves nothing.
    fn narrowing(&self, candidates: &[Candidate]) -> String {
        let mut left: Vec<usize> = (0..candidates.len()).collect();
        let mut applied: Vec<String> = Vec::new();
        for clause in &self.clauses {
            let next: Vec<usize> = left
                .iter()
                .copied()
                .filter(|&i| clause.matches(candidates[i].1))
                .collect();
            if next.is_empty() {
                let report = clause.report(candidates, &left, "values seen among them");
                return format!(
                    "together they match none: {} leave {}, and of those {report}",
                    applied.join(", "),
                    left.len(),
                );
            }
            applied.push(clause.to_string());
            left = next;
        }
        // Unreachable for a query with no match; kept total for safety.
        "together they match none".to_string()
    }
}

impl Clause {
    fn key(&self) -> &str {
        match self {
            Clause::Eq(k, _) | Clause::Ne(k, _) | Clause::Cmp(k, _, _) => k,
            Clause::Has(k) | Clause::Lacks(k) => k,
        }
    }

    fn matches(&self, meta: &BTreeMap<String, String>) -> bool {
        self.matches_value(meta.get(self.key()).map(String::as_str))
    }

    /// Whether a blob whose value of this clause's key is `value` (`None`:
    /// missing) meets the clause.
    fn matches_value(&self, value: Option<&str>) -> bool {
        match self {
            Clause::Eq(_, v) => value == Some(v.as_str()),
            Clause::Ne(_, v) => value != Some(v.as_str()),
            Clause::Cmp(_, op, n) => {
                value
                    .and_then(|v| v.parse::<i64>().ok())
                    .is_some_and(|x| match op {
                        Cmp::Ge => x >= *n,
                        Cmp::Gt => x > *n,
                        Cmp::Le => x <= *n,
                        Cmp::Lt => x < *n,
                    })
            }
            Clause::Has(_) => is_true(value),
            Clause::Lacks(_) => !is_true(value),
        }
    }

    /// `dtype = fp8 matched 0 of 120 (values seen: bf16, fp16)` over the
    /// candidates `among`.
    fn report(&self, candidates: &[Candidate], among: &[usize], seen_label: &str) -> String {
        let matched = among
            .iter()
            .filter(|&&i| self.matches(candidates[i].1))
            .count();
        let mut out = format!("{self} matched {matched} of {}", among.len());
        if matched == among.len() {
            return out;
        }
        let key = self.key();
        let values: Vec<&str> = among
            .iter()
            .filter_map(|&i| candidates[i].1.get(key).map(String::as_str))
            .collect();
        let missing = among.len() - values.len();
        let mut parts = Vec::new();
        if let Clause::Cmp(_, _, n) = self {
            let mut numbers: Vec<i64> = values.iter().filter_map(|v| v.parse().ok()).collect();
            numbers.sort_by_key(|x| (x.abs_diff(*n), *x));
            numbers.dedup();
            let other = values.iter().filter(|v| v.parse::<i64>().is_err()).count();
            if !numbers.is_empty() {
                let shown: Vec<String> = numbers.iter().take(5).map(i64::to_string).collect();
                let more = numbers.len().saturating_sub(5);
                parts.push(format!(
                    "closest {seen_label}: {}{}",
                    shown.join(", "),
                    if more > 0 {
                        format!(", ... ({more} more)")
                    } else {
                        String::new()
                    }
                ));
            }
            if other > 0 {
                parts.push(format!("not an integer in {other}"));
            }
        } else {
            let distinct: BTreeSet<&str> = values.iter().copied().collect();
            let mut distinct: Vec<&str> = distinct.into_iter().collect();
            // Numbers in numeric order, then words.
            distinct.sort_by_key(|v| (v.parse::<i64>().map_err(|_| ()), *v));
            if !distinct.is_empty() {
                let shown: Vec<String> = distinct.iter().take(8).map(|v| escape(v)).collect();
                let more = distinct.len().saturating_sub(8);
                parts.push(format!(
                    "{seen_label}: {}{}",
                    shown.join(", "),
                    if more > 0 {
                        format!(", ... ({more} more)")
                    } else {
                        String::new()
                    }
                ));
            }
        }
        if missing > 0 {
            parts.push(format!("missing in {missing}"));
        }
        if !parts.is_empty() {
            out.push_str(&format!(" ({})", parts.join("; ")));
        }
        out
    }
}

fn number(meta: &BTreeMap<String, String>, key: &str) -> Option<i64> {
    meta.get(key)?.parse().ok()
}

fn is_true(value: Option<&str>) -> bool {
    value.is_some_and(|v| !FALSE_VALUES.iter().any(|f| v.eq_ignore_ascii_case(f)))
}

fn family_blobs<'m>(manifest: &'m Manifest, family: &str) -> Vec<&'m Blob> {
    manifest
        .blobs
        .iter()
        .filter(|b| manifest.group_of(b).family() == family)
        .collect()
}

/// The neutral values of a family's groups (see [`Group::neutral`]).
///
/// [`Group::neutral`]: ck_jit_manifest::Group::neutral
fn family_neutral(manifest: &Manifest, family: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for g in manifest.groups.iter().filter(|g| g.family() == family) {
        for (k, v) in &g.neutral {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    out
}

/// The distinct group names of a manifest, sorted.
fn family_names(manifest: &Manifest) -> Vec<String> {
    let names: BTreeSet<&str> = manifest.groups.iter().map(|g| g.family()).collect();
    names.into_iter().map(str::to_string).collect()
}

impl fmt::Display for Cmp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cmp::Ge => ">=",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Lt => "<",
        })
    }
}

impl fmt::Display for Clause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clause::Eq(k, v) => write!(f, "{} = {}", escape(k), escape(v)),
            Clause::Ne(k, v) => write!(f, "{} != {}", escape(k), escape(v)),
            Clause::Cmp(k, op, n) => write!(f, "{} {op} {n}", escape(k)),
            Clause::Has(k) => write!(f, "has {}", escape(k)),
            Clause::Lacks(k) => write!(f, "lacks {}", escape(k)),
        }
    }
}

impl fmt::Display for Query {
    /// `dtype = bf16, hdim >= 128, has lse, prefer min tile`; `any` for an
    /// empty query.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = self.clauses.iter().map(Clause::to_string).collect();
        parts.extend(self.prefs.iter().map(|p| match p {
            Preference::Min(k) => format!("prefer min {}", escape(k)),
            Preference::Max(k) => format!("prefer max {}", escape(k)),
        }));
        if parts.is_empty() {
            f.write_str("any")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

/// The dispatch table of one family: one once-filled slot per member blob,
/// built from the manifest on first use.
///
/// `F` is a marker type that ties the [`Kernel`] handles a table gives out
/// to it, so a handle of one family cannot be passed where another's is
/// expected (`#[lazy_kernel(family = "...")]` generates one per family).
///
/// Members are the blobs of the manifest whose group is named like the
/// family, in manifest (name) order; a member's family-local index is its
/// position. Blobs only a fallback manifest (`CK_JIT_MANIFEST`) knows are
/// not members.
pub struct FamilySlots<F = ()> {
    source: Source,
    family: &'static str,
    symbol: SymbolOverride,
    data: OnceCell<Result<FamilyData, Error>>,
    chunks: OnceCell<Chunks<F>>,
    _family: PhantomData<fn() -> F>,
}

/// The members, one cell per chunk.
type Chunks<F> = Box<[OnceCell<Box<[Member<F>]>>]>;

/// Members are made (their names decoded, their slots set up) in chunks of
/// this many, when one of the chunk is first asked for: selecting one
/// member of a family of thousands makes one chunk.
const CHUNK: usize = 64;

/// What selection reads of a family: its metadata table (codes, read in
/// place from an embedded manifest) and its neutral values; members' names
/// are decoded a chunk at a time.
struct FamilyData {
    table: Table<'static>,
    names: Box<[OnceCell<Names>]>,
    neutral: BTreeMap<String, String>,
    runtime: &'static Runtime,
    /// Which members run on the device in use, judged on the first
    /// selection (not on `by_name`, which needs no device).
    runs: OnceCell<Result<Runs, Error>>,
}

/// The metadata key that names the architecture a member's code is for
/// (`gfx9`, `gfx950`, `sm_90`).
pub const ARCH_KEY: &str = "arch";

/// Which members of a family run on the device in use.
struct Runs {
    /// Per member; `None` when every member is a candidate (no device is
    /// known, or none of the members is refused).
    mask: Option<Box<[bool]>>,
    /// The devices judged against, for messages: `gfx942 (from
    /// CK_JIT_ARCH)`.
    devices: String,
}

impl Runs {
    fn mask(&self) -> Option<&[bool]> {
        self.mask.as_deref()
    }

    /// How many members are left out.
    fn refused(&self) -> usize {
        self.mask().map_or(0, |m| m.iter().filter(|r| !**r).count())
    }
}

impl FamilyData {
    /// Which members run on the device in use, judged once.
    fn runs(&self) -> Result<&Runs, Error> {
        self.runs
            .get_or_init(|| self.judge_runs())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// A member runs on the device unless its `arch` or its group's
    /// recorded targets say it does not: an `arch` of another target or
    /// family (a `gfx950` kernel on a `gfx942`: its code is compiled out
    /// there, see [`arch::tag_runs_on`](crate::gpu::arch::tag_runs_on)), or a
    /// group compiled for other targets only (its object would not load on
    /// the device). Where no device of the platform is known (none found,
    /// `CK_JIT_ARCH=all`) every member stays a candidate, as the compile
    /// then keeps every recorded target. Nothing is detected for a family
    /// whose members name no GPU architecture.
    fn judge_runs(&self) -> Result<Runs, Error> {
        use crate::gpu::arch::{self, Device, Platform};
        let table = &self.table;
        let store = self.runtime.store();
        let groups = store
            .family_groups(&table.name)
            .map_err(|e| self.manifest_error(e))?;
        let arch_col = table
            .keys
            .binary_search_by(|k| k.as_str().cmp(ARCH_KEY))
            .ok();
        let mut platforms: Vec<Platform> = Vec::new();
        let tags = arch_col.map_or(&[][..], |k| &table.dicts[k][..]);
        let named = tags.iter().filter_map(|t| arch::tag_platform(t));
        let recorded = groups
            .iter()
            .filter_map(|(_, g)| arch::recorded_platform(&g.args));
        for p in named.chain(recorded) {
            if !platforms.contains(&p) {
                platforms.push(p);
            }
        }
        let devices: Vec<(Platform, Device)> = platforms
            .into_iter()
            .filter_map(|p| Some((p, self.runtime.device_for(p)?)))
            .collect();
        let device = |p: Platform| devices.iter().find(|(q, _)| *q == p).map(|(_, d)| d);
        let described = devices
            .iter()
            .map(|(_, d)| format!("{} (from {})", d.arch, d.found_by))
            .collect::<Vec<_>>()
            .join(", ");
        let every = |devices| Runs {
            mask: None,
            devices,
        };
        if devices.is_empty() {
            return Ok(every(described));
        }
        // Per code of the `arch` column (0: no `arch`): whether it runs.
        let mut tag_runs = vec![true];
        tag_runs.extend(tags.iter().map(|t| {
            let refused = arch::tag_platform(t)
                .and_then(device)
                .and_then(|d| arch::tag_runs_on(t, &d.arch));
            refused != Some(false)
        }));
        let group_runs: Vec<(u32, bool)> = groups
            .iter()
            .map(|(i, g)| {
                let runs = arch::recorded_platform(&g.args)
                    .and_then(device)
                    .and_then(|d| arch::recorded_runs_on(&g.args, &d.arch));
                (*i, runs != Some(false))
            })
            .collect();
        let by_group = group_runs.iter().any(|(_, r)| !r);
        if tag_runs.iter().all(|r| *r) && !by_group {
            return Ok(every(described));
        }
        // The members' groups are read only when groups differ: most
        // families are one group per architecture, told apart by `arch`.
        let member_groups = if by_group {
            let blobs: Vec<usize> = (0..table.len()).map(|m| table.member(m)).collect();
            Some(
                store
                    .groups_at(&blobs)
                    .map_err(|e| self.manifest_error(e))?,
            )
        } else {
            None
        };
        let mask = (0..table.len())
            .map(|m| {
                let tag_ok = match arch_col {
                    Some(k) => tag_runs
                        .get(table.code(m, k) as usize)
                        .copied()
                        .unwrap_or(true),
                    None => true,
                };
                let group_ok = member_groups.as_ref().is_none_or(|g| {
                    group_runs
                        .iter()
                        .find(|(i, _)| Some(i) == g.get(m))
                        .is_none_or(|(_, r)| *r)
                });
                tag_ok && group_ok
            })
            .collect();
        Ok(Runs {
            mask: Some(mask),
            devices: described,
        })
    }

    fn manifest_error(&self, error: ck_jit_manifest::ManifestError) -> Error {
        Error::Manifest {
            origin: self.runtime.origin().to_string(),
            error,
        }
    }

    /// The names of chunk `c`'s members.
    fn chunk_names(&self, c: usize) -> Result<&Names, Error> {
        self.names[c].get_or_try_init(|| {
            let end = ((c + 1) * CHUNK).min(self.table.len());
            let blobs: Vec<usize> = (c * CHUNK..end).map(|m| self.table.member(m)).collect();
            self.runtime
                .store()
                .names_at(&blobs)
                .map_err(|e| self.manifest_error(e))
        })
    }

    /// The name of member `m`.
    fn name(&self, m: usize) -> Result<&str, Error> {
        let names = self.chunk_names(m / CHUNK)?;
        names.get(m % CHUNK).ok_or_else(|| {
            self.manifest_error(ck_jit_manifest::ManifestError::Parse(format!(
                "family '{}': member {m} has no name",
                self.table.name
            )))
        })
    }

    /// The member index of the blob named `blob`, if it is one.
    fn member_named(&self, blob: &str) -> Result<Option<usize>, Error> {
        let Some(index) = self
            .runtime
            .store()
            .index_of(blob)
            .map_err(|e| self.manifest_error(e))?
        else {
            return Ok(None);
        };
        // Members are in blob (name) order.
        let (mut lo, mut hi) = (0, self.table.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.table.member(mid).cmp(&index) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(Some(mid)),
            }
        }
        Ok(None)
    }
}

impl<F> fmt::Debug for FamilySlots<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FamilySlots")
            .field("family", &self.family)
            .field(
                "members",
                &self.data.get().map(|d| d.as_ref().map(|d| d.table.len())),
            )
            .finish()
    }
}

impl<F> FamilySlots<F> {
    /// The table of `family` over an embedded manifest (what the macro
    /// generates).
    pub const fn new(
        manifest: &'static Embedded,
        family: &'static str,
        symbol: SymbolOverride,
    ) -> FamilySlots<F> {
        FamilySlots::from_source(Source::Embedded(manifest), family, symbol)
    }

    /// The table of `family` over a runtime built by hand.
    pub const fn with_runtime(
        runtime: &'static Runtime,
        family: &'static str,
        symbol: SymbolOverride,
    ) -> FamilySlots<F> {
        FamilySlots::from_source(Source::Runtime(runtime), family, symbol)
    }

    const fn from_source(
        source: Source,
        family: &'static str,
        symbol: SymbolOverride,
    ) -> FamilySlots<F> {
        FamilySlots {
            source,
            family,
            symbol,
            data: OnceCell::new(),
            chunks: OnceCell::new(),
            _family: PhantomData,
        }
    }

    /// The family name.
    pub fn family(&self) -> &'static str {
        self.family
    }

    fn data(&'static self) -> Result<&'static FamilyData, Error> {
        self.data
            .get_or_init(|| {
                let runtime = self.source.runtime()?;
                let store = runtime.store();
                let manifest_error = |error| Error::Manifest {
                    origin: runtime.origin().to_string(),
                    error,
                };
                let table = store.family_table(self.family).map_err(manifest_error)?;
                let neutral = store.family_neutral(self.family).map_err(manifest_error)?;
                let names = (0..table.len().div_ceil(CHUNK))
                    .map(|_| OnceCell::new())
                    .collect();
                Ok(FamilyData {
                    table,
                    names,
                    neutral,
                    runtime,
                    runs: OnceCell::new(),
                })
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Member `m`, made with the rest of its chunk on first use.
    fn member(&'static self, m: usize) -> Result<&'static Member<F>, Error> {
        let data = self.data()?;
        let chunks = self.chunks.get_or_init(|| {
            (0..data.table.len().div_ceil(CHUNK))
                .map(|_| OnceCell::new())
                .collect()
        });
        let chunk = chunks.get(m / CHUNK).ok_or_else(|| {
            data.manifest_error(ck_jit_manifest::ManifestError::Parse(format!(
                "family '{}' has no member {m}",
                self.family
            )))
        })?;
        let members = chunk.get_or_try_init(|| {
            let c = m / CHUNK;
            let end = ((c + 1) * CHUNK).min(data.table.len());
            (c * CHUNK..end)
                .map(|index| {
                    let name = data.name(index)?;
                    Ok(Member {
                        slot: Slot::from_source(Source::Runtime(data.runtime), name, self.symbol),
                        index,
                        name,
                        data,
                        meta: OnceCell::new(),
                        _family: PhantomData,
                    })
                })
                .collect::<Result<Box<[Member<F>]>, Error>>()
        })?;
        Ok(&members[m % CHUNK])
    }

    /// Every member, in family-local index order: a view that makes
    /// members as they are reached.
    ///
    /// # Errors
    ///
    /// If the manifest cannot be read.
    pub fn members(&'static self) -> Result<Members<F>, Error> {
        let len = self.data()?.table.len();
        Ok(Members { slots: self, len })
    }

    /// The best member for `query` (see the [module docs](crate::family)
    /// for the preference order). Do this once per configuration and keep
    /// the handle: selection compares codes of the family's metadata
    /// table, a call through the handle does not.
    ///
    /// # Errors
    ///
    /// [`Error::NoMatch`] saying why each constraint failed,
    /// [`Error::UnknownKey`] for a key no member has (with the
    /// closest keys members have), [`Error::Conflict`] for two
    /// constraints no value meets together, or the runtime's error if the
    /// manifest cannot be used.
    pub fn select(&'static self, query: &Query) -> Result<Kernel<F>, Error> {
        let data = self.data()?;
        let table = &data.table;
        if let Some(e) = self.unknown_key(data, query) {
            return Err(e);
        }
        if let Some(c) = query.conflict() {
            return Err(Error::Conflict(c));
        }
        let q = query.with_neutral(&data.neutral);
        let runs = data.runs()?;
        match q.order_table(table, runs.mask()).first() {
            Some(&i) => Ok(self.member(i)?.kernel()),
            None => {
                // The error path: the members' names and metadata as maps.
                let metas: Vec<BTreeMap<String, String>> =
                    (0..table.len()).map(|m| table.meta(m)).collect();
                let names = (0..table.len())
                    .map(|m| data.name(m))
                    .collect::<Result<Vec<&str>, Error>>()?;
                let candidates: Vec<Candidate> = names.into_iter().zip(&metas).collect();
                let mut e = q.explain(self.family, &candidates, || {
                    data.runtime.store().family_names()
                });
                // Members that match but do not run here: say so, rather
                // than leave the report contradicting itself.
                let refused = runs.refused();
                if refused > 0 {
                    let matching = q.order_table(table, None).len();
                    e.0.device = Some(format!(
                        "{refused} members do not run on {}{}",
                        runs.devices,
                        if matching > 0 {
                            format!(", {matching} of which match")
                        } else {
                            String::new()
                        }
                    ));
                }
                Err(e.into())
            }
        }
    }

    /// [`Error::UnknownKey`] for the first key of `query` that no
    /// member has (but `priority`), with the closest keys members have.
    fn unknown_key(&self, data: &FamilyData, query: &Query) -> Option<Error> {
        let table = &data.table;
        if table.is_empty() {
            return None;
        }
        let key = query.keys().into_iter().find(|k| {
            *k != PRIORITY_KEY && table.keys.binary_search_by(|x| x.as_str().cmp(k)).is_err()
        })?;
        Some(Error::UnknownKey {
            family: self.family.to_string(),
            key: key.to_string(),
            suggestions: closest(table.keys.iter().map(String::as_str), key, 3)
                .into_iter()
                .map(str::to_string)
                .collect(),
        })
    }

    /// Every member that meets `query`, best first (empty when none does).
    ///
    /// # Errors
    ///
    /// If the manifest cannot be read.
    pub fn candidates(&'static self, query: &Query) -> Result<Vec<Kernel<F>>, Error> {
        let data = self.data()?;
        let runs = data.runs()?;
        query
            .with_neutral(&data.neutral)
            .order_table(&data.table, runs.mask())
            .into_iter()
            .map(|i| Ok(self.member(i)?.kernel()))
            .collect()
    }

    /// The member named `blob`.
    ///
    /// # Errors
    ///
    /// [`Error::NotMember`] naming the blob's own family or close
    /// member names, or the runtime's error if the manifest cannot be used.
    pub fn by_name(&'static self, blob: &str) -> Result<Kernel<F>, Error> {
        let data = self.data()?;
        if let Some(m) = data.member_named(blob)? {
            return Ok(self.member(m)?.kernel());
        }
        let family_of_blob = data.runtime.store().family_of(blob);
        let names = (0..data.table.len())
            .map(|m| data.name(m))
            .collect::<Result<Vec<&str>, Error>>()?;
        let suggestions = closest(names.into_iter(), blob, 3)
            .into_iter()
            .map(str::to_string)
            .collect();
        Err(Error::NotMember {
            family: self.family.to_string(),
            blob: blob.to_string(),
            family_of_blob,
            suggestions,
        })
    }

    /// Loads member `blob` and fills its slot, resolving the family's
    /// symbol, when this family resolves it through `rt` (what warming the
    /// blob up by name does for the family's declaration); `None` when
    /// `blob` is no member of it there.
    pub(crate) fn warm(&'static self, rt: &Runtime, blob: &str) -> Option<Result<(), Error>> {
        // Another manifest's family is not opened for it.
        if !std::ptr::eq(self.source.runtime().ok()?, rt) {
            return None;
        }
        // A family the manifest cannot give (a name no group has) is its
        // own calls' error, not that of the blobs warmed up beside it.
        let data = self.data().ok()?;
        let m = match data.member_named(blob) {
            Ok(m) => m?,
            Err(e) => return Some(Err(e)),
        };
        Some(
            self.member(m)
                .and_then(|member| member.slot.try_get().map(|_| ())),
        )
    }

    /// The runtime this family's members resolve through.
    pub(crate) fn runtime(&self) -> Result<&'static Runtime, Error> {
        self.source.runtime()
    }
}

/// The members of a family ([`FamilySlots::members`]), in family-local
/// index order; each is made when first reached.
pub struct Members<F: 'static = ()> {
    slots: &'static FamilySlots<F>,
    len: usize,
}

impl<F: 'static> Clone for Members<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: 'static> Copy for Members<F> {}

impl<F: 'static> fmt::Debug for Members<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Members")
            .field("family", &self.slots.family)
            .field("len", &self.len)
            .finish()
    }
}

impl<F: 'static> Members<F> {
    /// Number of members.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the family has no members.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Member `index`, if there is one (`None` also when the manifest
    /// cannot be read there).
    pub fn get(&self, index: usize) -> Option<&'static Member<F>> {
        if index >= self.len {
            return None;
        }
        self.slots.member(index).ok()
    }

    /// Every member, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'static Member<F>> {
        let this = *self;
        (0..self.len).filter_map(move |i| this.get(i))
    }
}

impl<F: 'static> IntoIterator for Members<F> {
    type Item = &'static Member<F>;
    type IntoIter = Box<dyn Iterator<Item = &'static Member<F>>>;

    fn into_iter(self) -> Self::IntoIter {
        Box::new(self.iter())
    }
}

/// One blob of a family and the slot caching its entry point (the same
/// slot a `#[lazy_kernel]` function has).
pub struct Member<F = ()> {
    slot: Slot,
    index: usize,
    name: &'static str,
    data: &'static FamilyData,
    meta: OnceCell<BTreeMap<String, String>>,
    _family: PhantomData<fn() -> F>,
}

impl<F> fmt::Debug for Member<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Member")
            .field("index", &self.index)
            .field("blob", &self.name)
            .field("meta", &self.data.table.meta(self.index))
            .field("ready", &self.is_ready())
            .finish()
    }
}

impl<F> Member<F> {
    /// The blob name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The blob's metadata: what this kernel supports (decoded from the
    /// family's table on first use).
    pub fn meta(&'static self) -> &'static BTreeMap<String, String> {
        self.meta.get_or_init(|| self.data.table.meta(self.index))
    }

    /// One metadata value.
    pub fn get(&self, key: &str) -> Option<&'static str> {
        let t = &self.data.table;
        let k = t.keys.binary_search_by(|x| x.as_str().cmp(key)).ok()?;
        t.value(self.index, k)
    }

    /// The position in the family.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The handle to call this member through.
    pub fn kernel(&'static self) -> Kernel<F> {
        Kernel { member: self }
    }

    /// Whether the entry point is loaded.
    pub fn is_ready(&self) -> bool {
        self.slot.is_ready()
    }
}

/// A chosen member of a family: a `Copy` handle that points at the
/// member's slot, obtained from [`FamilySlots::select`],
/// [`FamilySlots::by_name`] or [`Member::kernel`].
///
/// Calling through it ([`Kernel::get`]) costs one acquire load once the
/// member is loaded.
pub struct Kernel<F: 'static = ()> {
    member: &'static Member<F>,
}

impl<F: 'static> Clone for Kernel<F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: 'static> Copy for Kernel<F> {}

impl<F: 'static> PartialEq for Kernel<F> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.member, other.member)
    }
}

impl<F: 'static> Eq for Kernel<F> {}

impl<F: 'static> std::hash::Hash for Kernel<F> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.member, state)
    }
}

impl<F: 'static> fmt::Debug for Kernel<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("index", &self.member.index)
            .field("blob", &self.member.name)
            .finish()
    }
}

impl<F: 'static> Kernel<F> {
    /// The member's entry point; compiles and loads on first use.
    ///
    /// # Panics
    ///
    /// If the blob cannot be compiled, loaded or resolved, with the error's
    /// message after `ck-jit: ` (use [`Kernel::try_get`] for a `Result`).
    #[inline(always)]
    #[track_caller]
    pub fn get(self) -> *const () {
        self.member.slot.get()
    }

    /// The entry point, or the error that prevented it.
    ///
    /// # Errors
    ///
    /// If the blob cannot be compiled, loaded or resolved.
    pub fn try_get(self) -> Result<*const (), Error> {
        self.member.slot.try_get()
    }

    /// The member this handle calls.
    pub fn member(self) -> &'static Member<F> {
        self.member
    }

    /// The family-local index.
    pub fn index(self) -> usize {
        self.member.index
    }

    /// The blob name.
    pub fn name(self) -> &'static str {
        self.member.name()
    }

    /// The blob's metadata.
    pub fn meta(self) -> &'static BTreeMap<String, String> {
        self.member.meta()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ck_jit_manifest::{Group, SymbolSpec};

    /// A manifest with one group per family and blobs `(name, family,
    /// metadata "k=v,k=v")`.
    fn manifest(blobs: &[(&str, &str, &str)]) -> Manifest {
        let mut m = Manifest::new("t", "/r");
        let mut families: Vec<&str> = blobs.iter().map(|b| b.1).collect();
        families.sort();
        families.dedup();
        for f in &families {
            m.groups.push(Group {
                name: f.to_string(),
                compiler: "cc".into(),
                args: vec!["{src}".into(), "-o".into(), "{out}".into()],
                cwd: None,
                symbol: SymbolSpec::Exact("{name}".into()),
                depfile: true,
                family: None,
                neutral: Default::default(),
            });
        }
        for (name, family, meta) in blobs {
            m.blobs.push(Blob {
                name: name.to_string(),
                source: format!("{name}.c"),
                group: families.iter().position(|f| f == family).unwrap() as u32,
                symbol: None,
                meta: meta
                    .split(',')
                    .filter(|kv| !kv.is_empty())
                    .map(|kv| {
                        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                        (k.to_string(), v.to_string())
                    })
                    .collect(),
            });
        }
        m.finish().unwrap();
        m
    }

    fn fwd() -> Manifest {
        manifest(&[
            ("fwd_d64_bf16", "fwd", "hdim=64,dtype=bf16,lse=0"),
            ("fwd_d128_bf16", "fwd", "hdim=128,dtype=bf16,lse=1"),
            ("fwd_d128_fp16", "fwd", "hdim=128,dtype=fp16,lse=1"),
            ("fwd_d256_bf16", "fwd", "hdim=256,dtype=bf16,lse=1"),
            ("fwd_d256_fp16", "fwd", "hdim=256,dtype=fp16"),
            ("fwd_dx_bf16", "fwd", "hdim=any,dtype=bf16"),
            ("bwd_d128_bf16", "bwd", "hdim=128,dtype=bf16"),
        ])
    }

    #[test]
    fn an_unmentioned_trait_gets_its_neutral_value_and_groups_of_one_family_pool() {
        let mut m = manifest(&[
            ("a_capped", "fwd_gfx9", "hdim=128,logits=true"),
            ("b_plain", "fwd_gfx9", "hdim=128,logits=false"),
            ("c_other_arch", "fwd_gfx950", "hdim=256,logits=false"),
        ]);
        for g in &mut m.groups {
            g.family = Some("fwd".into());
            g.neutral.insert("logits".into(), "false".into());
        }
        // Without neutral values the capped blob would win: it sorts first.
        let q = Query::new().eq("hdim", 128);
        assert_eq!(q.select_in(&m, "fwd").unwrap().name, "b_plain");
        let asked = Query::new().eq("hdim", 128).eq("logits", true);
        assert_eq!(asked.select_in(&m, "fwd").unwrap().name, "a_capped");
        assert_eq!(
            names(Query::new().rank_in(&m, "fwd")),
            ["b_plain", "c_other_arch"]
        );
        // A preference on the key counts as mentioning it.
        let pref = Query::new().eq("hdim", 128).prefer_max("logits");
        assert_eq!(pref.rank_in(&m, "fwd").len(), 2);
        assert!(Query::new().select_in(&m, "fwd_gfx9").is_err());
    }

    fn names(blobs: Vec<&Blob>) -> Vec<&str> {
        blobs.into_iter().map(|b| b.name.as_str()).collect()
    }

    fn no_match(m: &Manifest, family: &str, q: Query) -> String {
        q.select_in(m, family).unwrap_err().to_string()
    }

    #[test]
    fn equality_filters_and_the_family_is_the_group_name() {
        let m = fwd();
        let q = Query::new().eq("dtype", "fp16");
        assert_eq!(
            names(q.rank_in(&m, "fwd")),
            ["fwd_d128_fp16", "fwd_d256_fp16"]
        );
        assert_eq!(names(q.rank_in(&m, "bwd")), Vec::<&str>::new());
        assert_eq!(
            names(Query::new().eq("hdim", 128).rank_in(&m, "bwd")),
            ["bwd_d128_bf16"]
        );
    }

    #[test]
    fn ne_matches_other_and_missing_values() {
        let m = fwd();
        let q = Query::new().ne("lse", "1");
        assert_eq!(
            names(q.rank_in(&m, "fwd")),
            ["fwd_d256_fp16", "fwd_d64_bf16", "fwd_dx_bf16"],
            "by name when nothing else orders them"
        );
    }

    #[test]
    fn numeric_comparisons_skip_missing_and_non_numeric_values() {
        let m = fwd();
        assert_eq!(
            names(Query::new().gt("hdim", 128).rank_in(&m, "fwd")),
            ["fwd_d256_bf16", "fwd_d256_fp16"]
        );
        assert_eq!(
            names(Query::new().le("hdim", 128).rank_in(&m, "fwd")),
            ["fwd_d128_bf16", "fwd_d128_fp16", "fwd_d64_bf16"],
            "largest first for an upper bound"
        );
        assert_eq!(
            names(Query::new().lt("hdim", 128).rank_in(&m, "fwd")),
            ["fwd_d64_bf16"]
        );
        let any = Query::new().ge("hdim", i64::MIN);
        assert!(
            !names(any.rank_in(&m, "fwd")).contains(&"fwd_dx_bf16"),
            "'any' is not a number"
        );
        assert!(!Query::new().ge("tile", 0).matches(&BTreeMap::new()));
    }

    #[test]
    fn ge_prefers_the_tightest_fit() {
        let m = fwd();
        let best = Query::new().eq("dtype", "bf16").ge("hdim", 100);
        assert_eq!(best.select_in(&m, "fwd").unwrap().name, "fwd_d128_bf16");
        assert_eq!(
            names(best.rank_in(&m, "fwd")),
            ["fwd_d128_bf16", "fwd_d256_bf16"]
        );
    }

    #[test]
    fn flags_are_true_unless_missing_or_spelled_false() {
        let meta = |v: &str| BTreeMap::from([("lse".to_string(), v.to_string())]);
        for yes in ["1", "true", "yes", "lse", "TRUE", "on"] {
            assert!(Query::new().has("lse").matches(&meta(yes)), "{yes}");
            assert!(!Query::new().lacks("lse").matches(&meta(yes)), "{yes}");
        }
        for no in ["", "0", "false", "No", "off"] {
            assert!(!Query::new().has("lse").matches(&meta(no)), "{no:?}");
            assert!(Query::new().lacks("lse").matches(&meta(no)), "{no:?}");
        }
        assert!(!Query::new().has("lse").matches(&BTreeMap::new()));
        assert!(Query::new().lacks("lse").matches(&BTreeMap::new()));
    }

    #[test]
    fn explicit_preferences_come_first_then_fit_then_priority_then_name() {
        let m = manifest(&[
            ("a", "f", "hdim=256,tile=64"),
            ("b", "f", "hdim=128,tile=32"),
            ("c", "f", "hdim=128,tile=64,priority=5"),
            ("d", "f", "hdim=128,tile=64"),
            ("e", "f", "hdim=128,tile=64,priority=-1"),
            ("g", "f", "hdim=128,priority=9"),
        ]);
        // Preference beats fit: the 256 blob has the larger tile too, but
        // ties with three 128 ones, which fit better.
        let q = Query::new().ge("hdim", 128).prefer_max("tile");
        assert_eq!(names(q.rank_in(&m, "f")), ["c", "d", "e", "a", "b", "g"]);
        // Without a preference: fit, then priority, then name.
        let q = Query::new().ge("hdim", 64);
        assert_eq!(names(q.rank_in(&m, "f")), ["g", "c", "b", "d", "e", "a"]);
        // prefer_min puts blobs without the key last.
        let q = Query::new().prefer_min("tile");
        assert_eq!(names(q.rank_in(&m, "f")), ["b", "c", "a", "d", "e", "g"]);
        // Preferences apply in the order given.
        let q = Query::new().prefer_max("hdim").prefer_min("tile");
        assert_eq!(q.select_in(&m, "f").unwrap().name, "a");
        let q = Query::new().prefer_min("tile").prefer_max("hdim");
        assert_eq!(q.select_in(&m, "f").unwrap().name, "b");
    }

    #[test]
    fn a_non_numeric_priority_counts_as_zero() {
        let m = manifest(&[("a", "f", "priority=high"), ("b", "f", "")]);
        assert_eq!(names(Query::new().rank_in(&m, "f")), ["a", "b"]);
    }

    #[test]
    fn no_match_says_what_each_constraint_let_through_and_what_it_saw() {
        let m = fwd();
        assert_eq!(
            no_match(&m, "fwd", Query::new().eq("dtype", "fp8").ge("hdim", 128)),
            "no fwd blob matches dtype = fp8, hdim >= 128: \
             dtype = fp8 matched 0 of 6 (values seen: bf16, fp16); \
             hdim >= 128 matched 4 of 6 (closest values seen: 128, 64, 256; not an integer in 1)"
        );
        assert_eq!(
            no_match(&m, "fwd", Query::new().ge("hdim", 512)),
            "no fwd blob matches hdim >= 512: hdim >= 512 matched 0 of 6 \
             (closest values seen: 256, 128, 64; not an integer in 1)"
        );
        assert_eq!(
            no_match(&m, "fwd", Query::new().has("dropout")),
            "no fwd blob matches has dropout: has dropout matched 0 of 6 (missing in 6); \
             no fwd blob has the key 'dropout'"
        );
    }

    #[test]
    fn no_match_of_constraints_that_each_match_alone_shows_where_they_part() {
        let m = fwd();
        let msg = no_match(
            &m,
            "fwd",
            Query::new().eq("dtype", "fp16").has("lse").le("hdim", 64),
        );
        assert_eq!(
            msg,
            "no fwd blob matches dtype = fp16, has lse, hdim <= 64: \
             dtype = fp16 matched 2 of 6 (values seen: bf16, fp16); \
             has lse matched 3 of 6 (values seen: 0, 1; missing in 2); \
             hdim <= 64 matched 1 of 6 (closest values seen: 64, 128, 256; not an integer in 1); \
             together they match none: dtype = fp16, has lse leave 1, and of those \
             hdim <= 64 matched 0 of 1 (closest values seen among them: 128)"
        );
    }

    #[test]
    fn a_misspelt_key_is_named_with_the_closest_keys_members_have() {
        let m = fwd();
        assert_eq!(
            no_match(&m, "fwd", Query::new().eq("dtyp", "bf16").ge("hdim", 128)),
            "no fwd blob matches dtyp = bf16, hdim >= 128: \
             dtyp = bf16 matched 0 of 6 (missing in 6); hdim >= 128 matched 4 of 6 \
             (closest values seen: 128, 64, 256; not an integer in 1); \
             no fwd blob has the key 'dtyp'; did you mean 'dtype'?"
        );
        let msg = no_match(&m, "fwd", Query::new().has("zzzzzz"));
        assert!(
            msg.ends_with("no fwd blob has the key 'zzzzzz'"),
            "nothing close, nothing suggested: {msg}"
        );
        // A preference on a key nobody has is no reason to refuse alone,
        // but is named once something else fails.
        let msg = no_match(&m, "fwd", Query::new().eq("dtype", "x").prefer_max("hdm"));
        assert!(msg.ends_with("did you mean 'hdim'?"), "{msg}");
    }

    #[test]
    fn an_unknown_family_lists_close_or_all_family_names() {
        let m = fwd();
        assert_eq!(
            no_match(&m, "fwdd", Query::new()),
            "family 'fwdd' has no blobs in the manifest; did you mean 'fwd' or 'bwd'?"
        );
        assert_eq!(
            no_match(&m, "convolution", Query::new()),
            "family 'convolution' has no blobs in the manifest (families: 'bwd', 'fwd')"
        );
    }

    #[test]
    fn long_value_lists_are_cut() {
        let blobs: Vec<(String, String)> = (0..20)
            .map(|i| (format!("b{i:02}"), format!("v=x{i:02}")))
            .collect();
        let refs: Vec<(&str, &str, &str)> = blobs
            .iter()
            .map(|(n, m)| (n.as_str(), "f", m.as_str()))
            .collect();
        let m = manifest(&refs);
        let msg = no_match(&m, "f", Query::new().eq("v", "y"));
        assert!(
            msg.ends_with("(values seen: x00, x01, x02, x03, x04, x05, x06, x07, ... (12 more))"),
            "{msg}"
        );
    }

    #[test]
    fn hostile_metadata_prints_on_one_line() {
        let m = manifest(&[("a", "f", "k=a\nb")]);
        let msg = no_match(&m, "f", Query::new().eq("k", "c\rd"));
        assert!(!msg.contains('\n') && !msg.contains('\r'), "{msg}");
    }

    #[test]
    fn queries_display_and_compare_by_content() {
        assert_eq!(Query::new().to_string(), "any");
        let q = Query::new()
            .eq("a", 1)
            .ne("b", "x")
            .gt("c", -2)
            .lt("d", 3)
            .lacks("e")
            .prefer_min("f");
        assert_eq!(
            q.to_string(),
            "a = 1, b != x, c > -2, d < 3, lacks e, prefer min f"
        );
        assert_eq!(q.clone(), q);
        assert_ne!(q, Query::new());
    }
}
