//! The crate's rooms and their order: a room (a top-level module, a folder
//! or a file under `src/`) uses only rooms below it in [`ROOMS`], never one
//! above, so the crate has no import circle and can be read from the
//! bottom up. Each folder's module doc says what the room owns.

use std::fs;
use std::path::{Path, PathBuf};

/// Bottom first. A new top-level module must be placed here.
const ROOMS: &[&str] = &[
    "fixed_hash",
    "path_bytes",
    "error",
    "config",
    "object",
    "compile",
    "gpu",
    "cache",
    "runtime",
    "family",
    "declared",
    "pack",
];

/// Every `.rs` file under `src/` but `lib.rs`, as (room, path relative to
/// `src/`, code): comments and unit-test modules left out.
fn sources() -> Vec<(String, String, String)> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<(String, String, String)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                if rel == "lib.rs" {
                    continue;
                }
                let room = rel
                    .split('/')
                    .next()
                    .unwrap()
                    .trim_end_matches(".rs")
                    .to_string();
                let text = fs::read_to_string(&path).unwrap();
                let code: Vec<&str> = text
                    .lines()
                    .map(|l| l.split("//").next().unwrap_or_default())
                    .collect();
                let code = code.join("\n");
                let code = code.split("#[cfg(test)]").next().unwrap_or_default();
                out.push((room, rel, code.to_string()));
            }
        }
    }
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    walk(&dir, &dir, &mut out);
    out.sort();
    assert!(
        out.len() >= 20,
        "expected the crate's modules, found {}",
        out.len()
    );
    out
}

/// The rooms `code` names through `crate::<room>`.
fn rooms_used(code: &str) -> Vec<String> {
    let mut used = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && !used.contains(&name) {
            used.push(name);
        }
    }
    used
}

#[test]
fn every_module_is_in_a_listed_room() {
    for (room, rel, _) in sources() {
        assert!(
            ROOMS.contains(&room.as_str()),
            "src/{rel} is in room `{room}`, which ROOMS does not list: place it"
        );
    }
}

#[test]
fn a_room_uses_only_rooms_below_it() {
    let rank = |r: &str| ROOMS.iter().position(|x| *x == r);
    let mut wrong = Vec::new();
    for (room, rel, code) in sources() {
        let Some(mine) = rank(&room) else { continue };
        for used in rooms_used(&code) {
            if let Some(theirs) = rank(&used) {
                if theirs > mine {
                    wrong.push(format!("src/{rel} ({room}) uses {used}"));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "rooms used from below:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_check_sees_a_use_from_below() {
    assert_eq!(
        rooms_used("use crate::runtime::Runtime;\nlet x = crate::cache::Cache::open();"),
        ["runtime", "cache"]
    );
}

#[test]
fn every_folder_says_what_it_owns_and_may_use() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    for room in ROOMS {
        let folder = dir.join(room).join("mod.rs");
        if !folder.exists() {
            continue;
        }
        let text = fs::read_to_string(&folder).unwrap();
        let doc: String = text
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(
            doc.contains("Owns") && doc.contains("May use"),
            "src/{room}/mod.rs: its module doc must say what the room owns and may use"
        );
    }
}
