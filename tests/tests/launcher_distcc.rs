//! `CK_JIT_LAUNCHER=distcc` with a `distccd` on 127.0.0.1: compiles go
//! through the daemon (local fallback disabled, so a compile that did not
//! go through it fails). Skipped (loudly) where distcc is not installed,
//! unless `CK_JIT_REQUIRE_LAUNCHERS=1`.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use ck_jit_rt::Outcome;
use ck_jit_tests::{c_manifest, call, launcher_available, test_config, Tree};

/// distccd in a process group of its own: it forks workers, which must go
/// with it (left running, they keep the test's output pipe open).
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        // SAFETY: signals the group this test created for the daemon.
        unsafe { libc::kill(-(self.0.id() as libc::pid_t), libc::SIGTERM) };
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn compiles_go_through_a_local_distccd() {
    if !launcher_available("distccd", "distcc") || !launcher_available("distcc", "distcc") {
        return;
    }
    let t = Tree::new("distcc");
    t.c_blob("k", 9, 0);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let log = std::fs::File::create(t.path("distccd.log")).unwrap();
    let _daemon = Daemon(
        Command::new("distccd")
            .args([
                "--no-detach",
                "--daemon",
                "--log-stderr",
                "--log-level",
                "info",
            ])
            .args(["--allow", "127.0.0.1", "--listen", "127.0.0.1"])
            .args([
                "--port",
                &port.to_string(),
                "--jobs",
                "2",
                "--enable-tcp-insecure",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .process_group(0)
            .spawn()
            .expect("distccd starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "distccd did not start listening");
        std::thread::sleep(Duration::from_millis(50));
    }
    // This test binary holds only this test, so the variables are ours.
    std::env::set_var("DISTCC_HOSTS", format!("127.0.0.1:{port}/2"));
    std::env::set_var("DISTCC_FALLBACK", "0");
    std::fs::create_dir_all(t.path("distcc-state")).unwrap();
    std::env::set_var("DISTCC_DIR", t.path("distcc-state"));

    let m = c_manifest(&t.dir, &["k"], "cc", &[]);
    let mut config = test_config();
    config.launcher = vec!["distcc".into()];
    let rt = t.runtime(&m, config);
    let (entry, _, outcome) = rt.ensure("k", false).expect("compile through distcc");
    assert_eq!(outcome, Outcome::Compiled);
    assert!(
        entry.record.command[0].contains("distcc"),
        "{:?}",
        entry.record.command
    );
    assert_eq!(call(rt.resolve("k", None).unwrap(), 2), 18);

    // The daemon saw the job.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let text = std::fs::read_to_string(t.path("distccd.log")).unwrap_or_default();
        if text.contains("COMPILE_OK") || text.contains("job complete") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "distccd log shows no compile:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
