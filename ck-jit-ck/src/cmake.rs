//! The compile options CK's own CMake gives the FMHA sources, read from the
//! version's CMake files instead of copied from one version.
//!
//! From `example/ck_tile/01_fmha/CMakeLists.txt`: every `list(APPEND <var>
//! ...)` into a variable whose name holds `FMHA_FWD` or `FMHA_BWD` and
//! `COMPILE_OPTIONS` (the `INTERFACE` ones, for CK's own example programs,
//! left out). From the tree's top-level `CMakeLists.txt`: the C++ standard
//! (`CMAKE_HIP_STANDARD`, else `CMAKE_CXX_STANDARD`, which CK sets from its
//! `CK_CXX_STANDARD` cache variable) and the `add_compile_options` that sit
//! under a condition on the HIP version. Both are read under the
//! `if()`/`else()` branches CMake takes with nothing set on its command line.
//!
//! Only the conditions such files use are understood: `NOT`, `AND`, `OR`,
//! `DEFINED VAR`, `VAR` (true for `ON`, `TRUE`, `1`, `YES`), `IN_LIST`,
//! `STREQUAL` and the numeric and `VERSION_` comparisons; any other
//! condition (`MATCHES`, a parenthesised group, ...) is taken as false, as
//! for a variable nobody set. `${VAR}` is expanded; `math()` is not run.
//!
//! The HIP version is that of the compiler CMake found, which the build
//! script does not know (it never starts the compiler). The rule: with no
//! version given, `${hip_VERSION_FLAT}` expands to nothing, so every
//! condition on it is false and no HIP-version flag is recorded: CK adds
//! them only for compilers it probed, and a flag an older or upstream clang
//! rejects (`-mllvm -amdgpu-coerce-illegal-types=1`) would fail every
//! compile, while leaving one out costs at most speed. With a version given,
//! the conditions are evaluated for it, and each compiler flag CK probes
//! with `check_cxx_compiler_flag` is taken as accepted (CK probes only
//! under the version condition that says the compiler has it).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

use super::error::{io_err, Error};

/// The options CK's CMake gives forward and backward sources.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FmhaOptions {
    /// Options of the forward sources (every kind but `bwd_*`).
    pub fwd: Vec<String>,
    /// Options of the backward sources.
    pub bwd: Vec<String>,
}

/// What CK's top-level `CMakeLists.txt` gives every HIP source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopLevelOptions {
    /// The C++ standard, as CMake's number (`20`); `None` when the file
    /// sets none.
    pub standard: Option<String>,
    /// The flags added under a condition on the HIP version that holds for
    /// the version given (none without one), `SHELL:` groups split.
    pub hip_flags: Vec<String>,
}

/// A HIP version as CK's CMake compares it: `hip_VERSION_MAJOR`, `_MINOR`
/// and `_PATCH` (`6.1.40091` is ROCm 6.1's HIP).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HipVersion {
    /// `hip_VERSION_MAJOR`.
    pub major: u32,
    /// `hip_VERSION_MINOR`.
    pub minor: u32,
    /// `hip_VERSION_PATCH`.
    pub patch: u32,
}

impl HipVersion {
    /// `MAJOR.MINOR.PATCH`, anything after a `-` ignored (`hipconfig
    /// --version` prints `6.4.43482-0`); `None` for anything else.
    pub fn parse(text: &str) -> Option<HipVersion> {
        let numbers = text.split('-').next().unwrap_or("");
        let mut parts = numbers.split('.').map(|p| p.parse::<u32>().ok());
        match (parts.next(), parts.next(), parts.next(), parts.next()) {
            (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => Some(HipVersion {
                major,
                minor,
                patch,
            }),
            _ => None,
        }
    }

    /// The variables CMake's `find_package(hip)` sets, and the flat number
    /// CK's top-level file computes from them with `math()` (which is not
    /// run here).
    fn variables(&self) -> Vec<(String, String)> {
        let HipVersion {
            major,
            minor,
            patch,
        } = *self;
        let flat = (u64::from(major) * 1000 + u64::from(minor)) * 100_000 + u64::from(patch);
        let mut out = Vec::new();
        for prefix in ["hip", "HIP"] {
            out.push((format!("{prefix}_VERSION_MAJOR"), major.to_string()));
            out.push((format!("{prefix}_VERSION_MINOR"), minor.to_string()));
            out.push((format!("{prefix}_VERSION_PATCH"), patch.to_string()));
            out.push((
                format!("{prefix}_VERSION"),
                format!("{major}.{minor}.{patch}"),
            ));
        }
        out.push(("hip_VERSION_FLAT".into(), flat.to_string()));
        out
    }
}

/// The options of `example_dir/CMakeLists.txt`; empty when it is missing.
pub fn fmha_compile_options(example_dir: &Path) -> FmhaOptions {
    match fs::read_to_string(example_dir.join("CMakeLists.txt")) {
        Ok(text) => parse(&text),
        Err(_) => FmhaOptions::default(),
    }
}

/// The options of the CK tree's top-level `CMakeLists.txt`, `None` when the
/// tree has none (a copy of just `include/` and `example/`, or CK older than
/// the file's standard setting).
pub fn top_level_options(
    ck: &Path,
    hip: Option<HipVersion>,
) -> Result<Option<TopLevelOptions>, Error> {
    let path = ck.join("CMakeLists.txt");
    match fs::read_to_string(&path) {
        Ok(text) => Ok(Some(parse_top_level(&text, hip))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(&path)(e)),
    }
}

/// `text` with every `#` comment removed (a `#` inside quotes is kept), so
/// that a parenthesis or quote in a comment cannot unbalance a command.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    let mut comment = false;
    let mut escaped = false;
    for c in text.chars() {
        if comment {
            if c == '\n' {
                comment = false;
                out.push(c);
            }
            continue;
        }
        match c {
            '\\' if quoted && !escaped => {
                escaped = true;
                out.push(c);
                continue;
            }
            '"' if !escaped => quoted = !quoted,
            '#' if !quoted => {
                comment = true;
                continue;
            }
            _ => {}
        }
        escaped = false;
        out.push(c);
    }
    out
}

/// The arguments of one command body: split at whitespace outside quotes,
/// quotes kept (`"SHELL: -mllvm x"` is one argument).
fn arguments(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut escaped = false;
    for c in body.chars() {
        if c.is_whitespace() && !quoted {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        if c == '"' && !escaped {
            quoted = !quoted;
        }
        escaped = c == '\\' && quoted && !escaped;
        current.push(c);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// The commands of a CMake file: (lowercased name, arguments), comments
/// dropped, quotes kept on quoted arguments.
fn commands(text: &str) -> Vec<(String, Vec<String>)> {
    let text = strip_comments(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find('(') {
        let head = &rest[..open];
        let name = head
            .rsplit(|c: char| c.is_whitespace() || c == ')')
            .next()
            .unwrap_or("")
            .trim();
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
        if name.is_empty() {
            continue;
        }
        out.push((name.to_ascii_lowercase(), arguments(body)));
    }
    out
}

fn is_quoted(arg: &str) -> bool {
    arg.len() >= 2 && arg.starts_with('"') && arg.ends_with('"')
}

fn unquoted(arg: &str) -> &str {
    if is_quoted(arg) {
        &arg[1..arg.len() - 1]
    } else {
        arg
    }
}

/// `arg` with every `${VAR}` replaced by its value (nothing for a variable
/// nobody set, as in CMake).
fn expand(arg: &str, vars: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = arg;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start + 2..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let name = &rest[start + 2..start + 2 + len];
        if let Some(value) = vars.get(name) {
            out.push_str(value);
        }
        rest = &rest[start + 2 + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Every argument expanded; an unquoted one that expands to nothing is no
/// argument at all, as in CMake.
fn expand_all(args: &[String], vars: &HashMap<String, String>) -> Vec<String> {
    args.iter()
        .map(|a| expand(a, vars))
        .filter(|a| !a.is_empty())
        .collect()
}

fn truthy(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(
            v.to_ascii_uppercase().as_str(),
            "ON" | "TRUE" | "1" | "YES" | "Y"
        )
    })
}

/// An operand of a comparison: an unquoted variable name stands for its
/// value.
fn operand<'a>(arg: &'a str, vars: &'a HashMap<String, String>) -> &'a str {
    if is_quoted(arg) {
        return unquoted(arg);
    }
    vars.get(arg).map_or(arg, String::as_str)
}

/// Dotted versions compared component by component, missing ones 0.
fn version_order(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    let parse = |v: &str| -> Option<Vec<u64>> { v.split('.').map(|p| p.parse().ok()).collect() };
    let (a, b) = (parse(a)?, parse(b)?);
    let n = a.len().max(b.len());
    let at = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    Some(
        (0..n)
            .map(|i| at(&a, i).cmp(&at(&b, i)))
            .fold(std::cmp::Ordering::Equal, std::cmp::Ordering::then),
    )
}

fn compare(a: &str, op: &str, b: &str, vars: &HashMap<String, String>) -> bool {
    use std::cmp::Ordering::{Equal, Greater, Less};
    let (x, y) = (operand(a, vars), operand(b, vars));
    if op == "STREQUAL" {
        return x == y;
    }
    if op == "IN_LIST" {
        return vars
            .get(b)
            .is_some_and(|list| list.split(';').any(|i| i == x));
    }
    let (order, rel) = match op.strip_prefix("VERSION_") {
        Some(rel) => (version_order(x, y), rel),
        None => (
            x.parse::<i128>()
                .ok()
                .zip(y.parse::<i128>().ok())
                .map(|(x, y)| x.cmp(&y)),
            op,
        ),
    };
    let Some(order) = order else { return false };
    match rel {
        "LESS" => order == Less,
        "GREATER" => order == Greater,
        "EQUAL" => order == Equal,
        "LESS_EQUAL" => order != Greater,
        "GREATER_EQUAL" => order != Less,
        _ => false,
    }
}

/// An `if()` condition, its arguments already expanded. `OR` binds loosest,
/// then `AND`, then `NOT`, as in CMake.
fn condition(args: &[String], vars: &HashMap<String, String>) -> bool {
    // Parenthesised groups are not understood: taken as false.
    if args
        .iter()
        .any(|a| !is_quoted(a) && (a.contains('(') || a.contains(')')))
    {
        return false;
    }
    if let Some(i) = args.iter().position(|a| a == "OR") {
        return condition(&args[..i], vars) || condition(&args[i + 1..], vars);
    }
    if let Some(i) = args.iter().position(|a| a == "AND") {
        return condition(&args[..i], vars) && condition(&args[i + 1..], vars);
    }
    match args {
        [not, rest @ ..] if not == "NOT" => !condition(rest, vars),
        [defined, var] if defined == "DEFINED" => vars.contains_key(var),
        [a, op, b] => compare(a, op, b, vars),
        [one] if is_quoted(one) => truthy(Some(unquoted(one))),
        [one] => truthy(Some(one)) || truthy(vars.get(one).map(String::as_str)),
        _ => false,
    }
}

/// Whether an `if()` condition, as written, is about the HIP version.
fn names_hip_version(args: &[String]) -> bool {
    args.iter()
        .any(|a| a.to_ascii_lowercase().contains("hip_version"))
}

/// One open `if`.
struct Frame {
    /// This branch is taken.
    on: bool,
    /// Some branch of this `if` was taken.
    taken: bool,
    /// Its condition is about the HIP version.
    hip: bool,
}

/// Runs `text` as CMake would with `vars` set: the `if` branches, `set`,
/// `unset`, `option` and `check_cxx_compiler_flag` (taken as accepted) are
/// handled here; every other command of a taken branch goes to `visit` with
/// its arguments expanded and whether a condition on the HIP version
/// encloses it.
fn walk(
    text: &str,
    vars: &mut HashMap<String, String>,
    mut visit: impl FnMut(&str, &[String], bool),
) {
    let mut stack: Vec<Frame> = Vec::new();
    for (name, raw) in commands(text) {
        let active = stack.iter().all(|f| f.on);
        let args = expand_all(&raw, vars);
        match name.as_str() {
            "if" => {
                let on = active && condition(&args, vars);
                stack.push(Frame {
                    on,
                    taken: on,
                    hip: names_hip_version(&raw),
                });
            }
            "elseif" => {
                if let Some(f) = stack.pop() {
                    let parent = stack.iter().all(|f| f.on);
                    let on = parent && !f.taken && condition(&args, vars);
                    stack.push(Frame {
                        on,
                        taken: f.taken || on,
                        hip: f.hip || names_hip_version(&raw),
                    });
                }
            }
            "else" => {
                if let Some(f) = stack.pop() {
                    let parent = stack.iter().all(|f| f.on);
                    stack.push(Frame {
                        on: parent && !f.taken,
                        taken: true,
                        hip: f.hip,
                    });
                }
            }
            "endif" => {
                stack.pop();
            }
            _ if !active => {}
            "set" => match args.as_slice() {
                [var] => {
                    vars.remove(var);
                }
                [var, values @ ..] => {
                    let values: Vec<&str> = values
                        .iter()
                        .take_while(|v| *v != "CACHE" && *v != "PARENT_SCOPE")
                        .map(|v| unquoted(v))
                        .collect();
                    vars.insert(var.clone(), values.join(";"));
                }
                [] => {}
            },
            "unset" => {
                if let Some(var) = args.first() {
                    vars.remove(var);
                }
            }
            "option" => {
                if let [var, _, value, ..] = args.as_slice() {
                    vars.entry(var.clone()).or_insert_with(|| value.clone());
                }
            }
            "check_cxx_compiler_flag" => {
                if let [_, var] = args.as_slice() {
                    vars.insert(var.clone(), "ON".into());
                }
            }
            _ => visit(&name, &args, stack.iter().any(|f| f.hip)),
        }
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

/// The options `text` (an `01_fmha/CMakeLists.txt`) appends, as CMake would
/// evaluate it with nothing set.
pub fn parse(text: &str) -> FmhaOptions {
    let mut out = FmhaOptions::default();
    walk(text, &mut HashMap::new(), |name, args, _| {
        let ("list", [op, var, items @ ..]) = (name, args) else {
            return;
        };
        if op != "APPEND" {
            return;
        }
        let target = match options_of(var) {
            Some(Direction::Fwd) => &mut out.fwd,
            Some(Direction::Bwd) => &mut out.bwd,
            None => return,
        };
        for item in items {
            let item = unquoted(item).to_string();
            if !target.contains(&item) {
                target.push(item);
            }
        }
    });
    out
}

/// The standard and HIP-version flags `text` (a CK top-level
/// `CMakeLists.txt`) sets, for a compiler of HIP version `hip`.
pub fn parse_top_level(text: &str, hip: Option<HipVersion>) -> TopLevelOptions {
    let mut vars: HashMap<String, String> = hip
        .map(|h| h.variables().into_iter().collect())
        .unwrap_or_default();
    let mut out = TopLevelOptions::default();
    // `-mllvm` repeats, so only whole options (a `SHELL:` group is one) are
    // kept once.
    let mut seen: Vec<String> = Vec::new();
    walk(text, &mut vars, |name, args, under_hip| {
        if name != "add_compile_options" || !under_hip {
            return;
        }
        for arg in args {
            let arg = unquoted(arg);
            // Generator expressions (`$<CONFIG:Debug>`) are per build type;
            // CK's release build has none of them.
            if arg.contains("$<") || seen.iter().any(|s| s == arg) {
                continue;
            }
            seen.push(arg.to_string());
            match arg.strip_prefix("SHELL:") {
                Some(group) => out
                    .hip_flags
                    .extend(group.split_whitespace().map(str::to_string)),
                None => out.hip_flags.push(arg.to_string()),
            }
        }
    });
    // Sources CMake compiles as HIP (CK's blobs are) follow
    // `CMAKE_HIP_STANDARD`; CK sets only `CMAKE_CXX_STANDARD` and means it
    // for all its code.
    out.standard = ["CMAKE_HIP_STANDARD", "CMAKE_CXX_STANDARD"]
        .iter()
        .filter_map(|v| vars.get(*v))
        .find(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .cloned();
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

    /// The parts of CK 2025-11's top-level file that decide the standard
    /// and the HIP-version flags, with the traps around them.
    const TOP_LEVEL: &str = r#"
# We must support C++17 builds (until downstream users migrate) "quoted
set(CK_CXX_STANDARD "20" CACHE STRING "C++ standard to use (e.g. 17 or 20)")
set(valid_cxx_standards 17 20)
if(NOT CK_CXX_STANDARD IN_LIST valid_cxx_standards)
    message(FATAL_ERROR "CK_CXX_STANDARD must be one of ${valid_cxx_standards}")
endif()
add_compile_options(-Wno-nrvo)
math(EXPR hip_VERSION_FLAT "(${hip_VERSION_MAJOR} * 1000 + ${hip_VERSION_MINOR}) * 100000 + ${hip_VERSION_PATCH}")
if(NOT WIN32 AND ${hip_VERSION_FLAT} GREATER 500723302)
  check_cxx_compiler_flag("-fno-offload-uniform-block" HAS_NO_OFFLOAD_UNIFORM_BLOCK)
  if(HAS_NO_OFFLOAD_UNIFORM_BLOCK)
    add_compile_options(-fno-offload-uniform-block)
  endif()
endif()
if(NOT WIN32 AND ${hip_VERSION_FLAT} GREATER 500500000)
  check_cxx_compiler_flag("-mllvm --lsr-drop-solution=1" HAS_LSR_DROP_SOLUTION)
  if(HAS_LSR_DROP_SOLUTION)
    add_compile_options("SHELL: -mllvm --lsr-drop-solution=1")
  endif()
endif()
if(NOT WIN32 AND ${hip_VERSION_FLAT} GREATER 600140090)
  check_cxx_compiler_flag("-mllvm -enable-post-misched=0" HAS_ENABLE_POST_MISCHED)
  if(HAS_ENABLE_POST_MISCHED)
    add_compile_options("SHELL: -mllvm -enable-post-misched=0")
  endif()
endif()
set(check-coerce)
check_cxx_compiler_flag(" -mllvm -amdgpu-coerce-illegal-types=1" check-coerce)
if(NOT WIN32 AND check-coerce AND ${hip_VERSION_FLAT} GREATER 600241132)
   add_compile_options("SHELL: -mllvm -amdgpu-coerce-illegal-types=1")
endif()
if(NOT WIN32 AND ${hip_VERSION_FLAT} GREATER 600241132)
   add_compile_options("SHELL: -mllvm -amdgpu-early-inline-all=true")
   add_compile_options("SHELL: -mllvm -amdgpu-function-calls=false")
endif()
if(ENABLE_ASM_DUMP)
    add_compile_options(--save-temps)
endif()
set(CMAKE_CXX_STANDARD ${CK_CXX_STANDARD})
set(CMAKE_CXX_STANDARD_REQUIRED ON)
SET(BUILD_DEV ON CACHE BOOL "BUILD_DEV")
if(BUILD_DEV)
    add_compile_options(-Werror)
endif()
"#;

    fn hip(major: u32, minor: u32, patch: u32) -> Option<HipVersion> {
        Some(HipVersion {
            major,
            minor,
            patch,
        })
    }

    #[test]
    fn the_standard_is_ck_cxx_standard_through_cmake_cxx_standard() {
        assert_eq!(
            parse_top_level(TOP_LEVEL, None).standard.as_deref(),
            Some("20")
        );
        let edited = TOP_LEVEL.replace(r#"CK_CXX_STANDARD "20""#, r#"CK_CXX_STANDARD "23""#);
        assert_eq!(
            parse_top_level(&edited, None).standard.as_deref(),
            Some("23")
        );
        // The standard HIP sources follow wins where a file sets it.
        let hip_std = format!("{TOP_LEVEL}\nset(CMAKE_HIP_STANDARD 17)\n");
        assert_eq!(
            parse_top_level(&hip_std, None).standard.as_deref(),
            Some("17")
        );
        for text in [
            "set(CMAKE_CXX_STANDARD ${UNSET})",
            "if(OFF)\nset(CMAKE_CXX_STANDARD 20)\nendif()",
            "# set(CMAKE_CXX_STANDARD 20)",
            "",
        ] {
            assert_eq!(parse_top_level(text, None).standard, None, "{text:?}");
        }
    }

    #[test]
    fn hip_version_flags_are_those_whose_conditions_hold_for_the_version_given() {
        // No version: no version condition holds, no flag is recorded.
        assert_eq!(
            parse_top_level(TOP_LEVEL, None).hip_flags,
            Vec::<String>::new()
        );
        // Too old for every one.
        assert!(parse_top_level(TOP_LEVEL, hip(5, 4, 0))
            .hip_flags
            .is_empty());
        // ROCm 6.1's HIP is past three of CK's bounds, not the 6.2 one.
        assert_eq!(
            parse_top_level(TOP_LEVEL, hip(6, 1, 40091)).hip_flags,
            [
                "-fno-offload-uniform-block",
                "-mllvm",
                "--lsr-drop-solution=1",
                "-mllvm",
                "-enable-post-misched=0",
            ]
        );
        let newest = parse_top_level(TOP_LEVEL, hip(7, 1, 0)).hip_flags;
        assert_eq!(
            newest.join(" "),
            "-fno-offload-uniform-block -mllvm --lsr-drop-solution=1 \
             -mllvm -enable-post-misched=0 -mllvm -amdgpu-coerce-illegal-types=1 \
             -mllvm -amdgpu-early-inline-all=true -mllvm -amdgpu-function-calls=false"
        );
        // Options outside a HIP-version condition are not HIP-version flags.
        for other in ["-Wno-nrvo", "-Werror", "--save-temps"] {
            assert!(!newest.iter().any(|f| f == other), "{other}");
        }
    }

    #[test]
    fn hip_versions_are_read_as_hipconfig_prints_them() {
        assert_eq!(HipVersion::parse("6.4.43482-0"), hip(6, 4, 43482));
        assert_eq!(HipVersion::parse("6.1.40091"), hip(6, 1, 40091));
        for bad in ["", "6.4", "6.4.1.2", "v6.4.1", "6.x.1", "-6.4.1"] {
            assert_eq!(HipVersion::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn conditions_follow_cmake_precedence_and_comparisons() {
        let vars: HashMap<String, String> = [("V", "6.2.1"), ("N", "10"), ("L", "a;b")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let holds = |c: &str| condition(&arguments(c), &vars);
        assert!(holds("N GREATER 9"));
        assert!(!holds("N LESS 9"));
        assert!(holds("V VERSION_GREATER_EQUAL 6.2"));
        assert!(!holds("V VERSION_LESS 6.2.1"));
        assert!(holds("b IN_LIST L"));
        assert!(holds("NOT UNSET AND N EQUAL 10"));
        assert!(holds("OFF OR N EQUAL 10 AND ON"));
        assert!(!holds("NOT N EQUAL 10"));
        // Not understood: false, as for an unset variable.
        assert!(!holds("N MATCHES 1"));
        assert!(!holds("(N EQUAL 10)"));
        assert!(!holds("GREATER 5"));
    }

    #[test]
    fn quoted_arguments_stay_whole_and_comments_hide_parentheses_and_quotes() {
        let c = commands(
            "# a comment with ) and \" in it\nadd_compile_options(\"SHELL: -mllvm x\" -y) # (\nset(A \"#not a comment\")",
        );
        assert_eq!(
            c,
            [
                (
                    "add_compile_options".to_string(),
                    vec!["\"SHELL: -mllvm x\"".to_string(), "-y".to_string()]
                ),
                (
                    "set".to_string(),
                    vec!["A".to_string(), "\"#not a comment\"".to_string()]
                ),
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
