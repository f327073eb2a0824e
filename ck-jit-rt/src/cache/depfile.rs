//! Reads the Make-style dependency file a compiler writes with `-MD -MF`
//! (gcc, clang, hipcc, nvcc): the headers a compile read, which become part
//! of the cache entry.
//!
//! Input comes from a program ck-jit does not control: the parser accepts
//! any bytes, never panics, and returns the prerequisites of every rule in
//! order of first appearance, de-duplicated. [`headers`] turns them into
//! the hashed dependencies of a cache record.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::Path;

use crate::cache::{self, Dep};

/// The headers a compile read, from its dependency file `depfile`, each
/// with the hash of its contents now (after the compile) and, when the
/// file held still while it was hashed, its identity for the lookup's stat
/// shortcut. Paths are relative to `cwd`; the source itself is left out
/// (it is in the prekey). A missing or unreadable depfile means no headers,
/// and a header that vanished before it could be hashed is left out.
pub fn headers(depfile: &Path, cwd: &Path, source: &Path, roots: cache::Roots<'_>) -> Vec<Dep> {
    let text = fs::read_to_string(depfile).unwrap_or_default();
    let source_canon = crate::compile::real_path(source).ok();
    let mut seen = BTreeMap::new();
    for d in parse(&text) {
        let p = cwd.join(&d);
        let canon = crate::compile::real_path(&p).unwrap_or_else(|_| p.clone());
        if Some(&canon) == source_canon.as_ref() || p == source {
            continue;
        }
        let before = fs::metadata(&p).map(|m| cache::stat_string(&m));
        if let Ok(hash) = cache::file_hash(&p) {
            let after = fs::metadata(&p).map(|m| cache::stat_string(&m));
            // Only a file that held still while hashed gets a stat
            // shortcut; otherwise lookups re-hash it.
            let stat = match (before, after) {
                (Ok(b), Ok(a)) if a == b => a,
                _ => String::new(),
            };
            seen.insert(cache::dep_name(&p, roots), (hash, stat));
        }
    }
    seen.into_iter()
        .map(|(path, (hash, stat))| Dep { path, hash, stat })
        .collect()
}

/// Prerequisites of every rule in `text` (targets are dropped).
///
/// Handles `\`-newline continuations, `\ ` and `\#` escapes, `$$`, and the
/// phony rules `-MP` adds. Windows drive letters (`C:\x`) are not special
/// here: ck-jit runs on Linux.
pub fn parse(text: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut seen = HashSet::new();
    let mut in_prereqs = false;
    let mut word = String::new();
    let mut chars = text.chars().peekable();

    let mut flush = |word: &mut String, in_prereqs: bool, deps: &mut Vec<String>| {
        if !word.is_empty() {
            if in_prereqs && seen.insert(word.clone()) {
                deps.push(word.clone());
            }
            word.clear();
        }
    };

    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('\n') => {
                    chars.next();
                    flush(&mut word, in_prereqs, &mut deps);
                }
                Some('\r') => {
                    chars.next();
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    flush(&mut word, in_prereqs, &mut deps);
                }
                Some(&n @ (' ' | '#' | '\\' | ':')) => {
                    chars.next();
                    word.push(n);
                }
                _ => word.push('\\'),
            },
            '$' if chars.peek() == Some(&'$') => {
                chars.next();
                word.push('$');
            }
            ':' if !in_prereqs && matches!(chars.peek(), None | Some(' ' | '\t' | '\n' | '\r')) => {
                flush(&mut word, false, &mut deps);
                in_prereqs = true;
            }
            ' ' | '\t' => flush(&mut word, in_prereqs, &mut deps),
            '\n' | '\r' => {
                flush(&mut word, in_prereqs, &mut deps);
                in_prereqs = false;
            }
            _ => word.push(c),
        }
    }
    flush(&mut word, in_prereqs, &mut deps);
    deps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_style_with_continuations_and_phony_rules() {
        let text = "out.o: /src/a.cpp /inc/x.h \\\n /inc/with\\ space.h \\\n  ../rel/y.hpp\n\n/inc/x.h:\n\n/inc/with\\ space.h:\n";
        assert_eq!(
            parse(text),
            vec![
                "/src/a.cpp",
                "/inc/x.h",
                "/inc/with space.h",
                "../rel/y.hpp"
            ]
        );
    }

    #[test]
    fn dollar_and_crlf() {
        assert_eq!(parse("o: a$$b.h \\\r\n c.h\r\n"), vec!["a$b.h", "c.h"]);
    }

    #[test]
    fn garbage_does_not_panic() {
        for t in [
            "",
            ":",
            "\\",
            "a:\\",
            "::::",
            "\\\\\\",
            "$",
            "a: b\\",
            "é: ü\\ ö",
        ] {
            let _ = parse(t);
        }
        assert_eq!(parse("a: b\\"), vec!["b\\"]);
    }
}
