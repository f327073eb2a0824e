//! Where a runtime's manifest lives: parsed from JSON (a manifest file,
//! `CK_JIT_MANIFEST`), or the compact form embedded in the program and
//! read in place, so that the first lookup of a process decodes one blob's
//! record and one group, whatever the manifest's size.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use ck_jit_manifest::compact::{Compact, Names, Table};
use ck_jit_manifest::{closest, Group, Manifest, ManifestError, SymbolSpec};
use once_cell::sync::OnceCell;

/// What the cold path needs of one blob.
#[derive(Debug, Clone)]
pub(crate) struct BlobInfo<'s> {
    /// Source, relative to the root.
    pub source: Cow<'s, str>,
    /// Its group.
    pub group: &'s Group,
    /// `group`'s index in the manifest.
    pub group_index: usize,
    /// Its entry symbol, `{name}` substituted.
    pub symbol: SymbolSpec,
}

pub(crate) enum Store {
    Json(Manifest),
    Compact(Box<CompactStore>),
}

pub(crate) struct CompactStore {
    compact: Compact<'static>,
    groups: Vec<OnceCell<Group>>,
    full: OnceCell<Manifest>,
    together: OnceCell<Vec<Vec<u32>>>,
}

impl Store {
    /// Opens embedded compact bytes (header and head only).
    pub fn compact(bytes: &'static [u8]) -> Result<Store, ManifestError> {
        let compact = Compact::parse(bytes)?;
        let groups = (0..compact.group_count())
            .map(|_| OnceCell::new())
            .collect();
        Ok(Store::Compact(Box::new(CompactStore {
            compact,
            groups,
            full: OnceCell::new(),
            together: OnceCell::new(),
        })))
    }

    pub fn name(&self) -> &str {
        match self {
            Store::Json(m) => &m.name,
            Store::Compact(c) => c.compact.name(),
        }
    }

    pub fn root(&self) -> &str {
        match self {
            Store::Json(m) => &m.root,
            Store::Compact(c) => c.compact.root(),
        }
    }

    /// How many groups the manifest has.
    pub fn group_count(&self) -> usize {
        match self {
            Store::Json(m) => m.groups.len(),
            Store::Compact(c) => c.compact.group_count(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Store::Json(m) => m.blobs.len(),
            Store::Compact(c) => c.compact.len(),
        }
    }

    /// The whole manifest. For the compact form this decodes every blob
    /// (once); the cold path never needs it. Damaged embedded bytes give an
    /// empty manifest here and an error from every lookup.
    pub fn manifest(&self) -> &Manifest {
        match self {
            Store::Json(m) => m,
            Store::Compact(c) => c.full.get_or_init(|| {
                c.compact.to_manifest().unwrap_or_else(|e| {
                    log::error!("ck-jit: the embedded manifest cannot be decoded: {e}");
                    Manifest::new(c.compact.name(), c.compact.root())
                })
            }),
        }
    }

    /// The sets of blobs called together ([`Manifest::together`]) that
    /// hold `blob`, by name. Reads the manifest's `together` sets (decoded
    /// once, the first time a compile asks).
    pub fn sets_of(&self, blob: &str) -> Result<Vec<Vec<String>>, ManifestError> {
        match self {
            Store::Json(m) => {
                if m.together.is_empty() {
                    return Ok(Vec::new());
                }
                let Ok(i) = m.blobs.binary_search_by(|b| b.name.as_str().cmp(blob)) else {
                    return Ok(Vec::new());
                };
                Ok(m.together
                    .iter()
                    .filter(|set| set.binary_search(&(i as u32)).is_ok())
                    .map(|set| {
                        set.iter()
                            .filter_map(|&j| m.blobs.get(j as usize).map(|b| b.name.clone()))
                            .collect()
                    })
                    .collect())
            }
            Store::Compact(c) => {
                let sets = c.together.get_or_try_init(|| c.compact.together())?;
                if sets.is_empty() {
                    return Ok(Vec::new());
                }
                let Some(r) = c.compact.find(blob)? else {
                    return Ok(Vec::new());
                };
                let holding: Vec<&Vec<u32>> = sets
                    .iter()
                    .filter(|set| set.binary_search(&(r.index as u32)).is_ok())
                    .collect();
                let mut idx: Vec<usize> = holding
                    .iter()
                    .flat_map(|set| set.iter().map(|&i| i as usize))
                    .collect();
                idx.sort_unstable();
                idx.dedup();
                let names = c.compact.names_at(&idx)?;
                let name_of = |i: u32| {
                    idx.binary_search(&(i as usize))
                        .ok()
                        .and_then(|k| names.get(k))
                        .map(str::to_string)
                };
                Ok(holding
                    .iter()
                    .map(|set| set.iter().filter_map(|&i| name_of(i)).collect())
                    .collect())
            }
        }
    }

    /// Group `i`, parsed once.
    fn group(&self, i: usize) -> Result<&Group, ManifestError> {
        match self {
            Store::Json(m) => m
                .groups
                .get(i)
                .ok_or_else(|| ManifestError::Parse(format!("group {i} does not exist"))),
            Store::Compact(c) => {
                let cell = c
                    .groups
                    .get(i)
                    .ok_or_else(|| ManifestError::Parse(format!("group {i} does not exist")))?;
                cell.get_or_try_init(|| c.compact.group(i))
            }
        }
    }

    /// Whether the manifest records `blob` (no symbol worked out).
    pub fn contains(&self, blob: &str) -> Result<bool, ManifestError> {
        match self {
            Store::Json(m) => Ok(m.blob(blob).is_some()),
            Store::Compact(c) => Ok(c.compact.find(blob)?.is_some()),
        }
    }

    /// A blob's record, when the manifest has it.
    pub fn find(&self, blob: &str) -> Result<Option<BlobInfo<'_>>, ManifestError> {
        match self {
            Store::Json(m) => Ok(m.blob(blob).map(|b| BlobInfo {
                source: Cow::Borrowed(b.source.as_str()),
                group: m.group_of(b),
                group_index: b.group as usize,
                symbol: m.symbol_of(b),
            })),
            Store::Compact(c) => {
                let Some(r) = c.compact.find(blob)? else {
                    return Ok(None);
                };
                let group = self.group(r.group as usize)?;
                let symbol = r.symbol.as_ref().unwrap_or(&group.symbol).for_blob(blob);
                Ok(Some(BlobInfo {
                    source: Cow::Owned(r.source),
                    group,
                    group_index: r.group as usize,
                    symbol,
                }))
            }
        }
    }

    /// Up to `n` names closest to `blob`, for "did you mean".
    pub fn closest_names(&self, blob: &str, n: usize) -> Vec<String> {
        match self {
            Store::Json(m) => m
                .closest_names(blob, n)
                .into_iter()
                .map(str::to_string)
                .collect(),
            Store::Compact(c) => {
                let names = c.compact.names().unwrap_or_default();
                closest(names.iter().map(String::as_str), blob, n)
                    .into_iter()
                    .map(str::to_string)
                    .collect()
            }
        }
    }

    /// The family of `blob`, when the manifest has it.
    pub fn family_of(&self, blob: &str) -> Option<String> {
        match self {
            Store::Json(m) => m.blob(blob).map(|b| m.group_of(b).family().to_string()),
            Store::Compact(c) => {
                let r = c.compact.find(blob).ok()??;
                c.compact.group_family(r.group as usize).map(str::to_string)
            }
        }
    }

    /// Every family name, sorted.
    pub fn family_names(&self) -> Vec<String> {
        let names: BTreeSet<&str> = match self {
            Store::Json(m) => m.groups.iter().map(|g| g.family()).collect(),
            Store::Compact(c) => c.compact.families().iter().map(String::as_str).collect(),
        };
        names.into_iter().map(str::to_string).collect()
    }

    /// The neutral values of `family` (its groups' `neutral`, the first
    /// group's value winning).
    pub fn family_neutral(&self, family: &str) -> Result<BTreeMap<String, String>, ManifestError> {
        let mut out = BTreeMap::new();
        let count = match self {
            Store::Json(m) => m.groups.len(),
            Store::Compact(c) => c.compact.group_count(),
        };
        for i in 0..count {
            let in_family = match self {
                Store::Json(m) => m.groups[i].family() == family,
                Store::Compact(c) => c.compact.group_family(i) == Some(family),
            };
            if in_family {
                for (k, v) in &self.group(i)?.neutral {
                    out.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        Ok(out)
    }

    /// The metadata table of `family` (an empty table when no group has
    /// that family).
    pub fn family_table(&self, family: &str) -> Result<Table<'_>, ManifestError> {
        match self {
            Store::Json(m) => {
                let rows: Vec<(usize, &BTreeMap<String, String>)> = m
                    .blobs
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| m.group_of(b).family() == family)
                    .map(|(i, b)| (i, &b.meta))
                    .collect();
                Ok(Table::build(family, &rows))
            }
            Store::Compact(c) => Ok(c
                .compact
                .table(family)?
                .unwrap_or_else(|| Table::build(family, &[]))),
        }
    }

    /// The groups of `family`, with their indices.
    pub fn family_groups(&self, family: &str) -> Result<Vec<(u32, &Group)>, ManifestError> {
        let count = match self {
            Store::Json(m) => m.groups.len(),
            Store::Compact(c) => c.compact.group_count(),
        };
        let mut out = Vec::new();
        for i in 0..count {
            let in_family = match self {
                Store::Json(m) => m.groups[i].family() == family,
                Store::Compact(c) => c.compact.group_family(i) == Some(family),
            };
            if in_family {
                out.push((i as u32, self.group(i)?));
            }
        }
        Ok(out)
    }

    /// The group index of each blob at `indices` (ascending).
    pub fn groups_at(&self, indices: &[usize]) -> Result<Vec<u32>, ManifestError> {
        match self {
            Store::Json(m) => indices
                .iter()
                .map(|&i| {
                    m.blobs
                        .get(i)
                        .map(|b| b.group)
                        .ok_or_else(|| ManifestError::Parse(format!("blob {i} does not exist")))
                })
                .collect(),
            Store::Compact(c) => c.compact.groups_at(indices),
        }
    }

    /// The names of the blobs at `indices` (ascending).
    pub fn names_at(&self, indices: &[usize]) -> Result<Names, ManifestError> {
        match self {
            Store::Json(m) => {
                let mut names = Names::default();
                for &i in indices {
                    let b = m
                        .blobs
                        .get(i)
                        .ok_or_else(|| ManifestError::Parse(format!("blob {i} does not exist")))?;
                    names.push(&b.name);
                }
                Ok(names)
            }
            Store::Compact(c) => c.compact.names_at(indices),
        }
    }

    /// The index (name order) of the blob named `blob`.
    pub fn index_of(&self, blob: &str) -> Result<Option<usize>, ManifestError> {
        match self {
            Store::Json(m) => Ok(m.blobs.binary_search_by(|b| b.name.as_str().cmp(blob)).ok()),
            Store::Compact(c) => Ok(c.compact.find(blob)?.map(|r| r.index)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ck_jit_manifest::Blob;

    fn manifest() -> Manifest {
        let mut m = Manifest::new("t", "/r");
        for g in ["g0", "g1"] {
            m.groups.push(Group {
                name: g.into(),
                compiler: "cc".into(),
                args: vec!["{src}".into(), "-o".into(), "{out}".into()],
                cwd: None,
                symbol: SymbolSpec::Exact(format!("{g}_{{name}}")),
                depfile: false,
                family: None,
                neutral: Default::default(),
            });
        }
        for (name, group) in [("a", 1), ("b", 0), ("c", 1)] {
            m.blobs.push(Blob {
                name: name.into(),
                source: format!("k/{name}.c"),
                group,
                symbol: None,
                meta: Default::default(),
            });
        }
        m
    }

    /// Each blob's source, group and symbol, as `(source, group index,
    /// symbol)`.
    fn answers(s: &Store, names: &[&str]) -> Vec<Option<(String, usize, SymbolSpec)>> {
        names
            .iter()
            .map(|n| {
                s.find(n).unwrap().map(|i| {
                    assert_eq!(*i.group, s.manifest().groups[i.group_index]);
                    (i.source.into_owned(), i.group_index, i.symbol)
                })
            })
            .collect()
    }

    #[test]
    fn the_compact_store_answers_as_the_json_one_whatever_was_asked_before() {
        let json = Store::Json(manifest());
        let bytes: &'static [u8] = Box::leak(manifest().to_compact().into_boxed_slice());
        let compact = Store::compact(bytes).unwrap();
        // The same blob twice in a row, then others,
        // a missing one between, and back.
        let order = ["a", "a", "b", "zz", "a", "c", "c", "b", "zz", "zz", "a"];
        let want = answers(&json, &order);
        assert_eq!(answers(&compact, &order), want);
        assert_eq!(
            want[0],
            Some(("k/a.c".into(), 1, SymbolSpec::Exact("g1_a".into())))
        );
        assert_eq!(
            want[2],
            Some(("k/b.c".into(), 0, SymbolSpec::Exact("g0_b".into())))
        );
        assert_eq!(want[3], None);
        for n in ["a", "zz", "b"] {
            assert_eq!(
                compact.contains(n).unwrap(),
                json.contains(n).unwrap(),
                "{n}"
            );
        }
        assert_eq!(json.group_count(), 2);
        assert_eq!(compact.group_count(), 2);
    }
}
