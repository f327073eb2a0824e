//! Generated `#if` expressions for comparing the crate's evaluator with
//! gcc's `cpp`: shared by the seeded test (`guard_cpp.rs`) and the fuzz
//! target (`fuzz/fuzz_targets/cond.rs`, which includes this file), so
//! both draw from one grammar: every operator, literals of every base and
//! suffix, character literals, `defined` both ways, `true`/`false`,
//! object-like macros (one empty, one defined through another), undefined
//! identifiers, `?:`, parentheses and the comma, at random depths.
#![allow(dead_code)]

/// The macros every expression is evaluated with, as `-D` flags would
/// give them: name and replacement.
pub const MACROS: &[(&str, &str)] = &[("A", "3"), ("B", "(-1)"), ("C", "A + 1"), ("E", "")];

const ATOMS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "7",
    "8",
    "15",
    "16",
    "31",
    "63",
    "64",
    "65",
    "100",
    "0x7f",
    "0XFFu",
    "010",
    "0b101",
    "1u",
    "5ll",
    "6ULL",
    "7lu",
    "1'000",
    "9223372036854775807",
    "18446744073709551615u",
    "0xffffffffffffffff",
    "'a'",
    "'\\n'",
    "'\\xff'",
    "'\\0'",
    "true",
    "false",
    "A",
    "B",
    "C",
    "E",
    "U",
    "defined A",
    "defined(B)",
    "defined U",
    "defined(E)",
];

const BINARY: &[&str] = &[
    "*", "/", "%", "+", "-", "<<", ">>", "<", ">", "<=", ">=", "==", "!=", "&", "^", "|", "&&",
    "||",
];

const UNARY: &[&str] = &["!", "~", "-", "+"];

/// An expression drawn with `next` (any source of numbers), at most
/// `depth` operators deep.
pub fn expression(next: &mut dyn FnMut() -> u32, depth: u32) -> String {
    let pick = |next: &mut dyn FnMut() -> u32, n: usize| next() as usize % n;
    if depth == 0 || next().is_multiple_of(4) {
        return ATOMS[pick(next, ATOMS.len())].to_string();
    }
    match next() % 10 {
        0 | 1 => format!(
            "{}{}",
            UNARY[pick(next, UNARY.len())],
            expression(next, depth - 1)
        ),
        2 => format!("({})", expression(next, depth - 1)),
        3 => format!(
            "{} ? {} : {}",
            expression(next, depth - 1),
            expression(next, depth - 1),
            expression(next, depth - 1)
        ),
        4 if next().is_multiple_of(4) => format!(
            "({}, {})",
            expression(next, depth - 1),
            expression(next, depth - 1)
        ),
        _ => format!(
            "{} {} {}",
            expression(next, depth - 1),
            BINARY[pick(next, BINARY.len())],
            expression(next, depth - 1)
        ),
    }
}

/// `v` as an `#if` operand of the same value and signedness.
pub fn literal(bits: u64, unsigned: bool) -> String {
    if unsigned {
        format!("{bits}u")
    } else if bits as i64 == i64::MIN {
        "(-9223372036854775807 - 1)".to_string()
    } else {
        format!("({})", bits as i64)
    }
}

/// Three `#if` blocks testing one expression numbered `k` that the crate
/// evaluated to `value` (bits and signedness), or one testing that it is
/// accepted when the crate rejects it: the marker lines that survive say
/// what cpp decided. Its lines, for matching cpp's errors to it.
pub fn blocks(k: usize, expr: &str, value: Option<(u64, bool)>) -> String {
    match value {
        Some((bits, unsigned)) => format!(
            "#if {expr}\nck_jit_true_{k}\n#endif\n\
             #if ({expr}) == {lit}\nck_jit_value_{k}\n#endif\n\
             #if (({expr}) * 0 - 1) < 0\nck_jit_signed_{k}\n#endif\n",
            lit = literal(bits, unsigned)
        ),
        None => format!("#if {expr}\nck_jit_true_{k}\n#else\nck_jit_false_{k}\n#endif\n"),
    }
}

/// Whether cpp's output (`out`) and error lines agree with the crate's
/// verdict on expression `k`, or why not.
pub fn agrees(
    k: usize,
    expr: &str,
    value: Option<(u64, bool)>,
    out: &std::collections::HashSet<String>,
    failed: bool,
) -> Result<(), String> {
    let has = |what: &str| out.contains(&format!("ck_jit_{what}_{k}"));
    match value {
        None if failed => Ok(()),
        None => Err(format!("'{expr}': the crate rejects it, cpp accepts it")),
        Some(_) if failed => Err(format!(
            "'{expr}': cpp rejects it, the crate gives {value:?}"
        )),
        Some((bits, unsigned)) => {
            let want = (bits != 0, true, !unsigned);
            let got = (has("true"), has("value"), has("signed"));
            if want == got {
                Ok(())
            } else {
                Err(format!(
                    "'{expr}': the crate gives {} ({}), cpp says (true, equal, signed) = {got:?}",
                    literal(bits, unsigned),
                    if unsigned { "unsigned" } else { "signed" }
                ))
            }
        }
    }
}
