//! The compact form of a manifest: what a program embeds, read in place
//! without parsing the whole of it.
//!
//! The JSON document is the manifest's one definition (the build writes
//! it, the macro and the CLI read it); this form carries the same content
//! for a program that may look up one blob of tens of thousands. Opening it
//! reads a fixed header and a small JSON head; a lookup binary-searches
//! restart points of front-coded names; a family's metadata is a table of
//! small integer codes, one row per member, so a selection compares codes
//! without building any map. Nothing is decoded before it is asked for.
//!
//! # Layout
//!
//! All integers little-endian; offsets are from the start of the bytes.
//!
//! ```text
//! 0   "CKJM"                       magic
//! 4   u32 COMPACT_VERSION
//! 8   u32 blob count
//! 12  u32 names per block (restart interval)
//! 16  9 × (u32 offset, u32 length): head, group offsets, groups, block
//!     offsets, names, family offsets, families, data, together
//! ```
//!
//! - **head**: JSON `{"format","name","root","sources":[[prefix,suffix]],
//!   "groups":[[name,family]],"families":[name]}`.
//! - **groups**: each group's JSON ([`Group`]), at `group offsets[i]..[i+1]`
//!   (u32 each, relative to the groups section).
//! - **names**: blobs in name order, in blocks; each entry is LEB128
//!   `shared` (bytes shared with the previous name; 0 at a block's start),
//!   `len` and the rest of the name, then `group`, `source` (0: a literal
//!   follows as `len`, bytes; k: `sources[k-1]` around the name), `symbol`
//!   (0: none; else the length of its JSON, which follows) and `row` (the
//!   blob's row in its family's table). Block offsets are u32, relative to
//!   the names section.
//! - **families**: each family's JSON `{"name","keys","dicts","width",
//!   "count","members","rows"}` at family offsets (as for groups); `dicts[k]`
//!   lists the values of `keys[k]`; `members` and `rows` are offsets into
//!   the data section of `count` u32 blob indices (ascending) and of
//!   `count × keys` codes of `width` bytes (0: the key is missing; c: the
//!   value `dicts[k][c-1]`).
//! - **together**: LEB128 the number of sets, then each set's length and
//!   its blob indices as ascending deltas (the first from 0); read only
//!   when a compile needs it ([`Compact::together`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::{check_name, check_source, Blob, Group, Manifest, ManifestError, SymbolSpec};

/// The compact form's own version (the manifest format is in its head).
pub const COMPACT_VERSION: u32 = 2;

/// File name of the compact manifest inside `OUT_DIR`, beside
/// [`MANIFEST_FILE`](crate::MANIFEST_FILE).
pub const COMPACT_FILE: &str = "ck_jit_manifest.ckm";

const MAGIC: &[u8; 4] = b"CKJM";
const BLOCK: usize = 16;
const SECTIONS: usize = 9;
const HEADER: usize = 16 + SECTIONS * 8;

#[derive(Serialize, Deserialize)]
struct Head {
    format: u32,
    name: String,
    root: String,
    sources: Vec<(String, String)>,
    groups: Vec<(String, String)>,
    families: Vec<String>,
}

#[derive(Serialize, Deserialize)]
struct FamilyHead {
    name: String,
    keys: Vec<String>,
    dicts: Vec<Vec<String>>,
    width: u8,
    count: u32,
    members: u32,
    rows: u32,
}

fn bad(why: impl Into<String>) -> ManifestError {
    ManifestError::Parse(format!("compact manifest: {}", why.into()))
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn put_u32(out: &mut Vec<u8>, v: usize) {
    out.extend_from_slice(&(v as u32).to_le_bytes());
}

impl Manifest {
    /// The compact form of this manifest (see the [module docs](self)).
    /// Deterministic: the same manifest gives the same bytes.
    pub fn to_compact(&self) -> Vec<u8> {
        let (sources, source_of) = self.source_templates();
        let families = self.family_tables();
        let (blocks, names) = self.name_entries(&source_of, &families.row_of);

        let head = Head {
            format: self.format,
            name: self.name.clone(),
            root: self.root.clone(),
            sources,
            groups: self
                .groups
                .iter()
                .map(|g| (g.name.clone(), g.family().to_string()))
                .collect(),
            families: families.names,
        };
        let (group_offsets, groups) = concat(
            self.groups
                .iter()
                .map(|g| serde_json::to_vec(g).unwrap_or_default()),
        );
        let (family_offsets, family_bytes) = concat(families.json);
        let sections: [Vec<u8>; SECTIONS] = [
            serde_json::to_vec(&head).unwrap_or_default(),
            group_offsets,
            groups,
            blocks,
            names,
            family_offsets,
            family_bytes,
            families.data,
            self.together_bytes(),
        ];
        self.lay_out(&sections)
    }

    /// Source templates, a source that is `prefix + name + suffix`, and
    /// each blob's template code (0: its source is written in full).
    fn source_templates(&self) -> (Vec<(String, String)>, Vec<usize>) {
        let mut sources: Vec<(String, String)> = Vec::new();
        let mut source_of: Vec<usize> = Vec::with_capacity(self.blobs.len());
        for b in &self.blobs {
            let code = match b.source.find(b.name.as_str()) {
                Some(at) => {
                    let t = (
                        b.source[..at].to_string(),
                        b.source[at + b.name.len()..].to_string(),
                    );
                    match sources.iter().position(|s| *s == t) {
                        Some(i) => i + 1,
                        None if sources.len() < 1024 => {
                            sources.push(t);
                            sources.len()
                        }
                        None => 0,
                    }
                }
                None => 0,
            };
            source_of.push(code);
        }
        (sources, source_of)
    }

    /// Families: the groups sharing a family name, their members'
    /// metadata as codes.
    fn family_tables(&self) -> FamilyTables {
        let mut families: Vec<String> = Vec::new();
        let mut family_of_group = Vec::with_capacity(self.groups.len());
        for g in &self.groups {
            let f = g.family().to_string();
            let i = match families.iter().position(|x| *x == f) {
                Some(i) => i,
                None => {
                    families.push(f);
                    families.len() - 1
                }
            };
            family_of_group.push(i);
        }
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); families.len()];
        let mut row_of = vec![0usize; self.blobs.len()];
        for (i, b) in self.blobs.iter().enumerate() {
            let f = family_of_group.get(b.group as usize).copied().unwrap_or(0);
            if let Some(m) = members.get_mut(f) {
                row_of[i] = m.len();
                m.push(i);
            }
        }
        let mut data: Vec<u8> = Vec::new();
        let mut family_json: Vec<Vec<u8>> = Vec::new();
        for (f, name) in families.iter().enumerate() {
            let rows: Vec<(usize, &BTreeMap<String, String>)> = members[f]
                .iter()
                .map(|&i| (i, &self.blobs[i].meta))
                .collect();
            let t = Table::build(name, &rows);
            data.resize(data.len().next_multiple_of(4), 0);
            let members_at = data.len();
            data.extend_from_slice(&t.members);
            let rows_at = data.len();
            data.extend_from_slice(&t.rows);
            let head = FamilyHead {
                name: t.name,
                keys: t.keys,
                dicts: t.dicts,
                width: t.width as u8,
                count: t.count as u32,
                members: members_at as u32,
                rows: rows_at as u32,
            };
            family_json.push(serde_json::to_vec(&head).unwrap_or_default());
        }
        FamilyTables {
            names: families,
            row_of,
            data,
            json: family_json,
        }
    }

    /// Names, front-coded in blocks, with each blob's entry: the block
    /// offsets and the entries.
    fn name_entries(&self, source_of: &[usize], row_of: &[usize]) -> (Vec<u8>, Vec<u8>) {
        let mut names: Vec<u8> = Vec::new();
        let mut blocks: Vec<u8> = Vec::new();
        let mut prev: &str = "";
        for (i, b) in self.blobs.iter().enumerate() {
            let shared = if i % BLOCK == 0 {
                put_u32(&mut blocks, names.len());
                0
            } else {
                prev.bytes()
                    .zip(b.name.bytes())
                    .take_while(|(x, y)| x == y)
                    .count()
            };
            let rest = &b.name.as_bytes()[shared..];
            put_varint(&mut names, shared as u64);
            put_varint(&mut names, rest.len() as u64);
            names.extend_from_slice(rest);
            put_varint(&mut names, u64::from(b.group));
            put_varint(&mut names, source_of[i] as u64);
            if source_of[i] == 0 {
                put_varint(&mut names, b.source.len() as u64);
                names.extend_from_slice(b.source.as_bytes());
            }
            match &b.symbol {
                None => put_varint(&mut names, 0),
                Some(s) => {
                    let j = serde_json::to_vec(s).unwrap_or_default();
                    put_varint(&mut names, j.len() as u64);
                    names.extend_from_slice(&j);
                }
            }
            put_varint(&mut names, row_of[i] as u64);
            prev = &b.name;
        }
        (blocks, names)
    }

    /// The sets of blobs run together, delta-coded.
    fn together_bytes(&self) -> Vec<u8> {
        let mut together = Vec::new();
        put_varint(&mut together, self.together.len() as u64);
        for set in &self.together {
            put_varint(&mut together, set.len() as u64);
            let mut prev = 0u32;
            for &i in set {
                put_varint(&mut together, u64::from(i - prev));
                prev = i;
            }
        }
        together
    }

    /// The header (magic, version, counts, section table) and the
    /// sections after it.
    fn lay_out(&self, sections: &[Vec<u8>; SECTIONS]) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MAGIC);
        put_u32(&mut out, COMPACT_VERSION as usize);
        put_u32(&mut out, self.blobs.len());
        put_u32(&mut out, BLOCK);
        let mut at = HEADER;
        for s in sections {
            // Sections start 4-aligned, so u32 tables can be read in place.
            at = at.next_multiple_of(4);
            put_u32(&mut out, at);
            put_u32(&mut out, s.len());
            at += s.len();
        }
        for s in sections {
            out.resize(out.len().next_multiple_of(4), 0);
            out.extend_from_slice(s);
        }
        out
    }
}

/// What [`Manifest::family_tables`] lays out: the family names, each
/// blob's row in its family's table, the tables' data and each family's
/// JSON head.
struct FamilyTables {
    names: Vec<String>,
    row_of: Vec<usize>,
    data: Vec<u8>,
    json: Vec<Vec<u8>>,
}

/// Items laid end to end, with the u32 offsets of their starts and of the
/// end.
fn concat(items: impl IntoIterator<Item = Vec<u8>>) -> (Vec<u8>, Vec<u8>) {
    let (mut offsets, mut bytes) = (Vec::new(), Vec::new());
    for item in items {
        put_u32(&mut offsets, bytes.len());
        bytes.extend_from_slice(&item);
    }
    put_u32(&mut offsets, bytes.len());
    (offsets, bytes)
}

/// A compact manifest read in place. Cheap to open; every accessor decodes
/// only what it returns and reports damage as an error, never a panic.
#[derive(Debug, Clone)]
pub struct Compact<'a> {
    bytes: &'a [u8],
    count: usize,
    block: usize,
    sections: [&'a [u8]; SECTIONS],
    format: u32,
    name: String,
    root: String,
    sources: Vec<(String, String)>,
    groups: Vec<(String, String)>,
    families: Vec<String>,
}

/// One blob's entry in the compact manifest, decoded in place as a lookup
/// needs it: what [`Compact::find`] and [`Compact::get`] return (its
/// metadata is in its family's table: [`Table::meta`] of
/// [`Compact::table`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobEntry {
    /// The blob's index in name order.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its source, relative to the root.
    pub source: String,
    /// Its group's index.
    pub group: u32,
    /// Its own symbol spec, when it overrides its group's.
    pub symbol: Option<SymbolSpec>,
    /// Its row in its family's table.
    pub row: usize,
}

/// Names laid end to end ([`Compact::names_at`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Every name, end to end.
    pub text: String,
    /// Where each name ends in `text`.
    pub ends: Vec<usize>,
}

impl Names {
    /// Name `i`.
    pub fn get(&self, i: usize) -> Option<&str> {
        let start = if i == 0 { 0 } else { *self.ends.get(i - 1)? };
        self.text.get(start..*self.ends.get(i)?)
    }

    /// Number of names.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Appends a name.
    pub fn push(&mut self, name: &str) {
        self.text.push_str(name);
        self.ends.push(self.text.len());
    }
}

/// A family's metadata table, read in place.
#[derive(Debug, Clone)]
pub struct Table<'a> {
    /// The family's name.
    pub name: String,
    /// Metadata keys, sorted.
    pub keys: Vec<String>,
    /// The values of each key, sorted; code `c` is `dicts[k][c-1]`.
    pub dicts: Vec<Vec<String>>,
    width: usize,
    count: usize,
    members: Cow<'a, [u8]>,
    rows: Cow<'a, [u8]>,
}

impl Table<'_> {
    /// The table of a family whose members are `(blob index, metadata)`,
    /// in blob order (what the compact form stores, built in memory for a
    /// manifest read from JSON).
    pub fn build(name: &str, members: &[(usize, &BTreeMap<String, String>)]) -> Table<'static> {
        // Inserted one by one: collecting would sort every key of every
        // member before removing duplicates.
        let mut distinct: BTreeSet<&String> = BTreeSet::new();
        for (_, meta) in members {
            for k in meta.keys() {
                distinct.insert(k);
            }
        }
        let keys: Vec<&String> = distinct.into_iter().collect();
        let mut values: Vec<BTreeSet<&String>> = vec![BTreeSet::new(); keys.len()];
        for (_, meta) in members {
            for (k, v) in columns(&keys, meta) {
                values[k].insert(v);
            }
        }
        let codes: Vec<std::collections::HashMap<&str, u32>> = values
            .iter()
            .map(|vs| vs.iter().zip(1..).map(|(v, c)| (v.as_str(), c)).collect())
            .collect();
        let most = values.iter().map(BTreeSet::len).max().unwrap_or(0);
        let width = if most < 0xff {
            1
        } else if most < 0xffff {
            2
        } else {
            4
        };
        let mut index = Vec::with_capacity(members.len() * 4);
        let mut rows = vec![0u8; members.len() * keys.len() * width];
        for (m, (i, meta)) in members.iter().enumerate() {
            put_u32(&mut index, *i);
            for (k, v) in columns(&keys, meta) {
                let at = (m * keys.len() + k) * width;
                rows[at..at + width].copy_from_slice(&codes[k][v.as_str()].to_le_bytes()[..width]);
            }
        }
        let dicts: Vec<Vec<String>> = values
            .iter()
            .map(|vs| vs.iter().map(|v| v.to_string()).collect())
            .collect();
        let keys: Vec<String> = keys.into_iter().cloned().collect();
        Table {
            name: name.to_string(),
            keys,
            dicts,
            width,
            count: members.len(),
            members: Cow::Owned(index),
            rows: Cow::Owned(rows),
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether the family has no members.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The blob index (name order) of member `m` (unchecked against the
    /// blob count: [`Compact::get`] reports one out of range).
    pub fn member(&self, m: usize) -> usize {
        let b = &self.members[m * 4..m * 4 + 4];
        u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize
    }

    /// The code of key `k` in member `m`'s row (0: missing; a code past
    /// the key's values, only in damaged bytes, reads as missing in
    /// [`Table::value`]).
    #[inline]
    pub fn code(&self, m: usize, k: usize) -> u32 {
        let at = (m * self.keys.len() + k) * self.width;
        match self.width {
            1 => u32::from(self.rows[at]),
            2 => u32::from(u16::from_le_bytes([self.rows[at], self.rows[at + 1]])),
            _ => u32::from_le_bytes([
                self.rows[at],
                self.rows[at + 1],
                self.rows[at + 2],
                self.rows[at + 3],
            ]),
        }
    }

    /// The value of key `k` in member `m`'s row.
    pub fn value(&self, m: usize, k: usize) -> Option<&str> {
        match self.code(m, k) {
            0 => None,
            c => self.dicts[k].get(c as usize - 1).map(String::as_str),
        }
    }

    /// Member `m`'s metadata as a map.
    pub fn meta(&self, m: usize) -> BTreeMap<String, String> {
        (0..self.keys.len())
            .filter_map(|k| Some((self.keys[k].clone(), self.value(m, k)?.to_string())))
            .collect()
    }
}

/// Each entry of `meta` with its column in `keys` (both sorted, `keys`
/// holding every key of `meta`): a merge, no search.
fn columns<'m>(
    keys: &'m [&String],
    meta: &'m BTreeMap<String, String>,
) -> impl Iterator<Item = (usize, &'m String)> + 'm {
    let mut k = 0;
    meta.iter().map(move |(key, value)| {
        while keys[k] != key {
            k += 1;
        }
        (k, value)
    })
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ManifestError> {
        let mut v: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = *self
                .bytes
                .get(self.at)
                .ok_or_else(|| bad("a record runs past its section"))?;
            self.at += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(bad("an integer is too long"))
    }

    fn usize(&mut self) -> Result<usize, ManifestError> {
        usize::try_from(self.varint()?).map_err(|_| bad("an integer is too large"))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ManifestError> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| bad("a record runs past its section"))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }
}

fn u32_at(bytes: &[u8], at: usize) -> Result<usize, ManifestError> {
    let b = at
        .checked_add(4)
        .and_then(|end| bytes.get(at..end))
        .ok_or_else(|| bad("a table runs past its section"))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

fn utf8(b: &[u8]) -> Result<&str, ManifestError> {
    std::str::from_utf8(b).map_err(|_| bad("a name is not UTF-8"))
}

/// Whether `bytes` look like a compact manifest (its magic).
pub fn is_compact(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

impl<'a> Compact<'a> {
    /// Opens compact bytes: checks the header and the section bounds and
    /// reads the head.
    pub fn parse(bytes: &'a [u8]) -> Result<Compact<'a>, ManifestError> {
        if !is_compact(bytes) {
            return Err(bad("no CKJM magic at the start"));
        }
        if bytes.len() < HEADER {
            return Err(bad("shorter than its header"));
        }
        let version = u32_at(bytes, 4)?;
        if version != COMPACT_VERSION as usize {
            return Err(bad(format!(
                "version {version}, this ck-jit reads {COMPACT_VERSION}: rebuild the crate"
            )));
        }
        let count = u32_at(bytes, 8)?;
        let block = u32_at(bytes, 12)?;
        if block == 0 {
            return Err(bad("a block of zero names"));
        }
        let mut sections: [&[u8]; SECTIONS] = [&[]; SECTIONS];
        for (i, s) in sections.iter_mut().enumerate() {
            let off = u32_at(bytes, 16 + i * 8)?;
            let len = u32_at(bytes, 20 + i * 8)?;
            *s = off
                .checked_add(len)
                .and_then(|end| bytes.get(off..end))
                .ok_or_else(|| bad(format!("section {i} lies outside the bytes")))?;
        }
        let head: Head =
            serde_json::from_slice(sections[0]).map_err(|e| bad(format!("head: {e}")))?;
        if head.format > crate::FORMAT_VERSION {
            return Err(ManifestError::NewerFormat { found: head.format });
        }
        // Every entry takes at least five bytes: a count larger than
        // that is damage (and must not size an allocation).
        if count > sections[4].len() / 5 || block > 1 << 16 {
            return Err(bad("the blob count does not fit the names"));
        }
        if sections[3].len() != count.div_ceil(block) * 4 {
            return Err(bad("the block table does not fit the blob count"));
        }
        if sections[1].len() != (head.groups.len() + 1) * 4
            || sections[5].len() != (head.families.len() + 1) * 4
        {
            return Err(bad("an offset table does not fit its count"));
        }
        Ok(Compact {
            bytes,
            count,
            block,
            sections,
            format: head.format,
            name: head.name,
            root: head.root,
            sources: head.sources,
            groups: head.groups,
            families: head.families,
        })
    }

    /// The whole bytes.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The manifest format the JSON form had.
    pub fn format(&self) -> u32 {
        self.format
    }

    /// The cache name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The recorded root.
    pub fn root(&self) -> &str {
        &self.root
    }

    /// Number of blobs.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are no blobs.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Number of groups.
    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// The family name of group `i` (without parsing the group).
    pub fn group_family(&self, i: usize) -> Option<&str> {
        self.groups.get(i).map(|(_, f)| f.as_str())
    }

    /// Parses group `i`.
    pub fn group(&self, i: usize) -> Result<Group, ManifestError> {
        let item = item(self.sections[1], self.sections[2], i)
            .ok_or_else(|| bad(format!("group {i} does not exist")))??;
        let g: Group = serde_json::from_slice(item).map_err(|e| bad(format!("group {i}: {e}")))?;
        crate::check_group(&g)?;
        Ok(g)
    }

    /// The family names, in the order of their first group.
    pub fn families(&self) -> &[String] {
        &self.families
    }

    /// The metadata table of the family named `name`.
    pub fn table(&self, name: &str) -> Result<Option<Table<'a>>, ManifestError> {
        let Some(f) = self.families.iter().position(|x| x == name) else {
            return Ok(None);
        };
        let item = item(self.sections[5], self.sections[6], f)
            .ok_or_else(|| bad(format!("family {f} does not exist")))??;
        let h: FamilyHead =
            serde_json::from_slice(item).map_err(|e| bad(format!("family {f}: {e}")))?;
        let width = usize::from(h.width);
        let count = h.count as usize;
        if ![1, 2, 4].contains(&width) || h.dicts.len() != h.keys.len() {
            return Err(bad(format!("family '{}': bad table shape", h.name)));
        }
        let data = self.sections[7];
        let slice = |at: u32, len: usize| {
            (at as usize)
                .checked_add(len)
                .and_then(|end| data.get(at as usize..end))
                .ok_or_else(|| bad(format!("family '{}': table outside the data", h.name)))
        };
        let members = slice(h.members, count.saturating_mul(4))?;
        let rows = slice(
            h.rows,
            count.saturating_mul(h.keys.len()).saturating_mul(width),
        )?;
        let t = Table {
            name: h.name,
            keys: h.keys,
            dicts: h.dicts,
            width,
            count,
            members: Cow::Borrowed(members),
            rows: Cow::Borrowed(rows),
        };
        Ok(Some(t))
    }

    /// The name of the first blob of block `b` (stored whole).
    fn block_first(&self, b: usize) -> Result<&'a str, ManifestError> {
        let mut r = self.block_reader(b)?;
        if r.usize()? != 0 {
            return Err(bad("a block does not start with a whole name"));
        }
        let n = r.usize()?;
        utf8(r.take(n)?)
    }

    /// A reader at the start of block `b`'s names.
    fn block_reader(&self, b: usize) -> Result<Reader<'a>, ManifestError> {
        Ok(Reader {
            bytes: self.sections[4],
            at: u32_at(self.sections[3], b * 4)?,
        })
    }

    /// Decodes the entries of block `b`, calling `each` until it returns
    /// `Some`.
    fn scan_block<T>(
        &self,
        b: usize,
        mut each: impl FnMut(&str, &mut Reader<'a>, usize) -> Result<Option<T>, ManifestError>,
    ) -> Result<Option<T>, ManifestError> {
        let mut r = self.block_reader(b)?;
        let mut name = String::new();
        let first = b * self.block;
        let last = (first + self.block).min(self.count);
        for index in first..last {
            let shared = r.usize()?;
            let n = r.usize()?;
            if shared > name.len() || !name.is_char_boundary(shared) {
                return Err(bad("a name shares more than its predecessor has"));
            }
            name.truncate(shared);
            name.push_str(utf8(r.take(n)?)?);
            if let Some(t) = each(&name, &mut r, index)? {
                return Ok(Some(t));
            }
        }
        Ok(None)
    }

    /// Reads the rest of an entry after its name.
    fn entry(
        &self,
        name: &str,
        r: &mut Reader<'a>,
        index: usize,
    ) -> Result<BlobEntry, ManifestError> {
        let group = r.varint()?;
        let group = u32::try_from(group).map_err(|_| bad("a group index is too large"))?;
        let source = match r.usize()? {
            0 => {
                let n = r.usize()?;
                utf8(r.take(n)?)?.to_string()
            }
            k => {
                let (p, s) = self
                    .sources
                    .get(k - 1)
                    .ok_or_else(|| bad("a source template that does not exist"))?;
                // Joined by hand: `format!` took a quarter of a lookup.
                let mut source = String::with_capacity(p.len() + name.len() + s.len());
                source.push_str(p);
                source.push_str(name);
                source.push_str(s);
                source
            }
        };
        let symbol = match r.usize()? {
            0 => None,
            n => Some(
                serde_json::from_slice(r.take(n)?)
                    .map_err(|e| bad(format!("a symbol spec: {e}")))?,
            ),
        };
        let row = r.usize()?;
        check_name(name)?;
        check_source(name, &source)?;
        if group as usize >= self.groups.len() {
            return Err(ManifestError::BadGroup {
                blob: name.to_string(),
                group,
            });
        }
        Ok(BlobEntry {
            index,
            name: name.to_string(),
            source,
            group,
            symbol,
            row,
        })
    }

    /// Skips the rest of an entry after its name.
    fn skip_entry(&self, r: &mut Reader<'a>) -> Result<(), ManifestError> {
        r.varint()?;
        if r.usize()? == 0 {
            let n = r.usize()?;
            r.take(n)?;
        }
        let n = r.usize()?;
        r.take(n)?;
        r.varint()?;
        Ok(())
    }

    /// Finds a blob by name: a binary search over the blocks' first names,
    /// then a scan of one block.
    pub fn find(&self, name: &str) -> Result<Option<BlobEntry>, ManifestError> {
        let blocks = self.count.div_ceil(self.block);
        let (mut lo, mut hi) = (0usize, blocks);
        // The last block whose first name is <= name.
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.block_first(mid)? <= name {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return Ok(None);
        }
        let b = lo - 1;
        let mut r = self.block_reader(b)?;
        let want = name.as_bytes();
        // Sorted names, front-coded, compared without being spelled out.
        // `same`: how many leading bytes the last name shares with `want`
        // (every name so far sorts before it); `len`: that name's length.
        let (mut same, mut len) = (0, 0);
        let first = b * self.block;
        for index in first..(first + self.block).min(self.count) {
            let shared = r.usize()?;
            let n = r.usize()?;
            let suffix = r.take(n)?;
            if shared > len {
                return Err(bad("a name shares more than its predecessor has"));
            }
            len = shared + n;
            // Sharing more than `same` with the last name, it has that
            // name's byte where the last first sorted before `want`: it
            // sorts before `want` too. Else it is compared from `shared`.
            if shared <= same {
                same = shared
                    + suffix
                        .iter()
                        .zip(&want[shared..])
                        .take_while(|(a, b)| a == b)
                        .count();
                if same == want.len() && same == len {
                    return self.entry(name, &mut r, index).map(Some);
                }
                // `want` a prefix of it, or a byte of it after `want`'s:
                // it sorts after `want`, and so do the rest.
                if same == want.len() || (same < len && suffix[same - shared] > want[same]) {
                    return Ok(None);
                }
            }
            self.skip_entry(&mut r)?;
        }
        Ok(None)
    }

    /// The entry of the blob at `index` (name order).
    pub fn get(&self, index: usize) -> Result<BlobEntry, ManifestError> {
        if index >= self.count {
            return Err(bad(format!("blob {index} does not exist")));
        }
        self.scan_block(index / self.block, |n, r, i| {
            if i == index {
                self.entry(n, r, i).map(Some)
            } else {
                self.skip_entry(r).map(|_| None)
            }
        })?
        .ok_or_else(|| bad(format!("blob {index} does not exist")))
    }

    /// Every blob's entry, in name order.
    pub fn entries(&self) -> Result<Vec<BlobEntry>, ManifestError> {
        let mut out = Vec::with_capacity(self.count);
        for b in 0..self.count.div_ceil(self.block) {
            self.scan_block(b, |n, r, i| {
                out.push(self.entry(n, r, i)?);
                Ok(None::<()>)
            })?;
        }
        Ok(out)
    }

    /// Every blob name, in name order.
    pub fn names(&self) -> Result<Vec<String>, ManifestError> {
        let mut out = Vec::with_capacity(self.count);
        for b in 0..self.count.div_ceil(self.block) {
            self.scan_block(b, |n, r, _| {
                out.push(n.to_string());
                self.skip_entry(r).map(|_| None::<()>)
            })?;
        }
        Ok(out)
    }

    /// The names of the blobs at `indices` (ascending), decoding only the
    /// blocks that hold them, laid end to end in one string: name `i` is
    /// `text[ends[i-1]..ends[i]]` (from 0 for the first).
    pub fn names_at(&self, indices: &[usize]) -> Result<Names, ManifestError> {
        let mut text = String::new();
        let mut ends = Vec::with_capacity(indices.len());
        let mut next = indices.iter().copied().peekable();
        let names = self.sections[4];
        while let Some(&first) = next.peek() {
            if first >= self.count {
                return Err(bad(format!("blob {first} does not exist")));
            }
            let block = first / self.block;
            let mut r = Reader {
                bytes: names,
                at: u32_at(self.sections[3], block * 4)?,
            };
            // The previous name of the block: bytes of `text` when it was
            // kept, else of `scratch`.
            let mut scratch = String::new();
            let start = block * self.block;
            for index in start..(start + self.block).min(self.count) {
                let shared = r.usize()?;
                let n = r.usize()?;
                let rest = utf8(r.take(n)?)?;
                if shared > scratch.len() || !scratch.is_char_boundary(shared) {
                    return Err(bad("a name shares more than its predecessor has"));
                }
                scratch.truncate(shared);
                scratch.push_str(rest);
                if next.peek() == Some(&index) {
                    text.push_str(&scratch);
                    ends.push(text.len());
                    next.next();
                }
                self.skip_entry(&mut r)?;
                if next.peek().is_none_or(|&i| i / self.block != block) {
                    break;
                }
            }
            if next.peek().is_some_and(|&i| i / self.block == block) {
                return Err(bad("member indices are not ascending"));
            }
        }
        Ok(Names { text, ends })
    }

    /// The group of each blob at `indices` (ascending), decoding only the
    /// blocks that hold them: what a family needs when its groups differ
    /// in the architectures they compile for, without decoding whole
    /// entries.
    pub fn groups_at(&self, indices: &[usize]) -> Result<Vec<u32>, ManifestError> {
        let mut out = Vec::with_capacity(indices.len());
        let mut next = indices.iter().copied().peekable();
        while let Some(&first) = next.peek() {
            if first >= self.count {
                return Err(bad(format!("blob {first} does not exist")));
            }
            let block = first / self.block;
            self.scan_block(block, |_, r, index| {
                let at_index = next.peek() == Some(&index);
                let group = r.varint()?;
                // The rest of the entry after its group.
                if r.usize()? == 0 {
                    let n = r.usize()?;
                    r.take(n)?;
                }
                let n = r.usize()?;
                r.take(n)?;
                r.varint()?;
                if at_index {
                    let group = u32::try_from(group)
                        .ok()
                        .filter(|&g| (g as usize) < self.groups.len())
                        .ok_or_else(|| {
                            bad(format!("blob {index} has a group that does not exist"))
                        })?;
                    out.push(group);
                    next.next();
                }
                Ok(next
                    .peek()
                    .is_none_or(|&i| i / self.block != block)
                    .then_some(()))
            })?;
            if next.peek().is_some_and(|&i| i / self.block == block) {
                return Err(bad("member indices are not ascending"));
            }
        }
        Ok(out)
    }

    /// The sets of blobs called together ([`Manifest::together`]), as blob
    /// indices in name order.
    pub fn together(&self) -> Result<Vec<Vec<u32>>, ManifestError> {
        let mut r = Reader {
            bytes: self.sections[8],
            at: 0,
        };
        if r.bytes.is_empty() {
            return Ok(Vec::new());
        }
        let n = r.usize()?;
        // Every set takes at least two bytes.
        if n > r.bytes.len() / 2 {
            return Err(bad("the 'together' count does not fit its section"));
        }
        let mut sets = Vec::with_capacity(n);
        for _ in 0..n {
            let len = r.usize()?;
            if len == 0 || len > self.count {
                return Err(bad("a 'together' set of no blob or of more than all"));
            }
            let mut set = Vec::with_capacity(len);
            let mut at = 0usize;
            for k in 0..len {
                let d = r.usize()?;
                if k > 0 && d == 0 {
                    return Err(bad("a 'together' set is not ascending"));
                }
                at = at
                    .checked_add(d)
                    .filter(|&i| i < self.count)
                    .ok_or_else(|| bad("a 'together' set names a blob out of range"))?;
                set.push(at as u32);
            }
            sets.push(set);
        }
        Ok(sets)
    }

    /// Decodes everything into a [`Manifest`], validated.
    pub fn to_manifest(&self) -> Result<Manifest, ManifestError> {
        let groups = (0..self.groups.len())
            .map(|i| self.group(i))
            .collect::<Result<Vec<_>, _>>()?;
        let mut tables: BTreeMap<&str, Table> = BTreeMap::new();
        for f in &self.families {
            if let Some(t) = self.table(f)? {
                tables.insert(f.as_str(), t);
            }
        }
        let mut blobs = Vec::with_capacity(self.count);
        for r in self.entries()? {
            let family = self.group_family(r.group as usize).unwrap_or("");
            let meta = match tables.get(family) {
                Some(t) if r.row < t.len() && t.member(r.row) == r.index => t.meta(r.row),
                _ => return Err(bad(format!("blob '{}': no row in its family", r.name))),
            };
            blobs.push(Blob {
                name: r.name,
                source: r.source,
                group: r.group,
                symbol: r.symbol,
                meta,
            });
        }
        let m = Manifest {
            format: self.format,
            name: self.name.clone(),
            root: self.root.clone(),
            groups,
            blobs,
            together: self.together()?,
        };
        m.validate()?;
        Ok(m)
    }
}

/// Item `i` of a section whose u32 offset table is `offsets`.
fn item<'a>(offsets: &[u8], items: &'a [u8], i: usize) -> Option<Result<&'a [u8], ManifestError>> {
    if (i + 2) * 4 > offsets.len() {
        return None;
    }
    Some((|| {
        let (a, b) = (u32_at(offsets, i * 4)?, u32_at(offsets, i * 4 + 4)?);
        items
            .get(a..b)
            .ok_or_else(|| bad(format!("item {i} lies outside its section")))
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, family: Option<&str>) -> Group {
        Group {
            name: name.into(),
            compiler: "cc".into(),
            args: vec!["{src}".into(), "-o".into(), "{out}".into()],
            cwd: None,
            symbol: SymbolSpec::Exact("{name}".into()),
            depfile: true,
            family: family.map(str::to_string),
            neutral: BTreeMap::new(),
        }
    }

    fn sample(n: usize) -> Manifest {
        let mut m = Manifest::new("t", "/tree");
        m.groups = vec![
            group("a", Some("fam")),
            group("b", Some("fam")),
            group("c", None),
        ];
        for i in 0..n {
            let name = format!("kern_{:05}_{}", i * 7 % n.max(1), i % 3);
            let mut meta = BTreeMap::new();
            meta.insert(
                "dtype".to_string(),
                ["f16", "bf16", "f32"][i % 3].to_string(),
            );
            if i % 4 != 0 {
                meta.insert("hdim".to_string(), (64 << (i % 3)).to_string());
            }
            // A key with one value per blob: more than a byte's worth.
            meta.insert("id".to_string(), i.to_string());
            m.blobs.push(Blob {
                source: if i % 5 == 0 {
                    format!("odd/place_{i}.cpp")
                } else {
                    format!("k/{name}.cpp")
                },
                name,
                group: (i % 3) as u32,
                symbol: (i % 11 == 0).then(|| SymbolSpec::Prefix(format!("p{i}"))),
                meta,
            });
        }
        m.finish().unwrap();
        // Every third blob with the two after it, and some alone.
        let names: Vec<String> = m.blobs.iter().map(|b| b.name.clone()).collect();
        let sets: Vec<Vec<String>> = names
            .chunks(3)
            .map(<[String]>::to_vec)
            .chain(names.iter().step_by(7).map(|n| vec![n.clone()]))
            .collect();
        m.set_together(sets).unwrap();
        m
    }

    #[test]
    fn round_trips_and_finds_every_blob() {
        for n in [0, 1, 15, 16, 17, 300] {
            let m = sample(n);
            let bytes = m.to_compact();
            let c = Compact::parse(&bytes).unwrap();
            assert_eq!(c.len(), n);
            assert_eq!(c.to_manifest().unwrap(), m, "n = {n}");
            for (i, b) in m.blobs.iter().enumerate() {
                let r = c.find(&b.name).unwrap().expect("found");
                assert_eq!((r.index, &r.source, r.group), (i, &b.source, b.group));
                assert_eq!(r.symbol, b.symbol);
                assert_eq!(c.get(i).unwrap(), r);
                // Names around it are misses.
                assert!(c.find(&format!("{}x", b.name)).unwrap().is_none());
                assert!(c.find(&b.name[..b.name.len() - 1]).unwrap().is_none());
            }
            assert!(c.find("").unwrap().is_none());
            assert!(c.find("zzz").unwrap().is_none());
            assert_eq!(bytes, m.to_compact(), "deterministic");
        }
    }

    #[test]
    fn find_answers_as_a_sorted_set_of_the_names_does() {
        // Names sharing long prefixes, one a prefix of others, across
        // several blocks.
        let mut m = Manifest::new("t", "/tree");
        m.groups = vec![group("a", None)];
        let mut names = std::collections::BTreeSet::new();
        for stem in ["k", "ka", "kab", "kb", "kernel_fwd", "kernel_fwd_d128", "z"] {
            for i in 0..7 {
                names.insert(if i == 0 {
                    stem.to_string()
                } else {
                    format!("{stem}_{i}")
                });
            }
        }
        for name in &names {
            m.blobs.push(Blob {
                source: format!("k/{name}.cpp"),
                name: name.clone(),
                group: 0,
                symbol: None,
                meta: BTreeMap::new(),
            });
        }
        m.finish().unwrap();
        let bytes = m.to_compact();
        let c = Compact::parse(&bytes).unwrap();
        let mut probes: Vec<String> = vec![String::new(), "a".into(), "zz".into(), "~".into()];
        for name in &names {
            for cut in 0..=name.len() {
                probes.push(name[..cut].to_string());
            }
            for tail in ["0", "_", "a", "z", "~", "_0", "_9"] {
                probes.push(format!("{name}{tail}"));
            }
        }
        for p in &probes {
            let found = c.find(p).unwrap();
            assert_eq!(found.is_some(), names.contains(p), "{p:?}");
            if let Some(e) = found {
                assert_eq!(
                    (e.name.as_str(), e.source.as_str()),
                    (p.as_str(), &*format!("k/{p}.cpp"))
                );
                assert_eq!(m.blobs[e.index].name, *p);
            }
        }
    }

    #[test]
    fn a_family_table_holds_each_members_metadata() {
        let m = sample(300);
        let bytes = m.to_compact();
        let c = Compact::parse(&bytes).unwrap();
        assert_eq!(c.families(), ["fam", "c"]);
        let t = c.table("fam").unwrap().unwrap();
        let members: Vec<&Blob> = m.blobs.iter().filter(|b| b.group < 2).collect();
        assert_eq!(t.len(), members.len());
        for (row, b) in members.iter().enumerate() {
            assert_eq!(m.blobs[t.member(row)].name, b.name);
            assert_eq!(t.meta(row), b.meta);
        }
        assert!(c.table("nope").unwrap().is_none());
    }

    #[test]
    fn damaged_bytes_are_errors_never_panics() {
        let m = sample(40);
        let bytes = m.to_compact();
        let exercise = |b: &[u8]| {
            if let Ok(c) = Compact::parse(b) {
                let _ = c.to_manifest();
                for name in ["kern_00007_1", "kern_00000_0", "a"] {
                    let _ = c.find(name);
                }
                let _ = c.get(3);
                let _ = c.table("fam");
                let _ = c.group(0);
            }
        };
        for len in 0..bytes.len() {
            exercise(&bytes[..len]);
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..4000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let mut b = bytes.clone();
            let at = (seed % b.len() as u64) as usize;
            b[at] ^= (seed >> 32) as u8 | 1;
            exercise(&b);
        }
        assert!(Compact::parse(b"{\"format\":1}").is_err());
        let mut newer = Manifest::new("t", "/r");
        newer.format = crate::FORMAT_VERSION + 1;
        assert!(matches!(
            Compact::parse(&newer.to_compact()),
            Err(ManifestError::NewerFormat { .. })
        ));
    }
}
