//! `CK_JIT_LAUNCHER=ccache`: blob compiles go through ccache, so a second
//! build of a cleaned ck-jit cache is served by ccache. Skipped (loudly)
//! where ccache is not installed, unless `CK_JIT_REQUIRE_LAUNCHERS=1`.

use ck_jit_rt::Outcome;
use ck_jit_tests::{c_manifest, call, ccache_stat, launcher_available, test_config, Tree};

fn ccache_hits(dir: &std::path::Path) -> u64 {
    ccache_stat(dir, "direct_cache_hit") + ccache_stat(dir, "preprocessed_cache_hit")
}

#[test]
fn second_build_of_a_cleaned_cache_is_served_by_ccache() {
    if !launcher_available("ccache", "ccache") {
        return;
    }
    let t = Tree::new("ccache");
    t.write("include/h.h", "#define H 6\n");
    t.write(
        "kernels/k.c",
        "#include \"../include/h.h\"\nint k(int x) { return x * H; }\n",
    );
    let ccache_dir = t.path("ccache");
    // This test binary holds only this test, so the variable is ours.
    std::env::set_var("CCACHE_DIR", &ccache_dir);
    let m = c_manifest(&t.dir, &["k"], "cc", &[]);
    let mut config = test_config();
    config.launcher = vec!["ccache".into()];

    let rt = t.runtime(&m, config.clone());
    let (entry, _, outcome) = rt.ensure("k", false).unwrap();
    assert_eq!(outcome, Outcome::Compiled);
    assert!(
        entry.record.command[0].contains("ccache"),
        "{:?}",
        entry.record.command
    );
    assert_eq!(ccache_hits(&ccache_dir), 0);

    // Clean the ck-jit cache: the next build compiles again, and ccache
    // serves it.
    std::fs::remove_dir_all(t.cache_dir()).unwrap();
    let rt = t.runtime(&m, config);
    let (_, _, outcome) = rt.ensure("k", false).unwrap();
    assert_eq!(outcome, Outcome::Compiled);
    assert_eq!(ccache_hits(&ccache_dir), 1);
    assert_eq!(call(rt.resolve("k", None).unwrap(), 7), 42);
    // The header is still tracked through ccache's depfile.
    let (entry, _, _) = rt.ensure("k", false).unwrap();
    assert!(
        entry
            .record
            .deps
            .iter()
            .any(|d| d.path.ends_with("include/h.h")),
        "{:?}",
        entry.record.deps
    );
}
