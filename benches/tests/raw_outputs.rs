//! Every raw output kept under `benches/results/` is named in
//! `BENCHMARKS.md`, so a figure can be traced to the run that gave it and
//! a file nobody can find does not pile up. A name counts only whole: as
//! `benches/results/<name>` or as `<name>` not preceded by another
//! file-name character (`21-pack-first-call.txt` does not name
//! `pack-first-call.txt`), and never in a shell brace pattern.

use std::fs;
use std::path::{Path, PathBuf};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("benches/ has a parent")
        .to_path_buf()
}

/// The files under `dir`, as paths relative to it with `/` separators.
fn files_under(dir: &Path, rel: &str, out: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry"))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if e.file_type().expect("a file type").is_dir() {
            files_under(&e.path(), &path, out);
        } else {
            out.push(path);
        }
    }
}

/// Whether `text` names `file` whole: not as the tail of a longer name.
fn names(text: &str, file: &str) -> bool {
    let part_of_a_name = |c: char| c.is_ascii_alphanumeric() || "._-+/".contains(c);
    text.match_indices(file).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + file.len()..].chars().next();
        let starts_whole = match before {
            None => true,
            // `benches/results/<file>` names it; `other/<file>` does not.
            Some('/') => text[..at].ends_with("benches/results/"),
            Some(c) => !part_of_a_name(c),
        };
        // A trailing full stop ends a sentence; anything else of a name
        // (`x.txt.gz`, `x.txt-old`) makes it another file.
        let ends_whole = match after {
            None => true,
            Some('.') => !text[at + file.len() + 1..]
                .chars()
                .next()
                .is_some_and(part_of_a_name),
            Some(c) => !part_of_a_name(c),
        };
        starts_whole && ends_whole
    })
}

#[test]
fn every_file_under_benches_results_is_named_in_benchmarks_md() {
    let root = workspace();
    let doc = fs::read_to_string(root.join("BENCHMARKS.md")).expect("BENCHMARKS.md");
    let mut files = Vec::new();
    files_under(&root.join("benches/results"), "", &mut files);
    assert!(!files.is_empty(), "no raw outputs found");
    let unnamed: Vec<&String> = files.iter().filter(|f| !names(&doc, f)).collect();
    assert!(
        unnamed.is_empty(),
        "{} of the {} files under benches/results/ are named nowhere in BENCHMARKS.md; \
         name each beside the row it backs, say what it is, or remove it:\n  {}",
        unnamed.len(),
        files.len(),
        unnamed
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn a_name_counts_only_whole_never_as_part_of_another() {
    // Named: bare, under its directory, at the end of a sentence.
    assert!(names("raw: `3-miss.txt`)", "3-miss.txt"));
    assert!(names("see benches/results/3-miss.txt", "3-miss.txt"));
    assert!(names("is in 3-miss.txt. Then", "3-miss.txt"));
    // The tail of a longer name, another directory, a longer extension, a
    // brace pattern: not named.
    assert!(!names("`21-pack-first-call.txt`", "pack-first-call.txt"));
    assert!(!names("`12-cold-start-cc.txt`", "cold-start-cc.txt"));
    assert!(!names("`fuzz/corpus/3-miss.txt`", "3-miss.txt"));
    assert!(!names("`3-miss.txt.gz`", "3-miss.txt"));
    assert!(!names("`cold-start-{cc,hipcc}.txt`", "cold-start-cc.txt"));
}
