//! Shared pieces of the workspace's integration tests: throwaway trees with
//! blob sources, hand-made manifests, the mocked compiler and the probe
//! process.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

pub mod held;

use ck_jit_build::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::config::Config;
use ck_jit_rt::Runtime;

/// A directory of its own for one test, removed on drop unless the test
/// panicked (so a failure leaves its evidence).
pub struct Tree {
    /// The directory.
    pub dir: PathBuf,
}

impl Tree {
    /// A fresh empty tree named after the test.
    pub fn new(name: &str) -> Tree {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join("ck-jit-tests").join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("create test dir");
        Tree { dir }
    }

    /// Absolute path of `rel`.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Writes a file (creating parents).
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(d) = p.parent() {
            fs::create_dir_all(d).expect("create parent");
        }
        fs::write(&p, text).expect("write file");
        p
    }

    /// Writes a C blob `kernels/<name>.c` exporting `int name(int x)`
    /// returning `x * mul + add`.
    pub fn c_blob(&self, name: &str, mul: i32, add: i32) -> PathBuf {
        self.write(
            &format!("kernels/{name}.c"),
            &format!("int {name}(int x) {{ return x * {mul} + {add}; }}\n"),
        )
    }

    /// The cache directory tests use (inside the tree).
    pub fn cache_dir(&self) -> PathBuf {
        self.path("cache")
    }

    /// Writes a manifest file and returns its path.
    pub fn write_manifest(&self, m: &Manifest) -> PathBuf {
        let p = self.path("manifest.json");
        fs::write(&p, m.to_json()).expect("write manifest");
        p
    }

    /// A runtime over `m` with this tree's cache and `config`.
    pub fn runtime(&self, m: &Manifest, config: Config) -> Runtime {
        Runtime::new(m.clone(), "test")
            .with_config(config)
            .with_root(&self.dir)
            .with_cache_dir(self.cache_dir())
    }

    /// The log file the mocked compiler appends to.
    pub fn compile_log(&self) -> PathBuf {
        self.path("compiles.log")
    }

    /// Lines in the compile log (compiler runs so far).
    pub fn compiles(&self) -> usize {
        fs::read_to_string(self.compile_log())
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// A manifest over `kernels/<name>.c` for each name, compiled by
/// `compiler` as a shared object, entry symbol = the blob name.
pub fn c_manifest(root: &Path, names: &[&str], compiler: &str, extra: &[&str]) -> Manifest {
    let mut m = Manifest::new("ck_jit_test", root.to_string_lossy());
    let mut args: Vec<String> = vec!["-O1".into(), "-fPIC".into(), "-shared".into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["{src}".into(), "-o".into(), "{out}".into()]);
    m.groups.push(Group {
        name: "c".into(),
        compiler: compiler.into(),
        args,
        cwd: None,
        symbol: SymbolSpec::Exact("{name}".into()),
        depfile: true,
        family: None,
        neutral: Default::default(),
    });
    for n in names {
        m.blobs.push(Blob {
            name: n.to_string(),
            source: format!("kernels/{n}.c"),
            group: 0,
            symbol: None,
            meta: BTreeMap::new(),
        });
    }
    m.finish().expect("valid test manifest");
    m
}

/// Settings for tests: the environment's, minus anything that would make a
/// developer's own variables change the outcome.
pub fn test_config() -> Config {
    let mut c = Config::from_env();
    c.cache_dir = None;
    c.root = None;
    c.manifest = None;
    c.offline = false;
    c.shared_cache = false;
    c.verify_full = false;
    c.launcher = Vec::new();
    c.compile_timeout = std::time::Duration::from_secs(120);
    c.lock_timeout = std::time::Duration::from_secs(180);
    c.compiler_check = ck_jit_rt::CompilerCheck::Content;
    c.record = None;
    c.arch = Default::default();
    c.cache_path = Vec::new();
    c
}

/// Path of a binary of this package (next to the test executable's dir).
pub fn bin_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    let dir = exe.parent().expect("exe dir");
    let dir = if dir.ends_with("deps") {
        dir.parent().expect("target dir")
    } else {
        dir
    };
    dir.join(name)
}

/// Calls a resolved `int f(int)` entry (a pointer the runtime returned
/// for a test blob; tests never pass anything else).
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn call(p: *const (), x: i32) -> i32 {
    // SAFETY: every test blob exports `int name(int)`.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(p) };
    f(x)
}

/// Whether the launcher `program` (from the Debian package `package`) is
/// installed; a skip says so on stderr, and under
/// `CK_JIT_REQUIRE_LAUNCHERS` a missing one fails the test instead.
pub fn launcher_available(program: &str, package: &str) -> bool {
    if ck_jit_rt::__internals::find_program(program).is_some() {
        return true;
    }
    assert!(
        std::env::var_os("CK_JIT_REQUIRE_LAUNCHERS").is_none(),
        "{program} is required (CK_JIT_REQUIRE_LAUNCHERS is set) but not installed"
    );
    eprintln!(
        "skipping: {program} not found; install it (apt-get install {package}) to run this test"
    );
    false
}

/// The `ck-jit` tool of this workspace, built from the current sources:
/// `cargo build -p ck-jit-cli --bin ck-jit` runs once per test process
/// (cheap when it is up to date), so a binary left by an earlier build of
/// other sources is never what a test runs.
pub fn ck_jit_tool() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let tool = bin_path("ck-jit");
            let release = tool.parent().is_some_and(|d| d.ends_with("release"));
            // The cargo running the tests, else the one that built them.
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
            let mut c = std::process::Command::new(cargo);
            c.args(["build", "-q", "-p", "ck-jit-cli", "--bin", "ck-jit"]);
            if release {
                c.arg("--release");
            }
            let status = c.status().expect("running cargo");
            assert!(status.success(), "building ck-jit: {status}");
            assert!(tool.is_file(), "no ck-jit at {}", tool.display());
            tool
        })
        .clone()
}

/// ccache's counter `key` (`direct_cache_hit`, `remote_storage_hit`, ...)
/// in the ccache directory `dir`; 0 when ccache does not list it.
pub fn ccache_stat(dir: &Path, key: &str) -> u64 {
    let out = std::process::Command::new("ccache")
        .arg("--print-stats")
        .env("CCACHE_DIR", dir)
        .output()
        .expect("ccache runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, v)| v.trim().parse().unwrap_or(0))
}

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Compiles the HIP stand-in (`tests/fixtures/real_ck/hip_stand_in.c`,
/// what a CK blob built with `-no-hip-rt` needs of `libamdhip64`) into the
/// shared object `lib` with the system `cc`, failing the test with the
/// compiler's output when it fails.
pub fn build_hip_stand_in(lib: &Path) {
    let mut cmd = Command::new("cc");
    cmd.args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(lib)
        .arg(workspace().join("tests/fixtures/real_ck/hip_stand_in.c"));
    run_ok(&mut cmd);
}

/// Runs a command, fails the test with its output unless it succeeds, and
/// returns its stdout.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).expect("create dir");
    for e in fs::read_dir(from).expect("read dir").flatten() {
        let dest = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).expect("copy file");
        }
    }
}

/// Copies the fixture crate `tests/fixtures/<name>` into `t`, with its path
/// dependencies pointing at this workspace, and the workspace's lock file
/// so the same dependency versions are used.
pub fn fixture_crate(t: &Tree, name: &str) -> PathBuf {
    let ws = workspace();
    let dir = t.path(name);
    copy_dir(&ws.join("tests/fixtures").join(name), &dir);
    let toml = fs::read_to_string(dir.join("Cargo.toml"))
        .expect("fixture Cargo.toml")
        .replace("../../../", &format!("{}/", ws.display()));
    fs::write(dir.join("Cargo.toml"), toml).expect("write Cargo.toml");
    fs::copy(ws.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    dir
}

/// `cargo build` of a fixture crate in `dir` (`configure` adds arguments
/// and variables), offline first, then online if the offline build
/// failed (a dependency not yet in the local registry).
pub fn cargo_build_fixture(
    dir: &Path,
    configure: impl Fn(&mut std::process::Command),
) -> std::process::Output {
    let run = |offline: bool| {
        let mut c = std::process::Command::new(env!("CARGO"));
        c.arg("build")
            .current_dir(dir)
            .env_remove("RUSTFLAGS")
            .env_remove("CARGO_BUILD_RUSTFLAGS");
        configure(&mut c);
        if offline {
            c.arg("--offline");
        }
        c.output().expect("cargo runs")
    };
    let out = run(true);
    if out.status.success() {
        out
    } else {
        run(false)
    }
}

/// Shell lines for a mock compiler that has just written `start` to
/// `log`: wait until no compile has started for half a second (at most 20
/// s), so that compiles started together are all running at one moment
/// however loaded the machine is, while compiles run one after another
/// still never overlap. What [`concurrency`] then counts is how the
/// runtime started them, not how fast the machine was.
pub fn wait_for_siblings(log: &Path) -> String {
    format!(
        "last=$(grep -c start {log}); quiet=0; n=0\n\
         while [ $quiet -lt 5 ] && [ $n -lt 200 ]; do\n  \
         sleep 0.1; c=$(grep -c start {log}); n=$((n+1))\n  \
         if [ \"$c\" = \"$last\" ]; then quiet=$((quiet+1)); else quiet=0; last=$c; fi\n\
         done\n",
        log = log.display()
    )
}

/// From a log where each compile writes `start` when it begins and `end`
/// when it ends (lines in time order): the most compiles running at
/// once, how many started, and how many never ended.
pub fn concurrency(log: &str, start: &str, end: &str) -> (usize, usize, usize) {
    let (mut now, mut most, mut started) = (0usize, 0usize, 0usize);
    for line in log.lines() {
        if line == start {
            now += 1;
            started += 1;
            most = most.max(now);
        } else if line == end {
            now = now.saturating_sub(1);
        } else {
            panic!("unexpected line {line:?} in the compilers' log:\n{log}");
        }
    }
    (most, started, now)
}

/// The static C ABI library cargo built with this test or program (a
/// dependency's `staticlib` lands in `target/<profile>/deps`, beside a
/// test binary and below a program), the newest.
pub fn capi_staticlib() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let mut found: Vec<PathBuf> = [dir.to_path_buf(), dir.join("deps")]
        .iter()
        .filter_map(|d| fs::read_dir(d).ok())
        .flatten()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libck_jit_capi") && n.ends_with(".a"))
        })
        .collect();
    found.sort_by_key(|p| fs::metadata(p).and_then(|m| m.modified()).ok());
    found.pop()
}
