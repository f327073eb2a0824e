//! Shared by the test binaries: the blob list read on its own terms (file
//! names split into tokens, without the crate's or ck-jit's parsers, so
//! that expectations are computed independently of what they check), the
//! mocked `hipcc`, and a fresh cache directory per test binary.

#![allow(dead_code)]

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Once, OnceLock};

/// Every blob file name of the reference codegen run (`direction/name.cpp`),
/// the four dispatchers left out.
pub fn blob_files() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../ck-jit-build/tests/data/ck-fmha-blobs.txt");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.is_empty() && !l.ends_with("_api.cpp"))
        .map(String::from)
        .collect()
}

/// A blob name split into what tests need: its kind (from the prefix), head
/// dimension, data type and the remaining `_`-separated tokens.
#[derive(Debug, Clone)]
pub struct Name {
    pub stem: String,
    pub family: &'static str,
    pub hdim: i64,
    pub dtype: String,
    pub tokens: Vec<String>,
}

/// Prefixes of each family's file names, longest first where one starts
/// another.
const PREFIXES: &[(&str, &str)] = &[
    ("fmha_fwd_splitkv_combine_d", "fwd_splitkv_combine"),
    ("fmha_fwd_splitkv_d", "fwd_splitkv"),
    ("fmha_fwd_appendkv_d", "fwd_appendkv"),
    ("fmha_fwd_d", "fwd"),
    ("fmha_bwd_dot_do_o_d", "bwd_dot_do_o"),
    ("fmha_bwd_convert_dq_d", "bwd_convert_dq"),
    ("fmha_bwd_d", "bwd_dq_dk_dv"),
];

impl Name {
    pub fn parse(file: &str) -> Name {
        let stem = file.rsplit('/').next().unwrap_or(file);
        let stem = stem.strip_suffix(".cpp").unwrap_or(stem);
        let (prefix, family) = PREFIXES
            .iter()
            .find(|(p, _)| stem.starts_with(p))
            .unwrap_or_else(|| panic!("{stem}: no known prefix"));
        let rest = &stem[prefix.len()..];
        let mut parts = rest.split('_');
        let hdim = parts.next().unwrap().parse().unwrap();
        let dtype = parts.next().unwrap().to_string();
        Name {
            stem: stem.to_string(),
            family,
            hdim,
            dtype,
            tokens: parts.map(String::from).collect(),
        }
    }

    pub fn has(&self, token: &str) -> bool {
        self.tokens.iter().any(|t| t == token)
    }

    /// The padding token (`psskddv`, `pdv`, ...), if any: `p` followed by
    /// `s`, `sk`, `d`, `dv`.
    pub fn pad(&self) -> &str {
        self.tokens
            .iter()
            .find(|t| {
                t.len() > 1
                    && t.starts_with('p')
                    && t[1..]
                        .bytes()
                        .all(|b| matches!(b, b's' | b'k' | b'd' | b'v'))
            })
            .map_or("", String::as_str)
    }

    /// Whether the seqlen_q padding is on (the pad token starts `ps` and
    /// that `s` is not the start of `sk`).
    pub fn pads_s(&self) -> bool {
        let p = self.pad();
        p.starts_with("ps") && !p.starts_with("psk")
    }
}

/// Every blob name, parsed.
pub fn names() -> Vec<Name> {
    blob_files().iter().map(|f| Name::parse(f)).collect()
}

/// The blob `select` should return among `names` of `family` that `keep`:
/// the smallest (or, with `largest`, the largest) head dimension, then the
/// name; and how many there are.
pub fn expected<'a>(
    names: &'a [Name],
    family: &str,
    largest: bool,
    keep: impl Fn(&Name) -> bool,
) -> (Option<&'a Name>, usize) {
    let mut matching: Vec<&Name> = names
        .iter()
        .filter(|n| n.family == family && keep(n))
        .collect();
    matching.sort_by(|a, b| {
        let by_hdim = if largest {
            b.hdim.cmp(&a.hdim)
        } else {
            a.hdim.cmp(&b.hdim)
        };
        by_hdim.then_with(|| a.stem.cmp(&b.stem))
    });
    (matching.first().copied(), matching.len())
}

/// The mocked `hipcc` (the `ck-jit-tests` package's `mock-cc`), built on
/// first use with the cargo that runs the tests: a dev-dependency's
/// binaries are not built for its dependents' tests.
pub fn mock_cc() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let out = Command::new(env!("CARGO"))
            .args(["build", "-p", "ck-jit-tests", "--bin", "mock-cc"])
            .arg("--message-format=json")
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("run cargo to build mock-cc");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "cargo build of mock-cc failed:\n{stderr}"
        );
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["reason"] == "compiler-artifact" && v["target"]["name"] == "mock-cc")
            .find_map(|v| v["executable"].as_str().map(PathBuf::from))
            .unwrap_or_else(|| panic!("cargo built no mock-cc executable:\n{stderr}"))
    })
}

/// The host compiler behind the mock: CK's compile command carries
/// `-fgpu-flush-denormals-to-zero`, a HIP option that clang ignores for
/// host code but g++ rejects, so it is dropped before `c++` runs.
const HOST_CXX: &str = "#!/bin/sh\n\
# c++ without the HIP-only flags of CK's compile command\n\
for arg do\n\
    shift\n\
    case \"$arg\" in\n\
        -fgpu-*) ;;\n\
        *) set -- \"$@\" \"$arg\" ;;\n\
    esac\n\
done\n\
exec c++ \"$@\"\n";

static SETUP: Once = Once::new();

/// What `setup` prepared for this test binary.
pub struct Env {
    /// The cache directory.
    pub cache: PathBuf,
    /// The mock's log: one line per compile, the argv `\x1f`-joined.
    pub log: PathBuf,
}

/// Points ck-jit at an empty cache directory of this test binary, before
/// the runtime first reads its environment (once per process): every test
/// calls it (or [`setup_mocked`]) first.
pub fn setup(binary: &str) -> Env {
    prepare(binary, false)
}

/// [`setup`], and points the runtime's `hipcc` at the mocked one, which
/// logs every compile to [`Env::log`].
pub fn setup_mocked(binary: &str) -> Env {
    prepare(binary, true)
}

fn prepare(binary: &str, mocked: bool) -> Env {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ck-fmha-{binary}"));
    let env = Env {
        cache: dir.join("cache"),
        log: dir.join("mock-cc.log"),
    };
    SETUP.call_once(|| {
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        std::env::set_var("CK_JIT_CACHE_DIR", &env.cache);
        if mocked {
            let host_cxx = dir.join("host-c++");
            fs::write(&host_cxx, HOST_CXX).unwrap();
            fs::set_permissions(&host_cxx, fs::Permissions::from_mode(0o755)).unwrap();
            std::env::set_var("CK_JIT_HIPCC", mock_cc());
            std::env::set_var("MOCK_CC_REAL", &host_cxx);
            std::env::set_var("MOCK_CC_LOG", &env.log);
        }
    });
    env
}

/// `c++`, for the tests that compile C++ themselves.
pub fn cxx() -> &'static str {
    let ok = Command::new("c++")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "these tests need a C++ compiler as `c++`");
    "c++"
}

/// The stand-in CK headers' include directories.
pub fn standin_includes() -> [PathBuf; 2] {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("ck-standin");
    [root.join("include"), root.join("example/ck_tile/01_fmha")]
}
