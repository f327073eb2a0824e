//! Outputs made from a build's files (the dispatch rules, the stubs), kept
//! with a stamp beside them so that a rerun whose inputs are all as they
//! were neither reads the index back nor makes them again.
//!
//! A stamp says what the outputs were made from: the digest of everything
//! the manifest was made from ([`CkFmhaFiles::made_from`]), the program
//! that made them (its size and mtime: a rebuilt build script may make
//! them differently), and the directory. It lists each output with its
//! size and mtime, and what the maker returned besides the files. A stamp
//! that disagrees on any of these is ignored and the outputs are made
//! again; none is left while they are being written, so a build cut short
//! leaves none that a rerun would trust.
//!
//! This module owns the stamp files; it reads no manifest and no blob.
//!
//! [`CkFmhaFiles::made_from`]: super::preset::CkFmhaFiles

use std::collections::hash_map::DefaultHasher;
use std::fs;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// The first line of every stamp: another format is another stamp.
const MAGIC: &str = "ck-jit-ck derived outputs 1";

/// The line between the files and what the maker returned besides.
const EXTRA: &str = "--";

/// What a stamp gives back: the outputs, in the order they were kept,
/// and the text kept with them.
pub(crate) struct Kept {
    pub(crate) files: Vec<PathBuf>,
    pub(crate) extra: String,
}

/// One kind of output in one directory, for the build described by
/// `made_from`.
pub(crate) struct Stamp {
    path: PathBuf,
    key: String,
}

impl Stamp {
    /// The stamp of `what` in `dir`, or `None` when the build cannot be
    /// told again (`made_from` is `None`) and nothing is to be kept.
    pub(crate) fn new(dir: &Path, what: &str, made_from: Option<&str>) -> Option<Stamp> {
        let made_from = made_from?;
        let maker = std::env::current_exe()
            .ok()
            .and_then(|exe| fs::metadata(exe).ok())
            .map(|m| format!("{} {}", m.len(), mtime(&m)))?;
        let key = digest(&format!(
            "{MAGIC}\n{what}\n{made_from}\n{maker}\n{}",
            dir.display()
        ));
        Some(Stamp {
            path: dir.join(format!(".ck_jit_{what}.stamp")),
            key,
        })
    }

    /// The outputs kept by an earlier build with the same key, if every one
    /// is as it was left.
    pub(crate) fn load(&self) -> Option<Kept> {
        let text = fs::read_to_string(&self.path).ok()?;
        let mut lines = text.split('\n');
        if lines.next()? != MAGIC || lines.next()? != self.key {
            return None;
        }
        let dir = self.path.parent()?;
        let mut files = Vec::new();
        for line in lines.by_ref() {
            if line == EXTRA {
                let extra = text.split_once(&format!("\n{EXTRA}\n"))?.1.to_string();
                return Some(Kept { files, extra });
            }
            let (stat, name) = line.split_once('\t')?;
            let path = dir.join(name);
            if fs::metadata(&path).ok().map(|m| identity(&m)).as_deref() != Some(stat) {
                return None;
            }
            files.push(path);
        }
        None
    }

    /// Forgets the kept outputs: call before writing new ones.
    pub(crate) fn forget(&self) {
        let _ = fs::remove_file(&self.path);
    }

    /// Keeps `files` (in `self`'s directory) and `extra` for a later build.
    /// Nothing is kept when a file cannot be described (it is gone, or
    /// its name is not a plain one in the directory): the next build makes
    /// the outputs again.
    pub(crate) fn keep(&self, files: &[PathBuf], extra: &str) {
        let Some(dir) = self.path.parent() else {
            return;
        };
        let mut text = format!("{MAGIC}\n{}\n", self.key);
        for f in files {
            let name = f.strip_prefix(dir).ok().and_then(|n| n.to_str());
            let meta = fs::metadata(f).ok();
            match (name, meta) {
                (Some(name), Some(m)) if !name.contains(['\n', '\t']) && name != EXTRA => {
                    text.push_str(&format!("{}\t{name}\n", identity(&m)));
                }
                _ => return,
            }
        }
        text.push_str(EXTRA);
        text.push('\n');
        text.push_str(extra);
        let _ = ck_jit_build::assemble::write_if_changed(&self.path, text);
    }
}

/// A 128-bit digest of `text`, as hex: what a stamp's key is made of.
pub(crate) fn digest(text: &str) -> String {
    let mut out = String::new();
    for salt in [0u8, 1] {
        let mut h = DefaultHasher::new();
        (salt, text).hash(&mut h);
        out.push_str(&format!("{:016x}", h.finish()));
    }
    out
}

/// A file's size and mtime, as a stamp line holds them.
pub(crate) fn identity(m: &fs::Metadata) -> String {
    format!("{} {}", m.len(), mtime(m))
}

fn mtime(m: &fs::Metadata) -> u128 {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

/// Sets of names as lines of tab-separated names, or `None` when a name
/// holds a tab or a line break (such sets are not kept).
pub(crate) fn sets_text(sets: &[Vec<String>]) -> Option<String> {
    let mut out = String::new();
    for set in sets {
        if set.iter().any(|n| n.contains(['\t', '\n'])) {
            return None;
        }
        out.push_str(&set.join("\t"));
        out.push('\n');
    }
    Some(out)
}

/// The sets [`sets_text`] wrote.
pub(crate) fn sets_of(text: &str) -> Vec<Vec<String>> {
    text.lines()
        .map(|l| {
            if l.is_empty() {
                Vec::new()
            } else {
                l.split('\t').map(str::to_string).collect()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "ck-jit-ck-derived-{name}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn kept_outputs_come_back_only_for_the_same_build_and_files() {
        let dir = scratch("same");
        let a = dir.join("a.json");
        fs::write(&a, "a").unwrap();
        let stamp = Stamp::new(&dir, "rules", Some("inputs 1")).unwrap();
        assert!(stamp.load().is_none(), "nothing kept yet");
        stamp.keep(std::slice::from_ref(&a), "3\nx\ty\n");
        let kept = stamp.load().expect("kept");
        assert_eq!(kept.files, vec![a.clone()]);
        assert_eq!(kept.extra, "3\nx\ty\n");

        let other = Stamp::new(&dir, "rules", Some("inputs 2")).unwrap();
        assert!(other.load().is_none(), "another build's inputs");
        let stubs = Stamp::new(&dir, "stubs", Some("inputs 1")).unwrap();
        assert!(stubs.load().is_none(), "another kind of output");
        assert!(Stamp::new(&dir, "rules", None).is_none());

        fs::write(&a, "ab").unwrap();
        assert!(stamp.load().is_none(), "an output changed since");
        stamp.keep(std::slice::from_ref(&a), "");
        assert!(stamp.load().is_some());
        fs::remove_file(&a).unwrap();
        assert!(stamp.load().is_none(), "an output removed since");
        stamp.forget();
        assert!(!dir.join(".ck_jit_rules.stamp").exists());
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_file_outside_the_directory_or_a_torn_stamp_keeps_nothing() {
        let dir = scratch("outside");
        let stamp = Stamp::new(&dir, "stubs", Some("i")).unwrap();
        stamp.keep(&[std::env::temp_dir().join("elsewhere")], "");
        assert!(!dir.join(".ck_jit_stubs.stamp").exists());
        let a = dir.join("a.cpp");
        fs::write(&a, "a").unwrap();
        stamp.keep(std::slice::from_ref(&a), "");
        let text = fs::read_to_string(dir.join(".ck_jit_stubs.stamp")).unwrap();
        let torn = &text[..text.find(EXTRA).unwrap()];
        fs::write(dir.join(".ck_jit_stubs.stamp"), torn).unwrap();
        assert!(stamp.load().is_none(), "no end line: torn");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn sets_round_trip_and_awkward_names_are_refused() {
        let sets = vec![
            vec!["a".to_string(), "b".to_string()],
            vec![],
            vec!["c".to_string()],
        ];
        assert_eq!(sets_of(&sets_text(&sets).unwrap()), sets);
        assert!(sets_text(&[vec!["a\tb".to_string()]]).is_none());
        assert!(sets_text(&[vec!["a\nb".to_string()]]).is_none());
    }
}
