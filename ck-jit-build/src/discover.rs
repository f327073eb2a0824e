//! Finding blob files: walks the tree for each glob one path component at a
//! time, in sorted order, and records every directory it lists so the build
//! can tell cargo what to watch. It reads directory entries only, never file
//! contents, and never decides what a file is for (names, groups and checks
//! belong to the build).
//!
//! Rules, shell-like: `*`, `?` and `[...]` match within one component;
//! `**` matches any number of directories (and `dir/**` every file under
//! `dir`); wildcards skip names starting with `.`; `**` does not descend
//! into directory symlinks (no cycles) nor into a cargo target directory
//! (one holding `CACHEDIR.TAG`, or the one holding `OUT_DIR`).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};

use glob::{MatchOptions, Pattern};

use crate::error::{Error, FileProblem};

/// Component matching: case-sensitive, and a leading `.` must be written
/// out, so editor and VCS droppings (`.#x.cpp`, `.git`) are never blobs.
const COMPONENT: MatchOptions = MatchOptions {
    case_sensitive: true,
    require_literal_separator: true,
    require_literal_leading_dot: true,
};

/// A file a glob matched.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// Path relative to the root, `/`-separated (lossy if not UTF-8).
    pub rel: String,
    /// Path on disk (under the canonical root, not resolved).
    pub abs: PathBuf,
    /// Whether every component was valid UTF-8.
    pub utf8: bool,
    /// Whether the file or a directory on its way is a symlink, so its real
    /// place must be checked against the root.
    pub via_symlink: bool,
}

/// Checks a glob and splits it into components; `Err` says why it is bad.
pub(crate) fn parse_glob(pattern: &str) -> Result<Vec<String>, String> {
    let mut rest = pattern;
    while let Some(r) = rest.strip_prefix("./") {
        rest = r;
    }
    if rest.is_empty() {
        return Err("empty".into());
    }
    if rest.starts_with('/') {
        return Err("must be relative to the root".into());
    }
    if rest.contains('\\') {
        return Err("use '/' to separate directories".into());
    }
    if let Err(e) = Pattern::new(rest) {
        return Err(e.msg.to_string());
    }
    let mut comps = Vec::new();
    for c in rest.split('/') {
        match c {
            "" => return Err("has an empty component".into()),
            "." | ".." => {
                return Err("has a '.' or '..' component (must stay inside the root)".into())
            }
            _ => {}
        }
        if let Err(e) = Pattern::new(c) {
            return Err(e.msg.to_string());
        }
        comps.push(c.to_string());
    }
    Ok(comps)
}

fn is_wildcard(component: &str) -> bool {
    component.contains(['*', '?', '['])
}

enum Comp {
    /// `**`: zero or more directories.
    AnyDirs,
    /// One component; the flag says whether it has wildcards.
    One(Pattern, bool),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    File { link: bool },
    Dir { link: bool },
    BrokenLink,
    Other,
}

struct Entry {
    name: OsString,
    lossy: String,
    kind: Kind,
}

/// Relative path being built while walking.
#[derive(Clone)]
struct Rel {
    s: String,
    utf8: bool,
}

impl Rel {
    fn join(&self, e: &Entry) -> Rel {
        let utf8 = self.utf8 && e.name.to_str().is_some();
        let s = if self.s.is_empty() {
            e.lossy.clone()
        } else {
            format!("{}/{}", self.s, e.lossy)
        };
        Rel { s, utf8 }
    }
}

/// Walks globs under one root.
pub(crate) struct Walker<'a> {
    root: &'a Path,
    out_dir: Option<&'a Path>,
    group: &'a str,
    /// Directories whose entries decide what matched: listed ones, and the
    /// nearest existing parent of a glob's missing start directory.
    pub watched: BTreeSet<PathBuf>,
}

impl<'a> Walker<'a> {
    /// A walker for `group` under the canonical `root`; `out_dir` (canonical)
    /// is never entered through a wildcard.
    pub(crate) fn new(root: &'a Path, out_dir: Option<&'a Path>, group: &'a str) -> Walker<'a> {
        Walker {
            root,
            out_dir,
            group,
            watched: BTreeSet::new(),
        }
    }

    /// Every file `components` (from [`parse_glob`]) matches, in walk order
    /// (sorted per directory; the caller de-duplicates).
    pub(crate) fn glob(&mut self, components: &[String]) -> Result<Vec<Found>, Error> {
        let mut out = Vec::new();
        let Some((_, dirs)) = components.split_last() else {
            return Ok(out);
        };
        // Go straight down the literal directory prefix: no listing needed.
        let literal = dirs.iter().take_while(|c| !is_wildcard(c) && *c != "**");
        let mut dir = self.root.to_path_buf();
        let mut rel = Rel {
            s: String::new(),
            utf8: true,
        };
        let mut link = false;
        let mut n = 0;
        for c in literal {
            let next = dir.join(c);
            match fs::symlink_metadata(&next) {
                Ok(m) if m.is_dir() => {}
                Ok(m) if m.file_type().is_symlink() && next.is_dir() => link = true,
                _ => {
                    // Not there (yet): creating it changes this directory.
                    self.watched.insert(dir);
                    return Ok(out);
                }
            }
            dir = next;
            rel.s = if rel.s.is_empty() {
                c.clone()
            } else {
                format!("{}/{c}", rel.s)
            };
            n += 1;
        }
        let comps: Vec<Comp> = components[n..]
            .iter()
            .map(|c| {
                if c == "**" {
                    Ok(Comp::AnyDirs)
                } else {
                    Pattern::new(c)
                        .map(|p| Comp::One(p, is_wildcard(c)))
                        .map_err(|e| Error::Glob {
                            group: self.group.to_string(),
                            pattern: crate::manifest::escape(c),
                            why: e.msg.to_string(),
                        })
                }
            })
            .collect::<Result<_, _>>()?;
        self.walk(&dir, &rel, link, &comps, &mut out)?;
        Ok(out)
    }

    fn walk(
        &mut self,
        dir: &Path,
        rel: &Rel,
        link: bool,
        comps: &[Comp],
        out: &mut Vec<Found>,
    ) -> Result<(), Error> {
        let entries = self.list(dir)?;
        self.match_entries(dir, rel, link, &entries, comps, out)
    }

    fn match_entries(
        &mut self,
        dir: &Path,
        rel: &Rel,
        link: bool,
        entries: &[Entry],
        comps: &[Comp],
        out: &mut Vec<Found>,
    ) -> Result<(), Error> {
        let Some((first, rest)) = comps.split_first() else {
            return Ok(());
        };
        match first {
            Comp::AnyDirs => {
                if rest.is_empty() {
                    for e in entries.iter().filter(|e| !e.lossy.starts_with('.')) {
                        self.take_file(dir, rel, link, e, out)?;
                    }
                } else {
                    self.match_entries(dir, rel, link, entries, rest, out)?;
                }
                for e in entries {
                    let path = dir.join(&e.name);
                    if e.kind == (Kind::Dir { link: false })
                        && !e.lossy.starts_with('.')
                        && !self.is_build_output(&path)
                    {
                        self.walk(&path, &rel.join(e), link, comps, out)?;
                    }
                }
            }
            Comp::One(pattern, wildcard) => {
                for e in entries {
                    if !pattern.matches_with(&e.lossy, COMPONENT) {
                        continue;
                    }
                    if rest.is_empty() {
                        self.take_file(dir, rel, link, e, out)?;
                    } else if let Kind::Dir { link: l } = e.kind {
                        let path = dir.join(&e.name);
                        if *wildcard && self.is_build_output(&path) {
                            continue;
                        }
                        self.walk(&path, &rel.join(e), link || l, rest, out)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn take_file(
        &self,
        dir: &Path,
        rel: &Rel,
        link: bool,
        e: &Entry,
        out: &mut Vec<Found>,
    ) -> Result<(), Error> {
        match e.kind {
            Kind::File { link: l } => {
                let r = rel.join(e);
                out.push(Found {
                    rel: r.s,
                    abs: dir.join(&e.name),
                    utf8: r.utf8,
                    via_symlink: link || l,
                });
                Ok(())
            }
            Kind::BrokenLink => Err(Error::File {
                group: self.group.to_string(),
                path: dir.join(&e.name),
                why: FileProblem::BrokenSymlink,
            }),
            Kind::Dir { .. } | Kind::Other => Ok(()),
        }
    }

    /// A cargo target directory: walking it would find other crates' build
    /// products, and watching it would rerun the build script every build.
    fn is_build_output(&self, dir: &Path) -> bool {
        self.out_dir.is_some_and(|o| o.starts_with(dir)) || dir.join("CACHEDIR.TAG").exists()
    }

    fn list(&mut self, dir: &Path) -> Result<Vec<Entry>, Error> {
        self.watched.insert(dir.to_path_buf());
        let read_err = |source| Error::ReadDir {
            path: dir.to_path_buf(),
            source,
        };
        let mut entries = Vec::new();
        for e in fs::read_dir(dir).map_err(read_err)? {
            let e = e.map_err(read_err)?;
            let ft = e.file_type().map_err(read_err)?;
            let kind = if ft.is_symlink() {
                match fs::metadata(e.path()) {
                    Ok(m) if m.is_dir() => Kind::Dir { link: true },
                    Ok(m) if m.is_file() => Kind::File { link: true },
                    Ok(_) => Kind::Other,
                    Err(_) => Kind::BrokenLink,
                }
            } else if ft.is_dir() {
                Kind::Dir { link: false }
            } else if ft.is_file() {
                Kind::File { link: false }
            } else {
                Kind::Other
            };
            let name = e.file_name();
            let lossy = name.to_string_lossy().into_owned();
            entries.push(Entry { name, lossy, kind });
        }
        // The file system's order is arbitrary; the manifest must not be.
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_are_checked_before_walking() {
        assert_eq!(parse_glob("./k/*.cpp").unwrap(), vec!["k", "*.cpp"]);
        assert_eq!(parse_glob("**/x.cu").unwrap(), vec!["**", "x.cu"]);
        for bad in [
            "",
            "/abs/*.cpp",
            "../up/*.cpp",
            "k/../x",
            "k//x",
            "k\\x",
            "a**b",
            "[z-a",
        ] {
            assert!(parse_glob(bad).is_err(), "{bad:?} accepted");
        }
    }
}
