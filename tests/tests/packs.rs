//! Packs and read-only tiers: a pack made in one cache serves a program
//! from another offline with no compile; packs for another architecture
//! or compiler are refused naming both; a damaged or truncated pack
//! installs nothing; of two packs the device's own entry wins; a
//! read-only tier (`CK_JIT_CACHE_PATH`) serves hits and is never written,
//! while a miss compiles into the writable cache.

use std::collections::BTreeMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use ck_jit_tests::{c_manifest, ck_jit_tool, Tree};
use serde_json::Value;

const MOCK: &str = env!("CARGO_BIN_EXE_mock-cc");
const PROBE: &str = env!("CARGO_BIN_EXE_ck-jit-probe");

/// What a process printed and how it ended.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}\n{}", self.stdout, self.stderr))
    }
}

/// A command with the environment's `CK_JIT_*` variables removed and
/// `HOME` in the tree, then `env` set.
fn command(t: &Tree, program: &Path, env: &[(&str, &str)]) -> Command {
    let mut c = Command::new(program);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("CK_JIT_") || k.to_string_lossy().starts_with("MOCK_") {
            c.env_remove(k);
        }
    }
    c.env("HOME", t.path("home")).env_remove("XDG_CACHE_HOME");
    for (k, v) in env {
        c.env(k, v);
    }
    c
}

fn run(mut c: Command) -> Run {
    let out = c.output().expect("process runs");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `ck-jit ARGS` with `env`.
fn ck(t: &Tree, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut c = command(t, &ck_jit_tool(), env);
    c.args(args);
    run(c)
}

/// The probe process: resolves `blob` from `cache` and calls it with 5.
fn probe(t: &Tree, cache: &Path, blob: &str, env: &[(&str, &str)]) -> Run {
    let mut c = command(t, Path::new(PROBE), env);
    c.arg(t.path("manifest.json")).arg(cache).args([blob, "5"]);
    run(c)
}

/// `ck-jit --manifest MANIFEST --cache-dir CACHE ARGS` with `env`.
fn ck_in(t: &Tree, manifest: &Path, cache: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--manifest", s(manifest), "--cache-dir", s(cache)];
    all.extend_from_slice(args);
    ck(t, &all, env)
}

/// `ck-jit unpack PACK --cache CACHE --arch ARCH`.
fn unpack_for(t: &Tree, pack: &Path, cache: &Path, arch: &str) -> Run {
    ck(
        t,
        &["unpack", s(pack), "--cache", s(cache), "--arch", arch],
        &[],
    )
}

/// Asserts that `r` failed (exit 1) with every one of `words` in its
/// error output.
fn refused(r: &Run, words: &[&str]) {
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    for w in words {
        assert!(r.stderr.contains(w), "no {w:?} in: {}", r.stderr);
    }
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// A tree with three blobs (one including a header, so an entry has a
/// header set), its manifest compiled by the mock compiler, and a cache
/// `name` holding all three (3 compiles).
fn built(t: &Tree, name: &str) -> PathBuf {
    t.c_blob("alpha", 2, 0);
    t.c_blob("beta", 3, 1);
    t.write("kernels/common.h", "#define GAMMA_MUL 7\n");
    t.write(
        "kernels/gamma.c",
        "#include \"common.h\"\nint gamma(int x) { return x * GAMMA_MUL; }\n",
    );
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["alpha", "beta", "gamma"], MOCK, &[&log]);
    let manifest = t.write_manifest(&m);
    let cache = t.path(name);
    let r = ck_in(t, &manifest, &cache, &["build", "--all"], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(t.compiles(), 3);
    cache
}

/// `ck-jit pack --all -o OUT` from `cache`, with `extra` arguments.
fn pack(t: &Tree, cache: &Path, out: &str, extra: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let file = t.path(out);
    let mut args = vec!["--json", "pack", "--all", "-o", s(&file)];
    args.extend_from_slice(extra);
    let r = ck_in(t, &t.path("manifest.json"), cache, &args, env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["entries"], 3, "{}", r.stdout);
    file
}

/// Every file under `dir` (relative path → size, mtime, mode), for
/// checking that nothing in it changed.
fn snapshot(dir: &Path) -> BTreeMap<String, (u64, i64, i64, u32)> {
    let mut out = BTreeMap::new();
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, (u64, i64, i64, u32)>) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            let md = fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            out.insert(rel, (md.len(), md.mtime(), md.mtime_nsec(), md.mode()));
            if md.is_dir() {
                walk(base, &p, out);
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// The published objects of a cache.
fn objects(cache: &Path) -> Vec<String> {
    snapshot(cache)
        .into_keys()
        .filter(|p| p.starts_with("v1/") && p.ends_with(".so"))
        .collect()
}

#[test]
fn a_pack_from_one_cache_serves_a_program_from_another_offline_with_no_compile() {
    let t = Tree::new("pack-serves");
    let first = built(&t, "first");
    let file = pack(&t, &first, "kernels.tar.zst", &[], &[]);

    // A fresh cache, filled from the pack alone (no manifest needed).
    let second = t.path("second");
    let r = ck(
        &t,
        &["--json", "unpack", s(&file), "--cache", s(&second)],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let doc = r.json();
    assert_eq!(doc["installed"].as_array().unwrap().len(), 3, "{doc}");
    assert_eq!(objects(&second).len(), 3);
    // The header set came along: gamma's entry is found by key.
    assert!(
        snapshot(&second).keys().any(|p| p.starts_with("deps/")),
        "{:?}",
        snapshot(&second)
    );

    for (blob, want) in [("alpha", 10), ("beta", 16), ("gamma", 35)] {
        let r = probe(&t, &second, blob, &[("CK_JIT_OFFLINE", "1")]);
        assert_eq!(r.code, 0, "{blob}: {}{}", r.stdout, r.stderr);
        let doc = r.json();
        assert_eq!(doc["value"], want, "{doc}");
        assert_eq!(doc["compiles"], 0, "{doc}");
        assert_eq!(doc["hits"], 1, "{doc}");
    }
    assert_eq!(t.compiles(), 3, "the compiler ran for a packed kernel");
    let counters: Value =
        serde_json::from_str(&fs::read_to_string(second.join("counters.json")).unwrap()).unwrap();
    assert_eq!(counters["hits"], 3, "{counters}");
    assert_eq!(counters["compiles"], 0, "{counters}");

    // Again: everything is there already, nothing changes.
    let before = snapshot(&second.join("v1"));
    let r = ck(&t, &["unpack", s(&file), "--cache", s(&second)], &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("0 installed, 3 already there"),
        "{}",
        r.stdout
    );
    assert_eq!(snapshot(&second.join("v1")), before);
    // No staging directory is left behind.
    assert_eq!(fs::read_dir(second.join("tmp")).unwrap().count(), 0);
}

#[test]
fn a_pack_for_another_architecture_or_compiler_is_refused_naming_both() {
    let t = Tree::new("pack-refused");
    let first = built(&t, "first");
    let for_gfx942 = pack(&t, &first, "gfx942.tar.zst", &["--arch", "gfx942"], &[]);

    let other = t.path("other");
    let r = unpack_for(&t, &for_gfx942, &other, "gfx90a");
    refused(&r, &["built for gfx942", "this device is gfx90a"]);
    assert!(objects(&other).is_empty());
    // CK_JIT_ARCH is the device too; without either, it is asked for.
    let r = ck(
        &t,
        &["unpack", s(&for_gfx942), "--cache", s(&other)],
        &[("CK_JIT_ARCH", "gfx950")],
    );
    refused(&r, &["gfx942", "gfx950"]);
    let r = unpack_for(&t, &for_gfx942, &other, "gfx942");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(objects(&other).len(), 3);

    // The same compiler file answering another --version: another identity.
    let plain = pack(&t, &first, "plain.tar.zst", &[], &[]);
    let third = t.path("third");
    let r = ck(
        &t,
        &["unpack", s(&plain), "--cache", s(&third)],
        &[("MOCK_CC_VERSION", " patched")],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("\"mock-cc 1.0 (ck-jit test compiler)\"")
            && r.stderr
                .contains("\"mock-cc 1.0 (ck-jit test compiler) patched\""),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains(MOCK), "{}", r.stderr);
    assert!(objects(&third).is_empty());
}

/// The members of a pack, in order.
fn members(file: &Path) -> Vec<(String, Vec<u8>)> {
    let raw = zstd::decode_all(fs::File::open(file).unwrap()).unwrap();
    let mut a = tar::Archive::new(&raw[..]);
    a.entries()
        .unwrap()
        .map(|m| {
            let mut m = m.unwrap();
            let name = m.path().unwrap().display().to_string();
            let mut data = Vec::new();
            m.read_to_end(&mut data).unwrap();
            (name, data)
        })
        .collect()
}

/// Writes `members` as a pack.
fn write_members(file: &Path, members: &[(String, Vec<u8>)]) {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, name, &data[..]).unwrap();
    }
    let raw = b.into_inner().unwrap();
    fs::write(file, zstd::encode_all(&raw[..], 3).unwrap()).unwrap();
}

#[test]
fn a_damaged_or_truncated_pack_installs_nothing() {
    let t = Tree::new("pack-damaged");
    let first = built(&t, "first");
    let good = pack(&t, &first, "good.tar.zst", &[], &[]);
    let mut m = members(&good);
    assert_eq!(m[0].0, "ck-jit-pack.json");

    // One byte flipped in the last object (the others are intact: still
    // nothing is installed).
    let flipped = t.path("flipped.tar.zst");
    let last_so = m.iter().rposition(|(n, _)| n.ends_with(".so")).unwrap();
    let mid = m[last_so].1.len() / 2;
    m[last_so].1[mid] ^= 0x01;
    write_members(&flipped, &m);
    // Cut short: the first half of the file.
    let truncated = t.path("truncated.tar.zst");
    let bytes = fs::read(&good).unwrap();
    fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    // A member the index does not list.
    let extra = t.path("extra.tar.zst");
    let mut m2 = members(&good);
    m2.push(("v1/alpha/evil.so".into(), b"planted".to_vec()));
    write_members(&extra, &m2);

    for (file, says) in [
        (&flipped, "does not match its checksum"),
        (&truncated, "cut short"),
        (&extra, "does not list"),
    ] {
        let target = t.path("target");
        let r = ck(&t, &["unpack", s(file), "--cache", s(&target)], &[]);
        assert_eq!(r.code, 1, "{}: {}{}", file.display(), r.stdout, r.stderr);
        assert!(
            r.stderr.contains("damaged") && r.stderr.contains(says),
            "{}: {}",
            file.display(),
            r.stderr
        );
        assert!(r.stderr.contains("nothing was installed"), "{}", r.stderr);
        assert!(objects(&target).is_empty(), "{:?}", objects(&target));
        assert!(
            !snapshot(&target).keys().any(|p| p.starts_with("deps/")),
            "{:?}",
            snapshot(&target)
        );
        assert_eq!(fs::read_dir(target.join("tmp")).unwrap().count(), 0);
    }
}

#[test]
fn of_two_packs_the_devices_own_entry_is_installed_and_a_foreign_one_never() {
    let t = Tree::new("pack-resolve");
    t.c_blob("wide", 4, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    // Recorded for two architectures: each device compiles its own.
    let m = c_manifest(
        &t.dir,
        &["wide"],
        MOCK,
        &[&log, "--offload-arch=gfx90a", "--offload-arch=gfx942"],
    );
    let manifest = t.write_manifest(&m);
    let mut packs = Vec::new();
    for arch in ["gfx90a", "gfx942"] {
        let cache = t.path(&format!("cache-{arch}"));
        let r = ck_in(
            &t,
            &manifest,
            &cache,
            &["build", "--all"],
            &[("CK_JIT_ARCH", arch)],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let file = t.path(&format!("{arch}.tar.zst"));
        let r = ck_in(
            &t,
            &manifest,
            &cache,
            &["--json", "pack", "wide", "--arch", arch, "-o", s(&file)],
            &[],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let doc = r.json();
        assert_eq!(doc["arch"], arch, "{doc}");
        packs.push(file);
    }
    let target = t.path("target");
    let r = ck(
        &t,
        &[
            "--json",
            "unpack",
            s(&packs[0]),
            s(&packs[1]),
            "--cache",
            s(&target),
            "--arch",
            "gfx942",
        ],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let doc = r.json();
    let installed = doc["installed"].as_array().unwrap();
    assert_eq!(installed.len(), 1, "{doc}");
    assert_eq!(installed[0]["pack"], s(&packs[1]), "{doc}");
    assert_eq!(installed[0]["fit"], "exact", "{doc}");
    assert!(
        doc["skipped"][0]["why"]
            .as_str()
            .unwrap()
            .contains("gfx90a"),
        "{doc}"
    );
    assert_eq!(objects(&target).len(), 1);
    // What was installed is what a gfx942 process looks up.
    let r = probe(
        &t,
        &target,
        "wide",
        &[("CK_JIT_OFFLINE", "1"), ("CK_JIT_ARCH", "gfx942")],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["value"], 20);
    // The gfx90a pack alone on a gfx942: refused.
    let r = unpack_for(&t, &packs[0], &target, "gfx942");
    refused(&r, &["gfx90a", "gfx942"]);
}

#[test]
fn a_read_only_tier_serves_hits_and_is_never_written() {
    let t = Tree::new("tier");
    let tier = built(&t, "tier");
    t.c_blob("delta", 5, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["alpha", "beta", "delta", "gamma"], MOCK, &[&log]);
    t.write_manifest(&m);
    // Read-only for everyone; as root that stops nothing, so what counts
    // is that no file in it changes.
    let chmod = Command::new("chmod")
        .args(["-R", "a-w"])
        .arg(&tier)
        .status()
        .unwrap();
    assert!(chmod.success());
    let before = snapshot(&tier);

    let writable = t.path("writable");
    let env = [("CK_JIT_CACHE_PATH", s(&tier))];
    for (blob, want) in [("alpha", 10), ("gamma", 35), ("alpha", 10)] {
        let r = probe(&t, &writable, blob, &env);
        assert_eq!(r.code, 0, "{blob}: {}{}", r.stdout, r.stderr);
        let doc = r.json();
        assert_eq!(doc["value"], want, "{doc}");
        assert_eq!(doc["compiles"], 0, "{doc}");
    }
    assert_eq!(t.compiles(), 3);
    // A miss compiles into the writable cache only.
    let r = probe(&t, &writable, "delta", &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["value"], 25);
    assert_eq!(r.json()["compiles"], 1);
    assert_eq!(t.compiles(), 4);
    let mine = objects(&writable);
    assert_eq!(mine.len(), 1, "{mine:?}");
    assert!(mine[0].starts_with("v1/delta/"), "{mine:?}");
    // Offline too: a tier's entry is a hit, its absence an error.
    let r = probe(
        &t,
        &writable,
        "beta",
        &[("CK_JIT_CACHE_PATH", s(&tier)), ("CK_JIT_OFFLINE", "1")],
    );
    assert_eq!(r.json()["value"], 16, "{}{}", r.stdout, r.stderr);

    assert_eq!(snapshot(&tier), before, "the read-only tier changed");

    // The writable cache counts where its hits came from.
    let counters: Value =
        serde_json::from_str(&fs::read_to_string(writable.join("counters.json")).unwrap()).unwrap();
    assert_eq!(counters["hits"], 4, "{counters}");
    assert_eq!(counters["tier_hits"][s(&tier)], 4, "{counters}");
    let r = ck(&t, &["--cache-dir", s(&writable), "stat"], &env);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains(&format!("{}: 3 entries", tier.display())) && r.stdout.contains("4 hits"),
        "{}",
        r.stdout
    );
    let doc = ck(&t, &["--cache-dir", s(&writable), "--json", "stat"], &env).json();
    assert_eq!(doc["tiers"][0]["hits"], 4, "{doc}");
    assert_eq!(doc["hits_here"], 0, "{doc}");

    let _ = Command::new("chmod")
        .args(["-R", "u+w"])
        .arg(&tier)
        .status();
    let _ = fs::set_permissions(&tier, fs::Permissions::from_mode(0o700));
}

#[test]
fn unpack_says_when_a_file_is_missing_or_not_a_pack() {
    let t = Tree::new("pack-args");
    let r = ck(&t, &["unpack", "missing.tar.zst"], &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("missing.tar.zst: no such file"),
        "{}",
        r.stderr
    );
    let text = t.write("notes.txt", "not a pack\n");
    let r = ck(&t, &["unpack", s(&text), "--cache", s(&t.path("c"))], &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("is not a ck-jit pack"), "{}", r.stderr);
    // A tar.zst of something else.
    let other = t.path("other.tar.zst");
    write_members(&other, &[("README".into(), b"hello".to_vec())]);
    let r = ck(&t, &["unpack", s(&other), "--cache", s(&t.path("c"))], &[]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("is not a ck-jit pack") && r.stderr.contains("ck-jit-pack.json"),
        "{}",
        r.stderr
    );
    assert!(!t.path("c").exists(), "a cache was made for nothing");
    // Packing blobs that are not cached names them.
    t.c_blob("cold", 2, 0);
    let m = c_manifest(&t.dir, &["cold"], MOCK, &[]);
    let manifest = t.write_manifest(&m);
    let out = t.path("cold.tar.zst");
    let r = ck_in(
        &t,
        &manifest,
        &t.path("c2"),
        &["pack", "--all", "-o", s(&out)],
        &[],
    );
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains("not in the cache: cold") && r.stderr.contains("ck-jit build"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}

/// A C toolchain as an installer or pip lays one out at `prefix`: the
/// compiler under `libexec/`, a header directory of its own, and
/// `bin/tc-cc`, a wrapper script written for that prefix that runs the
/// compiler with the headers. Every file is new (new inode, modification
/// and change times) and, unless `times` is `None`, has its modification
/// time set to `times` (an installer that keeps none keeps whatever it
/// likes).
fn install_toolchain(prefix: &Path, compiler: &Path, times: Option<std::time::SystemTime>) {
    let _ = fs::remove_dir_all(prefix);
    for d in ["bin", "libexec", "include"] {
        fs::create_dir_all(prefix.join(d)).unwrap();
    }
    let exe = prefix.join("libexec/mock-cc");
    fs::copy(compiler, &exe).unwrap();
    fs::write(prefix.join("include/tc.h"), "#define TC_ADD 100\n").unwrap();
    let wrapper = prefix.join("bin/tc-cc");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nexec \"{p}/libexec/mock-cc\" -isystem \"{p}/include\" \"$@\"\n",
            p = prefix.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    if let Some(t) = times {
        for f in [&exe, &wrapper, &prefix.join("include/tc.h")] {
            fs::File::options()
                .write(true)
                .open(f)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
    }
}

/// `PATH` with the toolchain at `prefix` first.
fn path_with(prefix: &Path) -> String {
    format!(
        "{}:{}",
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The compiles, hits and value of a probe call of `blob` with `cache`
/// and `PATH` as given, default settings otherwise.
fn call(t: &Tree, cache: &Path, blob: &str, path: &str, tier: Option<&Path>) -> (i64, i64, i64) {
    let mut env = vec![("PATH", path)];
    let tier_s;
    if let Some(tier) = tier {
        tier_s = tier.display().to_string();
        env.push(("CK_JIT_CACHE_PATH", &tier_s));
    }
    let r = probe(t, cache, blob, &env);
    assert_eq!(r.code, 0, "{blob}: {}{}", r.stdout, r.stderr);
    let d = r.json();
    let n = |k: &str| d[k].as_i64().unwrap_or(-1);
    (n("compiles"), n("hits"), n("value"))
}

/// A pack made with one toolchain serves every host that has the same
/// compiler bytes, with the default settings and no compile: the
/// toolchain reinstalled at the same path with other file times, and at
/// another path (its wrapper written for that path, as installers do; its
/// own headers found there). A read-only tier made on the first host
/// serves the second. A compiler with one byte more, or another version
/// text, is refused and its lookups miss.
#[test]
fn a_pack_serves_every_host_with_the_same_compiler_at_any_path_or_time() {
    let t = Tree::new("pack-hosts");
    let day = std::time::Duration::from_secs(86_400);
    let a = t.path("opt/tc");
    install_toolchain(&a, Path::new(MOCK), None);
    t.c_blob("alpha", 2, 0);
    t.c_blob("beta", 3, 1);
    // A kernel that reads the toolchain's own header.
    t.write(
        "kernels/delta.c",
        "#include <tc.h>\nint delta(int x) { return x + TC_ADD; }\n",
    );
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["alpha", "beta", "delta"], "tc-cc", &[&log]);
    let manifest = t.write_manifest(&m);
    let on_a = path_with(&a);
    let cache_a = t.path("cache-a");
    let r = ck_in(
        &t,
        &manifest,
        &cache_a,
        &["build", "--all"],
        &[("PATH", &on_a)],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(t.compiles(), 3);
    let file = pack(&t, &cache_a, "hosts.tar.zst", &[], &[("PATH", &on_a)]);
    let want = [("alpha", 10), ("beta", 16), ("delta", 105)];
    let unpack_on = |cache: &Path, path: &str| {
        let r = ck(
            &t,
            &["--json", "unpack", s(&file), "--cache", s(cache)],
            &[("PATH", path)],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert_eq!(r.json()["installed"].as_array().unwrap().len(), 3);
    };

    // Host B: the same toolchain at the same path, installed again with
    // other times (the first copy is gone: nothing of host A is read).
    let earlier = std::time::SystemTime::now() - 400 * day;
    install_toolchain(&a, Path::new(MOCK), Some(earlier));
    let cache_b = t.path("cache-b");
    unpack_on(&cache_b, &on_a);
    for (blob, value) in want {
        assert_eq!(
            call(&t, &cache_b, blob, &on_a, None),
            (0, 1, value),
            "{blob}"
        );
    }
    assert_eq!(t.compiles(), 3, "host B compiled a packed kernel");

    // Host C: the same toolchain at another path, and none at the first.
    fs::remove_dir_all(&a).unwrap();
    let c = t.path("elsewhere/venv-2/tc");
    install_toolchain(&c, Path::new(MOCK), Some(earlier - day));
    let on_c = path_with(&c);
    let cache_c = t.path("cache-c");
    unpack_on(&cache_c, &on_c);
    for (blob, value) in want {
        assert_eq!(
            call(&t, &cache_c, blob, &on_c, None),
            (0, 1, value),
            "{blob}"
        );
    }
    // Host C's copy of the toolchain's header was hashed once; its
    // identity is kept in host C's cache for the next process.
    assert!(
        snapshot(&cache_c)
            .keys()
            .any(|p| p.starts_with("deps/") && p.contains(".here-")),
        "{:?}",
        snapshot(&cache_c)
    );
    // Host A's cache as a read-only tier of host C's.
    let cache_t = t.path("cache-tier");
    for (blob, value) in want {
        assert_eq!(
            call(&t, &cache_t, blob, &on_c, Some(&cache_a)),
            (0, 1, value),
            "{blob}"
        );
    }
    assert_eq!(t.compiles(), 3, "host C compiled a packed kernel");
    // Its own header is what host C's lookups checked: changed, a miss.
    fs::write(c.join("include/tc.h"), "#define TC_ADD 200\n").unwrap();
    assert_eq!(call(&t, &cache_c, "delta", &on_c, None), (1, 0, 205));
    assert_eq!(t.compiles(), 4);
    fs::write(c.join("include/tc.h"), "#define TC_ADD 100\n").unwrap();

    // Another version text: refused, naming both.
    let fresh = t.path("cache-d");
    let r = ck(
        &t,
        &["unpack", s(&file), "--cache", s(&fresh)],
        &[("PATH", &on_c), ("MOCK_CC_VERSION", " patched")],
    );
    refused(&r, &["patched", "identity"]);
    assert!(objects(&fresh).is_empty());
    // One byte more in the compiler: refused, and host C's own cache
    // misses (compiles again) for it.
    let mut bytes = fs::read(c.join("libexec/mock-cc")).unwrap();
    bytes.push(0);
    fs::write(c.join("libexec/mock-cc"), &bytes).unwrap();
    let r = ck(
        &t,
        &["unpack", s(&file), "--cache", s(&fresh)],
        &[("PATH", &on_c)],
    );
    refused(&r, &["identity", "the same first line of --version"]);
    assert!(objects(&fresh).is_empty());
    assert_eq!(call(&t, &cache_c, "alpha", &on_c, None), (1, 0, 10));
    assert_eq!(t.compiles(), 5);
}

/// Two wrapper scripts that run the same compiler with the same arguments
/// are one compiler wherever each lives; a wrapper that passes another
/// flag is another.
#[test]
fn a_wrappers_location_is_not_its_identity_but_its_flags_are() {
    use ck_jit_rt::__internals::{forget_identities, identify};
    use ck_jit_rt::CompilerCheck;
    let t = Tree::new("wrapper-identity");
    let id = |prefix: &Path| {
        forget_identities();
        let program = prefix.join("bin/tc-cc");
        let id = identify(s(&program), "w", &CompilerCheck::Content, None).unwrap();
        (id.files.clone(), id.version.clone())
    };
    install_toolchain(&t.path("one"), Path::new(MOCK), None);
    install_toolchain(&t.path("two/deeper"), Path::new(MOCK), None);
    let one = id(&t.path("one"));
    assert_eq!(one.0.split(',').count(), 2, "the wrapper and its compiler");
    assert_eq!(one, id(&t.path("two/deeper")));
    let wrapper = t.path("two/deeper/bin/tc-cc");
    let text = fs::read_to_string(&wrapper).unwrap();
    fs::write(&wrapper, text.replace("-isystem", "-O3 -isystem")).unwrap();
    assert_ne!(one, id(&t.path("two/deeper")));
}

/// The HIP toolchain `.ci/hip-toolchain.sh` assembles (`CK_JIT_REAL_HIP_ENV`,
/// else `target/hip-toolchain/env.sh`): its directory and its compiler
/// binary (zig's clang), or why there is none.
fn hip_toolchain() -> Result<(PathBuf, PathBuf), String> {
    let ws = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let env = std::env::var_os("CK_JIT_REAL_HIP_ENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.join("target/hip-toolchain/env.sh"));
    let dir = env.parent().unwrap().to_path_buf();
    let clang = fs::read_to_string(dir.join("bin/hipclang"))
        .map_err(|e| format!("no HIP toolchain at {} ({e})", dir.display()))?;
    let zig = clang
        .split('"')
        .nth(1)
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .ok_or_else(|| format!("{}/bin/hipclang names no compiler", dir.display()))?;
    Ok((dir, zig))
}

/// That toolchain installed anew at `prefix`, as its script lays it out:
/// the compiler copied (new times), the resource and ROCm directories
/// copied, and the three scripts written for `prefix`. `times`: as in
/// [`install_toolchain`].
fn install_hip(from: &Path, zig: &Path, prefix: &Path, times: Option<std::time::SystemTime>) {
    let _ = fs::remove_dir_all(prefix);
    fs::create_dir_all(prefix.join("bin")).unwrap();
    fs::create_dir_all(prefix.join("zig")).unwrap();
    let exe = prefix.join("zig/zig");
    fs::copy(zig, &exe).unwrap();
    for d in ["rd", "rocm"] {
        let st = Command::new("cp")
            .arg("-r")
            .arg(from.join(d))
            .arg(prefix.join(d))
            .status()
            .unwrap();
        assert!(st.success());
    }
    let bundler = fs::read_link(from.join("bin/clang-offload-bundler")).unwrap();
    std::os::unix::fs::symlink(bundler, prefix.join("bin/clang-offload-bundler")).unwrap();
    let p = prefix.display();
    let flags = format!(
        "-x hip --rocm-path={p}/rocm -isystem {p}/rocm/include -mcode-object-version=5 \
         -no-hip-rt -std=c++17 -O3 -fPIC"
    );
    for (name, text) in [
        (
            "lld",
            format!(
                "#!/bin/sh\nif [ \"$1\" = \"-flavor\" ]; then shift 2; fi\nexec \"{p}/zig/zig\" ld.lld \"$@\"\n"
            ),
        ),
        (
            "hipclang",
            format!(
                "#!/bin/sh\nexec \"{p}/zig/zig\" clang --driver-mode=g++ -target x86_64-linux-gnu \
                 -resource-dir \"{p}/rd\" -B\"{p}/bin\" \"$@\"\n"
            ),
        ),
        (
            "hipcc",
            format!("#!/bin/sh\nexec \"{p}/bin/hipclang\" {flags} \"$@\"\n"),
        ),
    ] {
        let f = prefix.join("bin").join(name);
        fs::write(&f, text).unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o755)).unwrap();
    }
    if let Some(t) = times {
        for f in ["zig/zig", "bin/hipcc", "bin/hipclang", "bin/lld"] {
            fs::File::options()
                .write(true)
                .open(prefix.join(f))
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
    }
}

/// As [`a_pack_serves_every_host_with_the_same_compiler_at_any_path_or_time`],
/// with real HIP blobs compiled for gfx942 by the HIP toolchain (an
/// upstream clang from a pip package): built and packed on one host,
/// unpacked on the same toolchain reinstalled with other times and on one
/// installed at another path, each building nothing; a changed compiler
/// binary is refused.
#[test]
fn a_hip_pack_serves_the_same_pip_toolchain_reinstalled_or_elsewhere() {
    let (from, zig) = match hip_toolchain() {
        Ok(t) => t,
        Err(why) => {
            if std::env::var("CK_JIT_REQUIRE_REAL_CK").is_ok_and(|v| v == "1") {
                panic!("CK_JIT_REQUIRE_REAL_CK=1 but {why}");
            }
            eprintln!("skipped: {why}; run .ci/hip-toolchain.sh");
            return;
        }
    };
    let t = Tree::new("pack-hosts-hip");
    for (name, op) in [("twice", "2.0f * x[i]"), ("plus_one", "x[i] + 1.0f")] {
        t.write(
            &format!("kernels/{name}.hip"),
            &format!(
                "#include <hip/hip_runtime.h>\n\
                 __global__ void {name}_k(float* x, int n) {{\n\
                 \x20   int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 \x20   if (i < n) x[i] = {op};\n}}\n\
                 extern \"C\" int {name}(float* x, int n) {{\n\
                 \x20   hipLaunchKernelGGL({name}_k, dim3((n + 63) / 64), dim3(64), 0, 0, x, n);\n\
                 \x20   return hipGetLastError() == hipSuccess ? 0 : -1;\n}}\n"
            ),
        );
    }
    let mut m = c_manifest(&t.dir, &["twice", "plus_one"], "hipcc", &[]);
    m.groups[0].args = ["--offload-arch=gfx942", "-shared", "{src}", "-o", "{out}"]
        .map(String::from)
        .to_vec();
    for b in &mut m.blobs {
        b.source = format!("kernels/{}.hip", b.name);
    }
    let manifest = t.write_manifest(&m);
    let hipcc = |prefix: &Path| prefix.join("bin/hipcc").display().to_string();
    let build = |cache: &Path, prefix: &Path| {
        let r = ck_in(
            &t,
            &manifest,
            cache,
            &["--json", "build", "--all"],
            &[("CK_JIT_HIPCC", &hipcc(prefix)), ("CK_JIT_ARCH", "gfx942")],
        );
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let d = r.json();
        (
            d["compiled"].as_i64().unwrap(),
            d["cached"].as_i64().unwrap(),
        )
    };
    let a = t.path("opt/hip");
    install_hip(&from, &zig, &a, None);
    let cache_a = t.path("cache-a");
    assert_eq!(build(&cache_a, &a), (2, 0));
    let file = t.path("hip.tar.zst");
    let r = ck_in(
        &t,
        &manifest,
        &cache_a,
        &["pack", "--all", "-o", s(&file)],
        &[("CK_JIT_HIPCC", &hipcc(&a)), ("CK_JIT_ARCH", "gfx942")],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("2 entries for gfx942"), "{}", r.stdout);
    let unpack_on = |cache: &Path, prefix: &Path| {
        let r = ck(
            &t,
            &["unpack", s(&file), "--cache", s(cache), "--arch", "gfx942"],
            &[("CK_JIT_HIPCC", &hipcc(prefix))],
        );
        (r.code, r.stdout, r.stderr)
    };

    let earlier = std::time::SystemTime::now() - std::time::Duration::from_secs(400 * 86_400);
    install_hip(&from, &zig, &a, Some(earlier));
    let cache_b = t.path("cache-b");
    let (code, out, err) = unpack_on(&cache_b, &a);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("2 installed") && out.contains("for gfx942"),
        "{out}"
    );
    assert_eq!(build(&cache_b, &a), (0, 2), "the same path, other times");

    fs::remove_dir_all(&a).unwrap();
    let c = t.path("srv/venvs/other/hip");
    install_hip(&from, &zig, &c, Some(earlier));
    let cache_c = t.path("cache-c");
    let (code, out, err) = unpack_on(&cache_c, &c);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(build(&cache_c, &c), (0, 2), "another path");
    // Host A's cache as a read-only tier of host C's.
    let r = ck_in(
        &t,
        &manifest,
        &t.path("cache-tier"),
        &["--json", "build", "--all"],
        &[
            ("CK_JIT_HIPCC", &hipcc(&c)),
            ("CK_JIT_ARCH", "gfx942"),
            ("CK_JIT_CACHE_PATH", s(&cache_a)),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.json()["compiled"], 0, "{}", r.stdout);

    // One byte more in the compiler binary: another compiler.
    let mut f = fs::File::options()
        .append(true)
        .open(c.join("zig/zig"))
        .unwrap();
    std::io::Write::write_all(&mut f, &[0]).unwrap();
    drop(f);
    let (code, _, err) = unpack_on(&t.path("cache-d"), &c);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("identity"), "{err}");
    assert!(objects(&t.path("cache-d")).is_empty());
}

/// What `ck-jit pack` says a pack is for is what `ck-jit unpack` judges
/// it by: kernels compiled with `-arch=sm_90` and no device named are
/// "for sm_90" in both; host code is for the host in both.
#[test]
fn pack_and_unpack_say_the_same_targets() {
    let t = Tree::new("pack-targets");
    t.c_blob("alpha", 2, 0);
    let log = format!("--mock-log={}", t.compile_log().display());
    let m = c_manifest(&t.dir, &["alpha"], MOCK, &[&log, "-arch=sm_90"]);
    let manifest = t.write_manifest(&m);
    let cache = t.path("first");
    let file = t.path("sm90.tar.zst");
    let with = |args: &[&str]| {
        let r = ck_in(&t, &manifest, &cache, args, &[]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        r.stdout
    };
    with(&["build", "--all"]);
    let said = with(&["pack", "--all", "-o", s(&file)]);
    assert!(said.contains("1 entries for sm_90,"), "{said}");
    let r = unpack_for(&t, &file, &t.path("second"), "sm_90");
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("(for sm_90;"), "{}", r.stdout);

    let host = Tree::new("pack-targets-host");
    let cache = built(&host, "first");
    let file = host.path("host.tar.zst");
    let r = ck_in(
        &host,
        &host.path("manifest.json"),
        &cache,
        &["pack", "--all", "-o", s(&file)],
        &[],
    );
    assert!(
        r.stdout.contains("for the host (no GPU code)"),
        "{}",
        r.stdout
    );
    let r = ck(
        &host,
        &["unpack", s(&file), "--cache", s(&host.path("second"))],
        &[],
    );
    assert!(
        r.stdout.contains("(for the host (no GPU code);"),
        "{}",
        r.stdout
    );
}
