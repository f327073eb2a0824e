//! Choosing a kernel for a region of fused operations, one operation at a
//! time: each operation's attributes (a [`Query`]) are composed with the
//! region's, the members that still support the composition are kept, and
//! each step answers whether the region can take the operation (and with
//! which kernel) or must be closed first ("flushed").
//!
//! A step costs what its new constraints cost, not what the region's
//! accumulated ones do: each new constraint is evaluated once per distinct
//! value of its key in the family's code table, then the surviving members
//! (a list of indices, shrinking as the region grows) are filtered by one
//! code read each. The family is never rescanned and no metadata map is
//! built. Nothing here touches a member's slot beyond making the handle of
//! the current best one.

use std::fmt;

use super::{
    Clause, Error, FamilyData, FamilySlots, Kernel, Members, Query, SelectError, PRIORITY_KEY,
};
use crate::family::compose::Conflict;

/// A family's kernels for a region of fused operations, narrowed one
/// operation at a time ([`Selector::step`], [`Selector::push`]); from
/// [`Members::selector`] (`kernel::blobs()?.selector(&base)` for a
/// `#[lazy_kernel(family = ...)]` function).
///
/// ```no_run
/// # use ck_jit_rt::family::{Members, Step};
/// # use ck_jit_rt::Query;
/// # fn demo(blobs: Members) -> Result<(), ck_jit_rt::SelectError> {
/// let mut sel = blobs.selector(&Query::new().eq("dtype", "f32"))?;
/// for op in [Query::new().eq("gemm", 1), Query::new().eq("relu", 2)] {
///     if let Some(region) = sel.push(&op)? {
///         println!("{} ops with {}", region.ops(), region.kernel().name());
///     }
/// }
/// let last = sel.finish(); // the region still open
/// # Ok(()) }
/// ```
pub struct Selector<F: 'static = ()> {
    slots: &'static FamilySlots<F>,
    data: &'static FamilyData,
    /// What every region needs.
    base: Query,
    /// The members that meet `base`.
    base_left: Vec<u32>,
    /// `base` and the region's operations, composed.
    query: Query,
    ops: usize,
    /// The members that meet `query`'s constraints, in index order.
    left: Vec<u32>,
    best: Option<Kernel<F>>,
    /// Each key column's values as integers, parsed when an order first
    /// reads the key.
    numbers: Vec<Option<Box<[Option<i64>]>>>,
}

impl<F: 'static> fmt::Debug for Selector<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Selector")
            .field("family", &self.slots.family)
            .field("region", &self.query.to_string())
            .field("ops", &self.ops)
            .field("candidates", &self.left.len())
            .field("best", &self.best.map(|k| k.name()))
            .finish()
    }
}

/// The answer to one operation ([`Selector::step`]).
pub enum Step<F: 'static = ()> {
    /// The region takes the operation; the best kernel for the region so
    /// far.
    Selectable(Kernel<F>),
    /// The region cannot take it: close the region with its kernel
    /// ([`Selector::finish`]) and start the next one with this operation.
    Flush(Flush),
}

impl<F: 'static> Clone for Step<F> {
    fn clone(&self) -> Self {
        match self {
            Step::Selectable(k) => Step::Selectable(*k),
            Step::Flush(f) => Step::Flush(f.clone()),
        }
    }
}

impl<F: 'static> PartialEq for Step<F> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Step::Selectable(a), Step::Selectable(b)) => a == b,
            (Step::Flush(a), Step::Flush(b)) => a == b,
            _ => false,
        }
    }
}

impl<F: 'static> fmt::Debug for Step<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Selectable(k) => f.debug_tuple("Selectable").field(k).finish(),
            Step::Flush(x) => f.debug_tuple("Flush").field(x).finish(),
        }
    }
}

/// Why a region cannot take an operation: the constraint that emptied the
/// set of kernels, or the pair that cannot hold together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flush {
    region: String,
    op: String,
    reason: FlushReason,
}

/// The cause of a [`Flush`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlushReason {
    /// One of the operation's constraints contradicts one of the region's.
    Conflict(Conflict),
    /// The constraints compose, but no kernel supports them all.
    NoKernel {
        /// The constraint after which none was left (one of the
        /// operation's, or a neutral value of the family for a key the
        /// region leaves open, marked so).
        constraint: String,
        /// How many kernels supported the region before it.
        among: usize,
    },
}

impl Flush {
    /// The region's requirement (the composition of its operations).
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The operation the region cannot take.
    pub fn op(&self) -> &str {
        &self.op
    }

    /// Why.
    pub fn reason(&self) -> &FlushReason {
        &self.reason
    }
}

impl fmt::Display for Flush {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ck-jit: the region ({}) cannot take {}: ",
            self.region, self.op
        )?;
        match &self.reason {
            FlushReason::Conflict(c) => write!(
                f,
                "{} conflicts with {} (no value of {} meets both)",
                c.first(),
                c.second(),
                c.key()
            ),
            FlushReason::NoKernel { constraint, among } => write!(
                f,
                "{constraint} leaves none of the {among} kernels that support the region"
            ),
        }
    }
}

/// A closed region: its requirement, how many operations it took and the
/// kernel chosen for it.
pub struct Region<F: 'static = ()> {
    query: Query,
    ops: usize,
    kernel: Kernel<F>,
}

impl<F: 'static> Region<F> {
    /// The kernel that runs the region.
    pub fn kernel(&self) -> Kernel<F> {
        self.kernel
    }

    /// The composition of the region's operations (and the selector's
    /// base).
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// How many operations the region took.
    pub fn ops(&self) -> usize {
        self.ops
    }
}

impl<F: 'static> Clone for Region<F> {
    fn clone(&self) -> Self {
        Region {
            query: self.query.clone(),
            ops: self.ops,
            kernel: self.kernel,
        }
    }
}

impl<F: 'static> PartialEq for Region<F> {
    fn eq(&self, other: &Self) -> bool {
        (&self.query, self.ops, self.kernel) == (&other.query, other.ops, other.kernel)
    }
}

impl<F: 'static> fmt::Debug for Region<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("query", &self.query.to_string())
            .field("ops", &self.ops)
            .field("kernel", &self.kernel)
            .finish()
    }
}

/// Which codes of one key column a clause lets through (index 0: the key
/// missing), or the clause's answer for a key no member has.
enum Pass {
    Codes(usize, Vec<bool>),
    Every,
    None,
}

fn pass(data: &FamilyData, clause: &Clause) -> Pass {
    let table = &data.table;
    match column(data, clause.key()) {
        Some(k) => {
            let mut codes = vec![clause.matches_value(None)];
            codes.extend(table.dicts[k].iter().map(|v| clause.matches_value(Some(v))));
            Pass::Codes(k, codes)
        }
        None if clause.matches_value(None) => Pass::Every,
        None => Pass::None,
    }
}

fn column(data: &FamilyData, key: &str) -> Option<usize> {
    data.table
        .keys
        .binary_search_by(|k| k.as_str().cmp(key))
        .ok()
}

/// The members of `from` that `pass` lets through.
fn filter(data: &FamilyData, from: &[u32], pass: &Pass) -> Vec<u32> {
    match pass {
        Pass::Every => from.to_vec(),
        Pass::None => Vec::new(),
        Pass::Codes(k, codes) => from
            .iter()
            .copied()
            .filter(|&m| {
                let c = data.table.code(m as usize, *k) as usize;
                // A code past the values only comes from damaged bytes:
                // read it as missing, as `Table::value` does.
                codes.get(c).copied().unwrap_or(codes[0])
            })
            .collect(),
    }
}

impl<F: 'static> FamilySlots<F> {
    /// A selector over this family whose regions all need `base` (the
    /// dtype and architecture of a whole graph, say, and preferences).
    ///
    /// # Errors
    ///
    /// As [`FamilySlots::select`] for `base`: a key no member has, a
    /// conflict within it, no member meeting it, or the runtime's error.
    pub fn selector(&'static self, base: &Query) -> Result<Selector<F>, SelectError> {
        let data = self.data()?;
        if let Some(e) = self.unknown_key(data, base) {
            return Err(e);
        }
        if let Some(c) = base.conflict() {
            return Err(SelectError::Conflict(c));
        }
        let mut left: Vec<u32> = (0..data.table.len() as u32).collect();
        for clause in &base.clauses {
            left = filter(data, &left, &pass(data, clause));
        }
        let mut sel = Selector {
            slots: self,
            data,
            base: base.clone(),
            base_left: left.clone(),
            query: base.clone(),
            ops: 0,
            left,
            best: None,
            numbers: vec![None; data.table.keys.len()],
        };
        let left = sel.left.clone();
        if !left.is_empty() && sel.best_of(base, &left)?.is_ok() {
            return Ok(sel);
        }
        // The family's own report of why nothing meets the base.
        Err(match self.select(base) {
            Err(e) => e,
            Ok(_) => SelectError::Runtime(sel.disagree(base)),
        })
    }
}

impl<F: 'static> Members<F> {
    /// A selector over the family whose regions all need `base`; see
    /// [`Selector`].
    ///
    /// # Errors
    ///
    /// As [`FamilySlots::selector`].
    pub fn selector(&self, base: &Query) -> Result<Selector<F>, SelectError> {
        self.slots.selector(base)
    }
}

impl<F: 'static> Selector<F> {
    /// Offers the next operation's attributes to the region.
    ///
    /// On [`Step::Selectable`] the region has taken the operation; on
    /// [`Step::Flush`] it is unchanged, and the caller closes it
    /// ([`Selector::finish`]) and steps again with the same operation
    /// ([`Selector::push`] does both).
    ///
    /// # Errors
    ///
    /// When the region is empty and the operation alone cannot be
    /// selected: a key no member has ([`SelectError::UnknownKey`], with
    /// close keys), a conflict with itself or the base
    /// ([`SelectError::Conflict`]), or no member supporting it
    /// ([`SelectError::NoMatch`], with the family's report). A key no
    /// member has is an error for a non-empty region too: it is a mistake,
    /// not a reason to flush.
    pub fn step(&mut self, op: &Query) -> Result<Step<F>, SelectError> {
        if let Some(e) = self.slots.unknown_key(self.data, op) {
            return Err(e);
        }
        let mut query = self.query.clone();
        let mut added = Vec::new();
        for clause in &op.clauses {
            match query.add_clause(clause) {
                Ok(true) => added.push(clause),
                Ok(false) => {}
                Err(c) => return self.refuse(op, FlushReason::Conflict(c), &query),
            }
        }
        for pref in &op.prefs {
            if !query.prefs.iter().any(|p| p.key() == pref.key()) {
                query.prefs.push(pref.clone());
            }
        }
        let mut left: Option<Vec<u32>> = None;
        for clause in added {
            let from = left.as_deref().unwrap_or(&self.left);
            let among = from.len();
            let next = filter(self.data, from, &pass(self.data, clause));
            if next.is_empty() {
                let reason = FlushReason::NoKernel {
                    constraint: clause.to_string(),
                    among,
                };
                return self.refuse(op, reason, &query);
            }
            left = Some(next);
        }
        let left = left.unwrap_or_else(|| self.left.clone());
        let best = match self.best_of(&query, &left)? {
            Ok(best) => best,
            Err(neutral) => {
                let reason = FlushReason::NoKernel {
                    constraint: format!("{neutral} (the family's neutral value)"),
                    among: left.len(),
                };
                return self.refuse(op, reason, &query);
            }
        };
        let kernel = self.slots.member(best as usize)?.kernel();
        self.query = query;
        self.left = left;
        self.best = Some(kernel);
        self.ops += 1;
        Ok(Step::Selectable(kernel))
    }

    /// Offers the next operation and, when the region cannot take it,
    /// closes the region and starts the next with it.
    ///
    /// Returns the closed region, or `None` when the operation joined the
    /// open one.
    ///
    /// # Errors
    ///
    /// As [`Selector::step`] for an empty region: the operation cannot be
    /// selected even alone.
    pub fn push(&mut self, op: &Query) -> Result<Option<Region<F>>, SelectError> {
        match self.step(op)? {
            Step::Selectable(_) => Ok(None),
            Step::Flush(_) => {
                let closed = self.finish();
                // An empty region answers with an error, never a flush.
                let again = self.step(op)?;
                debug_assert!(matches!(again, Step::Selectable(_)));
                Ok(closed)
            }
        }
    }

    /// Closes the region: its requirement and kernel (`None` when it took
    /// no operation), and starts an empty one.
    pub fn finish(&mut self) -> Option<Region<F>> {
        let region = match (self.ops, self.best) {
            (0, _) | (_, None) => None,
            (ops, Some(kernel)) => Some(Region {
                query: std::mem::replace(&mut self.query, self.base.clone()),
                ops,
                kernel,
            }),
        };
        self.reset();
        region
    }

    /// Starts an empty region, dropping the open one.
    pub fn reset(&mut self) {
        self.query = self.base.clone();
        self.left.clone_from(&self.base_left);
        self.ops = 0;
        self.best = None;
    }

    /// The best kernel for the open region (`None` before its first
    /// operation).
    pub fn kernel(&self) -> Option<Kernel<F>> {
        self.best
    }

    /// The open region's requirement: the base and every operation it
    /// took, composed.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// How many operations the open region took.
    pub fn ops(&self) -> usize {
        self.ops
    }

    /// How many members meet the open region's constraints (before the
    /// family's neutral values are applied to the keys it leaves open).
    pub fn candidates(&self) -> usize {
        self.left.len()
    }

    /// A flush for a non-empty region; for an empty one, the error the
    /// family gives for the composed query.
    fn refuse(
        &self,
        op: &Query,
        reason: FlushReason,
        query: &Query,
    ) -> Result<Step<F>, SelectError> {
        if self.ops == 0 {
            return Err(match reason {
                FlushReason::Conflict(c) => SelectError::Conflict(c),
                FlushReason::NoKernel { .. } => {
                    // The composition so far, plus the rest of the op, so
                    // the family's report covers every constraint.
                    let all = query.clone().and(op).unwrap_or_else(|_| query.clone());
                    match self.slots.select(&all) {
                        Err(e) => e,
                        Ok(_) => SelectError::Runtime(self.disagree(&all)),
                    }
                }
            });
        }
        Ok(Step::Flush(Flush {
            region: self.query.to_string(),
            op: op.to_string(),
            reason,
        }))
    }

    fn disagree(&self, query: &Query) -> Error {
        Error::Manifest {
            origin: self.data.runtime.origin().to_string(),
            error: ck_jit_manifest::ManifestError::Parse(format!(
                "family '{}': selection and selector disagree on {query}",
                self.slots.family
            )),
        }
    }

    /// The best of `left` for `query` under the family's preference order,
    /// with the family's neutral values for the keys `query` leaves open:
    /// `Ok(Some(member))`, or `Ok(Err(neutral))` naming the neutral
    /// constraint that leaves none. The outer error never happens with a
    /// sound table; it is there so that a damaged one is no panic.
    #[allow(clippy::type_complexity)]
    fn best_of(&mut self, query: &Query, left: &[u32]) -> Result<Result<u32, String>, SelectError> {
        let data = self.data;
        let mentioned = query.keys();
        let mut owned: Option<Vec<u32>> = None;
        for (k, v) in &data.neutral {
            if mentioned.contains(k.as_str()) {
                continue;
            }
            let clause = Clause::Eq(k.clone(), v.clone());
            let next = filter(data, owned.as_deref().unwrap_or(left), &pass(data, &clause));
            if next.is_empty() {
                return Ok(Err(clause.to_string()));
            }
            owned = Some(next);
        }
        let left = owned.as_deref().unwrap_or(left);
        let Some(&first) = left.first() else {
            return Err(SelectError::Runtime(self.disagree(query)));
        };
        if left.len() == 1 {
            return Ok(Ok(first));
        }
        // The integers of each key the order reads, per code.
        let mut keys: Vec<&str> = query.prefs.iter().map(|p| p.key()).collect();
        keys.extend(query.clauses.iter().filter_map(|c| match c {
            Clause::Cmp(k, _, _) => Some(k.as_str()),
            _ => None,
        }));
        keys.push(PRIORITY_KEY);
        let mut columns: Vec<(&str, Option<usize>)> = Vec::with_capacity(keys.len());
        for key in keys {
            let col = column(data, key);
            if let Some(k) = col {
                self.numbers[k].get_or_insert_with(|| {
                    data.table.dicts[k].iter().map(|v| v.parse().ok()).collect()
                });
            }
            columns.push((key, col));
        }
        let numbers = &self.numbers;
        let num = |m: u32, key: &str| -> Option<i64> {
            let (_, col) = columns.iter().find(|(name, _)| *name == key)?;
            let k = (*col)?;
            let code = data.table.code(m as usize, k) as usize;
            numbers[k]
                .as_ref()?
                .get(code.checked_sub(1)?)
                .copied()
                .flatten()
        };
        // Members are in name order: the index breaks ties by name.
        let best = left.iter().copied().fold(first, |best, m| {
            let ord = query
                .prefer_by(|k| num(m, k), |k| num(best, k))
                .then_with(|| m.cmp(&best));
            if ord == std::cmp::Ordering::Less {
                m
            } else {
                best
            }
        });
        Ok(Ok(best))
    }
}
