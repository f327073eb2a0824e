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

use ck_jit_manifest::neutral_relation;

use super::compose;
use super::{Clause, Error, FamilyData, FamilySlots, Kernel, Members, Query, PRIORITY_KEY};
use crate::error::Conflict;

/// A family's kernels for a region of fused operations, narrowed one
/// operation at a time ([`Selector::step`], [`Selector::push`]); from
/// [`Members::selector`] (`kernel::blobs()?.selector(&base)` for a
/// `#[lazy_kernel(family = ...)]` function).
///
/// ```no_run
/// # use ck_jit_rt::family::{Members, Step};
/// # use ck_jit_rt::Query;
/// # fn demo(blobs: Members) -> Result<(), ck_jit_rt::Error> {
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
    /// The family's neutral values as constraints, each with the codes it
    /// lets through.
    neutral: Vec<(Clause, Pass)>,
    /// The family's neutral values that relate a key to another (`hdim_v`
    /// at least `hdim`): (key, other key).
    relations: Vec<(String, String)>,
    /// Per key column, its members grouped by code, made the first time a
    /// region's first step filters the whole family by that key.
    postings: Vec<Option<Postings>>,
}

/// The members of one key column grouped by code: those with code `c` are
/// `members[starts[c]..starts[c + 1]]`, in index order.
struct Postings {
    starts: Vec<u32>,
    members: Vec<u32>,
}

impl Postings {
    fn build(data: &FamilyData, k: usize) -> Postings {
        let table = &data.table;
        let codes = table.dicts[k].len() + 1;
        let code = |m: usize| (table.code(m, k) as usize).min(codes);
        // A code past the values (damaged bytes) counts as missing.
        let code = |m: usize| match code(m) {
            c if c == codes => 0,
            c => c,
        };
        let mut starts = vec![0u32; codes + 1];
        for m in 0..table.len() {
            starts[code(m) + 1] += 1;
        }
        for c in 0..codes {
            starts[c + 1] += starts[c];
        }
        let mut next = starts.clone();
        let mut members = vec![0u32; table.len()];
        for m in 0..table.len() {
            let c = code(m);
            members[next[c] as usize] = m as u32;
            next[c] += 1;
        }
        Postings { starts, members }
    }

    /// The members whose code `pass` lets through, in index order.
    fn gather(&self, pass: &[bool], len: usize) -> Vec<u32> {
        let list = |c: usize| &self.members[self.starts[c] as usize..self.starts[c + 1] as usize];
        let passing: Vec<usize> = (0..pass.len()).filter(|&c| pass[c]).collect();
        match passing.as_slice() {
            [c] => list(*c).to_vec(),
            _ => {
                // Several codes: mark them, then read the marks in order.
                let mut marks = vec![0u64; len.div_ceil(64)];
                for &c in &passing {
                    for &m in list(c) {
                        marks[m as usize / 64] |= 1 << (m % 64);
                    }
                }
                let mut out = Vec::new();
                for (w, &bits) in marks.iter().enumerate() {
                    let mut bits = bits;
                    while bits != 0 {
                        out.push((w * 64) as u32 + bits.trailing_zeros());
                        bits &= bits - 1;
                    }
                }
                out
            }
        }
    }
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
        write!(f, "the region ({}) cannot take {}: ", self.region, self.op)?;
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

/// Whether member `m` passes (a code past the values only comes from
/// damaged bytes: it reads as missing, as `Table::value` does).
#[inline]
fn passes(data: &FamilyData, m: u32, pass: &Pass) -> bool {
    match pass {
        Pass::Every => true,
        Pass::None => false,
        Pass::Codes(k, codes) => {
            let c = data.table.code(m as usize, *k) as usize;
            codes.get(c).copied().unwrap_or(codes[0])
        }
    }
}

/// The members of `from` that every one of `passes` lets through, in the
/// same order.
fn filter(data: &FamilyData, from: &[u32], tests: &[Pass]) -> Vec<u32> {
    let mut out = Vec::with_capacity(from.len());
    out.extend(
        from.iter()
            .copied()
            .filter(|&m| tests.iter().all(|p| passes(data, m, p))),
    );
    out
}

/// How one key orders members, read from the family's preference order
/// (see [`Query::prefer_by`]).
#[derive(Clone, Copy)]
enum Order {
    /// An explicit preference: members without a value come last.
    Prefer { smaller_first: bool },
    /// The fit of a numeric constraint (every member has a value).
    Fit { smaller_first: bool },
    /// `priority`, higher first, missing counting as 0.
    Priority,
}

impl Order {
    fn cmp(self, a: Option<i64>, b: Option<i64>) -> std::cmp::Ordering {
        use std::cmp::Ordering::{Equal, Greater, Less};
        match self {
            Order::Prefer { smaller_first } => match (a, b) {
                (Some(x), Some(y)) if smaller_first => x.cmp(&y),
                (Some(x), Some(y)) => y.cmp(&x),
                (Some(_), None) => Less,
                (None, Some(_)) => Greater,
                (None, None) => Equal,
            },
            Order::Fit {
                smaller_first: true,
            } => a.cmp(&b),
            Order::Fit {
                smaller_first: false,
            } => b.cmp(&a),
            Order::Priority => b.unwrap_or(0).cmp(&a.unwrap_or(0)),
        }
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
    pub fn selector(&'static self, base: &Query) -> Result<Selector<F>, Error> {
        let data = self.data()?;
        if let Some(e) = self.unknown_key(data, base) {
            return Err(e);
        }
        if let Some(c) = base.conflict() {
            return Err(Error::Conflict(c));
        }
        // Members that do not run on the device in use are no candidates
        // of any region, as in `select`.
        let runs = data.runs()?.mask();
        let all: Vec<u32> = (0..data.table.len() as u32)
            .filter(|&m| runs.is_none_or(|r| r.get(m as usize).copied().unwrap_or(true)))
            .collect();
        let tests: Vec<Pass> = base.clauses.iter().map(|c| pass(data, c)).collect();
        let left = filter(data, &all, &tests);
        // A neutral value relating its key to another depends on the
        // region's query: it is applied in `best_of`.
        let relations = data
            .neutral
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), neutral_relation(v)?.to_string())))
            .collect();
        let neutral = data
            .neutral
            .iter()
            .filter(|(_, v)| neutral_relation(v).is_none())
            .map(|(k, v)| {
                let clause = Clause::Eq(k.clone(), v.clone());
                let p = pass(data, &clause);
                (clause, p)
            })
            .collect();
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
            neutral,
            relations,
            postings: (0..data.table.keys.len()).map(|_| None).collect(),
        };
        let left = sel.left.clone();
        if !left.is_empty() && sel.best_of(base, &left).is_ok() {
            return Ok(sel);
        }
        // The family's own report of why nothing meets the base.
        Err(match self.select(base) {
            Err(e) => e,
            Ok(_) => sel.disagree(base),
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
    pub fn selector(&self, base: &Query) -> Result<Selector<F>, Error> {
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
    /// selected: a key no member has ([`Error::UnknownKey`], with
    /// close keys), a conflict with itself or the base
    /// ([`Error::Conflict`]), or no member supporting it
    /// ([`Error::NoMatch`], with the family's report). A key no
    /// member has is an error for a non-empty region too: it is a mistake,
    /// not a reason to flush.
    pub fn step(&mut self, op: &Query) -> Result<Step<F>, Error> {
        if let Some(e) = self.slots.unknown_key(self.data, op) {
            return Err(e);
        }
        // The op's constraints the region does not have yet, each checked
        // against the region's and the op's earlier ones.
        let mut added: Vec<&Clause> = Vec::with_capacity(op.clauses.len());
        for clause in &op.clauses {
            let earlier = self.query.conflicting(clause).or_else(|| {
                added
                    .iter()
                    .copied()
                    .find(|c| !compose::compatible(c, clause))
            });
            if let Some(earlier) = earlier {
                let c = Conflict::between(earlier, clause);
                return self.refuse(op, FlushReason::Conflict(c));
            }
            if !self.query.clauses.contains(clause) && !added.contains(&clause) {
                added.push(clause);
            }
        }
        let tests: Vec<Pass> = added.iter().map(|c| pass(self.data, c)).collect();
        let data = self.data;
        let left = match tests.split_first() {
            None => self.left.clone(),
            // The whole family left: read the members of the passing
            // codes rather than every member's code.
            Some((Pass::Codes(k, codes), rest)) if self.left.len() == data.table.len() => {
                let postings = self.postings[*k].get_or_insert_with(|| Postings::build(data, *k));
                filter(data, &postings.gather(codes, data.table.len()), rest)
            }
            Some(_) => filter(data, &self.left, &tests),
        };
        if left.is_empty() {
            // Which of the op's constraints left none, applied in order.
            let mut among = self.left.clone();
            for (clause, test) in added.iter().zip(&tests) {
                let next = filter(self.data, &among, std::slice::from_ref(test));
                if next.is_empty() {
                    let reason = FlushReason::NoKernel {
                        constraint: clause.to_string(),
                        among: among.len(),
                    };
                    return self.refuse(op, reason);
                }
                among = next;
            }
        }
        // The region's query grows in place (no copy of it per step), and
        // shrinks back if the op is refused.
        let (clauses, prefs) = (self.query.clauses.len(), self.query.prefs.len());
        self.query.clauses.extend(added.into_iter().cloned());
        for pref in &op.prefs {
            if !self.query.prefs.iter().any(|p| p.key() == pref.key()) {
                self.query.prefs.push(pref.clone());
            }
        }
        let query = std::mem::take(&mut self.query);
        let best = self.best_of(&query, &left);
        self.query = query;
        let best = match best {
            Ok(best) => best,
            Err(neutral) => {
                self.query.clauses.truncate(clauses);
                self.query.prefs.truncate(prefs);
                let reason = FlushReason::NoKernel {
                    constraint: format!("{neutral} (the family's neutral value)"),
                    among: left.len(),
                };
                return self.refuse(op, reason);
            }
        };
        let kernel = match self.slots.member(best as usize) {
            Ok(m) => m.kernel(),
            Err(e) => {
                self.query.clauses.truncate(clauses);
                self.query.prefs.truncate(prefs);
                return Err(e);
            }
        };
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
    pub fn push(&mut self, op: &Query) -> Result<Option<Region<F>>, Error> {
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
    fn refuse(&self, op: &Query, reason: FlushReason) -> Result<Step<F>, Error> {
        if self.ops == 0 {
            return Err(match reason {
                FlushReason::Conflict(c) => Error::Conflict(c),
                FlushReason::NoKernel { .. } => {
                    // The region and the whole op, so the family's report
                    // covers every constraint.
                    let all = self
                        .query
                        .clone()
                        .and(op)
                        .unwrap_or_else(|_| self.query.clone());
                    match self.slots.select(&all) {
                        Err(e) => e,
                        Ok(_) => self.disagree(&all),
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
    /// among the members with the family's neutral values for the keys
    /// `query` leaves open, or the neutral constraint that leaves none.
    fn best_of(&mut self, query: &Query, left: &[u32]) -> Result<u32, String> {
        let data = self.data;
        // The bounds relations add for keys the query leaves open, as
        // `Query::with_neutral` adds them (after the query's own).
        let derived: Vec<(Clause, Pass)> = self
            .relations
            .iter()
            .filter(|(key, _)| !query.mentions(key))
            .flat_map(|(key, other)| query.at_least_as(key, other))
            .map(|c| {
                let p = pass(data, &c);
                (c, p)
            })
            .collect();
        let open: Vec<&Pass> = self
            .neutral
            .iter()
            .filter(|(c, _)| !query.mentions(c.key()))
            .map(|(_, p)| p)
            .chain(derived.iter().map(|(_, p)| p))
            .collect();
        // The keys the order reads, in the order it reads them; a key no
        // member has orders nothing.
        let keys = order_keys(query, &derived);
        let mut order: Vec<(usize, Order)> = Vec::with_capacity(keys.len());
        for (key, how) in keys {
            if let Some(k) = column(data, key) {
                self.numbers[k].get_or_insert_with(|| {
                    data.table.dicts[k].iter().map(|v| v.parse().ok()).collect()
                });
                order.push((k, how));
            }
        }
        let numbers = &self.numbers;
        let value = |m: u32, k: usize| -> Option<i64> {
            let code = data.table.code(m as usize, k) as usize;
            numbers[k]
                .as_ref()?
                .get(code.checked_sub(1)?)
                .copied()
                .flatten()
        };
        let better = |a: u32, b: u32| -> bool {
            for &(k, how) in &order {
                match how.cmp(value(a, k), value(b, k)) {
                    std::cmp::Ordering::Less => return true,
                    std::cmp::Ordering::Greater => return false,
                    std::cmp::Ordering::Equal => {}
                }
            }
            // Members are in name order: the index breaks ties by name.
            a < b
        };
        let mut best: Option<u32> = None;
        for &m in left {
            if !open.iter().all(|p| passes(data, m, p)) {
                continue;
            }
            // `left` is in index order: with nothing to order by, the
            // first is the best.
            if order.is_empty() {
                return Ok(m);
            }
            if best.is_none_or(|b| better(m, b)) {
                best = Some(m);
            }
        }
        if let Some(best) = best {
            return Ok(best);
        }
        // None has the neutral values: name the first that leaves none.
        let mut among = left.to_vec();
        let neutral = self
            .neutral
            .iter()
            .filter(|(c, _)| !query.mentions(c.key()));
        for (clause, p) in neutral.chain(derived.iter()) {
            let next = filter(data, &among, std::slice::from_ref(p));
            if next.is_empty() {
                return Err(clause.to_string());
            }
            among = next;
        }
        Err("the family's neutral values".to_string())
    }
}

/// The keys `best_of` orders members by, in the order it reads them: the
/// query's preferences, then each bound of the query and of `derived` (the
/// closer fit first), then the priority.
fn order_keys<'q>(query: &'q Query, derived: &'q [(Clause, Pass)]) -> Vec<(&'q str, Order)> {
    let mut keys: Vec<(&str, Order)> = query
        .prefs
        .iter()
        .map(|p| {
            let smaller_first = matches!(p, super::Preference::Min(_));
            (p.key(), Order::Prefer { smaller_first })
        })
        .collect();
    keys.extend(
        query
            .clauses
            .iter()
            .chain(derived.iter().map(|(c, _)| c))
            .filter_map(|c| match c {
                Clause::Cmp(k, op, _) => Some((
                    k.as_str(),
                    Order::Fit {
                        smaller_first: matches!(op, super::Cmp::Ge | super::Cmp::Gt),
                    },
                )),
                _ => None,
            }),
    );
    keys.push((PRIORITY_KEY, Order::Priority));
    keys
}
