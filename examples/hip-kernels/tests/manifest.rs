//! What the build recorded (no compiler needed): every blob with its
//! metadata, the hipcc command with one --offload-arch per configured
//! architecture, and no blob compiled.

use hip_kernels::{variants, ARCHS};

#[test]
fn every_blob_has_op_dtype_and_block_metadata() {
    let v = variants().unwrap();
    let rt = hip_kernels::runtime().unwrap();
    assert_eq!(v.len(), rt.manifest().blobs.len(), "a blob lacks metadata");
    for op in ["scale_add", "sum"] {
        for dtype in ["f32", "f16"] {
            for block in [64, 256] {
                let name = format!("{op}_{dtype}_b{block}");
                let found = v
                    .iter()
                    .find(|x| x.blob == name)
                    .unwrap_or_else(|| panic!("{name}"));
                assert_eq!(
                    (found.op.as_str(), found.dtype.as_str(), found.block),
                    (op, dtype, block)
                );
                assert_eq!(found.api, None);
            }
        }
    }
    assert!(v
        .iter()
        .any(|x| x.blob == "run_scale_add_f32_b256" && x.api.as_deref() == Some("ck")));
}

#[test]
fn hipcc_gets_one_offload_arch_per_configured_architecture() {
    let rt = hip_kernels::runtime().unwrap();
    for g in &rt.manifest().groups {
        assert_eq!(g.compiler, "hipcc");
        let archs: Vec<&str> = g
            .args
            .iter()
            .filter_map(|a| a.strip_prefix("--offload-arch="))
            .collect();
        assert_eq!(archs, ARCHS.split(',').collect::<Vec<_>>(), "{:?}", g.args);
        for flag in ["-fPIC", "-shared", "-O3"] {
            assert!(
                g.args.iter().any(|a| a == flag),
                "{flag} missing: {:?}",
                g.args
            );
        }
    }
}

#[test]
fn the_recorded_root_is_this_crate() {
    let rt = hip_kernels::runtime().unwrap();
    let here = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap();
    assert_eq!(std::path::Path::new(&rt.manifest().root), here);
}

#[test]
fn integration_tests_see_the_build_scripts_out_dir_and_its_manifest() {
    // OUT_DIR is set for every target of a package with a build script, so
    // a test can also build its own runtime over the same manifest (with
    // its own cache directory, say).
    let path = std::path::Path::new(env!("OUT_DIR")).join("ck_jit_manifest.json");
    let from_file = ck_jit_rt::Runtime::from_file(&path).unwrap();
    let embedded = hip_kernels::runtime().unwrap();
    assert_eq!(from_file.manifest(), embedded.manifest());
}
