//! Two "nodes" share compile work through ccache's Redis remote storage: a
//! `redis-server` on 127.0.0.1 (its own port and directory, stopped at the
//! end), and per node its own HOME, ck-jit cache and local ccache
//! directory, with `CK_JIT_LAUNCHER=ccache`. Node A compiles; node B's first
//! call is a remote hit: ccache's statistics say so and the real compiler
//! (a wrapper that logs each run) does not compile for B (it still links
//! the object into the shared library: ccache shares objects, not links).
//! Skipped (loudly)
//! where ccache or redis-server is missing, unless
//! `CK_JIT_REQUIRE_LAUNCHERS=1`.

use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ck_jit_rt::{Outcome, Runtime};
use ck_jit_tests::{c_manifest, call, launcher_available, test_config, Tree};

/// A redis-server of this test, killed when dropped.
struct Redis {
    child: Child,
    port: u16,
}

impl Redis {
    fn start(dir: &Path) -> Redis {
        std::fs::create_dir_all(dir).unwrap();
        // A free port: bind, read it, release, then hand it to the server
        // (a race with another program is possible and would fail loudly).
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
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

/// ccache's counter `key` in the local directory `dir`.
fn ccache_stat(dir: &Path, key: &str) -> u64 {
    let out = Command::new("ccache")
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

/// The compiler's runs that compile or preprocess (not `--version`, not
/// the link step, which ccache never caches).
fn compiles(p: &Path) -> usize {
    std::fs::read_to_string(p).map_or(0, |s| {
        s.lines()
            .filter(|l| l.split_whitespace().any(|w| w == "-c" || w == "-E"))
            .count()
    })
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
}

#[test]
fn a_second_node_is_served_from_the_remote_ccache_without_compiling() {
    if !launcher_available("ccache", "ccache")
        || !launcher_available("redis-server", "redis-server")
    {
        return;
    }
    let t = Tree::new("remote-ccache");
    t.write("include/h.h", "#define H 6\n");
    t.write(
        "kernels/k.c",
        "#include \"../include/h.h\"\nint k(int x) { return x * H; }\n",
    );
    // The real compiler, logging each run.
    let log = t.path("compiler-runs.log");
    let cc = t.write(
        "bin/cc-logged",
        &format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec cc \"$@\"\n",
            log.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cc, std::fs::Permissions::from_mode(0o755)).unwrap();
    let redis = Redis::start(&t.path("redis"));
    let remote = format!("redis://127.0.0.1:{}", redis.port);
    let m = c_manifest(&t.dir, &["k"], cc.to_str().unwrap(), &[]);
    let mut config = test_config();
    config.launcher = vec!["ccache".into()];

    // ccache reads its settings from the environment of each compile; this
    // test binary holds only this test, so the variables are ours.
    std::env::set_var("CCACHE_REMOTE_STORAGE", &remote);
    let first_call = |node: &Node| -> (Outcome, f64, i32) {
        std::env::set_var("HOME", &node.home);
        std::env::set_var("CCACHE_DIR", &node.ccache);
        ck_jit_rt::__internals::forget_identities();
        let rt = Runtime::new(m.clone(), "node")
            .with_config(config.clone())
            .with_root(&t.dir)
            .with_cache_dir(&node.cache);
        let t0 = Instant::now();
        let (_, _, outcome) = rt.ensure("k", false).unwrap();
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        (outcome, ms, call(rt.resolve("k", None).unwrap(), 7))
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
