//! What the build recorded (no compiler needed): the nvcc command, the
//! metadata the tile choice reads, and the root that `CK_JIT_ROOT`
//! relocates.

use std::path::Path;

#[test]
fn nvcc_gets_the_configured_arch_and_shared_object_flags() {
    let rt = cuda_kernels::runtime().unwrap();
    let groups = &rt.manifest().groups;
    assert_eq!(
        groups.iter().map(|g| g.name.as_str()).collect::<Vec<_>>(),
        ["cuda", "cuda_stream"]
    );
    for g in groups {
        assert_eq!(g.compiler, "nvcc");
        let arch = format!("-arch={}", cuda_kernels::ARCH);
        for flag in [arch.as_str(), "-Xcompiler", "-fPIC", "-shared", "-cudart"] {
            assert!(
                g.args.iter().any(|a| a == flag),
                "{flag} missing: {:?}",
                g.args
            );
        }
        // -shared alone: the default "-fPIC -shared" pair would hand nvcc an
        // option it does not take.
        assert_eq!(
            g.args.iter().filter(|a| *a == "-fPIC").count(),
            1,
            "{:?}",
            g.args
        );
    }
}

#[test]
fn every_blob_has_op_and_dtype_and_sgemm_blobs_a_tile() {
    let rt = cuda_kernels::runtime().unwrap();
    let blobs: Vec<_> = rt
        .manifest()
        .blobs
        .iter()
        .filter(|b| b.group == 0)
        .collect();
    let names: Vec<&str> = blobs.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "saxpy_f32",
            "sgemm_f32_t16",
            "sgemm_f32_t32",
            "sgemm_f32_t8",
            "softmax_f32"
        ]
    );
    for b in &blobs {
        let op = b.meta.get("op").map(String::as_str);
        assert!(b.name.starts_with(op.unwrap()), "{}: {:?}", b.name, b.meta);
        assert_eq!(b.meta.get("dtype").map(String::as_str), Some("f32"));
        assert_eq!(
            b.meta.contains_key("tile"),
            op == Some("sgemm"),
            "{}",
            b.name
        );
    }
}

#[test]
fn the_recorded_root_is_this_crate_so_ck_jit_root_relocates_it() {
    let rt = cuda_kernels::runtime().unwrap();
    let here = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    assert_eq!(Path::new(&rt.manifest().root), here);
    for b in &rt.manifest().blobs {
        assert!(b.source.starts_with("kernels/"), "{}", b.source);
    }
}

#[test]
fn the_stream_group_records_the_graph_capture_blobs() {
    let rt = cuda_kernels::runtime().unwrap();
    let mut names: Vec<&str> = rt
        .manifest()
        .blobs
        .iter()
        .filter(|b| b.group == 1)
        .map(|b| b.name.as_str())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "add_f32_stream",
            "axpby_f32_stream",
            "cuda_host",
            "scale_f32_stream"
        ]
    );
}
