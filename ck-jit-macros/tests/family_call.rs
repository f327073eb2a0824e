//! A `#[lazy_kernel(family = "...")]` end to end: six C blobs of one
//! family, selected by attributes, compiled by the system C compiler on
//! their first call and called through the family table. Its own test
//! binary, because it sets the runtime's process-wide environment.

use ck_jit_macros::lazy_kernel;
use ck_jit_rt::Query;

static FAMILY_MANIFEST: ck_jit_rt::__private::Embedded =
    ck_jit_rt::__private::Embedded::from_json_str(include_str!("fixtures/family/manifest.json"));

#[lazy_kernel(family = "k", manifest = FAMILY_MANIFEST)]
unsafe extern "C" fn k(x: i32) -> i32;

#[test]
fn selected_blobs_compile_on_first_call_and_return_their_own_results() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/family");
    let cache = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("ck-jit-macros-family-{}", std::process::id()));
    // Read once, at the runtime's first use, which is below.
    std::env::set_var("CK_JIT_ROOT_CK_JIT_MACROS_FAMILY", fixtures);
    std::env::set_var("CK_JIT_CACHE_DIR", &cache);
    std::env::remove_var("CK_JIT_OFFLINE");
    std::env::remove_var("CK_JIT_LAUNCHER");

    let kernel = k::select(&Query::new().eq("dtype", "f16").ge("hdim", 100)).unwrap();
    // 128 fits better than 256; of the two 128s, k_f has the higher priority.
    assert_eq!(kernel.name(), "k_f");
    assert!(!kernel.member().is_ready());
    // SAFETY: every blob of the family defines `int entry(int)`.
    assert_eq!(unsafe { k::call(kernel, 1) }, 601);
    assert!(kernel.member().is_ready(), "loaded once, kept");
    // SAFETY: as above.
    assert_eq!(unsafe { k::call(kernel, 2) }, 602);

    let with_lse = k::select(&Query::new().has("lse").prefer_max("hdim")).unwrap();
    assert_eq!(with_lse.name(), "k_d");
    let f = k::try_get(with_lse).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { f(5) }, 405);

    for (i, member) in k::blobs().unwrap().iter().enumerate() {
        let kernel = k::by_name(member.name()).unwrap();
        assert_eq!(kernel.index(), i);
        k::prepare(kernel).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { k::call(kernel, 0) }, 100 * (i as i32 + 1));
    }

    let err = k::select(&Query::new().eq("dtype", "bf16")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "no k blob matches dtype = bf16: dtype = bf16 matched 0 of 6 \
         (values seen: f16, f32)"
    );
    let _ = std::fs::remove_dir_all(&cache);
}
