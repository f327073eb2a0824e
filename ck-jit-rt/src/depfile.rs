//! Reads the Make-style dependency file a compiler writes with `-MD -MF`
//! (gcc, clang, hipcc, nvcc): the headers a compile read, which become part
//! of the cache entry.
//!
//! Input comes from a program ck-jit does not control: the parser accepts
//! any bytes, never panics, and returns the prerequisites of every rule in
//! order of first appearance, de-duplicated.

use std::collections::HashSet;

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
