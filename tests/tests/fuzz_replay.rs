//! The fuzz targets' checks, replayed on a stable toolchain: each target's
//! corpus (`fuzz/corpus/<target>`) and a few thousand seeded mutations of
//! it (bit flips, interesting bytes and integers, truncations, splices of
//! two entries, deleted, repeated and inserted runs) go through the very
//! function the libFuzzer target calls (`fuzz/checks/<target>.rs`), each
//! under `catch_unwind`. No panic and no broken invariant is allowed; a
//! failing input is named, shown and written out to be replayed with
//! `cargo fuzz run <target> <file>`. An input the fuzzer once crashed on
//! belongs in the corpus, and then stays checked here.
//!
//! The seed is fixed, so every run replays the same inputs; a run prints
//! each target's input count and time (`--nocapture`).

use std::fmt::Write as _;
use std::fs;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::Instant;

use ck_jit_build::manifest::compact::Compact;
use ck_jit_build::manifest::{Blob, Group, Manifest, SymbolSpec};

#[path = "../../fuzz/checks/argv.rs"]
mod argv;
#[path = "../../fuzz/checks/compact.rs"]
mod compact;
#[path = "../../fuzz/checks/config.rs"]
mod config;
#[path = "../../fuzz/checks/depfile.rs"]
mod depfile;
#[path = "../../fuzz/checks/dynsym.rs"]
mod dynsym;
#[path = "../../fuzz/checks/manifest.rs"]
mod manifest;

const SEED: u64 = 0x0c6b_6a69_7452_6570;
/// Mutated inputs per target, besides the corpus itself.
const MUTATIONS: usize = 3000;
/// The config target writes a file and walks a tree for each input: fewer
/// of them keep its replay near the others' time.
const CONFIG_MUTATIONS: usize = 1500;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

/// splitmix64: small, fixed, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Bytes that change how the inputs' formats read: separators, quotes,
/// brackets, escapes, the extremes.
const BYTES: &[u8] = b"\0\n\r\t \"'{}[]=,:\\$#/.-_%\x7f\x80\xff";

/// Integers that sit on the edges of lengths, offsets and counts.
const INTS: [u32; 8] = [0, 1, 2, 16, 24, 64, 0x7fff_ffff, 0xffff_ffff];

/// One mutation of a corpus entry, 1 to 4 edits deep.
fn mutate(rng: &mut Rng, corpus: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut b = corpus[rng.below(corpus.len())].1.clone();
    for _ in 0..=rng.below(4) {
        let len = b.len();
        match rng.below(9) {
            0 if len > 0 => {
                let at = rng.below(len);
                b[at] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let at = rng.below(len);
                b[at] = BYTES[rng.below(BYTES.len())];
            }
            2 if len > 0 => b.truncate(rng.below(len)),
            3 => {
                // This entry's head, another's tail.
                let other = &corpus[rng.below(corpus.len())].1;
                let (cut, from) = (rng.below(len + 1), rng.below(other.len() + 1));
                b.truncate(cut);
                b.extend_from_slice(&other[from..]);
            }
            4 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(64)).min(len);
                b.drain(at..end);
            }
            5 if len > 0 => {
                let at = rng.below(len);
                let end = (at + 1 + rng.below(64)).min(len);
                let run = b[at..end].to_vec();
                b.splice(at..at, run);
            }
            6 => {
                let at = rng.below(len + 1);
                let run: Vec<u8> = (0..1 + rng.below(8)).map(|_| rng.next() as u8).collect();
                b.splice(at..at, run);
            }
            7 if len >= 4 => {
                // Binary formats: an offset, length or count at the edge.
                let at = rng.below(len - 3);
                let v = match rng.below(3) {
                    0 => INTS[rng.below(INTS.len())],
                    1 => len as u32 + rng.below(3) as u32,
                    _ => u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
                        .wrapping_add(rng.below(3) as u32)
                        .wrapping_sub(1),
                };
                b[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
            _ => {
                let at = rng.below(len + 1);
                b.insert(at, BYTES[rng.below(BYTES.len())]);
            }
        }
    }
    b
}

/// Every file of `fuzz/corpus/<target>`, by name.
fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = fuzz_dir().join("corpus").join(target);
    let mut entries: Vec<(String, Vec<u8>)> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| {
            let path = e.expect("a corpus entry").path();
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                bytes,
            )
        })
        .collect();
    entries.sort();
    assert!(!entries.is_empty(), "{}: no corpus", dir.display());
    entries
}

struct Failure {
    input: String,
    bytes: Vec<u8>,
    message: String,
}

/// Runs `check` on every input, each under `catch_unwind`; the failures,
/// at most ten.
fn run(inputs: impl IntoIterator<Item = (String, Vec<u8>)>, check: fn(&[u8])) -> Vec<Failure> {
    let mut failures = Vec::new();
    for (input, bytes) in inputs {
        if let Err(p) = panic::catch_unwind(AssertUnwindSafe(|| check(&bytes))) {
            let message = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(Failure {
                input,
                bytes,
                message,
            });
            if failures.len() == 10 {
                break;
            }
        }
    }
    failures
}

/// The corpus of `target`, then `count` seeded mutations of it.
fn inputs(target: &str, count: usize) -> Vec<(String, Vec<u8>)> {
    let corpus = corpus(target);
    let mut rng = Rng(SEED);
    let mutations: Vec<(String, Vec<u8>)> = (0..count)
        .map(|i| (format!("mutation {i}"), mutate(&mut rng, &corpus)))
        .collect();
    corpus
        .into_iter()
        .map(|(name, b)| (format!("corpus/{target}/{name}"), b))
        .chain(mutations)
        .collect()
}

/// Replays `target` and fails naming every input that panicked, each
/// written under the test's temp directory.
fn replay(target: &str, mutations: usize, check: fn(&[u8])) {
    let inputs = inputs(target, mutations);
    let count = inputs.len();
    let start = Instant::now();
    let failures = run(inputs, check);
    eprintln!(
        "fuzz replay {target}: {count} inputs in {:.2} s",
        start.elapsed().as_secs_f64()
    );
    if failures.is_empty() {
        return;
    }
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("fuzz-replay")
        .join(target);
    fs::create_dir_all(&dir).expect("a directory for failing inputs");
    let mut report = format!(
        "{} input(s) of fuzz target '{target}' failed:\n",
        failures.len()
    );
    for (i, f) in failures.iter().enumerate() {
        let path = dir.join(format!("failure-{i}"));
        fs::write(&path, &f.bytes).expect("write a failing input");
        let shown: String = f
            .bytes
            .iter()
            .take(300)
            .flat_map(|&c| c.escape_ascii())
            .map(char::from)
            .collect();
        let _ = writeln!(
            report,
            "- {} ({} bytes, written to {}): {}\n  {shown}",
            f.input,
            f.bytes.len(),
            path.display(),
            f.message
        );
    }
    panic!("{report}");
}

#[test]
fn argv_target_holds_on_its_corpus_and_seeded_mutations() {
    replay("argv", MUTATIONS, argv::check);
}

#[test]
fn config_target_holds_on_its_corpus_and_seeded_mutations() {
    replay("config", CONFIG_MUTATIONS, config::check);
    // The check's scratch tree (one per process, as the fuzz target keeps
    // it for its whole run).
    let scratch = std::env::temp_dir().join(format!("ck-jit-fuzz-config-{}", std::process::id()));
    let _ = fs::remove_dir_all(scratch);
}

#[test]
fn depfile_target_holds_on_its_corpus_and_seeded_mutations() {
    replay("depfile", MUTATIONS, depfile::check);
}

#[test]
fn dynsym_target_holds_on_its_corpus_and_seeded_mutations() {
    replay("dynsym", MUTATIONS, dynsym::check);
}

#[test]
fn manifest_target_holds_on_its_corpus_and_seeded_mutations() {
    replay("manifest", MUTATIONS, manifest::check);
}

#[test]
fn compact_target_holds_on_its_corpus_and_seeded_mutations() {
    replay("compact", MUTATIONS, compact::check);
}

#[test]
fn a_panicking_check_is_reported_with_its_input() {
    fn no_nul(data: &[u8]) {
        assert!(!data.contains(&0), "a NUL");
    }
    let failures = run(
        [
            ("clean".to_string(), b"abc".to_vec()),
            ("dirty".to_string(), b"a\0c".to_vec()),
        ],
        no_nul,
    );
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].input, "dirty");
    assert_eq!(failures[0].bytes, b"a\0c");
    assert!(
        failures[0].message.contains("a NUL"),
        "{}",
        failures[0].message
    );
}

#[test]
fn mutations_are_seeded_and_differ_from_the_corpus() {
    let (a, b) = (inputs("depfile", MUTATIONS), inputs("depfile", MUTATIONS));
    assert!(
        a.iter().map(|i| &i.1).eq(b.iter().map(|i| &i.1)),
        "not reproducible"
    );
    let corpus = corpus("depfile");
    let new = a
        .iter()
        .skip(corpus.len())
        .filter(|(_, m)| !corpus.iter().any(|(_, c)| c == m))
        .count();
    assert!(
        new > MUTATIONS * 9 / 10,
        "only {new} mutations are new inputs"
    );
}

/// The compact corpus: what the writer makes of the manifest seeds and of
/// a 40-blob family that spans three name blocks, and damaged copies.
fn compact_corpus() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, json) in corpus("manifest") {
        let m = Manifest::from_json(std::str::from_utf8(&json).expect("UTF-8 seed"))
            .unwrap_or_else(|e| panic!("corpus/manifest/{name}: {e}"));
        let stem = name.trim_end_matches(".json");
        out.push((format!("{stem}.ckm"), m.to_compact()));
    }
    let mut m = Manifest::new("fuzz_family", "/tree");
    let group = |name: &str, family: Option<&str>| Group {
        name: name.into(),
        compiler: "cc".into(),
        args: vec![
            "-shared".into(),
            "{src}".into(),
            "-o".into(),
            "{out}".into(),
        ],
        cwd: None,
        symbol: SymbolSpec::Prefix("k".into()),
        depfile: true,
        family: family.map(str::to_string),
        neutral: Default::default(),
    };
    m.groups = vec![
        group("fwd", Some("fmha")),
        group("bwd", Some("fmha")),
        group("misc", None),
    ];
    for i in 0..40u32 {
        let name = format!(
            "fmha_{:02}_{}",
            i * 7 % 40,
            ["fp16", "bf16"][i as usize % 2]
        );
        m.blobs.push(Blob {
            source: if i % 5 == 0 {
                format!("odd/{i}.cpp")
            } else {
                format!("k/{name}.cpp")
            },
            name,
            group: i % 3,
            symbol: (i % 9 == 0).then(|| SymbolSpec::Exact(format!("entry_{i}"))),
            meta: [
                ("dtype", ["fp16", "bf16"][i as usize % 2]),
                ("hdim", ["64", "128", "256"][i as usize % 3]),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        });
    }
    m.finish().expect("a valid family manifest");
    let names: Vec<String> = m.blobs.iter().map(|b| b.name.clone()).collect();
    m.set_together(names.chunks(3).map(<[String]>::to_vec))
        .expect("valid sets");
    let family = m.to_compact();
    out.push(("family-40.ckm".into(), family.clone()));
    // Damaged: cut short, a section past the end, a count larger than
    // the names, a name that is not UTF-8.
    out.push((
        "damaged-truncated.ckm".into(),
        family[..family.len() / 2].to_vec(),
    ));
    let mut past = family.clone();
    past[16 + 4 * 8..16 + 4 * 8 + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    out.push(("damaged-section-offset.ckm".into(), past));
    let mut count = family.clone();
    count[8..12].copy_from_slice(&100_000u32.to_le_bytes());
    out.push(("damaged-count.ckm".into(), count));
    let mut not_utf8 = family;
    let names_at = u32::from_le_bytes(not_utf8[16 + 4 * 8..16 + 4 * 8 + 4].try_into().unwrap());
    // After the first entry's `shared` and `len`: its first byte.
    not_utf8[names_at as usize + 2] = 0xff;
    out.push(("damaged-name-not-utf8.ckm".into(), not_utf8));
    out.sort();
    out
}

/// `fuzz/corpus/compact` holds what the writer writes now: a change of
/// the compact format would otherwise leave seeds that stop at the
/// version check. `CK_JIT_WRITE_FUZZ_CORPUS=1` writes them afresh.
#[test]
fn compact_corpus_is_what_the_writer_writes_now() {
    let dir = fuzz_dir().join("corpus/compact");
    let want = compact_corpus();
    if std::env::var_os("CK_JIT_WRITE_FUZZ_CORPUS").is_some() {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("corpus directory");
        for (name, bytes) in &want {
            fs::write(dir.join(name), bytes).expect("write a seed");
        }
    }
    let have = corpus("compact");
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|e| e.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&have),
        names(&want),
        "rewrite fuzz/corpus/compact with CK_JIT_WRITE_FUZZ_CORPUS=1"
    );
    for ((name, h), (_, w)) in have.iter().zip(&want) {
        assert!(
            h == w,
            "fuzz/corpus/compact/{name} is not what the writer writes now; \
             rewrite it with CK_JIT_WRITE_FUZZ_CORPUS=1"
        );
    }
    // The undamaged seeds open, and every one of them decodes whole.
    for (name, bytes) in &have {
        let whole = Compact::parse(bytes).and_then(|c| c.to_manifest());
        assert_eq!(whole.is_ok(), !name.starts_with("damaged-"), "{name}");
    }
}
