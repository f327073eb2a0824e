//! Blob selection: turns what a user named (blob names, file names, source
//! paths, cached objects, list files, families, metadata filters) into
//! manifest blobs. Every name that matches nothing is reported, all at
//! once, with the closest real names.
//!
//! Reads the manifest, list files and the record beside a named cached
//! object; never changes anything.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use ck_jit_rt::maintenance::Record;
use ck_jit_rt::manifest::{closest, escape, Manifest};
use ck_jit_rt::Query;

use crate::args::Selection;
use crate::error::CliError;

/// What selecting nothing at all means for a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WhenEmpty {
    /// Every blob (`list`).
    All,
    /// A usage error naming the command (`build`, `clean`).
    Refuse(&'static str),
}

/// The manifest a selection is made from.
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    /// The manifest.
    pub manifest: &'a Manifest,
    /// Where it came from (for messages).
    pub origin: &'a str,
    /// The effective tree root.
    pub root: &'a Path,
}

/// [`select`] over a runtime's manifest (`path`: where it was read from,
/// for messages) and effective root: what every command that selects does.
pub fn from_runtime(
    rt: &ck_jit_rt::Runtime,
    path: &Path,
    sel: &Selection,
    all: bool,
    when_empty: WhenEmpty,
) -> Result<Vec<String>, CliError> {
    let origin = path.display().to_string();
    let src = Source {
        manifest: rt.manifest(),
        origin: &origin,
        root: rt.root(),
    };
    select(src, sel, all, when_empty)
}

/// The names of the selected blobs, in manifest (name) order, each once.
pub fn select(
    src: Source<'_>,
    sel: &Selection,
    all: bool,
    when_empty: WhenEmpty,
) -> Result<Vec<String>, CliError> {
    let m = src.manifest;
    let mut errors = Vec::new();
    let mut chosen = BTreeSet::new();
    let mut named = false;
    for arg in &sel.blobs {
        named = true;
        match resolve(src, arg) {
            Ok(i) => {
                chosen.insert(i);
            }
            Err(e) => errors.push(e),
        }
    }
    for file in &sel.blob_list {
        named = true;
        let text = read_list(file)?;
        for (n, line) in text.lines().enumerate() {
            let item = line.split('#').next().unwrap_or("").trim();
            if item.is_empty() {
                continue;
            }
            match resolve(src, item) {
                Ok(i) => {
                    chosen.insert(i);
                }
                Err(e) => errors.push(format!("{} line {}: {e}", list_name(file), n + 1)),
            }
        }
    }
    if !errors.is_empty() {
        return Err(CliError::Usage(errors.join("\nck-jit: ")));
    }
    let filtered = !sel.family.is_empty() || !sel.filters.is_empty();
    if !named {
        if let (WhenEmpty::Refuse(cmd), false, false) = (when_empty, all, filtered) {
            return Err(CliError::Usage(format!(
                "nothing to {cmd}: expected blob names, --all, --family, --where or --blob-list"
            )));
        }
        chosen = (0..m.blobs.len()).collect();
    }
    if !sel.family.is_empty() {
        let families = check_families(m, &sel.family)?;
        chosen.retain(|&i| families.contains(m.group_of(&m.blobs[i]).name.as_str()));
    }
    if !sel.filters.is_empty() {
        let filter = compose(&sel.filters)?;
        check_keys(m, &filter)?;
        chosen.retain(|&i| filter.matches(&m.blobs[i].meta));
    }
    if chosen.is_empty() && (named || filtered) {
        return Err(CliError::Usage(format!(
            "no blob matches the selection{}",
            describe_filters(m, sel)
        )));
    }
    Ok(chosen
        .into_iter()
        .map(|i| m.blobs[i].name.clone())
        .collect())
}

fn list_name(file: &Path) -> String {
    if file == Path::new("-") {
        "blob list on stdin".into()
    } else {
        format!("blob list {}", file.display())
    }
}

fn read_list(file: &Path) -> Result<String, CliError> {
    let mut text = String::new();
    let r = if file == Path::new("-") {
        std::io::stdin().read_to_string(&mut text).map(|_| ())
    } else {
        fs::read_to_string(file).map(|t| text = t)
    };
    r.map_err(|e| {
        CliError::Usage(format!(
            "cannot read {}: {e}; expected a file with one blob per line",
            list_name(file)
        ))
    })?;
    Ok(text)
}

/// The index of the blob `arg` names, or a message saying why none.
fn resolve(src: Source<'_>, arg: &str) -> Result<usize, String> {
    let m = src.manifest;
    if let Ok(i) = m.blobs.binary_search_by(|b| b.name.as_str().cmp(arg)) {
        return Ok(i);
    }
    if arg.ends_with(".so") {
        return by_object(src, arg);
    }
    if arg.contains('/') {
        return by_source_path(src, arg);
    }
    by_file_name(src, arg)
}

fn unknown(src: Source<'_>, arg: &str, what: &str) -> String {
    let stem = Path::new(arg)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or(arg);
    let mut near = closest(src.manifest.blobs.iter().map(|b| b.name.as_str()), stem, 3);
    if near.is_empty() && stem != arg {
        near = closest(src.manifest.blobs.iter().map(|b| b.name.as_str()), arg, 3);
    }
    let mut msg = format!(
        "unknown blob '{}': {what} in manifest {}",
        escape(arg),
        src.origin
    );
    if !near.is_empty() {
        msg.push_str(&format!("; did you mean '{}'?", near.join("', '")));
    }
    msg
}

/// `vadd_f32.cpp`, or a stem when a blob's name differs from its file's.
fn by_file_name(src: Source<'_>, arg: &str) -> Result<usize, String> {
    let m = src.manifest;
    let hits: Vec<usize> = m
        .blobs
        .iter()
        .enumerate()
        .filter(|(_, b)| {
            let file = b.source.rsplit('/').next().unwrap_or(&b.source);
            file == arg || Path::new(file).file_stem().and_then(|s| s.to_str()) == Some(arg)
        })
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [i] => Ok(*i),
        [] => Err(unknown(
            src,
            arg,
            "no blob name or source file name matches",
        )),
        many => Err(format!(
            "'{}' is ambiguous: it is the file name of {}; name the blob or give the source path",
            escape(arg),
            many.iter()
                .map(|&i| format!("'{}' ({})", m.blobs[i].name, m.blobs[i].source))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// A source path relative to the root (as in the manifest), or absolute,
/// or relative to the current directory.
fn by_source_path(src: Source<'_>, arg: &str) -> Result<usize, String> {
    let m = src.manifest;
    let mut candidates = Vec::new();
    if let Some(rel) = normalise(Path::new(arg)) {
        candidates.push(rel);
    }
    let abs = if Path::new(arg).is_absolute() {
        PathBuf::from(arg)
    } else {
        std::env::current_dir().unwrap_or_default().join(arg)
    };
    let root_canon = fs::canonicalize(src.root).ok();
    for root in [Some(src.root.to_path_buf()), root_canon.clone()]
        .into_iter()
        .flatten()
    {
        if let Some(rel) = abs.strip_prefix(&root).ok().and_then(normalise) {
            candidates.push(rel);
        }
        if let Some(rel) = fs::canonicalize(&abs)
            .ok()
            .and_then(|c| c.strip_prefix(&root).ok().and_then(normalise))
        {
            candidates.push(rel);
        }
    }
    for c in &candidates {
        if let Some(i) = m.blobs.iter().position(|b| &b.source == c) {
            return Ok(i);
        }
    }
    let rel = candidates.first().map(String::as_str).unwrap_or(arg);
    let near = closest(m.blobs.iter().map(|b| b.source.as_str()), rel, 3);
    let mut msg = format!(
        "unknown blob '{}': no blob has this source under the root {} in manifest {}",
        escape(arg),
        src.root.display(),
        src.origin
    );
    if !near.is_empty() {
        msg.push_str(&format!("; did you mean '{}'?", near.join("', '")));
    }
    Err(msg)
}

/// A relative path as the manifest writes sources: `/`-separated, no
/// `.`, no `..`, not empty.
fn normalise(p: &Path) -> Option<String> {
    let mut parts = Vec::new();
    for c in p.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?.to_string()),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// A cached object: its record (the `.json` beside it) names the blob.
fn by_object(src: Source<'_>, arg: &str) -> Result<usize, String> {
    let record_path = Path::new(arg).with_extension("json");
    let record: Record = fs::read(&record_path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        .map_err(|why| {
            let mut msg = format!(
                "unknown blob '{}': not a blob name, and not a cached object (no readable record {}: {why})",
                escape(arg),
                record_path.display()
            );
            let stem = Path::new(arg).file_stem().and_then(|s| s.to_str()).unwrap_or(arg);
            let near = closest(src.manifest.blobs.iter().map(|b| b.name.as_str()), stem, 3);
            if !near.is_empty() {
                msg.push_str(&format!("; did you mean '{}'?", near.join("', '")));
            }
            msg
        })?;
    src.manifest
        .blobs
        .binary_search_by(|b| b.name.as_str().cmp(&record.blob))
        .map_err(|_| {
            format!(
                "cached object '{}' belongs to blob '{}', which is not in manifest {}",
                escape(arg),
                escape(&record.blob),
                src.origin
            )
        })
}

fn check_families<'a>(m: &Manifest, asked: &'a [String]) -> Result<BTreeSet<&'a str>, CliError> {
    let known: BTreeSet<&str> = m.groups.iter().map(|g| g.name.as_str()).collect();
    let mut errors = Vec::new();
    for f in asked {
        if !known.contains(f.as_str()) {
            let near = closest(known.iter().copied(), f, 3);
            errors.push(format!(
                "unknown family '{}'; expected one of: {}{}",
                escape(f),
                known.iter().copied().collect::<Vec<_>>().join(", "),
                if near.is_empty() {
                    String::new()
                } else {
                    format!(" (did you mean '{}'?)", near.join("', '"))
                }
            ));
        }
    }
    if errors.is_empty() {
        Ok(asked.iter().map(String::as_str).collect())
    } else {
        Err(CliError::Usage(errors.join("\nck-jit: ")))
    }
}

/// Every `--where` condition together; two that no value meets together
/// are a usage error naming both (rather than an empty selection).
fn compose(filters: &[Query]) -> Result<Query, CliError> {
    filters.iter().try_fold(Query::new(), |q, f| {
        q.and(f)
            .map_err(|conflict| CliError::Usage(format!("--where: {conflict}")))
    })
}

fn check_keys(m: &Manifest, filter: &Query) -> Result<(), CliError> {
    let known: BTreeSet<&str> = m
        .blobs
        .iter()
        .flat_map(|b| b.meta.keys().map(String::as_str))
        .collect();
    let mut errors = Vec::new();
    for k in filter.keys() {
        if !known.contains(k) {
            errors.push(if known.is_empty() {
                format!(
                    "--where {}: no blob in this manifest has metadata",
                    escape(k)
                )
            } else {
                let near = closest(known.iter().copied(), k, 3);
                format!(
                    "--where: unknown metadata key '{}'{}; expected one of: {}",
                    escape(k),
                    if near.is_empty() {
                        String::new()
                    } else {
                        format!(" (did you mean '{}'?)", near.join("', '"))
                    },
                    known.iter().copied().collect::<Vec<_>>().join(", ")
                )
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CliError::Usage(errors.join("\nck-jit: ")))
    }
}

/// ` (--family x, --where k = v; values of k: a, b)` for an empty result.
fn describe_filters(m: &Manifest, sel: &Selection) -> String {
    let mut parts: Vec<String> = sel.family.iter().map(|f| format!("--family {f}")).collect();
    parts.extend(sel.filters.iter().map(|q| format!("--where {q}")));
    let mut values: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for k in sel.filters.iter().flat_map(Query::keys) {
        for b in &m.blobs {
            if let Some(v) = b.meta.get(k) {
                values.entry(k).or_default().insert(v.as_str());
            }
        }
    }
    for (k, vs) in values {
        let shown: Vec<&str> = vs.iter().copied().take(10).collect();
        parts.push(format!(
            "values of {k}: {}{}",
            shown.join(", "),
            if vs.len() > 10 { ", ..." } else { "" }
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ck_jit_rt::manifest::{Blob, Group, SymbolSpec};

    fn manifest() -> Manifest {
        let mut m = Manifest::new("t", "/r");
        for g in ["fwd", "bwd"] {
            m.groups.push(Group {
                name: g.into(),
                compiler: "cc".into(),
                args: vec!["{src}".into(), "-o".into(), "{out}".into()],
                cwd: None,
                symbol: SymbolSpec::Exact("{name}".into()),
                depfile: true,
                family: None,
                neutral: Default::default(),
            });
        }
        for (name, source, group, meta) in [
            ("fwd_f16", "fwd/fwd_f16.cpp", 0, "dtype=f16,hdim=128,lse=1"),
            ("fwd_f32", "fwd/fwd_f32.cpp", 0, "dtype=f32,hdim=64,lse=0"),
            ("bwd_f16", "bwd/bwd_f16.cpp", 1, "dtype=f16,hdim=256"),
            ("custom", "bwd/other.cpp", 1, "dtype=f32,dropout=yes"),
        ] {
            m.blobs.push(Blob {
                name: name.into(),
                source: source.into(),
                group,
                symbol: None,
                meta: meta
                    .split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            });
        }
        m.finish().unwrap();
        m
    }

    fn sel(blobs: &[&str]) -> Selection {
        Selection {
            blobs: blobs.iter().map(|s| s.to_string()).collect(),
            blob_list: Vec::new(),
            family: Vec::new(),
            filters: Vec::new(),
        }
    }

    fn run(s: &Selection) -> Result<Vec<String>, String> {
        let m = manifest();
        let src = Source {
            manifest: &m,
            origin: "m.json",
            root: Path::new("/r"),
        };
        select(src, s, false, WhenEmpty::Refuse("build")).map_err(|e| e.to_string())
    }

    #[test]
    fn names_file_names_stems_and_paths_all_resolve() {
        assert_eq!(
            run(&sel(&[
                "fwd_f16",
                "fwd_f32.cpp",
                "other",
                "bwd/bwd_f16.cpp"
            ]))
            .unwrap(),
            vec!["bwd_f16", "custom", "fwd_f16", "fwd_f32"]
        );
        assert_eq!(
            run(&sel(&["/r/fwd/./fwd_f16.cpp"])).unwrap(),
            vec!["fwd_f16"]
        );
    }

    #[test]
    fn unknown_names_are_all_reported_with_suggestions() {
        let e = run(&sel(&["fwd_f61", "zzzzzzzz", "fwd/nope.cpp"])).unwrap_err();
        assert!(
            e.contains("unknown blob 'fwd_f61'") && e.contains("did you mean 'fwd_f16'"),
            "{e}"
        );
        assert!(e.contains("unknown blob 'zzzzzzzz'"), "{e}");
        assert!(e.contains("unknown blob 'fwd/nope.cpp'"), "{e}");
    }

    #[test]
    fn families_and_filters_narrow_and_refuse_unknown_ones() {
        let mut s = sel(&[]);
        s.family = vec!["fwd".into()];
        s.filters = vec![where_("dtype=f16")];
        assert_eq!(run(&s).unwrap(), vec!["fwd_f16"]);
        s.family = vec!["fdw".into()];
        let e = run(&s).unwrap_err();
        assert!(
            e.contains("unknown family 'fdw'") && e.contains("did you mean 'fwd'"),
            "{e}"
        );
        s.family.clear();
        s.filters = vec![where_("dtype=f64")];
        let e = run(&s).unwrap_err();
        assert!(
            e.contains("no blob matches") && e.contains("values of dtype: f16, f32"),
            "{e}"
        );
        s.filters = vec![where_("arch=x")];
        assert!(run(&s).unwrap_err().contains("unknown metadata key 'arch'"));
        s.filters = vec![where_("hdm>=64")];
        let e = run(&s).unwrap_err();
        assert!(
            e.contains("unknown metadata key 'hdm' (did you mean 'hdim'?)"),
            "{e}"
        );
    }

    fn where_(text: &str) -> Query {
        crate::args::parse_condition(text).unwrap()
    }

    fn filtered(conditions: &[&str]) -> Result<Vec<String>, String> {
        let mut s = sel(&[]);
        s.filters = conditions.iter().map(|c| where_(c)).collect();
        run(&s)
    }

    #[test]
    fn where_compares_as_a_query_does() {
        assert_eq!(filtered(&["hdim>=128"]).unwrap(), ["bwd_f16", "fwd_f16"]);
        assert_eq!(filtered(&["hdim<128"]).unwrap(), ["fwd_f32"]);
        assert_eq!(filtered(&["lse"]).unwrap(), ["fwd_f16"], "lse=0 is unset");
        assert_eq!(filtered(&["!dropout", "dtype!=f16"]).unwrap(), ["fwd_f32"]);
        assert_eq!(
            filtered(&["dtype=f16,hdim>64"]).unwrap(),
            ["bwd_f16", "fwd_f16"],
            "several conditions in one --where"
        );
        let e = filtered(&["hdim>=128", "hdim<=64"]).unwrap_err();
        assert_eq!(
            e,
            "--where: hdim >= 128 conflicts with hdim <= 64: no value of hdim meets both"
        );
        let e = filtered(&["hdim>=512"]).unwrap_err();
        assert!(
            e.contains("(--where hdim >= 512; values of hdim: 128, 256, 64)"),
            "{e}"
        );
    }

    #[test]
    fn nothing_named_is_refused_for_commands_that_need_a_choice() {
        let e = run(&sel(&[])).unwrap_err();
        assert!(e.contains("nothing to build"), "{e}");
    }
}
