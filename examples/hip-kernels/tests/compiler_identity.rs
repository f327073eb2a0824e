//! The installed `hipcc` is identified through the clang it runs, and its
//! identity does not depend on whether a GPU driver is loaded (Debian's
//! `hipcc --version` prints a traceback on standard error without
//! `/sys/class/kfd`).

mod common;

use ck_jit_rt::__internals::{find_program, identify, wrapped_files};
use ck_jit_rt::CompilerCheck;

#[test]
fn hipcc_identity_follows_its_clang_and_ignores_stderr() {
    common::fresh_cache("compiler_identity");
    if !common::hipcc_or_skip() {
        return;
    }
    let program = std::env::var("CK_JIT_HIPCC")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "hipcc".to_string());
    let path = find_program(&program).expect("hipcc");
    let real = std::fs::canonicalize(&path).unwrap();
    let behind = wrapped_files(&real);
    assert!(
        behind.iter().any(|f| f
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.contains("clang"))),
        "{} is not followed to a clang: {behind:?}",
        real.display()
    );
    let id = identify(&program, "probe", &CompilerCheck::Command, None).expect("identify");
    assert!(id.version.contains("clang"), "{}", id.version);
    assert!(!id.version.contains("Traceback"), "{}", id.version);
}
