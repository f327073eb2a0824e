//! `ck-jit build -j 8` run by `make -jN` through a `+` recipe takes its
//! compile slots from make's jobserver: of eight cold blobs no more than N
//! compile at once. Under `make -j8` the same build goes past 3, so the
//! tokens are really taken from make's pipe (not just one at a time) and
//! the count can fail.
//!
//! The compiler is a script that appends `+`/`-` lines around each compile
//! (`>>` is `O_APPEND`); the highest running sum is the most compiles that
//! ran at once. The compiles sleep only so that they overlap when nothing
//! holds them back: no assertion is about time.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};

const CK_JIT: &str = env!("CARGO_BIN_EXE_ck-jit");
const BLOBS: usize = 8;

/// A directory of its own, removed on drop unless the test panicked.
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        let dir = std::env::temp_dir()
            .join("ck-jit-cli-tests")
            .join(format!("{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("kernels")).unwrap();
        Tree { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Eight blobs `k0`..`k7` compiled by a script that records itself in
/// `running.log`, sleeps 300 ms and hands over to `cc`.
fn setup(t: &Tree) {
    let script = format!(
        "#!/bin/sh\ncase \"$1\" in --version) exec cc \"$@\";; esac\n\
         echo + >> '{log}'\nsleep 0.3\ncc \"$@\"\nrc=$?\necho - >> '{log}'\nexit $rc\n",
        log = t.path("running.log").display()
    );
    let draft = t.path("cc.sh.in");
    fs::write(&draft, script).unwrap();
    // Copied by another process: a file this (multi-threaded) process had
    // open for writing could be inherited by a concurrent fork, and
    // executing it would then fail with "text file busy".
    let cc = t.path("cc.sh");
    assert!(Command::new("cp")
        .arg(&draft)
        .arg(&cc)
        .status()
        .unwrap()
        .success());
    fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).unwrap();

    let mut m = Manifest::new("ck_jit_cli_jobserver", t.dir.to_string_lossy());
    m.groups.push(Group {
        name: "c".into(),
        compiler: cc.display().to_string(),
        args: ["-O0", "-fPIC", "-shared", "{src}", "-o", "{out}"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        cwd: None,
        symbol: SymbolSpec::Exact("{name}".into()),
        depfile: true,
        family: None,
        neutral: Default::default(),
    });
    for i in 0..BLOBS {
        let name = format!("k{i}");
        fs::write(
            t.path(&format!("kernels/{name}.c")),
            format!("int {name}(int x) {{ return x * 2 + {i}; }}\n"),
        )
        .unwrap();
        m.blobs.push(Blob {
            name,
            source: format!("kernels/k{i}.c"),
            group: 0,
            symbol: None,
            meta: Default::default(),
        });
    }
    m.finish().unwrap();
    fs::write(t.path("manifest.json"), m.to_json()).unwrap();
}

/// `make -s -j<jobs>` over a Makefile whose one recipe, marked `+`, is
/// `ck-jit build --all -j 8`; the test's own `CK_JIT_*` and make variables
/// are left out (a `make test` around this must not decide the outcome).
fn build_under_make(t: &Tree, jobs: usize) -> Output {
    let q = |p: &Path| format!("'{}'", p.display());
    fs::write(
        t.path("Makefile"),
        format!(
            "all:\n\t+{} --manifest {} --cache-dir {} build --all -j {BLOBS}\n",
            q(Path::new(CK_JIT)),
            q(&t.path("manifest.json")),
            q(&t.path("cache")),
        ),
    )
    .unwrap();
    let mut c = Command::new("make");
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy().into_owned();
        if k.starts_with("CK_JIT_")
            || ["MAKEFLAGS", "MFLAGS", "CARGO_MAKEFLAGS", "MAKELEVEL"].contains(&k.as_str())
        {
            c.env_remove(k);
        }
    }
    c.arg("-s")
        .arg(format!("-j{jobs}"))
        .env("HOME", t.path("home"))
        .env("XDG_CACHE_HOME", t.path("xdg"))
        .current_dir(&t.dir)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("GNU make is needed (apt-get install make): {e}"))
}

/// The most compiles that ran at once, after checking the build succeeded
/// and all eight compiled and ended.
fn most_at_once(t: &Tree, out: &Output) -> usize {
    let text = format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the build failed: {text}");
    let log = fs::read_to_string(t.path("running.log")).expect("the compilers' running log");
    let (mut now, mut most, mut started) = (0i64, 0i64, 0);
    for line in log.lines() {
        match line {
            "+" => {
                now += 1;
                started += 1;
            }
            "-" => now -= 1,
            other => panic!("unexpected line {other:?} in {log}"),
        }
        most = most.max(now);
    }
    assert_eq!((started, now), (BLOBS, 0), "{log}\n{text}");
    most as usize
}

#[test]
fn build_j8_under_make_j3_never_runs_more_than_3_compiles() {
    let t = Tree::new("jobserver-build-make3");
    setup(&t);
    let most = most_at_once(&t, &build_under_make(&t, 3));
    eprintln!("make -j3, ck-jit build -j 8: at most {most} compiles at once");
    assert!(most <= 3, "{most} compiles ran at once under make -j3");
}

#[test]
fn build_j8_under_make_j8_runs_more_than_3_compiles_at_once() {
    let t = Tree::new("jobserver-build-make8");
    setup(&t);
    let most = most_at_once(&t, &build_under_make(&t, 8));
    eprintln!("make -j8, ck-jit build -j 8: at most {most} compiles at once");
    assert!(
        most > 3,
        "only {most} compiles overlapped under make -j8: the make -j3 test proves nothing"
    );
}
