//! The manifest: how to compile every blob of a tree, written by the build
//! helper, read by the macro (to check names) and by the runtime.
//!
//! This crate is the single definition of the on-disk format, the ground
//! floor of the workspace: it depends on serde alone and must stay free of
//! anything that loads or runs code (the macro links it at expansion time,
//! every user program links it at run time).
//!
//! # Format
//!
//! A manifest is one JSON document:
//!
//! ```json
//! {"format":1,"name":"ck_jit","root":"/abs/tree",
//!  "groups":[{"name":"vec","compiler":"c++","args":["-O2","-fPIC","-shared","{src}","-o","{out}"],
//!             "symbol":{"exact":"{name}"},"depfile":true}],
//!  "blobs":[{"name":"vadd_f32","source":"kernels/vadd_f32.cpp","group":0,"meta":{"dtype":"f32"}}]}
//! ```
//!
//! Compile arguments are templates; the runtime substitutes these
//! placeholders, each standing for one whole argument or a part of one:
//!
//! | placeholder | meaning |
//! |---|---|
//! | `{root}` | the tree root (the recorded one, or `CK_JIT_ROOT`) |
//! | `{src}` | the absolute path of the blob's source |
//! | `{out}` | the path the compiler must write the shared object to |
//! | `{name}` | the blob's name |
//!
//! Blobs are sorted by name and names are unique, so a lookup is a binary
//! search and the same tree always gives a byte-identical file.
//!
//! The build also writes the same content in a [compact] form
//! (`ck_jit_manifest.ckm`), which programs embed and read in place: one
//! blob's entry decoded per lookup, each family's metadata a table of codes.

#![deny(missing_docs)]

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

pub mod compact;

/// The manifest format this crate writes and the newest it reads.
pub const FORMAT_VERSION: u32 = 2;

/// File name of the manifest inside `OUT_DIR`.
pub const MANIFEST_FILE: &str = "ck_jit_manifest.json";

/// Default cache name (`CK_JIT_NAME`).
pub const DEFAULT_NAME: &str = "ck_jit";

/// Longest blob name accepted. CK's longest bwd blob stems are 177 bytes;
/// the cache shortens long names (with a hash) for its file names.
pub const MAX_NAME_LEN: usize = 200;

/// Compiler flags never recorded and never passed: they hide the entry
/// points a blob exists to export (CK's CMake adds `-fvisibility=hidden`).
/// The build helper drops them from recorded flags; the runtime drops them
/// again from manifests written by anything else.
pub const STRIPPED_FLAGS: &[&str] = &["-fvisibility=hidden", "-fvisibility=internal"];

/// Every blob of a tree and how to compile it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Format version ([`FORMAT_VERSION`] when written by this crate).
    pub format: u32,
    /// Cache name: the directory under the cache root (`CK_JIT_NAME`).
    pub name: String,
    /// Absolute tree root at build time; `CK_JIT_ROOT` relocates it.
    pub root: String,
    /// Shared compile settings, referenced by index from each blob.
    pub groups: Vec<Group>,
    /// Blobs, sorted by name, names unique.
    pub blobs: Vec<Blob>,
    /// Blobs called together (indices into [`blobs`](Manifest::blobs),
    /// ascending): each set is what one call of a dispatcher runs (CK's
    /// bwd: `dot_do_o`, `dq_dk_dv`, `convert_dq`; splitkv: the split and
    /// the combine kernel). A set of one says the blob is also called on
    /// its own. The runtime compiles the blobs certain to be needed next
    /// alongside the first ([`Manifest::companions`]). Format 2.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub together: Vec<Vec<u32>>,
}

/// Compile settings shared by a set of blobs (one family, one kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Group name, e.g. `fwd` or `fwd_gfx9`; also its family's name unless
    /// [`family`](Group::family) says otherwise.
    pub name: String,
    /// Compiler program: a name looked up in `PATH` or a path.
    pub compiler: String,
    /// Argument template (see the module docs for placeholders).
    pub args: Vec<String>,
    /// Working directory for the compile (template), default the root.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// How to find the entry point in the compiled object.
    pub symbol: SymbolSpec,
    /// Whether the compiler understands `-MD -MF <file>` (header tracking).
    #[serde(default = "yes")]
    pub depfile: bool,
    /// The kernel family the group's blobs belong to, when several groups
    /// make one family (CK's `fwd` blobs of two architectures need two
    /// compile commands: groups `fwd_gfx9` and `fwd_gfx950`, family `fwd`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Values a family query that does not mention a key holds it to:
    /// the neutral variant of a trait the blobs vary in (CK's
    /// `logits = false`: no soft-cap unless asked for). A value written by
    /// [`neutral_at_least`] (`>= {hdim}`) relates the key to another: a
    /// query silent about the key but bounding the other from below
    /// (`hdim = 192`, `hdim >= 100`) holds the key to at least that bound
    /// too (CK's `hdim_v`, which most callers have equal to `hdim`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub neutral: BTreeMap<String, String>,
}

impl Group {
    /// The family the group's blobs belong to.
    pub fn family(&self) -> &str {
        self.family.as_deref().unwrap_or(&self.name)
    }
}

fn yes() -> bool {
    true
}

/// How to find a blob's entry point; `{name}` is replaced by the blob name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum SymbolSpec {
    /// The exported symbol has exactly this name.
    Exact(String),
    /// The first defined function symbol in `.dynsym` starting with this.
    Prefix(String),
}

impl SymbolSpec {
    /// The spec with `{name}` replaced by `blob`.
    pub fn for_blob(&self, blob: &str) -> SymbolSpec {
        match self {
            SymbolSpec::Exact(s) => SymbolSpec::Exact(with_name(s, blob)),
            SymbolSpec::Prefix(s) => SymbolSpec::Prefix(with_name(s, blob)),
        }
    }
}

/// `template` with `{name}` replaced by `blob`: `str::replace`, without
/// building a searcher for the usual templates (`{name}` alone, or no
/// placeholder), asked on every resolve.
fn with_name(template: &str, blob: &str) -> String {
    match template {
        "{name}" => blob.to_string(),
        t if !t.contains('{') => t.to_string(),
        t => t.replace("{name}", blob),
    }
}

impl fmt::Display for SymbolSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SymbolSpec::Exact(s) => write!(f, "symbol '{s}'"),
            SymbolSpec::Prefix(s) => write!(f, "first function symbol starting with '{s}'"),
        }
    }
}

/// One blob: a source file that compiles into one loadable object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Blob {
    /// Unique name (by default the file stem).
    pub name: String,
    /// Source path relative to the root, `/`-separated.
    pub source: String,
    /// Index into [`Manifest::groups`].
    pub group: u32,
    /// Per-blob override of the group's symbol spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<SymbolSpec>,
    /// Attributes (from the file name or set by the build script).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub meta: BTreeMap<String, String>,
}

/// Why a manifest was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ManifestError {
    /// Not valid JSON or not the expected shape.
    Parse(String),
    /// Written by a newer ck-jit.
    NewerFormat {
        /// Version found in the file.
        found: u32,
    },
    /// Two blobs with one name.
    DuplicateName(String),
    /// A blob name that cannot be a file name or a symbol (named, escaped).
    BadName {
        /// The name, escaped for display.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A source path that is absolute or leaves the root.
    BadSource {
        /// The blob.
        blob: String,
        /// The path, escaped.
        source: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A blob names a group that does not exist.
    BadGroup {
        /// The blob.
        blob: String,
        /// The index it names.
        group: u32,
    },
    /// A group whose compiler or arguments cannot be used.
    BadGroupSpec {
        /// The group.
        group: String,
        /// What is wrong with it.
        why: String,
    },
}

impl fmt::Display for ManifestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ManifestError::Parse(e) => write!(f, "malformed manifest: {e}"),
            ManifestError::NewerFormat { found } => write!(
                f,
                "manifest format {found} is newer than this ck-jit understands ({FORMAT_VERSION}); \
                 upgrade ck-jit or rebuild the manifest with this version"
            ),
            ManifestError::DuplicateName(n) => {
                write!(f, "blob name '{}' appears more than once", escape(n))
            }
            ManifestError::BadName { name, why } => write!(f, "bad blob name '{name}': {why}"),
            ManifestError::BadSource { blob, source, why } => {
                write!(
                    f,
                    "blob '{}': bad source path '{source}': {why}",
                    escape(blob)
                )
            }
            ManifestError::BadGroup { blob, group } => {
                write!(
                    f,
                    "blob '{}' names group {group}, which does not exist",
                    escape(blob)
                )
            }
            ManifestError::BadGroupSpec { group, why } => {
                write!(f, "group '{}': {why}", escape(group))
            }
        }
    }
}

impl std::error::Error for ManifestError {}

/// Escapes control characters and quotes so a hostile name prints on one line.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().take(200) {
        out.extend(c.escape_debug());
    }
    if s.chars().count() > 200 {
        out.push_str("...");
    }
    out
}

/// Checks that `name` can be a blob name: non-empty, at most
/// [`MAX_NAME_LEN`] bytes, and only ASCII letters, digits, `_`, `-`, `.`
/// (not starting with `.` or `-`). Such a name is safe as a file name, in a
/// command line and in a log line.
pub fn check_name(name: &str) -> Result<(), ManifestError> {
    let bad = |why| {
        Err(ManifestError::BadName {
            name: escape(name),
            why,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return bad("longer than 200 bytes");
    }
    if name.starts_with('.') || name.starts_with('-') {
        return bad("starts with '.' or '-'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
    {
        return bad("only ASCII letters, digits, '_', '-' and '.' are allowed");
    }
    Ok(())
}

/// Checks that `source` is a relative, `/`-separated path that stays inside
/// the root (no `..`, no empty or absolute components, no NUL or newline).
pub fn check_source(blob: &str, source: &str) -> Result<(), ManifestError> {
    let bad = |why| {
        Err(ManifestError::BadSource {
            blob: blob.to_string(),
            source: escape(source),
            why,
        })
    };
    if source.is_empty() {
        return bad("empty");
    }
    if source.starts_with('/') || source.contains('\\') {
        return bad("must be relative to the root and '/'-separated");
    }
    if source.bytes().any(|b| b == 0 || b == b'\n' || b == b'\r') {
        return bad("contains NUL or a line break");
    }
    for part in source.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return bad("has an empty, '.' or '..' component");
        }
    }
    Ok(())
}

impl Manifest {
    /// An empty manifest for `name` rooted at `root`.
    pub fn new(name: impl Into<String>, root: impl Into<String>) -> Manifest {
        Manifest {
            format: FORMAT_VERSION,
            name: name.into(),
            root: root.into(),
            groups: Vec::new(),
            blobs: Vec::new(),
            together: Vec::new(),
        }
    }

    /// Records sets of blobs called together, by name (after
    /// [`finish`](Manifest::finish): indices follow the sorted order).
    /// Sets are stored sorted and deduplicated; a name the manifest does
    /// not record is an error.
    pub fn set_together<I, S>(&mut self, sets: I) -> Result<(), ManifestError>
    where
        I: IntoIterator<Item = S>,
        S: IntoIterator,
        S::Item: AsRef<str>,
    {
        let mut out: Vec<Vec<u32>> = Vec::new();
        for set in sets {
            let mut idx = Vec::new();
            for name in set {
                let name = name.as_ref();
                let i = self
                    .blobs
                    .binary_search_by(|b| b.name.as_str().cmp(name))
                    .map_err(|_| {
                        ManifestError::Parse(format!(
                            "'together' names '{}', which is no blob of this manifest",
                            escape(name)
                        ))
                    })?;
                idx.push(i as u32);
            }
            idx.sort_unstable();
            idx.dedup();
            if !idx.is_empty() {
                out.push(idx);
            }
        }
        out.sort();
        out.dedup();
        self.together = out;
        Ok(())
    }

    /// The blobs certain to be called right after or before `blob` in the
    /// same operation: those in every [`together`](Manifest::together) set
    /// that holds it (none when it is in no set, or also called alone).
    pub fn companions(&self, blob: usize) -> Vec<u32> {
        companions_in(self.together.iter().map(Vec::as_slice), blob as u32)
    }

    /// Parses and validates a manifest.
    pub fn from_json(text: &str) -> Result<Manifest, ManifestError> {
        // One pass. A newer format is reported as such, not as a shape
        // mismatch: when the shape is refused, the version alone is read.
        #[derive(Deserialize)]
        struct Version {
            format: u32,
        }
        let newer = |format: u32| {
            (format > FORMAT_VERSION).then_some(ManifestError::NewerFormat { found: format })
        };
        let m: Manifest = match serde_json::from_str(text) {
            Ok(m) => m,
            Err(e) => {
                return Err(serde_json::from_str::<Version>(text)
                    .ok()
                    .and_then(|v| newer(v.format))
                    .unwrap_or_else(|| ManifestError::Parse(e.to_string())))
            }
        };
        if let Some(e) = newer(m.format) {
            return Err(e);
        }
        m.validate()?;
        Ok(m)
    }

    /// Serialises deterministically (sorted blobs, sorted metadata), one
    /// line per blob so diffs stay readable.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        out.push_str("{\"format\":");
        out.push_str(&self.format.to_string());
        out.push_str(",\"name\":");
        out.push_str(&json(&self.name));
        out.push_str(",\"root\":");
        out.push_str(&json(&self.root));
        out.push_str(",\n\"groups\":[");
        for (i, g) in self.groups.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&json(g));
        }
        out.push_str("],\n\"blobs\":[");
        for (i, b) in self.blobs.iter().enumerate() {
            out.push_str(if i == 0 { "\n" } else { ",\n" });
            out.push_str(&json(b));
        }
        out.push(']');
        if !self.together.is_empty() {
            out.push_str(",\n\"together\":");
            out.push_str(&json(&self.together));
        }
        out.push_str("}\n");
        out
    }

    /// Sorts blobs by name and validates.
    pub fn finish(&mut self) -> Result<(), ManifestError> {
        self.blobs.sort_by(|a, b| a.name.cmp(&b.name));
        self.validate()
    }

    /// Checks every invariant the runtime relies on.
    pub fn validate(&self) -> Result<(), ManifestError> {
        for g in &self.groups {
            check_group(g)?;
        }
        for (i, b) in self.blobs.iter().enumerate() {
            check_name(&b.name)?;
            check_source(&b.name, &b.source)?;
            if b.group as usize >= self.groups.len() {
                return Err(ManifestError::BadGroup {
                    blob: b.name.clone(),
                    group: b.group,
                });
            }
            if i > 0 {
                match self.blobs[i - 1].name.cmp(&b.name) {
                    std::cmp::Ordering::Less => {}
                    std::cmp::Ordering::Equal => {
                        return Err(ManifestError::DuplicateName(b.name.clone()))
                    }
                    std::cmp::Ordering::Greater => {
                        return Err(ManifestError::Parse(format!(
                            "blobs are not sorted by name ('{}' after '{}')",
                            escape(&b.name),
                            escape(&self.blobs[i - 1].name)
                        )))
                    }
                }
            }
        }
        for set in &self.together {
            if set.is_empty()
                || set.windows(2).any(|w| w[0] >= w[1])
                || set.iter().any(|&i| i as usize >= self.blobs.len())
            {
                return Err(ManifestError::Parse(
                    "a 'together' set is empty, unsorted or names a blob index out of range".into(),
                ));
            }
        }
        Ok(())
    }

    /// Finds a blob by name (binary search).
    pub fn blob(&self, name: &str) -> Option<&Blob> {
        self.blobs
            .binary_search_by(|b| b.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.blobs[i])
    }

    /// The group of a blob.
    pub fn group_of(&self, blob: &Blob) -> &Group {
        &self.groups[blob.group as usize]
    }

    /// The symbol spec of a blob (its override, else its group's), with
    /// `{name}` substituted.
    pub fn symbol_of(&self, blob: &Blob) -> SymbolSpec {
        blob.symbol
            .as_ref()
            .unwrap_or(&self.group_of(blob).symbol)
            .for_blob(&blob.name)
    }

    /// Up to `n` blob names closest to `name` (edit distance), best first,
    /// for "did you mean" messages.
    pub fn closest_names(&self, name: &str, n: usize) -> Vec<&str> {
        closest(self.blobs.iter().map(|b| b.name.as_str()), name, n)
    }
}

/// Checks the invariants of one group the runtime relies on.
pub(crate) fn check_group(g: &Group) -> Result<(), ManifestError> {
    if g.compiler.is_empty() || g.compiler.contains('\0') {
        return Err(ManifestError::BadGroupSpec {
            group: g.name.clone(),
            why: "empty compiler or compiler with NUL".into(),
        });
    }
    if g.args.iter().any(|a| a.contains('\0')) {
        return Err(ManifestError::BadGroupSpec {
            group: g.name.clone(),
            why: "an argument contains NUL".into(),
        });
    }
    if !g.args.iter().any(|a| a.contains("{out}")) {
        return Err(ManifestError::BadGroupSpec {
            group: g.name.clone(),
            why: "arguments never mention {out}, so the compiler output cannot be found".into(),
        });
    }
    Ok(())
}

/// Up to `n` candidates closest to `name`, best first, dropping the ones so
/// far away that suggesting them would be noise.
pub fn closest<'a>(
    candidates: impl Iterator<Item = &'a str>,
    name: &str,
    n: usize,
) -> Vec<&'a str> {
    let limit = (name.len() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .filter_map(|c| {
            let d = edit_distance(name, c, limit);
            (d <= limit).then_some((d, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(n).map(|(_, c)| c).collect()
}

/// Levenshtein distance, giving up early (returning `limit + 1`) once it
/// exceeds `limit`.
fn edit_distance(a: &str, b: &str, limit: usize) -> usize {
    let a = a.as_bytes();
    let b = b.as_bytes();
    if a.len().abs_diff(b.len()) > limit {
        return limit + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            row_min = row_min.min(cur[j]);
        }
        if row_min > limit {
            return limit + 1;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

fn json<T: Serialize + ?Sized>(v: &T) -> String {
    // Serialising owned plain data into a String cannot fail.
    serde_json::to_string(v).unwrap_or_default()
}

/// [`Manifest::companions`] over any sequence of sorted sets.
pub fn companions_in<'a>(sets: impl Iterator<Item = &'a [u32]>, blob: u32) -> Vec<u32> {
    let mut common: Option<Vec<u32>> = None;
    for set in sets.filter(|s| s.binary_search(&blob).is_ok()) {
        let others = set.iter().copied().filter(|&i| i != blob);
        common = Some(match common {
            None => others.collect(),
            Some(c) => c
                .into_iter()
                .filter(|i| set.binary_search(i).is_ok())
                .collect(),
        });
        if common.as_ref().is_some_and(Vec::is_empty) {
            break;
        }
    }
    common.unwrap_or_default()
}

/// The neutral value that holds a key to at least what a query gives
/// `other` ([`Group::neutral`]): `>= {other}`.
pub fn neutral_at_least(other: &str) -> String {
    format!(">= {{{other}}}")
}

/// The key a neutral value of [`neutral_at_least`] relates to, if it is
/// one.
pub fn neutral_relation(value: &str) -> Option<&str> {
    value.strip_prefix(">= {")?.strip_suffix('}')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let mut m = Manifest::new("t", "/r");
        m.groups.push(Group {
            name: "g".into(),
            compiler: "cc".into(),
            args: vec!["{src}".into(), "-o".into(), "{out}".into()],
            cwd: None,
            symbol: SymbolSpec::Exact("{name}".into()),
            depfile: true,
            family: None,
            neutral: Default::default(),
        });
        for n in ["b", "a", "c"] {
            m.blobs.push(Blob {
                name: n.into(),
                source: format!("k/{n}.c"),
                group: 0,
                symbol: None,
                meta: BTreeMap::new(),
            });
        }
        m.finish().unwrap();
        m
    }

    #[test]
    fn round_trip_is_byte_identical() {
        let m = sample();
        let text = m.to_json();
        let back = Manifest::from_json(&text).unwrap();
        assert_eq!(back, m);
        assert_eq!(back.to_json(), text);
    }

    #[test]
    fn lookup_and_symbol_substitution() {
        let m = sample();
        let b = m.blob("b").unwrap();
        assert_eq!(m.symbol_of(b), SymbolSpec::Exact("b".into()));
        assert!(m.blob("zz").is_none());
    }

    #[test]
    fn together_sets_round_trip_and_give_the_blobs_certain_to_be_needed() {
        let mut m = sample();
        // a with b (one dispatcher call), a with c (another), b alone too.
        m.set_together([vec!["b", "a"], vec!["a", "c"], vec!["b"]])
            .unwrap();
        assert_eq!(m.together, [vec![0, 1], vec![0, 2], vec![1]]);
        let back = Manifest::from_json(&m.to_json()).unwrap();
        assert_eq!(back, m);
        // a is called with b or with c: neither is certain.
        assert!(m.companions(0).is_empty());
        // b is also called alone: nothing is certain.
        assert!(m.companions(1).is_empty());
        // c is only ever called with a.
        assert_eq!(m.companions(2), [0]);
        assert!(m.set_together([vec!["a", "nope"]]).is_err());
        // Damaged sets are refused.
        let text = m.to_json().replace("[0,2]", "[2,0]");
        assert!(Manifest::from_json(&text).is_err());
        let text = m.to_json().replace("[0,2]", "[0,7]");
        assert!(Manifest::from_json(&text).is_err());
    }

    #[test]
    fn a_symbol_template_names_its_blob_as_replace_would() {
        for t in [
            "{name}",
            "",
            "run",
            "{name}_{name}",
            "k_{name}",
            "{nam",
            "{}",
            "{name",
            "a{b}c",
        ] {
            for b in ["fwd", "", "{name}"] {
                assert_eq!(with_name(t, b), t.replace("{name}", b), "{t:?} {b:?}");
            }
        }
    }

    #[test]
    fn newer_format_is_named() {
        let text = sample().to_json().replacen(
            &format!("\"format\":{FORMAT_VERSION}"),
            "\"format\":99",
            1,
        );
        assert_eq!(
            Manifest::from_json(&text),
            Err(ManifestError::NewerFormat { found: 99 })
        );
    }

    #[test]
    fn duplicates_and_hostile_names_are_refused() {
        let mut m = sample();
        m.blobs[1].name = "a".into();
        assert_eq!(m.validate(), Err(ManifestError::DuplicateName("a".into())));
        for bad in [
            "../x", "a/b", "a\0b", "a\nb", "", ".hidden", "-rf", "a b", "$(x)",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_name(&"x".repeat(4096)).is_err());
        for bad in ["/etc/passwd", "../x.c", "a/../../x.c", "a//b.c", "a\nb.c"] {
            assert!(check_source("b", bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn malformed_json_is_an_error_not_a_panic() {
        for bad in [
            "",
            "{",
            "[]",
            "{\"format\":1}",
            "{\"format\":\"x\"}",
            "null",
        ] {
            assert!(
                matches!(Manifest::from_json(bad), Err(ManifestError::Parse(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn closest_names_suggests_near_misses_only() {
        let m = sample();
        assert_eq!(m.closest_names("bb", 3), vec!["b", "a", "c"]);
        let names = ["fmha_fwd_d128_bf16", "fmha_fwd_d64_bf16", "vadd"];
        assert_eq!(
            closest(names.iter().copied(), "fmha_fwd_d128_fp16", 2),
            vec!["fmha_fwd_d128_bf16", "fmha_fwd_d64_bf16"]
        );
        assert!(closest(names.iter().copied(), "completely_else", 2).is_empty());
    }
}
