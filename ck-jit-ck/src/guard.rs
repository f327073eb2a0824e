//! A blob's conditional skeleton and what a compile keeps of it.
//!
//! CK wraps the specialisations of a blob in preprocessor conditionals on
//! the device pass's architecture macros (`#if !defined(__HIP_DEVICE_COMPILE__)
//! || (defined(__gfx9__) && !defined(__gfx950__))`): a target whose device
//! pass drops them has no kernel in the blob, whatever its file name says.
//! The [`Skeleton`] is what of a blob decides that: its conditional
//! directives (`#if`, `#ifdef`, `#ifndef`, `#elif`, `#else`, `#endif`,
//! nested to any depth), its `#define`, `#undef` and `#error`, and a mark
//! where each specialisation is. [`Skeleton::run`] follows them as the
//! preprocessor does, with the macros of one compile
//! ([`Macros`]), conditions evaluated by
//! [`cond`].
//!
//! It never guesses: malformed conditionals (an unterminated `#if`, a
//! stray `#else` or `#endif`, an `#elif` after `#else`) are an error at the
//! line the compiler would name, found when the blob is read whatever the
//! macros; a condition the compile rejects or the build cannot decide is
//! an error at its line when a run reaches it.

use std::fmt;

use crate::cond::{self, CondError};
use crate::macros::{directive_word, Macros};
use crate::Error;

/// Why a skeleton is malformed or could not be decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GuardError {
    /// The 1-based line of the directive.
    pub(crate) line: usize,
    /// What is wrong, as the compiler would say it, or the macro the
    /// build cannot know.
    pub(crate) why: String,
}

/// An [`Error::Parse`] with no file: `line N: why`.
impl From<GuardError> for Error {
    fn from(e: GuardError) -> Error {
        Error::Parse {
            file: None,
            line: e.line,
            why: e.why,
        }
    }
}

/// One element of a skeleton.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Item {
    /// A directive: its line, name (`if`, `define`) and the rest of it on
    /// one line.
    Directive {
        line: usize,
        word: String,
        rest: String,
    },
    /// Specialisation number `index` is at `line`.
    Mark { line: usize, index: usize },
}

/// The directives of a source that decide what a compile keeps of it, and
/// where its specialisations are (see the module docs). Written as text
/// (one item a line: `12 #if defined(X)`, `14 @0`), which is how the kept
/// index stores it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct Skeleton {
    items: Vec<Item>,
}

/// The directives a skeleton keeps: every one that changes what is kept
/// or makes the compile fail. `#include`, `#pragma`, `#line` and
/// `#warning` change neither (the headers' part is the macro set's).
const KEPT: &[&str] = &[
    "if", "ifdef", "ifndef", "elif", "elifdef", "elifndef", "else", "endif", "define", "undef",
    "error",
];

/// Directives that change nothing a skeleton decides.
const IGNORED: &[&str] = &["include", "include_next", "pragma", "line", "warning", "ident", ""];

/// An open conditional while a skeleton runs.
struct Open {
    line: usize,
    word: &'static str,
    /// Whether the group around it is kept.
    outer: bool,
    /// Whether one of its branches has been kept (or none may be).
    taken: bool,
    /// Whether the branch being read is kept.
    live: bool,
    seen_else: bool,
}

impl Skeleton {
    /// The skeleton of a source from its directives (each a line and the
    /// text from `#` on, continued lines included) and the lines of its
    /// specialisations, in order; malformed conditionals are an error.
    pub(crate) fn new<'a>(
        directives: impl IntoIterator<Item = (usize, &'a str)>,
        marks: &[usize],
    ) -> Result<Skeleton, GuardError> {
        let mut items = Vec::new();
        let mut marks = marks.iter().copied().enumerate().peekable();
        for (line, text) in directives {
            while let Some((index, m)) = marks.next_if(|(_, m)| *m < line) {
                items.push(Item::Mark { line: m, index });
            }
            let text = text.replace("\\\r\n", " ").replace("\\\n", " ");
            let Some(word) = directive_word(&text) else {
                continue;
            };
            if IGNORED.contains(&word) {
                continue;
            }
            let d = text.trim_start().trim_start_matches('#').trim_start();
            let rest = d[word.len()..].trim().replace(['\n', '\r'], " ");
            items.push(Item::Directive {
                line,
                word: word.to_string(),
                rest,
            });
        }
        for (index, m) in marks {
            items.push(Item::Mark { line: m, index });
        }
        let s = Skeleton { items };
        s.walk(&mut Macros::new(), false)?;
        Ok(s)
    }

    /// The skeleton of source text: every line whose first character
    /// other than blanks is `#` (with its continuation lines), and the
    /// specialisations at `marks`.
    pub(crate) fn of_source(src: &str, marks: &[usize]) -> Result<Skeleton, GuardError> {
        let mut directives = Vec::new();
        let mut lines = src.lines().enumerate();
        while let Some((n, line)) = lines.next() {
            if !line.trim_start().starts_with('#') {
                continue;
            }
            let mut text = line.to_string();
            while text.ends_with('\\') {
                let Some((_, next)) = lines.next() else { break };
                text.pop();
                text.push(' ');
                text.push_str(next);
            }
            directives.push((n + 1, text));
        }
        Skeleton::new(directives.iter().map(|(n, t)| (*n, t.as_str())), marks)
    }

    /// Whether it has no directive at all (every specialisation is kept by
    /// every compile).
    pub fn is_trivial(&self) -> bool {
        self.items.iter().all(|i| matches!(i, Item::Mark { .. }))
    }

    /// Which specialisations a compile with `macros` keeps, by number;
    /// `macros` is left with what the source `#define`s and `#undef`s in
    /// the groups kept.
    ///
    /// # Errors
    ///
    /// [`Error::Parse`] at the line of a condition the compile rejects or
    /// the build cannot decide, or of an `#error` kept.
    pub fn run(&self, macros: &mut Macros) -> Result<Vec<bool>, Error> {
        self.try_run(macros).map_err(Error::from)
    }

    /// [`Skeleton::run`], with the line and reason apart.
    pub(crate) fn try_run(&self, macros: &mut Macros) -> Result<Vec<bool>, GuardError> {
        self.walk(macros, true)
    }

    /// Follows the directives; with `evaluate` false nothing is evaluated
    /// and only the structure is checked.
    fn walk(&self, macros: &mut Macros, evaluate: bool) -> Result<Vec<bool>, GuardError> {
        let marks = self
            .items
            .iter()
            .filter(|i| matches!(i, Item::Mark { .. }))
            .count();
        let mut kept = vec![false; marks];
        let mut stack: Vec<Open> = Vec::new();
        let live = |stack: &[Open]| evaluate && stack.last().is_none_or(|o| o.live);
        for item in &self.items {
            let (line, word, rest) = match item {
                Item::Mark { index, .. } => {
                    if let Some(k) = kept.get_mut(*index) {
                        *k = live(&stack);
                    }
                    continue;
                }
                Item::Directive { line, word, rest } => (*line, word.as_str(), rest.as_str()),
            };
            let err = |why: String| GuardError { line, why };
            let test = |macros: &Macros, word: &str| -> Result<bool, GuardError> {
                let expr = match word {
                    "if" | "elif" => rest.to_string(),
                    _ => {
                        let name = first_identifier(rest).ok_or_else(|| {
                            err(format!("no macro name given in #{word} directive"))
                        })?;
                        let not = if word.ends_with("ndef") { "!" } else { "" };
                        format!("{not}defined({name})")
                    }
                };
                cond::try_evaluate(&expr, macros)
                    .map(cond::Value::is_true)
                    .map_err(|e| match e {
                        CondError::Invalid(why) => err(format!("#{word} {rest}: {why}")),
                        unknown => err(unknown.to_string()),
                    })
            };
            match word {
                "if" | "ifdef" | "ifndef" => {
                    let outer = live(&stack);
                    let v = outer && test(macros, word)?;
                    stack.push(Open {
                        line,
                        word: match word {
                            "if" => "#if",
                            "ifdef" => "#ifdef",
                            _ => "#ifndef",
                        },
                        outer,
                        taken: v || !outer,
                        live: v,
                        seen_else: false,
                    });
                }
                "elif" | "elifdef" | "elifndef" => {
                    let Some(top) = stack.last() else {
                        return Err(err(format!("#{word} without #if")));
                    };
                    if top.seen_else {
                        return Err(err(format!("#{word} after #else")));
                    }
                    let evaluate_it = top.outer && !top.taken;
                    let v = evaluate_it && test(macros, word)?;
                    if let Some(top) = stack.last_mut() {
                        top.live = v;
                        top.taken |= v;
                    }
                }
                "else" => {
                    let Some(top) = stack.last_mut() else {
                        return Err(err("#else without #if".into()));
                    };
                    if top.seen_else {
                        return Err(err("#else after #else".into()));
                    }
                    top.seen_else = true;
                    top.live = top.outer && !top.taken;
                    top.taken = true;
                }
                "endif" if stack.pop().is_none() => {
                    return Err(err("#endif without #if".into()));
                }
                "define" | "undef" if live(&stack) => macros
                    .directive(word, rest)
                    .map_err(|why| err(format!("#{word}: {why}")))?,
                "error" if live(&stack) => return Err(err(format!("#error {rest}"))),
                w if !KEPT.contains(&w) && live(&stack) => {
                    return Err(err(format!("invalid preprocessing directive #{w}")))
                }
                _ => {}
            }
        }
        if let Some(open) = stack.last() {
            return Err(GuardError {
                line: open.line,
                why: format!("unterminated {} (unterminated conditional directive)", open.word),
            });
        }
        Ok(kept)
    }

    /// The conditionals around specialisation `index`, outermost first, as
    /// written (`#if defined(__gfx9__)`, `#else` of `#if X` at line 3), for
    /// a message about it.
    pub fn conditions_of(&self, index: usize) -> Vec<String> {
        let mut open: Vec<Vec<String>> = Vec::new();
        for item in &self.items {
            match item {
                Item::Mark { index: i, .. } if *i == index => {
                    return open.into_iter().map(|branches| branches.join(" then ")).collect();
                }
                Item::Mark { .. } => {}
                Item::Directive { word, rest, .. } => match word.as_str() {
                    "if" | "ifdef" | "ifndef" => open.push(vec![format!("#{word} {rest}")]),
                    "elif" | "elifdef" | "elifndef" | "else" => {
                        if let Some(top) = open.last_mut() {
                            top.push(format!("#{word} {rest}").trim_end().to_string());
                        }
                    }
                    "endif" => {
                        open.pop();
                    }
                    _ => {}
                },
            }
        }
        Vec::new()
    }

    /// The skeleton as `cpp` reads it: each directive on its own line and
    /// `marker(index)` where specialisation `index` is.
    pub fn to_source(&self, marker: &dyn Fn(usize) -> String) -> String {
        let mut s = String::new();
        for item in &self.items {
            match item {
                Item::Directive { word, rest, .. } => {
                    s.push('#');
                    s.push_str(word);
                    if !rest.is_empty() {
                        s.push(' ');
                        s.push_str(rest);
                    }
                }
                Item::Mark { index, .. } => s.push_str(&marker(*index)),
            }
            s.push('\n');
        }
        s
    }

    /// The skeleton read back from its text ([`Display`](fmt::Display)).
    pub fn parse(text: &str) -> Option<Skeleton> {
        let mut items = Vec::new();
        for l in text.lines() {
            let (line, item) = l.split_once(' ')?;
            let line: usize = line.parse().ok()?;
            if let Some(index) = item.strip_prefix('@') {
                items.push(Item::Mark {
                    line,
                    index: index.parse().ok()?,
                });
            } else {
                let d = item.strip_prefix('#')?;
                let (word, rest) = d.split_once(' ').unwrap_or((d, ""));
                items.push(Item::Directive {
                    line,
                    word: word.to_string(),
                    rest: rest.to_string(),
                });
            }
        }
        Some(Skeleton { items })
    }
}

impl fmt::Display for Skeleton {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for item in &self.items {
            match item {
                Item::Directive { line, word, rest } => writeln!(f, "{line} #{word} {rest}")?,
                Item::Mark { line, index } => writeln!(f, "{line} @{index}")?,
            }
        }
        Ok(())
    }
}

impl serde::Serialize for Skeleton {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for Skeleton {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Skeleton, D::Error> {
        let text = String::deserialize(d)?;
        Skeleton::parse(&text).ok_or_else(|| serde::de::Error::custom("not a blob skeleton"))
    }
}

fn first_identifier(s: &str) -> Option<&str> {
    let s = s.trim_start();
    let len = s
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(s.len());
    let name = &s[..len];
    (!name.is_empty() && !name.as_bytes()[0].is_ascii_digit()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::macros::Pass;

    #[test]
    fn a_gfx9_guard_keeps_the_specialisation_for_gfx942_and_not_gfx1100() {
        let src = "#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__GFX9__) && true)\n\
                   template<> int f<int>();\n#endif\n";
        let s = Skeleton::of_source(src, &[2]).unwrap();
        let mut gfx942 = Macros::predefined("gfx942", Pass::Device, None);
        assert_eq!(s.try_run(&mut gfx942).unwrap(), [true]);
        let mut gfx1100 = Macros::predefined("gfx1100", Pass::Device, None);
        assert_eq!(s.try_run(&mut gfx1100).unwrap(), [false]);
    }

    fn kept(src: &str, marks: &[usize], target: &str) -> Result<Vec<bool>, GuardError> {
        Skeleton::of_source(src, marks)?.try_run(&mut Macros::predefined(target, Pass::Device, None))
    }

    #[test]
    fn nested_branches_and_defines_are_followed() {
        let src = "#define A 2\n#if A == 2\n#ifdef __gfx942__\nx\n#elif defined(__gfx950__)\ny\n\
                   #else\nz\n#endif\n#else\nw\n#endif\n#undef A\n#if A\nv\n#endif\n";
        assert_eq!(
            kept(src, &[4, 6, 8, 11, 15], "gfx942").unwrap(),
            [true, false, false, false, false]
        );
        assert_eq!(
            kept(src, &[4, 6, 8, 11, 15], "gfx1100").unwrap(),
            [false, false, true, false, false]
        );
    }

    #[test]
    fn malformed_conditionals_are_errors_at_the_compilers_line() {
        for (src, line, why) in [
            ("#ifdef __clang__\nx\n", 1, "unterminated #ifdef"),
            ("#if 1\n#if 0\n#endif\n", 1, "unterminated #if"),
            ("x\n#endif\n", 2, "#endif without #if"),
            ("#else\n", 1, "#else without #if"),
            ("#if 0\n#else\n#elif 1\n#endif\n", 3, "#elif after #else"),
            ("#if 1\n#else\n#else\n#endif\n", 3, "#else after #else"),
        ] {
            let e = Skeleton::of_source(src, &[]).unwrap_err();
            assert_eq!((e.line, e.why.contains(why)), (line, true), "{src}: {e:?}");
        }
        // Structure is checked in skipped groups too, conditions not.
        assert!(Skeleton::of_source("#if 0\n#if 1/0\n#else\n#else\n#endif\n#endif\n", &[]).is_err());
        assert_eq!(kept("#if 0\n#if 1/0\n#endif\n#endif\n", &[], "gfx942"), Ok(vec![]));
        let e = kept("\n#if 1/0\n#endif\n", &[], "gfx942").unwrap_err();
        assert_eq!(e.line, 2);
        let e = kept("#error stop\n", &[], "gfx942").unwrap_err();
        assert!(e.why.contains("#error stop"), "{e:?}");
    }

    #[test]
    fn the_text_form_reads_back() {
        let src = "#if !defined(__HIP_DEVICE_COMPILE__) || \\\n  (defined(__gfx9__))\nx\n#endif // c\n";
        let s = Skeleton::of_source(src, &[3]).unwrap();
        assert_eq!(Skeleton::parse(&s.to_string()), Some(s.clone()));
        assert_eq!(
            s.conditions_of(0),
            ["#if !defined(__HIP_DEVICE_COMPILE__) ||    (defined(__gfx9__))"]
        );
        assert!(!s.is_trivial());
    }
}
