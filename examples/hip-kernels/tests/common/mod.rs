//! Shared by the test binaries: whether hipcc is here (skipping visibly when
//! it is not, failing instead under `CK_JIT_REQUIRE_HIP=1`), and a fresh
//! cache directory per test binary.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Once;

/// Where hipcc is: `CK_JIT_HIPCC`, else `hipcc` in `PATH`.
fn find_hipcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("CK_JIT_HIPCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("hipcc"))
        .find(|p| p.is_file())
}

/// Whether the test can use the real hipcc. When it cannot, says so on
/// stderr and returns false, or panics under `CK_JIT_REQUIRE_HIP=1` so
/// that CI cannot pass by skipping.
pub fn hipcc_or_skip() -> bool {
    if find_hipcc().is_some() {
        return true;
    }
    if std::env::var("CK_JIT_REQUIRE_HIP").is_ok_and(|v| v == "1") {
        panic!("CK_JIT_REQUIRE_HIP=1 but hipcc was not found (PATH or CK_JIT_HIPCC); install hipcc libamdhip64-dev");
    }
    // Straight to the stream: libtest captures eprintln! of passing tests,
    // and a skip must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "skipping: hipcc not found; install hipcc libamdhip64-dev"
    );
    false
}

static CACHE: Once = Once::new();

/// Points ck-jit at an empty cache directory of this test binary. Must run
/// before the runtime is first used (the runtime reads its environment
/// once per process); every test calls it first.
pub fn fresh_cache(binary: &str) {
    CACHE.call_once(|| {
        let dir =
            Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("hip-kernels-{binary}-cache"));
        let _ = std::fs::remove_dir_all(&dir);
        std::env::set_var("CK_JIT_CACHE_DIR", &dir);
    });
}
