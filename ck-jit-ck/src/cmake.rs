//! The compile options CK's own CMake gives the FMHA sources, read from the
//! version's `example/ck_tile/01_fmha/CMakeLists.txt` instead of copied
//! from one version: every `list(APPEND <var> ...)` into a variable whose
//! name holds `FMHA_FWD` or `FMHA_BWD` and `COMPILE_OPTIONS` (the
//! `INTERFACE` ones, for CK's own example programs, left out), under the
//! `if()`/`else()` branches CMake takes with nothing set on its command line.
//!
//! Only the conditions such files use are understood: `NOT DEFINED VAR`,
//! `VAR` (true for `ON`, `TRUE`, `1`, `YES`), and `NOT` of those; any other
//! condition is taken as false, as for a variable nobody set. Nothing is run.

use std::collections::HashMap;
use std::fs;
use std::path::Path;

/// The options CK's CMake gives forward and backward sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FmhaOptions {
    /// Options of the forward sources (every kind but `bwd_*`).
    pub fwd: Vec<String>,
    /// Options of the backward sources.
    pub bwd: Vec<String>,
}

/// The options of `example_dir/CMakeLists.txt`; empty when it is missing.
pub fn fmha_compile_options(example_dir: &Path) -> FmhaOptions {
    match fs::read_to_string(example_dir.join("CMakeLists.txt")) {
        Ok(text) => parse(&text),
        Err(_) => FmhaOptions::default(),
    }
}

/// The commands of a CMake file: (lowercased name, arguments), comments
/// dropped, quotes kept on quoted arguments.
fn commands(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        let head = &rest[..open];
        let name = head
            .rsplit(|c: char| c.is_whitespace() || c == ')')
            .next()
            .unwrap_or("")
            .trim();
        // Skip a comment line holding a parenthesis.
        let line_start = head.rfind('\n').map_or(0, |p| p + 1);
        let in_comment = head[line_start..].contains('#');
        let mut depth = 0usize;
        let mut end = None;
        let mut quoted = false;
        for (i, c) in rest[open..].char_indices() {
            match c {
                '"' => quoted = !quoted,
                '(' if !quoted => depth += 1,
                ')' if !quoted => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(open + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        let body = &rest[open + 1..end];
        rest = &rest[end + 1..];
        if in_comment || name.is_empty() {
            continue;
        }
        let args = body
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .flat_map(|l| l.split_whitespace())
            .map(str::to_string)
            .collect();
        out.push((name.to_ascii_lowercase(), args));
    }
    out
}

fn truthy(value: Option<&String>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.to_ascii_uppercase().as_str(),
            "ON" | "TRUE" | "1" | "YES" | "Y"
        )
    })
}

fn condition(args: &[String], vars: &HashMap<String, String>) -> bool {
    match args {
        [not, rest @ ..] if not == "NOT" => !condition(rest, vars),
        [defined, var] if defined == "DEFINED" => vars.contains_key(var),
        [var] => truthy(vars.get(var)),
        _ => false,
    }
}

enum Direction {
    Fwd,
    Bwd,
}

/// Whether `var` holds the options of the FMHA blobs themselves:
/// `FMHA_FWD_PRIVATE_COMPILE_OPTIONS` (CK 2025) or
/// `EXAMPLE_FMHA_FWD_COMPILE_OPTIONS` (CK 2024), and the BWD ones; not the
/// `INTERFACE` options for CK's example programs, nor the options of other
/// targets such as `EXAMPLE_FMHA_FWD_V3_COMPILE_OPTIONS` (`--save-temps`).
fn options_of(var: &str) -> Option<Direction> {
    let rest = var.strip_prefix("EXAMPLE_").unwrap_or(var);
    let (direction, rest) = if let Some(r) = rest.strip_prefix("FMHA_FWD_") {
        (Direction::Fwd, r)
    } else if let Some(r) = rest.strip_prefix("FMHA_BWD_") {
        (Direction::Bwd, r)
    } else {
        return None;
    };
    matches!(rest, "COMPILE_OPTIONS" | "PRIVATE_COMPILE_OPTIONS").then_some(direction)
}

/// The options `text` appends, as CMake would evaluate it with nothing set.
pub fn parse(text: &str) -> FmhaOptions {
    let mut vars: HashMap<String, String> = HashMap::new();
    // One entry per open `if`: (this branch taken, some branch taken).
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let mut out = FmhaOptions::default();
    for (name, args) in commands(text) {
        let active = stack.iter().all(|(on, _)| *on);
        match name.as_str() {
            "if" => {
                let on = active && condition(&args, &vars);
                stack.push((on, on));
            }
            "elseif" => {
                if let Some((on, taken)) = stack.pop() {
                    let _ = on;
                    let parent = stack.iter().all(|(on, _)| *on);
                    let now = parent && !taken && condition(&args, &vars);
                    stack.push((now, taken || now));
                }
            }
            "else" => {
                if let Some((_, taken)) = stack.pop() {
                    let parent = stack.iter().all(|(on, _)| *on);
                    stack.push((parent && !taken, true));
                }
            }
            "endif" => {
                stack.pop();
            }
            "set" if active => {
                if let [var, value, ..] = args.as_slice() {
                    vars.insert(var.clone(), value.clone());
                }
            }
            "list" if active => {
                if let [op, var, items @ ..] = args.as_slice() {
                    if op != "APPEND" {
                        continue;
                    }
                    let target = match options_of(var) {
                        Some(Direction::Fwd) => &mut out.fwd,
                        Some(Direction::Bwd) => &mut out.bwd,
                        None => continue,
                    };
                    for item in items {
                        let item = item.trim_matches('"').to_string();
                        if !target.contains(&item) {
                            target.push(item);
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branches_are_taken_as_cmake_takes_them_with_nothing_set() {
        let text = r#"
# a comment (with parentheses)
list(APPEND FMHA_FWD_PRIVATE_COMPILE_OPTIONS -Wno-float-equal)
list(APPEND FMHA_BWD_PRIVATE_COMPILE_OPTIONS -Wno-float-equal)
if(NOT DEFINED FMHA_FWD_FAST_EXP2)
  set(FMHA_FWD_FAST_EXP2 ON)
endif()
if(FMHA_FWD_FAST_EXP2)
  list(APPEND FMHA_FWD_PRIVATE_COMPILE_OPTIONS -DCK_TILE_FMHA_FWD_FAST_EXP2=1 -fgpu-flush-denormals-to-zero)
else()
  list(APPEND FMHA_FWD_PRIVATE_COMPILE_OPTIONS -DCK_TILE_FMHA_FWD_FAST_EXP2=0)
endif()
if("fwd_splitkv" IN_LIST FMHA_FWD_ENABLE_APIS)
  list(APPEND FMHA_FWD_INTERFACE_COMPILE_OPTIONS -DCK_TILE_FMHA_FWD_SPLITKV_API=1)
else()
  list(APPEND FMHA_FWD_INTERFACE_COMPILE_OPTIONS -DCK_TILE_FMHA_FWD_SPLITKV_API=0)
endif()
if(CK_USE_OCP_FP8)
  list(APPEND FMHA_FWD_PRIVATE_COMPILE_OPTIONS -DCK_TILE_USE_OCP_FP8)
endif()
list(APPEND FMHA_BWD_PRIVATE_COMPILE_OPTIONS -DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3)
list(APPEND EXAMPLE_FMHA_FWD_V3_COMPILE_OPTIONS
  -fgpu-flush-denormals-to-zero
  --save-temps
)
list(APPEND EXAMPLE_FMHA_BWD_COMPILE_OPTIONS -Wno-undefined-func-template)
"#;
        let o = parse(text);
        assert_eq!(
            o.fwd,
            [
                "-Wno-float-equal",
                "-DCK_TILE_FMHA_FWD_FAST_EXP2=1",
                "-fgpu-flush-denormals-to-zero"
            ]
        );
        // Another target's options (fwd_v3's --save-temps) stay out.
        assert_eq!(
            o.bwd,
            [
                "-Wno-float-equal",
                "-DCK_TILE_FLOAT_TO_BFLOAT16_DEFAULT=3",
                "-Wno-undefined-func-template"
            ]
        );
    }

    #[test]
    fn garbage_gives_nothing_and_never_panics() {
        for text in [
            "",
            "(((",
            "if(",
            "endif() else() list(APPEND)",
            ")))",
            "set(A",
        ] {
            let o = parse(text);
            assert!(o.fwd.is_empty() && o.bwd.is_empty(), "{text:?}");
        }
    }
}
