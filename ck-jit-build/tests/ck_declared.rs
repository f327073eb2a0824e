//! Every blob of real CK code generator output, both CK versions in
//! `shared/data/ck`, every direction each generator offers (`-r 1`): each
//! blob is described by its own declarations (entry, kind, architecture,
//! traits keyed by the traits template's parameter names), the description
//! agrees with the tokens of its file name where the name states them, and
//! no trait of any blob is left unnamed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_jit_build::ck::decl;
use ck_jit_build::ck::vocab::Vocabulary;

fn ck_data() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/data/ck");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CK_JIT_REQUIRE_CK_DATA").is_none(),
        "CK_JIT_REQUIRE_CK_DATA is set but {} is missing",
        dir.display()
    );
    eprintln!("SKIPPED: no CK generators at {}", dir.display());
    None
}

/// The directions a generator offers: its `codegen/ops/fmha_*.py` modules.
fn directions(example: &Path) -> Vec<String> {
    let mut d: Vec<String> = fs::read_dir(example.join("codegen/ops"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(".py")?;
            Some(stem.strip_prefix("fmha_").unwrap_or(stem).to_string())
        })
        .filter(|d| d != "__init__")
        .collect();
    d.sort();
    d
}

/// Runs the generator (`-r 1`, every direction) into a fresh directory.
fn generate(version: &str) -> Option<(PathBuf, PathBuf, Vec<String>)> {
    let example = ck_data()?.join(version).join("example/ck_tile/01_fmha");
    let dirs = directions(&example);
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("ck-declared-{version}"));
    let _ = fs::remove_dir_all(&out);
    fs::create_dir_all(&out).unwrap();
    let status = Command::new("python3")
        .current_dir(&example)
        .args(["generate.py", "-r", "1", "-d", &dirs.join(","), "-o"])
        .arg(&out)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "{version}: generate.py failed");
    Some((example, out, dirs))
}

/// A `_d<N>_` token of a file name: the head dimension it states.
fn name_hdim(stem: &str) -> Option<String> {
    stem.split('_').find_map(|t| {
        let n = t.strip_prefix('d')?;
        (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then(|| n.to_string())
    })
}

fn check_version(version: &str, expect_arch: bool) {
    let Some((example, out, dirs)) = generate(version) else {
        return;
    };
    let vocab = Vocabulary::read(&example).unwrap();
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    let mut no_spec = Vec::new();
    let mut failures = Vec::new();
    let mut blobs = 0;
    let mut arch_blobs = 0;
    for e in fs::read_dir(&out).unwrap() {
        let path = e.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.extension().is_none_or(|x| x != "cpp") {
            continue;
        }
        let text = fs::read_to_string(&path).unwrap();
        let specs = decl::specialisations(&text).unwrap();
        let is_blob = specs.iter().any(|s| {
            s.args
                .first()
                .and_then(|a| decl::split_instantiation(a))
                .is_some_and(|(t, _)| vocab.template(&t).is_some_and(|t| t.is_class))
        });
        if !is_blob {
            no_spec.push(stem);
            continue;
        }
        blobs += 1;
        let d = match vocab.describe(&specs) {
            Ok(d) => d,
            Err(why) => {
                failures.push(format!("{stem}: {why}"));
                continue;
            }
        };
        *kinds.entry(d.kind.clone()).or_default() += 1;
        // The file name is a cross-check: what it states agrees with the
        // declarations.
        let family = d.kind.split('_').next().unwrap_or_default();
        if !stem.starts_with(&format!("fmha_{family}")) {
            failures.push(format!(
                "{stem}: declared kind {} is not in the name",
                d.kind
            ));
        }
        if let (Some(h), Some(m)) = (name_hdim(&stem), d.meta.get("hdim")) {
            if &h != m {
                failures.push(format!("{stem}: name says d{h}, declaration hdim {m}"));
            }
        }
        if let Some(dt) = d.meta.get("dtype") {
            if !stem.split('_').any(|t| t == dt) {
                failures.push(format!("{stem}: declared dtype {dt} is not in the name"));
            }
        }
        let suffix = stem.rsplit('_').next().filter(|t| t.starts_with("gfx"));
        if d.arch.as_deref() != suffix {
            failures.push(format!(
                "{stem}: declared arch {:?}, name suffix {suffix:?}",
                d.arch
            ));
        }
        if expect_arch {
            arch_blobs += usize::from(d.arch.is_some());
        }
        // Every traits parameter became a key.
        let entry = vocab.template(&d.entry).expect("entry template declared");
        assert!(!entry.params.is_empty(), "{}", d.entry);
    }
    assert!(
        failures.is_empty(),
        "{version}: {} of {blobs} blobs:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
    // Only the dispatchers (and host sources) define no blob entry.
    for stem in &no_spec {
        assert!(
            stem.ends_with("_api"),
            "{version}: {stem} declares no blob entry and is not a dispatcher"
        );
    }
    let kind_names: BTreeSet<&str> = kinds.keys().map(String::as_str).collect();
    eprintln!(
        "{version}: directions {dirs:?}, {blobs} blobs, {} dispatchers, kinds {kinds:?}",
        no_spec.len()
    );
    assert!(
        kind_names.contains("fwd") && kind_names.contains("bwd_dq_dk_dv"),
        "{kinds:?}"
    );
    if expect_arch {
        assert!(
            arch_blobs > blobs / 2,
            "{version}: only {arch_blobs} of {blobs} declare an arch"
        );
    }
}

#[test]
fn every_blob_of_ck_2024_10_23_is_described_by_its_declarations() {
    check_version("ck-2024-10-23", false);
}

#[test]
fn every_blob_of_ck_2025_11_is_described_by_its_declarations() {
    check_version("ck-2025-11", true);
}
