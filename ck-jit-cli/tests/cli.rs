//! The `ck-jit` command-line tool, run as a process: every command, every
//! way of naming blobs, finding a cargo build's manifest, the usage errors,
//! parallel builds that a later lazy call finds without compiling, and gc
//! racing concurrent builds.
//!
//! Every test works in a directory of its own and passes its cache
//! explicitly; the environment's `CK_JIT_*` variables are removed from
//! every child, and `HOME`/`XDG_CACHE_HOME` point into the test directory.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, SystemTime};

use ck_jit_rt::config::Config;
use ck_jit_rt::maintenance::Cache;
use ck_jit_rt::manifest::{Blob, Group, Manifest, SymbolSpec};
use ck_jit_rt::Runtime;
use serde_json::Value;

const CK_JIT: &str = env!("CARGO_BIN_EXE_ck-jit");

/// A directory of its own for one test, removed on drop unless the test
/// panicked (so a failure leaves its evidence).
struct Tree {
    dir: PathBuf,
}

impl Tree {
    fn new(name: &str) -> Tree {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join("ck-jit-cli-tests").join(format!(
            "{name}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Tree { dir }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        p
    }

    /// `kernels/<name>.c` exporting `int name(int x)` = `x * mul + add`.
    fn c_blob(&self, name: &str, mul: i32, add: i32) {
        self.write(
            &format!("kernels/{name}.c"),
            &format!("int {name}(int x) {{ return x * {mul} + {add}; }}\n"),
        );
    }

    fn cache(&self) -> PathBuf {
        self.path("cache")
    }

    fn write_manifest(&self, m: &Manifest) -> PathBuf {
        let p = self.path("manifest.json");
        fs::write(&p, m.to_json()).unwrap();
        p
    }

    /// A compiler that appends a line to `compiles.log` per compile (not
    /// per `--version`) and hands over to `cc`.
    fn counting_cc(&self) -> String {
        let script = format!(
            "#!/bin/sh\ncase \"$1\" in --version) exec cc \"$@\";; esac\necho run >> '{}'\nexec cc \"$@\"\n",
            self.path("compiles.log").display()
        );
        let draft = self.write("cc.sh.in", &script);
        let cc = self.path("cc.sh");
        // Copied by another process: a file this (multi-threaded) process
        // had open for writing could be inherited by a concurrent fork, and
        // executing it would then fail with "text file busy".
        let ok = Command::new("cp").arg(&draft).arg(&cc).status().unwrap();
        assert!(ok.success());
        fs::set_permissions(&cc, fs::Permissions::from_mode(0o755)).unwrap();
        cc.display().to_string()
    }

    fn compiles(&self) -> usize {
        fs::read_to_string(self.path("compiles.log"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    /// `ck-jit --manifest <tree manifest> --cache-dir <tree cache> ARGS`.
    fn ck(&self, args: &[&str]) -> Run {
        self.ck_with(args, |_| {})
    }

    fn ck_with(&self, args: &[&str], setup: impl FnOnce(&mut Command)) -> Run {
        let mut c = self.command();
        c.arg("--manifest")
            .arg(self.path("manifest.json"))
            .arg("--cache-dir")
            .arg(self.cache())
            .args(args);
        setup(&mut c);
        run(c)
    }

    /// The bare command with a clean environment.
    fn command(&self) -> Command {
        let mut c = Command::new(CK_JIT);
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("CK_JIT_") {
                c.env_remove(k);
            }
        }
        c.env("HOME", self.path("home"))
            .env("XDG_CACHE_HOME", self.path("xdg"))
            .env("CK_JIT_CACHE_DIR", self.cache())
            .current_dir(&self.dir)
            .stdin(Stdio::null());
        c
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {self:?}"))
    }

    fn ok(self) -> Run {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }
}

fn run(mut c: Command) -> Run {
    let out = c.output().unwrap();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A blob for [`manifest`]: name, family, metadata.
type BlobSpec<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// Blobs `kernels/<name>.c` in family `family` with metadata `meta`.
fn manifest(root: &Path, compiler: &str, opt: &str, blobs: &[BlobSpec]) -> Manifest {
    let mut m = Manifest::new("ck_jit_cli_test", root.to_string_lossy());
    let mut families: Vec<&str> = blobs.iter().map(|b| b.1).collect();
    families.sort();
    families.dedup();
    for f in &families {
        m.groups.push(Group {
            name: f.to_string(),
            compiler: compiler.into(),
            args: [opt, "-fPIC", "-shared", "{src}", "-o", "{out}"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
            cwd: None,
            symbol: SymbolSpec::Exact("{name}".into()),
            depfile: true,
            family: None,
            neutral: Default::default(),
        });
    }
    for (name, family, meta) in blobs {
        m.blobs.push(Blob {
            name: name.to_string(),
            source: format!("kernels/{name}.c"),
            group: families.iter().position(|f| f == family).unwrap() as u32,
            symbol: None,
            meta: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<BTreeMap<_, _>>(),
        });
    }
    m.finish().unwrap();
    m
}

/// One family `c`, no metadata.
fn simple(t: &Tree, compiler: &str, names: &[&str]) -> PathBuf {
    for (i, n) in names.iter().enumerate() {
        t.c_blob(n, 2, i as i32);
    }
    let blobs: Vec<BlobSpec> = names.iter().map(|n| (*n, "c", &[][..])).collect();
    t.write_manifest(&manifest(&t.dir, compiler, "-O0", &blobs))
}

/// A family/metadata mix for the selection tests.
fn families(t: &Tree) -> PathBuf {
    let blobs: &[BlobSpec] = &[
        (
            "vadd_f32",
            "vec",
            &[("op", "add"), ("dtype", "f32"), ("arch", "x86_64")],
        ),
        ("vadd_f64", "vec", &[("op", "add"), ("dtype", "f64")]),
        ("vmul_f32", "vec", &[("op", "mul"), ("dtype", "f32")]),
        ("fwd_f32", "fwd", &[("op", "fwd"), ("dtype", "f32")]),
    ];
    for (i, b) in blobs.iter().enumerate() {
        t.c_blob(b.0, 3, i as i32);
    }
    t.write_manifest(&manifest(&t.dir, "cc", "-O0", blobs))
}

/// Names in a `list --json` report.
fn names(doc: &Value) -> Vec<String> {
    doc["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_string())
        .collect()
}

fn cached(doc: &Value, name: &str) -> Value {
    doc["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == name)
        .unwrap_or_else(|| panic!("{name} not listed: {doc}"))["cached"]
        .clone()
}

fn entries(t: &Tree) -> u64 {
    t.ck(&["stat", "--json"]).ok().json()["entries"]
        .as_u64()
        .unwrap()
}

/// A runtime in this process over the tree's manifest and cache, with the
/// environment's variables neutralised, as a program would use it.
fn lazy_runtime(t: &Tree) -> Runtime {
    let mut c = Config::from_env();
    c.cache_dir = None;
    c.root = None;
    c.manifest = None;
    c.offline = false;
    c.launcher = Vec::new();
    Runtime::from_file(&t.path("manifest.json"))
        .unwrap()
        .with_config(c)
        .with_root(&t.dir)
        .with_cache_dir(t.cache())
}

fn call(p: *const (), x: i32) -> i32 {
    // SAFETY: every test blob exports `int name(int)`.
    let f: extern "C" fn(i32) -> i32 = unsafe { std::mem::transmute(p) };
    f(x)
}

// ---------------------------------------------------------------- list

#[test]
fn list_reports_source_cache_family_arch_and_metadata() {
    let t = Tree::new("list");
    families(&t);
    fs::remove_file(t.path("kernels/fwd_f32.c")).unwrap();
    t.ck(&["build", "vadd_f32"]).ok();

    let doc = t.ck(&["list", "--json"]).ok().json();
    assert_eq!(names(&doc), ["fwd_f32", "vadd_f32", "vadd_f64", "vmul_f32"]);
    let b = &doc["blobs"][1];
    assert_eq!(b["name"], "vadd_f32");
    assert_eq!(b["family"], "vec");
    assert_eq!(b["compiler"], "cc");
    assert_eq!(b["source_found"], true);
    assert_eq!(b["cached"], true);
    assert!(Path::new(b["object"].as_str().unwrap()).is_file(), "{b}");
    assert_eq!(b["arch"], "x86_64");
    assert_eq!(b["meta"]["dtype"], "f32");
    assert_eq!(cached(&doc, "vadd_f64"), false);
    assert_eq!(doc["blobs"][0]["source_found"], false);
    assert_eq!(doc["blobs"][0]["cached"], Value::Null);

    let text = t.ck(&["list"]).ok().stdout;
    assert!(text.contains("NAME") && text.contains("FAMILY"), "{text}");
    assert!(
        text.contains("source missing") && text.contains("not cached"),
        "{text}"
    );
    assert!(
        text.contains("4 blobs: 1 cached, 2 not cached, 1 source missing"),
        "{text}"
    );
}

#[test]
fn manifest_is_found_through_ck_jit_manifest_and_ck_jit_root() {
    let t = Tree::new("find-manifest");
    let m = families(&t);
    let by_var = run({
        let mut c = t.command();
        c.env("CK_JIT_MANIFEST", &m).args(["list", "--json"]);
        c
    })
    .ok();
    assert_eq!(names(&by_var.json()).len(), 4);

    fs::rename(&m, t.path("ck_jit_manifest.json")).unwrap();
    let by_root = run({
        let mut c = t.command();
        c.env("CK_JIT_ROOT", &t.dir).args(["list", "--json"]);
        c
    })
    .ok();
    assert_eq!(names(&by_root.json()).len(), 4);

    let none = run({
        let mut c = t.command();
        c.args(["list"]);
        c
    });
    assert_eq!(none.code, 2, "{none:?}");
    assert!(
        none.stderr
            .contains("no manifest: expected --manifest PATH"),
        "{none:?}"
    );
    let no_cache = run({
        let mut c = t.command();
        c.env_remove("CK_JIT_CACHE_DIR").args(["stat"]);
        c
    });
    assert_eq!(no_cache.code, 2, "{no_cache:?}");
    assert!(
        no_cache
            .stderr
            .contains("no cache: expected --cache-dir DIR or CK_JIT_CACHE_DIR"),
        "{no_cache:?}"
    );
}

// ------------------------------------------------ a cargo build's manifest

/// A cargo package `name` at `dir` in the tree, a workspace of its own.
fn cargo_package(t: &Tree, dir: &str, name: &str) {
    t.write(
        &format!("{dir}/Cargo.toml"),
        &format!(
            "[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n"
        ),
    );
    t.write(&format!("{dir}/src/lib.rs"), "");
}

/// A workspace at `dir` whose members are packages of the same names.
fn cargo_workspace(t: &Tree, dir: &str, members: &[&str]) {
    let list: Vec<String> = members.iter().map(|m| format!("\"{m}\"")).collect();
    t.write(
        &format!("{dir}/Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
            list.join(", ")
        ),
    );
    for m in members {
        t.write(
            &format!("{dir}/{m}/Cargo.toml"),
            &format!("[package]\nname = \"{m}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
        );
        t.write(&format!("{dir}/{m}/src/lib.rs"), "");
    }
}

/// What a build script leaves behind: a manifest listing `blobs` at
/// `<target>/<profile>/build/<package>-<hash>/out/`, last written
/// `secs_ago` seconds ago.
fn cargo_build(t: &Tree, target: &str, package: &str, hash: &str, blobs: &[&str], secs_ago: u64) {
    let specs: Vec<BlobSpec> = blobs.iter().map(|n| (*n, "c", &[][..])).collect();
    let m = manifest(&t.dir, "cc", "-O0", &specs);
    let p = t.write(
        &format!("{target}/build/{package}-{hash}/out/ck_jit_manifest.json"),
        &m.to_json(),
    );
    let f = fs::File::options().write(true).open(&p).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

/// `ck-jit` run in `dir` of the tree, naming no manifest, with cargo's own
/// choice of target directory (not the one this test was built in).
fn cargo_command(t: &Tree, dir: &str) -> Command {
    let mut c = t.command();
    for var in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET_DIR",
        "CARGO_BUILD_BUILD_DIR",
    ] {
        c.env_remove(var);
    }
    c.current_dir(t.path(dir));
    c
}

/// `ck-jit ARGS` run as [`cargo_command`] does.
fn ck_in(t: &Tree, dir: &str, args: &[&str]) -> Run {
    let mut c = cargo_command(t, dir);
    c.args(args);
    run(c)
}

fn listed(r: Run) -> Vec<String> {
    names(&r.ok().json())
}

#[test]
fn a_cargo_packages_manifest_is_found_from_its_directory_and_below() {
    let t = Tree::new("cargo-find");
    cargo_package(&t, "pkg", "my-kernels");
    cargo_build(
        &t,
        "pkg/target/debug",
        "my-kernels",
        "0123456789abcdef",
        &["vadd"],
        60,
    );
    // Another package's build, whose name starts the same, is not ours.
    cargo_build(
        &t,
        "pkg/target/debug",
        "my-kernels-extra",
        "0123456789abcdef",
        &["other"],
        0,
    );

    let r = ck_in(&t, "pkg", &["list", "--json"]);
    assert!(!r.stderr.contains("using"), "one build, no note: {r:?}");
    assert_eq!(listed(r), ["vadd"]);
    assert_eq!(listed(ck_in(&t, "pkg/src", &["list", "--json"])), ["vadd"]);
    let text = ck_in(&t, "pkg/src", &["list"]).ok().stdout;
    assert!(text.contains("vadd"), "{text}");

    // The build's manifest exports with no --out-dir.
    ck_in(&t, "pkg", &["export-manifest", "--to", "deploy.json"]).ok();
    assert!(t.path("pkg/deploy.json").is_file());

    // A target directory moved by CARGO_TARGET_DIR is where cargo puts
    // builds, so it is where they are looked for.
    cargo_build(
        &t,
        "elsewhere/debug",
        "my-kernels",
        "fedcba9876543210",
        &["moved"],
        0,
    );
    let r = run({
        let mut c = t.command();
        c.env("CARGO_TARGET_DIR", t.path("elsewhere"))
            .current_dir(t.path("pkg"))
            .args(["list", "--json"]);
        c
    });
    assert_eq!(listed(r), ["moved"]);
}

#[test]
fn of_two_profiles_the_newest_build_is_used_unless_profile_names_one() {
    let t = Tree::new("cargo-profiles");
    cargo_package(&t, "pkg", "my-kernels");
    cargo_build(
        &t,
        "pkg/target/debug",
        "my-kernels",
        "1111111111111111",
        &["dbg"],
        600,
    );
    cargo_build(
        &t,
        "pkg/target/release",
        "my-kernels",
        "2222222222222222",
        &["rel"],
        60,
    );

    let r = ck_in(&t, "pkg", &["list", "--json"]);
    assert!(
        r.stderr.contains(
            "ck-jit: using target/release/build/my-kernels-2222222222222222/out/\
             ck_jit_manifest.json (newest of 2; --profile to choose)"
        ),
        "{r:?}"
    );
    assert_eq!(r.stderr.lines().count(), 1, "{r:?}");
    assert_eq!(listed(r), ["rel"]);

    let r = ck_in(&t, "pkg", &["list", "--json", "--profile", "dev"]);
    assert!(r.stderr.is_empty(), "{r:?}");
    assert_eq!(listed(r), ["dbg"]);
    assert_eq!(
        listed(ck_in(
            &t,
            "pkg",
            &["--profile", "release", "list", "--json"]
        )),
        ["rel"]
    );

    // A newer debug build wins next.
    cargo_build(
        &t,
        "pkg/target/debug",
        "my-kernels",
        "1111111111111111",
        &["dbg2"],
        0,
    );
    assert_eq!(listed(ck_in(&t, "pkg", &["list", "--json"])), ["dbg2"]);

    // Builds for another target are looked for under its triple.
    cargo_build(
        &t,
        "pkg/target/aarch64-unknown-linux-gnu/release",
        "my-kernels",
        "3333333333333333",
        &["cross"],
        0,
    );
    let r = ck_in(&t, "pkg", &["list", "--json", "--profile", "release"]);
    assert!(r.stderr.contains("(newest of 2)"), "{r:?}");
    assert_eq!(listed(r), ["cross"]);

    let r = ck_in(&t, "pkg", &["list", "--profile", "profiling"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("no build of profile profiling (profiling/) of package my-kernels")
            && r.stderr.contains("cargo build --profile profiling"),
        "{r:?}"
    );
}

#[test]
fn package_chooses_among_a_workspaces_packages() {
    let t = Tree::new("cargo-workspace");
    cargo_workspace(&t, "ws", &["kern-a", "kern-b"]);
    cargo_build(
        &t,
        "ws/target/debug",
        "kern-a",
        "aaaaaaaaaaaaaaaa",
        &["a1"],
        0,
    );
    cargo_build(
        &t,
        "ws/target/debug",
        "kern-b",
        "bbbbbbbbbbbbbbbb",
        &["b1"],
        0,
    );

    let r = ck_in(&t, "ws", &["list"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("2 packages of the cargo workspace at")
            && r.stderr.contains("have a built manifest: kern-a, kern-b")
            && r.stderr.contains("pass --package NAME"),
        "{r:?}"
    );

    assert_eq!(
        listed(ck_in(&t, "ws", &["list", "--json", "--package", "kern-b"])),
        ["b1"]
    );
    assert_eq!(
        listed(ck_in(&t, "ws", &["-p", "kern-a", "list", "--json"])),
        ["a1"]
    );
    // The package the current directory is in, else --package.
    assert_eq!(
        listed(ck_in(&t, "ws/kern-b/src", &["list", "--json"])),
        ["b1"]
    );
    assert_eq!(
        listed(ck_in(
            &t,
            "ws/kern-a",
            &["list", "--json", "--package", "kern-b"]
        )),
        ["b1"]
    );
    // --package asks for the cargo build even where a variable names a
    // manifest.
    let r = run({
        let mut c = cargo_command(&t, "ws");
        c.env("CK_JIT_MANIFEST", t.path("nowhere.json")).args([
            "list",
            "--json",
            "--package",
            "kern-a",
        ]);
        c
    });
    assert_eq!(listed(r), ["a1"]);

    // --manifest names one itself, wherever either flag is.
    for args in [
        &["--manifest", "m.json", "list", "-p", "kern-a"][..],
        &["list", "--manifest", "m.json", "-p", "kern-a"],
        &["--profile", "dev", "list", "--manifest", "m.json"],
    ] {
        let r = ck_in(&t, "ws", args);
        assert_eq!(r.code, 2, "{args:?}: {r:?}");
        assert!(
            r.stderr.contains("both say which manifest"),
            "{args:?}: {r:?}"
        );
    }

    let r = ck_in(&t, "ws", &["list", "--package", "kern-c"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("--package kern-c: no such package")
            && r.stderr.contains("its packages: kern-a, kern-b"),
        "{r:?}"
    );

    // With one package built, that one.
    fs::remove_dir_all(t.path("ws/target/debug/build/kern-b-bbbbbbbbbbbbbbbb")).unwrap();
    assert_eq!(listed(ck_in(&t, "ws", &["list", "--json"])), ["a1"]);
}

#[test]
fn outside_a_cargo_project_no_manifest_is_a_usage_error() {
    let t = Tree::new("cargo-none");
    let r = ck_in(&t, ".", &["list"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("no manifest: expected --manifest PATH")
            && r.stderr
                .contains("or a cargo package here whose build wrote one")
            && r.stderr.contains("`cargo metadata` failed"),
        "{r:?}"
    );

    // Without cargo, the same.
    cargo_package(&t, "pkg", "my-kernels");
    cargo_build(
        &t,
        "pkg/target/debug",
        "my-kernels",
        "0123456789abcdef",
        &["vadd"],
        0,
    );
    let r = run({
        let mut c = cargo_command(&t, "pkg");
        c.env("CARGO", t.path("no-such-cargo")).args(["list"]);
        c
    });
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("no manifest: expected --manifest PATH")
            && r.stderr.contains("cannot run"),
        "{r:?}"
    );
}

#[test]
fn a_package_without_a_build_is_named_with_the_build_to_run() {
    let t = Tree::new("cargo-unbuilt");
    cargo_package(&t, "pkg", "unbuilt-kernels");
    let r = ck_in(&t, "pkg/src", &["list"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("no build of package unbuilt-kernels holds a ck_jit_manifest.json")
            && r.stderr.contains("run `cargo build` for it first"),
        "{r:?}"
    );
    let r = ck_in(&t, "pkg", &["list", "--profile", "release"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("cargo build --release"), "{r:?}");
}

// ----------------------------------------------------------- selection

#[test]
fn every_way_of_naming_a_blob_selects_it() {
    let t = Tree::new("select");
    families(&t);
    t.ck(&["build", "--all"]).ok();
    let list = |args: &[&str]| names(&t.ck(&[&["list", "--json"], args].concat()).ok().json());
    let one = vec!["vadd_f32".to_string()];

    assert_eq!(list(&["vadd_f32"]), one, "stem");
    assert_eq!(list(&["vadd_f32.c"]), one, "file name");
    assert_eq!(
        list(&["kernels/vadd_f32.c"]),
        one,
        "source path relative to the root"
    );
    let abs = t.path("kernels/vadd_f32.c");
    assert_eq!(list(&[abs.to_str().unwrap()]), one, "absolute source path");

    let object = t.ck(&["list", "--json", "vadd_f32"]).ok().json()["blobs"][0]["object"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(object.ends_with(".so"), "{object}");
    assert_eq!(list(&[&object]), one, "cached object path");

    // A path relative to the current directory, from inside the tree.
    let from_sub = t
        .ck_with(&["list", "--json", "../kernels/vadd_f32.c"], |c| {
            c.current_dir(t.path("kernels"));
        })
        .ok();
    assert_eq!(
        names(&from_sub.json()),
        one,
        "path relative to the current directory"
    );

    t.write(
        "hot.txt",
        "# kernels on the hot path\nvadd_f32   # the common one\n\n  kernels/vmul_f32.c\n",
    );
    assert_eq!(
        list(&["--blob-list", "hot.txt"]),
        ["vadd_f32", "vmul_f32"],
        "list file"
    );

    let mut c = t.command();
    c.arg("--manifest")
        .arg(t.path("manifest.json"))
        .args(["list", "--json", "--blob-list", "-", "fwd_f32"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"vadd_f64\n# comment\nvmul_f32.c\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        names(&doc),
        ["fwd_f32", "vadd_f64", "vmul_f32"],
        "stdin list mixed with a name"
    );

    assert_eq!(list(&["--all"]).len(), 4, "--all");
    assert_eq!(list(&["--family", "fwd"]), ["fwd_f32"], "--family");
    assert_eq!(
        list(&["--family", "fwd", "--family", "vec"]).len(),
        4,
        "families are OR-ed"
    );
    assert_eq!(
        list(&["--where", "dtype=f32", "--where", "op=add"]),
        one,
        "--where clauses are AND-ed"
    );
    assert_eq!(
        list(&["--family", "vec", "--where", "dtype=f32"]),
        ["vadd_f32", "vmul_f32"],
        "family and metadata together"
    );
    assert_eq!(
        list(&["vadd_f64", "fwd_f32", "--family", "vec"]),
        ["vadd_f64"],
        "filters narrow named blobs"
    );
    assert_eq!(
        list(&["vadd_f32", "kernels/vadd_f32.c", "vadd_f32.c"]),
        one,
        "each blob once"
    );
}

#[test]
fn unknown_blob_exits_2_naming_it_with_suggestions() {
    let t = Tree::new("unknown");
    families(&t);
    let r = t.ck(&["build", "vadd_f23", "vadd_f32", "no_such_kernel_at_all"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.starts_with("ck-jit: unknown blob 'vadd_f23'")
            && r.stderr
                .contains("\nck-jit: unknown blob 'no_such_kernel_at_all'"),
        "each error on a line of its own, after the program's name: {r:?}"
    );
    assert!(r.stderr.contains("did you mean 'vadd_f32'"), "{r:?}");
    assert!(
        r.stderr.contains("unknown blob 'no_such_kernel_at_all'"),
        "{r:?}"
    );
    assert!(
        !t.cache().join("v1/vadd_f32").exists(),
        "nothing is built on a bad request"
    );

    let r = t.ck(&["list", "kernels/vadd_f3.c"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("did you mean 'kernels/vadd_f32.c'"),
        "{r:?}"
    );

    t.write("list.txt", "vadd_f32\nvmull_f32\n");
    let r = t.ck(&["list", "--blob-list", "list.txt"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("list.txt line 2: unknown blob 'vmull_f32'")
            && r.stderr.contains("did you mean 'vmul_f32'"),
        "{r:?}"
    );

    let r = t.ck(&["list", "--family", "vce"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("unknown family 'vce'; expected one of: fwd, vec"),
        "{r:?}"
    );
    let r = t.ck(&["list", "--where", "dtype==f32"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("the value '=f32' starts with '='"),
        "an operator's typo is not a value: {r:?}"
    );
    let r = t.ck(&["list", "--where", "dtype=bf16"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("no blob matches") && r.stderr.contains("values of dtype: f32, f64"),
        "{r:?}"
    );
}

/// A variable that cannot be read is refused before anything is built,
/// as the others are: a compiler-check policy that does not exist would
/// otherwise make every compile fail as if the compiler were missing.
#[test]
fn an_unknown_compiler_check_policy_is_refused_naming_it() {
    let t = Tree::new("badcheck");
    families(&t);
    let r = t.ck_with(&["build", "vadd_f32"], |c| {
        c.env("CK_JIT_COMPILER_CHECK", "bogus");
    });
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("fix the environment first")
            && r.stderr
                .contains("CK_JIT_COMPILER_CHECK='bogus' is not a policy"),
        "{r:?}"
    );
    assert!(!t.cache().join("v1/vadd_f32").exists(), "nothing is built");
}

/// A memory size that cannot be read is refused as well.
#[test]
fn an_unreadable_job_memory_is_refused_naming_it() {
    let t = Tree::new("badmemory");
    families(&t);
    let r = t.ck_with(&["build", "vadd_f32"], |c| {
        c.env("CK_JIT_JOB_MEMORY", "lots");
    });
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("fix the environment first")
            && r.stderr.contains("CK_JIT_JOB_MEMORY")
            && r.stderr.contains("'lots'"),
        "{r:?}"
    );
    assert!(!t.cache().join("v1/vadd_f32").exists(), "nothing is built");
}

#[test]
fn unreadable_blob_list_exits_2_naming_the_file() {
    let t = Tree::new("badlist");
    families(&t);
    let r = t.ck(&["build", "--blob-list", "missing.txt"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("cannot read blob list missing.txt")
            && r.stderr.contains("expected a file with one blob per line"),
        "{r:?}"
    );
}

#[test]
fn malformed_or_missing_manifest_exits_2_naming_the_path() {
    let t = Tree::new("badmanifest");
    let m = t.write("manifest.json", "{\"format\":1,\"name\":");
    let r = t.ck(&["list"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.starts_with("ck-jit: manifest "), "{r:?}");
    assert!(r.stderr.contains(&m.display().to_string()), "{r:?}");
    assert!(r.stderr.contains("malformed manifest"), "{r:?}");

    fs::remove_file(&m).unwrap();
    let r = t.ck(&["build", "--all"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains(&format!("manifest {} does not exist", m.display())),
        "{r:?}"
    );
}

#[test]
fn conflicting_and_missing_flags_are_usage_errors() {
    let t = Tree::new("flags");
    families(&t);
    let r = t.ck(&["build", "--all", "vadd_f32"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("'--all' cannot be used with"), "{r:?}");

    let r = t.ck(&["build"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("nothing to build: expected blob names, --all"),
        "{r:?}"
    );
    let r = t.ck(&["clean"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("nothing to clean"), "{r:?}");

    let r = t.ck(&["gc"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("gc needs a limit: expected --max-size SIZE")
            && r.stderr.contains("CK_JIT_CACHE_MAX_SIZE"),
        "{r:?}"
    );
    let r = t.ck(&["gc", "--max-size", "lots"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("expected a size such as 500M or 2G"),
        "{r:?}"
    );
    let r = t.ck_with(&["gc"], |c| {
        c.env("CK_JIT_CACHE_MAX_SIZE", "2 potatoes");
    });
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("CK_JIT_CACHE_MAX_SIZE: expected a size"),
        "{r:?}"
    );

    let r = t.ck(&["list", "--where", "dtype>=f32"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("'>=' compares integers, and 'f32' is not one"),
        "{r:?}"
    );
    let r = t.ck(&["build", "-j", "0", "--all"]);
    assert_eq!(r.code, 2, "{r:?}");

    // Neither --out-dir, --from nor --manifest, and no cargo package here.
    let r = run({
        let mut c = t.command();
        c.args(["export-manifest", "--to", "x.json"]);
        c
    });
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("--out-dir"), "{r:?}");
}

// --------------------------------------------------------------- build

#[test]
fn build_all_of_two_hundred_blobs_then_a_lazy_call_runs_no_compiler() {
    let t = Tree::new("build200");
    let cc = t.counting_cc();
    let names: Vec<String> = (0..200).map(|i| format!("k{i:03}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    simple(&t, &cc, &refs);

    let doc = t.ck(&["build", "--all", "-j", "2", "--json"]).ok().json();
    assert_eq!(doc["compiled"], 200, "{doc}");
    assert_eq!(doc["failed"], 0);
    assert_eq!(doc["jobs"], 2);
    assert_eq!(doc["stats"]["compiles"], 200);
    assert_eq!(t.compiles(), 200);

    let list = t.ck(&["list", "--json"]).ok().json();
    let blobs = list["blobs"].as_array().unwrap();
    assert_eq!(blobs.len(), 200);
    assert!(blobs.iter().all(|b| b["cached"] == true), "{list}");

    // A program's lazy calls: every blob resolves and runs, no compiler.
    let rt = lazy_runtime(&t);
    for (i, n) in names.iter().enumerate() {
        let f = rt.resolve(n, None).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert_eq!(call(f, 5), 10 + i as i32, "{n}");
    }
    assert_eq!(
        t.compiles(),
        200,
        "a lazy call after `ck-jit build` ran the compiler"
    );
}

#[test]
fn second_build_is_all_cached_and_force_recompiles() {
    let t = Tree::new("rebuild");
    let cc = t.counting_cc();
    simple(&t, &cc, &["a", "b", "c"]);
    let first = t.ck(&["build", "--all"]).ok();
    assert!(
        first
            .stdout
            .contains("build: 3 compiled, 0 cached, 0 failed"),
        "{first:?}"
    );
    assert!(
        first.stderr.contains("compiled  a"),
        "plain progress lines: {first:?}"
    );

    let second = t.ck(&["build", "--all"]).ok();
    assert!(
        second
            .stdout
            .contains("build: 0 compiled, 3 cached, 0 failed"),
        "{second:?}"
    );
    assert_eq!(t.compiles(), 3);

    let forced = t.ck(&["build", "--all", "--force", "--json"]).ok().json();
    assert_eq!(forced["compiled"], 3, "{forced}");
    assert_eq!(forced["stats"]["compiles"], 3);
    assert_eq!(t.compiles(), 6);
    assert_eq!(entries(&t), 3, "a forced rebuild replaces entries");
}

#[test]
fn failing_blob_exits_1_with_its_command_and_compiler_error() {
    let t = Tree::new("fail");
    simple(&t, "cc", &["good1", "good2", "broken"]);
    t.write("kernels/broken.c", "int broken(int x) { return x +; }\n");
    let r = t.ck(&["build", "--all"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("build: 2 compiled, 0 cached, 1 failed"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("ck-jit: blob 'broken': compile failed"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("command: ") && r.stderr.contains("kernels/broken.c"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("expected expression"),
        "compiler stderr tail: {r:?}"
    );

    let doc = t.ck(&["build", "--all", "--json"]).json();
    assert_eq!(doc["failed"], 1);
    assert_eq!(doc["cached"], 2);
    let failed = doc["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["outcome"] == "failed")
        .unwrap();
    assert_eq!(failed["name"], "broken");
    let error = failed["error"].as_str().unwrap();
    assert!(
        error.starts_with("ck-jit: blob 'broken': compile failed") && error.contains("command: "),
        "{failed}"
    );
}

// --------------------------------------------------- clean, stat, verify

#[test]
fn clean_removes_the_selected_blobs_entries_and_all_removes_everything() {
    let t = Tree::new("clean");
    families(&t);
    t.ck(&["build", "--all"]).ok();
    let dry = t
        .ck(&["clean", "--family", "vec", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(dry["removed"].as_array().unwrap().len(), 3);
    assert_eq!(entries(&t), 4, "a dry run removes nothing");

    let r = t.ck(&["clean", "vadd_f32.c", "--where", "op=add"]).ok();
    assert!(r.stdout.contains("clean: removed 1 entries"), "{r:?}");
    let doc = t.ck(&["list", "--json"]).ok().json();
    assert_eq!(cached(&doc, "vadd_f32"), false);
    assert_eq!(cached(&doc, "vadd_f64"), true);

    let r = t.ck(&["clean", "--all", "--json"]).ok().json();
    assert_eq!(r["removed"].as_array().unwrap().len(), 3, "{r}");
    assert_eq!(entries(&t), 0);
    // --all needs no manifest.
    fs::remove_file(t.path("manifest.json")).unwrap();
    t.ck(&["clean", "--all"]).ok();
}

#[test]
fn stat_counts_entries_and_the_requests_of_every_process() {
    let t = Tree::new("stat");
    families(&t);
    let text = t.ck(&["stat"]).ok().stdout;
    assert!(text.contains("requests:     none counted yet"), "{text}");
    t.ck(&["build", "--family", "vec"]).ok();
    let doc = t.ck(&["stat", "--json"]).ok().json();
    assert_eq!(doc["entries"], 3, "{doc}");
    assert_eq!(doc["blobs"], 3);
    assert!(doc["bytes"].as_u64().unwrap() > 1000);
    assert_eq!(doc["per_blob"]["vmul_f32"], 1);
    assert!(doc["oldest"]["utc"].as_str().unwrap().ends_with("UTC"));
    // The build's process: three misses, each compiled.
    assert_eq!(doc["hits"], 0, "{doc}");
    assert_eq!(doc["misses"], 3);
    assert_eq!(doc["compiles"], 3);
    assert_eq!(doc["failures"], 0);
    // A second process finds them cached.
    t.ck(&["build", "--family", "vec"]).ok();
    let doc = t.ck(&["stat", "--json"]).ok().json();
    assert_eq!(
        (doc["hits"].as_u64(), doc["compiles"].as_u64()),
        (Some(3), Some(3))
    );
    let text = t.ck(&["stat"]).ok().stdout;
    assert!(text.contains("entries:      3 (3 blobs)"), "{text}");
    // What a compile of the group was learnt to take.
    assert!(text.contains("memory per compile"), "{text}");
    let memory = doc["memory"].as_object().expect("memory estimates");
    assert!(
        !memory.is_empty()
            && memory.values().all(|g| {
                g["estimate"].as_u64().unwrap_or(0) > 0 && g["compiles"].as_u64().unwrap_or(0) > 0
            }),
        "{doc}"
    );
    assert!(
        text.contains("requests:     3 hits, 3 misses (50.0% hits); 3 compiles, 0 failures"),
        "{text}"
    );
    // Another compiler identity: a second entry for each blob, which the
    // text does not put as "6 of 3".
    t.ck_with(&["build", "--family", "vec"], |c| {
        c.env("CK_JIT_COMPILER_CHECK", "string:another-compiler");
    })
    .ok();
    let text = t.ck(&["stat"]).ok().stdout;
    assert!(text.contains("entries:      6 (3 blobs)"), "{text}");
}

#[test]
fn verify_moves_a_byte_flipped_entry_aside_and_exits_1() {
    let t = Tree::new("verify");
    families(&t);
    t.ck(&["build", "--all"]).ok();
    assert!(t
        .ck(&["verify"])
        .ok()
        .stdout
        .contains("4 entries checked, 4 good, 0 bad"));

    let object = t.ck(&["list", "--json", "vmul_f32"]).ok().json()["blobs"][0]["object"]
        .as_str()
        .unwrap()
        .to_string();
    let mut bytes = fs::read(&object).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    fs::write(&object, &bytes).unwrap();

    let r = t.ck(&["verify"]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(
        r.stdout.contains("4 entries checked, 3 good, 1 bad"),
        "{r:?}"
    );
    assert!(
        r.stderr.contains("bad entry of blob 'vmul_f32'") && r.stderr.contains("checksum mismatch"),
        "{r:?}"
    );
    assert!(
        !Path::new(&object).exists(),
        "the bad object is moved aside"
    );
    let moved: Vec<String> = fs::read_dir(t.cache().join("bad"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(moved.len(), 2, "object and record in bad/: {moved:?}");

    let again = t.ck(&["verify", "--json"]).ok().json();
    assert_eq!(again["checked"], 3);
    assert_eq!(again["bad"].as_array().unwrap().len(), 0);
    let doc = t.ck(&["list", "--json"]).ok().json();
    assert_eq!(cached(&doc, "vmul_f32"), false);
}

// ------------------------------------------------------------------ gc

fn set_last_use(record: &str, secs_ago: u64) {
    let f = fs::File::options().write(true).open(record).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs_ago))
        .unwrap();
}

#[test]
fn gc_removes_least_recently_used_entries_first() {
    let t = Tree::new("gc-lru");
    simple(&t, "cc", &["a", "b", "c", "d"]);
    t.ck(&["build", "--all"]).ok();
    let cache = Cache::open(&t.cache(), false).unwrap();
    // Last uses more than an hour back, so a hit refreshes them.
    let hours = 2 * 3600;
    for (e, age) in cache.entries().iter().zip([300, 100, 400, 200]) {
        set_last_use(e.record_path.to_str().unwrap(), hours + age);
    }
    // a: 2 h 300 s ago, b: 100, c: 400, d: 200 -> c then a go first.
    let dry = t
        .ck(&["gc", "--max-entries", "2", "--dry-run", "--json"])
        .ok()
        .json();
    assert_eq!(entries(&t), 4);
    let r = t.ck(&["gc", "--max-entries", "2", "--json"]).ok().json();
    assert_eq!(r["removed"], dry["removed"]);
    let gone: Vec<&str> = r["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["blob"].as_str().unwrap())
        .collect();
    assert_eq!(gone, ["c", "a"], "{r}");
    assert_eq!(r["after"]["entries"], 2);
    assert_eq!(r["within_limits"], true);

    // A cache hit is a use: once a program has loaded `d` (2 h 200 s) it
    // outlives `b` (2 h 100 s).
    let rt = lazy_runtime(&t);
    rt.resolve("d", None).unwrap();
    let r = t.ck(&["gc", "--max-entries", "1", "--json"]).ok().json();
    let gone: Vec<&str> = r["removed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["blob"].as_str().unwrap())
        .collect();
    assert_eq!(gone, ["b"], "{r}");

    let r = t.ck(&["gc", "--max-size", "1K"]).ok();
    assert!(r.stdout.contains("gc: removed 1 entries"), "{r:?}");
    assert_eq!(entries(&t), 0);

    t.ck(&["build", "--all"]).ok();
    let r = t.ck_with(&["gc", "--json"], |c| {
        c.env("CK_JIT_CACHE_MAX_SIZE", "0");
    });
    assert_eq!(r.ok().json()["limits"]["max_size"], 0);
    assert_eq!(entries(&t), 0, "CK_JIT_CACHE_MAX_SIZE is the default limit");
}

#[test]
fn gc_never_removes_an_entry_whose_compile_lock_is_held() {
    let t = Tree::new("gc-lock");
    simple(&t, "cc", &["held", "free"]);
    t.ck(&["build", "--all"]).ok();
    let cache = Cache::open(&t.cache(), false).unwrap();
    let held = cache
        .entries()
        .into_iter()
        .find(|e| e.record.blob == "held")
        .unwrap();
    // Held as a compile of it would hold it.
    let lock = cache
        .try_lock("held", &held.record.prekey)
        .unwrap()
        .expect("nobody holds the lock yet");
    let r = t.ck(&["gc", "--max-entries", "0", "--json"]).ok().json();
    assert_eq!(r["busy"], 1, "{r}");
    assert_eq!(r["removed"][0]["blob"], "free");
    assert_eq!(r["within_limits"], false);
    assert!(held.object.exists() && held.record_path.exists());
    drop(lock);
    t.ck(&["gc", "--max-entries", "0"]).ok();
    assert!(!held.object.exists() && !held.record_path.exists());
}

#[test]
fn gc_during_concurrent_builds_breaks_nobody_and_ends_within_the_limit() {
    let t = Tree::new("gc-race");
    let names: Vec<String> = (0..24).map(|i| format!("r{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    simple(&t, "cc", &refs);
    const LIMIT: u64 = 4;
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let gc = s.spawn(|| {
            let (mut runs, mut removed) = (0, 0);
            while !done.load(Ordering::SeqCst) || runs < 3 {
                let r = t.ck(&["gc", "--max-entries", &LIMIT.to_string(), "--json"]);
                assert_eq!(r.code, 0, "gc failed under concurrent builds: {r:?}");
                removed += r.json()["removed"].as_array().unwrap().len();
                runs += 1;
            }
            (runs, removed)
        });
        let workers: Vec<_> = (0..4)
            .map(|w| {
                // Overlapping sets: worker w builds blobs 4w .. 4w+12.
                let set: Vec<String> = names[w * 4..w * 4 + 12].to_vec();
                let t = &t;
                s.spawn(move || {
                    for round in 0..3 {
                        let mut args = vec!["build", "-j", "2"];
                        if round == 1 {
                            args.push("--force");
                        }
                        args.extend(set.iter().map(String::as_str));
                        let r = t.ck(&args);
                        assert_eq!(r.code, 0, "worker {w} round {round}: {r:?}");
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().unwrap();
        }
        done.store(true, Ordering::SeqCst);
        let (runs, removed) = gc.join().unwrap();
        assert!(
            runs >= 3 && removed > 0,
            "gc ran {runs} times, removed {removed}"
        );
    });
    let r = t
        .ck(&["gc", "--max-entries", &LIMIT.to_string(), "--json"])
        .ok()
        .json();
    assert_eq!(r["within_limits"], true, "{r}");
    assert!(entries(&t) <= LIMIT);
    t.ck(&["verify"]).ok();
    // And the cache still serves a program.
    let rt = lazy_runtime(&t);
    assert_eq!(call(rt.resolve("r07", None).unwrap(), 1), 9);
}

// -------------------------------------------------------------- export

#[test]
fn export_manifest_copies_a_valid_manifest_and_refuses_a_broken_one() {
    let t = Tree::new("export");
    let m = families(&t);
    let text = fs::read_to_string(&m).unwrap();
    t.write("out/ck_jit_manifest.json", &text);
    fs::create_dir_all(t.path("deploy")).unwrap();

    let r = t
        .ck(&["export-manifest", "--out-dir", "out", "--to", "deploy"])
        .ok();
    assert!(
        r.stdout
            .contains("exported manifest 'ck_jit_cli_test' (4 blobs"),
        "{r:?}"
    );
    assert_eq!(
        fs::read_to_string(t.path("deploy/ck_jit_manifest.json")).unwrap(),
        text
    );

    // Relocated: the copy records the new root and the runtime reads it.
    let new_root = t.path("installed");
    for n in ["vadd_f32", "vadd_f64", "vmul_f32", "fwd_f32"] {
        let src = format!("kernels/{n}.c");
        fs::create_dir_all(new_root.join("kernels")).unwrap();
        fs::copy(t.path(&src), new_root.join(&src)).unwrap();
    }
    let doc = t
        .ck(&[
            "export-manifest",
            "--from",
            "out/ck_jit_manifest.json",
            "--to",
            "installed/ck_jit_manifest.json",
            "--root",
            new_root.to_str().unwrap(),
            "--json",
        ])
        .ok()
        .json();
    assert_eq!(doc["missing_sources"], 0, "{doc}");
    let back =
        Manifest::from_json(&fs::read_to_string(new_root.join("ck_jit_manifest.json")).unwrap())
            .unwrap();
    assert_eq!(back.root, new_root.to_string_lossy());
    let listed = run({
        let mut c = t.command();
        c.env("CK_JIT_ROOT", &new_root).args(["list", "--json"]);
        c
    })
    .ok()
    .json();
    assert!(listed["blobs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|b| b["source_found"] == true));

    t.write("bad/ck_jit_manifest.json", "{\"format\":1}");
    let r = t.ck(&[
        "export-manifest",
        "--out-dir",
        "bad",
        "--to",
        "deploy/x.json",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("bad/ck_jit_manifest.json") && r.stderr.contains("malformed manifest"),
        "{r:?}"
    );
    assert!(
        !t.path("deploy/x.json").exists(),
        "nothing written for a refused manifest"
    );

    let r = t.ck(&["export-manifest", "--out-dir", "nowhere", "--to", "deploy"]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr
            .contains("cannot read manifest nowhere/ck_jit_manifest.json"),
        "{r:?}"
    );

    let r = t.ck(&[
        "export-manifest",
        "--out-dir",
        "out",
        "--to",
        "deploy",
        "--root",
        "rel/dir",
    ]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("expected an absolute path"), "{r:?}");
}

// ---------------------------------------------------------------- help

#[test]
fn every_command_has_help_with_examples() {
    let t = Tree::new("help");
    for cmd in [
        "list",
        "build",
        "clean",
        "gc",
        "stat",
        "verify",
        "export-manifest",
    ] {
        let r = run({
            let mut c = t.command();
            c.args([cmd, "--help"]);
            c
        })
        .ok();
        assert!(r.stdout.contains("Examples:\n  ck-jit"), "{cmd}: {r:?}");
    }
    let r = run({
        let mut c = t.command();
        c.arg("--help");
        c
    })
    .ok();
    assert!(
        r.stdout.contains("Examples:") && r.stdout.contains("Exit status"),
        "{r:?}"
    );
}

#[test]
fn json_errors_are_one_document_too() {
    let t = Tree::new("json-error");
    families(&t);
    let r = t.ck(&["build", "nope_nope_nope", "--json"]);
    assert_eq!(r.code, 2);
    let doc = r.json();
    assert_eq!(doc["exit_status"], 2);
    assert!(doc["error"]
        .as_str()
        .unwrap()
        .starts_with("ck-jit: unknown blob 'nope_nope_nope'"));
}
