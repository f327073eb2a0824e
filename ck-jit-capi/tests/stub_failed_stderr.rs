//! `ck_jit_stub_failed`, the failure path of every lazy stub, returns its
//! value even when it cannot say why on stderr: here stderr is a pipe
//! whose reader is gone, in a process that ignores SIGPIPE (as every
//! Python process does), so each write fails with EPIPE. The call runs in
//! a child process (this test binary again, told so by the environment),
//! so that an abort shows as the child's status rather than ending the
//! test run.

use std::ffi::c_int;
use std::process::{Command, Stdio};

use ck_jit_capi::ck_jit_stub_failed;

/// Set in the child: the call to make instead of spawning.
const CHILD: &str = "CK_JIT_TEST_STUB_FAILED_CHILD";
/// The child's exit status for a call that returned `r`, apart from any
/// the test harness uses.
const EXIT_BASE: c_int = 40;

#[test]
fn a_stub_failure_with_stderr_a_broken_pipe_returns_instead_of_aborting() {
    if std::env::var_os(CHILD).is_some() {
        // SAFETY: setting a signal's disposition to SIG_IGN has no
        // preconditions.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        // SAFETY: a NUL-terminated string.
        let r = unsafe { ck_jit_stub_failed(c"broken_pipe_blob".as_ptr()) };
        std::process::exit(EXIT_BASE + r);
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    for (on_failure, expected) in [(None, 0), (Some("abort"), 1)] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        // The reader is gone before the child starts: its every write to
        // stderr fails.
        drop(reader);
        let mut cmd = Command::new(&exe);
        cmd.args([
            "--exact",
            "a_stub_failure_with_stderr_a_broken_pipe_returns_instead_of_aborting",
            // The harness would otherwise capture what is written to
            // stderr, and nothing would reach the pipe.
            "--nocapture",
        ])
        .env(CHILD, "1")
        .env_remove("CK_JIT_ON_FAILURE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer);
        if let Some(v) = on_failure {
            cmd.env("CK_JIT_ON_FAILURE", v);
        }
        let out = cmd.output().expect("the child starts");
        assert_eq!(
            out.status.code(),
            Some(EXIT_BASE + expected),
            "CK_JIT_ON_FAILURE={on_failure:?}: the child ended with {} \
             rather than returning {expected}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout)
        );
    }
}
