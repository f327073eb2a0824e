//! Which compiles keep a blob, as the preset decides it, checked against
//! a real preprocessor: gcc's `cpp -x c++ -P -undef`, given the same
//! macros as `-D` flags.
//!
//! - Every blob of both CK versions in `shared/data/ck` (every direction,
//!   `-r 1`, generated for gfx90a, gfx942 and gfx950 where the generator
//!   takes `--targets`; decided for those and gfx1100): each blob's
//!   conditional skeleton (its directive lines and a marker line at each
//!   specialisation, built here from the text, not by the crate) is
//!   de-duplicated and run through `cpp` for each target's device pass and
//!   the host pass. The targets whose both passes keep every marker must
//!   be exactly those the preset records the blob for.
//! - A synthetic corpus, one source per rule (`true`/`false`, the family
//!   macros of each version's `config.hpp`, malformed conditionals,
//!   nesting, arithmetic, `#define`/`#undef`, `#error`): where `cpp`
//!   fails, the crate must fail, and where it keeps markers, the crate
//!   must keep the same.
//!
//! `cpp` is the oracle; without it (or without the CK data) the tests
//! skip, unless `CK_JIT_REQUIRE_CK_DATA` is set.
#![cfg(feature = "build")]

mod real_ck;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use ck_jit_ck::__private::blob_source;
use ck_jit_ck::macros::{Def, Macros, Pass};
use ck_jit_ck::{CkFmha, Role};
use real_ck::{ck_tree, Scratch, CK_2024, CK_2025};

/// The targets decided for.
const TARGETS: &[&str] = &["gfx90a", "gfx942", "gfx950", "gfx1100"];
/// Those of them CK 2025-11's generator writes blobs for (it rejects
/// gfx11 targets).
const GENERATED_FOR: &str = "gfx90a,gfx942,gfx950";

/// Whether gcc's preprocessor is there; a skip (or, with
/// `CK_JIT_REQUIRE_CK_DATA`, a failure) when not.
fn have_cpp() -> bool {
    let ok = Command::new("cpp")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_none(),
            "CK_JIT_REQUIRE_CK_DATA is set but gcc's cpp cannot be run"
        );
        eprintln!("SKIPPED: no cpp");
    }
    ok
}

fn marker(k: usize) -> String {
    format!("ck_jit_marker_{k}")
}

/// The `-D` flags of a macro set (those whose value the crate knows).
fn defines(m: &Macros) -> Vec<String> {
    m.iter()
        .filter_map(|(name, d)| match d {
            Def::Object(body) => Some(format!("-D{name}={body}")),
            _ => None,
        })
        .collect()
}

/// What `cpp` keeps of `src` with `macros`: the markers that survive, or
/// its error.
fn cpp_keeps(src: &str, macros: &Macros) -> Result<BTreeSet<usize>, String> {
    let mut child = Command::new("cpp")
        .args(["-x", "c++", "-P", "-undef"])
        .args(defines(macros))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cpp");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(src.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.trim().strip_prefix("ck_jit_marker_")?.parse().ok())
        .collect())
}

/// A blob's skeleton for `cpp`, read from its text here: every directive
/// line (continued lines joined) but `#include` and `#pragma`, and a
/// marker line in place of the line of each specialisation.
fn skeleton(text: &str, spec_lines: &[usize]) -> String {
    let mut out = String::new();
    let mut lines = text.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if let Some(k) = spec_lines.iter().position(|l| *l == n + 1) {
            out.push_str(&marker(k));
            out.push('\n');
            continue;
        }
        let t = line.trim_start();
        if !t.starts_with('#') {
            continue;
        }
        let mut d = line.to_string();
        while d.ends_with('\\') {
            d.pop();
            match lines.next() {
                Some((_, next)) => d.push_str(next),
                None => break,
            }
        }
        let word = t[1..].trim_start();
        if word.starts_with("include") || word.starts_with("pragma") {
            continue;
        }
        out.push_str(&d);
        out.push('\n');
    }
    out
}

/// The lines where a CK blob's explicit specialisations start
/// (`template <>` or `template<>` opening the line), found in the text,
/// without the crate's reading.
fn specialisation_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let l = l.trim_start();
            l.starts_with("template<>") || l.starts_with("template <>")
        })
        .map(|(n, _)| n + 1)
        .collect()
}

/// The compiles the preset decides for: each target's device pass and
/// the host pass, with the macros the compiler and the group's `-D`/`-U`
/// flags define (given to `cpp` as flags), and the CK version's own
/// `config.hpp` block (every line before its first `#include`), which
/// `cpp` reads as source ahead of each skeleton: the family macros it
/// defines are cpp's to find, not taken from the crate.
struct Compiles {
    block: String,
    passes: Vec<(String, Pass, Macros)>,
    standard: Option<String>,
    args: Vec<String>,
}

impl Compiles {
    fn new(ck: &Path, args: &[String]) -> Compiles {
        let standard = args
            .iter()
            .find_map(|a| a.strip_prefix("-std=c++"))
            .map(str::to_string);
        let mut passes = Vec::new();
        for t in TARGETS {
            let mut m = Macros::predefined(t, Pass::Device, standard.as_deref());
            m.apply_flags(args);
            passes.push((t.to_string(), Pass::Device, m));
        }
        let mut m = Macros::predefined(TARGETS[0], Pass::Host, standard.as_deref());
        m.apply_flags(args);
        passes.push(("host".into(), Pass::Host, m));
        let config =
            std::fs::read_to_string(ck.join("include/ck_tile/core/config.hpp")).unwrap_or_default();
        let block: String = config
            .lines()
            .take_while(|l| !l.trim_start().starts_with("#include"))
            .map(|l| format!("{l}\n"))
            .collect();
        Compiles {
            block,
            passes,
            standard,
            args: args.to_vec(),
        }
    }

    /// What cpp keeps of `skeleton` in each compile.
    fn cpp(&self, skeleton: &str) -> Vec<Result<BTreeSet<usize>, String>> {
        let src = format!("{}{skeleton}", self.block);
        self.passes
            .iter()
            .map(|(_, _, m)| cpp_keeps(&src, m))
            .collect()
    }

    /// The crate's macros for pass `i`, `config.hpp` block included.
    fn crate_macros(&self, ck: &Path, i: usize) -> Macros {
        let (t, pass, _) = &self.passes[i];
        let target = if *pass == Pass::Host {
            TARGETS[0]
        } else {
            t.as_str()
        };
        Macros::for_compile(ck, target, *pass, self.standard.as_deref(), &self.args).unwrap()
    }
}

/// Generates every direction of `version` (`-r 1`) into `out`.
fn generate(ck: &Path, out: &Path) {
    let example = ck.join("example/ck_tile/01_fmha");
    let generator = std::fs::read_to_string(example.join("generate.py")).unwrap();
    let ops = example.join("codegen/ops");
    let mut directions: Vec<String> = std::fs::read_dir(&ops)
        .map(|d| {
            d.filter_map(|e| {
                let n = e.ok()?.file_name().into_string().ok()?;
                let s = n.strip_suffix(".py")?.strip_prefix("fmha_")?;
                Some(s.to_string())
            })
            .collect()
        })
        .unwrap_or_default();
    if directions.is_empty() {
        directions = ["fwd", "fwd_splitkv", "fwd_appendkv", "bwd"]
            .map(String::from)
            .to_vec();
    }
    // One process per direction, two at a time (CI has two cores).
    let mut running = Vec::new();
    for d in &directions {
        let mut c = Command::new("python3");
        c.arg(example.join("generate.py"))
            .args(["-d", d, "-r", "1", "-o"])
            .arg(out.join(d));
        if generator.contains("--targets") {
            c.args(["--targets", GENERATED_FOR]);
        }
        std::fs::create_dir_all(out.join(d)).unwrap();
        running.push((d.clone(), c.spawn().unwrap()));
        if running.len() == 2 {
            let (d, mut child) = running.remove(0);
            assert!(child.wait().unwrap().success(), "generate.py -d {d}");
        }
    }
    for (d, mut child) in running {
        assert!(child.wait().unwrap().success(), "generate.py -d {d}");
    }
}

fn every_blob_is_kept_by_the_compiles_cpp_keeps_it_for(version: &str) {
    let Some(ck) = ck_tree(version) else { return };
    if !have_cpp() {
        return;
    }
    let tmp = Scratch::new(&format!("guard-cpp-{version}"));
    let generated = tmp.path().join("gen");
    let t0 = Instant::now();
    generate(&ck, &generated);
    let t_gen = t0.elapsed();

    let t0 = Instant::now();
    let mut p = CkFmha::new();
    p.source(&ck)
        .generated_dir(&generated)
        .out_dir(tmp.path().join("out"))
        .name("t")
        .cargo_metadata(false);
    for t in TARGETS {
        p.arch(t);
    }
    let files = p.try_manifest().unwrap();
    let t_preset = t0.elapsed();
    let m = files.manifest();
    let flags_of = |bwd: bool| -> Vec<String> {
        m.groups
            .iter()
            .find(|g| g.name.starts_with("bwd") == bwd)
            .map(|g| g.args.clone())
            .unwrap_or_default()
    };
    let compiles = [
        Compiles::new(&ck, &flags_of(false)),
        Compiles::new(&ck, &flags_of(true)),
    ];

    let t0 = Instant::now();
    // Each distinct skeleton (of forward or backward flags) once: the
    // targets whose both passes keep every marker.
    let mut decided: HashMap<(String, bool), Vec<String>> = HashMap::new();
    let mut blobs = 0;
    let mut kinds_left_out: BTreeMap<String, usize> = BTreeMap::new();
    for f in files.files() {
        let (d, preset_targets) = match &f.role {
            Role::Blob(d) => {
                let g = &m.groups[m
                    .blob(f.path.file_stem().unwrap().to_str().unwrap())
                    .unwrap()
                    .group as usize];
                let t: Vec<String> = g
                    .args
                    .iter()
                    .filter_map(|a| a.strip_prefix("--offload-arch="))
                    .map(str::to_string)
                    .collect();
                (d, t)
            }
            Role::OtherArch(d) => {
                *kinds_left_out.entry(d.kind.clone()).or_default() += 1;
                (d, Vec::new())
            }
            _ => continue,
        };
        blobs += 1;
        let text = std::fs::read_to_string(&f.path).unwrap();
        let lines = specialisation_lines(&text);
        assert!(!lines.is_empty(), "{}: no specialisation found", f.rel);
        let src = skeleton(&text, &lines);
        let bwd = d.kind.starts_with("bwd");
        let want = decided.entry((src.clone(), bwd)).or_insert_with(|| {
            let mut host = true;
            let mut device = Vec::new();
            let c = &compiles[usize::from(bwd)];
            for ((target, pass, _), kept) in c.passes.iter().zip(c.cpp(&src)) {
                let kept = kept.unwrap_or_else(|e| panic!("{}: cpp fails: {e}\n{src}", f.rel));
                let all = kept.len() == lines.len();
                assert!(
                    all || kept.is_empty(),
                    "{}: cpp keeps some specialisations only: {kept:?}",
                    f.rel
                );
                match pass {
                    Pass::Device if all => device.push(target.clone()),
                    Pass::Host => host = all,
                    _ => {}
                }
            }
            if host {
                device
            } else {
                Vec::new()
            }
        });
        assert_eq!(
            &preset_targets, want,
            "{}: the preset records it for {preset_targets:?}, cpp keeps it for {want:?}\n{src}",
            f.rel
        );
    }
    let t_cpp = t0.elapsed();
    let fwd = decided.keys().filter(|(_, b)| !b).count();
    eprintln!(
        "{version}: {blobs} blobs, {} distinct skeletons ({fwd} with forward flags, {} with \
         backward), left out by kind {kinds_left_out:?}; generate {t_gen:.2?}, preset \
         {t_preset:.2?}, skeletons and cpp {t_cpp:.2?}",
        decided.len(),
        decided.len() - fwd
    );
    assert!(blobs > 1000, "{version}: only {blobs} blobs");
}

#[test]
fn ck_2024_10_every_blob_is_recorded_for_the_targets_cpp_keeps_it_for() {
    every_blob_is_kept_by_the_compiles_cpp_keeps_it_for(CK_2024);
}

#[test]
fn ck_2025_11_every_blob_is_recorded_for_the_targets_cpp_keeps_it_for() {
    every_blob_is_kept_by_the_compiles_cpp_keeps_it_for(CK_2025);
}

/// One synthetic blob: its text with `@` at the start of each line that
/// is a specialisation.
struct Case {
    name: &'static str,
    text: &'static str,
}

const SPEC: &str = "template <> float fmha_fwd_<int>(const ck_tile::stream_config& s, fmha_fwd_args a) { return 0; }";

const CASES: &[Case] = &[
    Case {
        name: "true in a condition (issue 40, 1)",
        text: "#include <x>\n#if !defined(__HIP_DEVICE_COMPILE__) || (true)\n@\n#endif\n",
    },
    Case {
        name: "false and true",
        text: "#if false || !true\n@\n#elif true && !false\n@\n#endif\n",
    },
    Case {
        name: "config.hpp's gfx94 family (issue 40, 2)",
        text: "#include \"ck_tile/core.hpp\"\n#if !defined(__HIP_DEVICE_COMPILE__) || defined(__gfx94__)\n@\n#endif\n",
    },
    Case {
        name: "config.hpp's gfx9 family without gfx950",
        text: "#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__) && !defined(__gfx950__))\n@\n#endif\n",
    },
    Case {
        name: "config.hpp's gfx11 and gfx12 families",
        text: "#if defined(__gfx11__)\n@\n#elif defined(__gfx12__) || defined(__gfx103__)\n#else\n@\n#endif\n",
    },
    Case {
        name: "the compiler's own family macro",
        text: "#if defined(__GFX9__) && __AMDGCN_WAVEFRONT_SIZE == 64\n@\n#endif\n",
    },
    Case {
        name: "unterminated #ifdef (issue 40, 3)",
        text: "#ifdef __clang__\n#if !defined(__HIP_DEVICE_COMPILE__) || (defined(__gfx9__))\n@\n#endif\n",
    },
    Case {
        name: "stray #endif",
        text: "#if defined(__gfx9__)\n@\n#endif\n#endif\n",
    },
    Case {
        name: "stray #else",
        text: "@\n#else\n",
    },
    Case {
        name: "#elif after #else",
        text: "#if defined(__gfx942__)\n@\n#else\n#elif 1\n#endif\n",
    },
    Case {
        name: "#else after #else in a skipped group",
        text: "#if 0\n#if 1\n#else\n#else\n#endif\n#endif\n@\n",
    },
    Case {
        name: "nesting, #ifdef, #ifndef, #elif chains",
        text: "#ifdef __HIP_DEVICE_COMPILE__\n#ifndef __gfx950__\n#if defined(__gfx90a__)\n@\n\
               #elif defined(__gfx942__)\n@\n#else\n@\n#endif\n#else\n@\n#endif\n#else\n@\n#endif\n",
    },
    Case {
        name: "arithmetic, shifts, comparisons and ?:",
        text: "#if (2 + 3) * 4 == 20 && (1 << 4) >> 2 == 4 && -1 < 0 && (0 ? 1 : 2) == 2 && 7 % 4 == 3\n@\n#endif\n\
               #if -1 > 0u\n@\n#endif\n#if 0x10 == 16 && 010 == 8 && 'a' == 97\n@\n#endif\n",
    },
    Case {
        name: "the language standard",
        text: "#if __cplusplus >= 202002L\n@\n#else\n@\n#endif\n",
    },
    Case {
        name: "division by zero where evaluated and where not",
        text: "#if 0 && 1 / 0\n@\n#endif\n#if 1 || 1 / 0\n@\n#endif\n",
    },
    Case {
        name: "division by zero evaluated",
        text: "#if defined(__gfx942__) / 0\n@\n#endif\n",
    },
    Case {
        name: "#define and #undef before the guard",
        text: "#define CK_ARCH_OK (defined(__gfx9__) + 1)\n#define N 3\n#if N * 2 == 6 && CK_ARCH_OK\n@\n#endif\n\
               #undef N\n#if N\n@\n#endif\n",
    },
    Case {
        name: "a function-like macro's name alone",
        text: "#define CK_F(x) x\n#if CK_F + 1 == 1\n@\n#endif\n",
    },
    Case {
        name: "#error in a kept group",
        text: "#if defined(__gfx1100__)\n#error no kernels for gfx11\n#endif\n@\n",
    },
    Case {
        name: "an unknown identifier is 0",
        text: "#if CK_NOT_A_MACRO == 0 && !CK_NOT_A_MACRO\n@\n#endif\n",
    },
    Case {
        name: "the group's -D flag",
        text: "#if CK_TILE_FMHA_FWD_FAST_EXP2\n@\n#else\n@\n#endif\n",
    },
];

/// The text of a case with `@` lines as specialisations, and their lines.
fn case_source(c: &Case) -> (String, Vec<usize>) {
    let mut lines = Vec::new();
    let text: Vec<String> = c
        .text
        .lines()
        .enumerate()
        .map(|(n, l)| {
            if l == "@" {
                lines.push(n + 1);
                SPEC.to_string()
            } else {
                l.to_string()
            }
        })
        .collect();
    (text.join("\n") + "\n", lines)
}

/// The crate's verdict on a case: which specialisations each compile
/// keeps, per target and pass (`Err` when reading or deciding fails).
fn crate_keeps(text: &str, macros: &Macros) -> Result<BTreeSet<usize>, String> {
    let source = blob_source(text).map_err(|e| e.to_string())?;
    let kept = source
        .skeleton
        .run(&mut macros.clone())
        .map_err(|e| e.to_string())?;
    Ok(kept
        .iter()
        .enumerate()
        .filter(|(_, k)| **k)
        .map(|(i, _)| i)
        .collect())
}

#[test]
fn every_rule_decides_as_cpp_does_in_both_ck_versions() {
    if !have_cpp() {
        return;
    }
    let flags: Vec<String> = ["-std=c++20", "-DCK_TILE_FMHA_FWD_FAST_EXP2=1"]
        .map(String::from)
        .to_vec();
    for version in [CK_2024, CK_2025] {
        let Some(ck) = ck_tree(version) else { return };
        let compiles = Compiles::new(&ck, &flags);
        for c in CASES {
            let (text, lines) = case_source(c);
            let src = skeleton(&text, &lines);
            let mut errors = 0;
            for (i, want) in compiles.cpp(&src).into_iter().enumerate() {
                let target = &compiles.passes[i].0;
                let got = crate_keeps(&text, &compiles.crate_macros(&ck, i));
                match (&want, &got) {
                    (Ok(w), Ok(g)) => assert_eq!(
                        w, g,
                        "{version} {target}, {}: cpp keeps {w:?}, the crate {g:?}",
                        c.name
                    ),
                    (Err(_), Err(_)) => errors += 1,
                    _ => panic!(
                        "{version} {target}, {}: cpp gives {want:?}, the crate {got:?}",
                        c.name
                    ),
                }
            }
            eprintln!(
                "{version}, {}: {errors} of {} compiles fail",
                c.name,
                compiles.passes.len()
            );
        }
    }
}

#[test]
fn the_issues_three_cases_decide_as_the_compiler_does() {
    // What the corpus above checks against cpp, stated: `true` keeps the
    // blob for gfx942, config.hpp's `__gfx94__` keeps it for gfx942 and
    // not gfx90a, and an unterminated `#ifdef` is an error at its line.
    let Some(ck) = ck_tree(CK_2025) else { return };
    let flags = ["-std=c++20".to_string()];
    let keeps = |case: usize, target: &str| {
        let (text, _) = case_source(&CASES[case]);
        let m = Macros::for_compile(&ck, target, Pass::Device, Some("20"), &flags).unwrap();
        crate_keeps(&text, &m)
    };
    assert_eq!(keeps(0, "gfx942"), Ok(BTreeSet::from([0])));
    assert_eq!(keeps(2, "gfx942"), Ok(BTreeSet::from([0])));
    assert_eq!(keeps(2, "gfx90a"), Ok(BTreeSet::new()));
    let e = keeps(6, "gfx942").unwrap_err();
    assert!(
        e.contains("line 1") && e.contains("unterminated #ifdef"),
        "{e}"
    );
}

mod cond_gen;

#[test]
fn four_thousand_generated_conditions_evaluate_as_cpp_does() {
    if !have_cpp() {
        return;
    }
    let mut macros = Macros::new();
    for (name, body) in cond_gen::MACROS {
        macros.define(name, body);
    }
    // A fixed xorshift sequence: the same expressions every run.
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 32) as u32
    };
    let mut src = String::new();
    let mut cases = Vec::new();
    let mut first_line = Vec::new();
    let mut line = 1;
    for k in 0..4000 {
        let expr = cond_gen::expression(&mut next, 1 + (k as u32 % 6));
        let value = ck_jit_ck::cond::evaluate(&expr, &macros)
            .ok()
            .map(|v| (v.bits, v.unsigned));
        let block = cond_gen::blocks(k, &expr, value);
        first_line.push(line);
        line += block.lines().count();
        src.push_str(&block);
        cases.push((expr, value));
    }
    // One cpp over every block: it reports each error with its line and
    // goes on.
    let mut child = Command::new("cpp")
        .args(["-x", "c++", "-P", "-undef"])
        .args(cond_gen::MACROS.iter().map(|(n, b)| format!("-D{n}={b}")))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run cpp");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(src.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    let kept: std::collections::HashSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.trim().to_string())
        .collect();
    let mut failed = vec![false; cases.len()];
    for l in String::from_utf8_lossy(&out.stderr).lines() {
        let Some(rest) = l.strip_prefix("<stdin>:") else {
            continue;
        };
        let Some((n, tail)) = rest.split_once(':') else {
            continue;
        };
        if !tail.contains("error") {
            continue;
        }
        let n: usize = n.parse().unwrap();
        let k = first_line.partition_point(|f| *f <= n) - 1;
        failed[k] = true;
    }
    let wrong: Vec<String> = cases
        .iter()
        .enumerate()
        .filter_map(|(k, (e, v))| cond_gen::agrees(k, e, *v, &kept, failed[k]).err())
        .collect();
    let rejected = cases.iter().filter(|(_, v)| v.is_none()).count();
    eprintln!("{} expressions, {rejected} rejected by both", cases.len());
    assert!(
        wrong.is_empty(),
        "{} of {} disagree, e.g.:\n{}",
        wrong.len(),
        cases.len(),
        wrong[..wrong.len().min(15)].join("\n")
    );
}
