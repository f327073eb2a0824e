//! Manifests that lie: duplicate names, a newer format, a group that does
//! not exist, blobs out of order. Each is refused when the manifest is
//! read, with an error naming the file and the entry, never accepted and
//! found wrong later. And a manifest of 100,000 blobs still loads quickly
//! (timed and printed, not asserted).

use std::time::Instant;

use ck_jit_build::manifest::{Manifest, ManifestError};
use ck_jit_rt::{Error, Runtime};
use ck_jit_tests::{c_manifest, Tree};

/// A valid two-blob manifest's JSON, as `ck-jit-build` writes it.
fn valid_json(t: &Tree) -> String {
    c_manifest(&t.dir, &["alpha", "beta"], "cc", &[]).to_json()
}

/// What the runtime says about a manifest file with `text`.
fn refused(t: &Tree, text: &str) -> (ManifestError, String) {
    let path = t.write("lying.json", text);
    match Runtime::from_file(&path) {
        Err(e @ Error::Manifest { .. }) => {
            let shown = e.to_string();
            assert!(shown.contains(&path.display().to_string()), "{shown}");
            let Error::Manifest { error, .. } = e else {
                unreachable!()
            };
            (error, shown)
        }
        Err(e) => panic!("not a manifest error: {e}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

#[test]
fn duplicate_blob_names_are_refused_naming_the_name() {
    let t = Tree::new("dup");
    let text = valid_json(&t).replace("\"name\":\"beta\"", "\"name\":\"alpha\"");
    let (error, shown) = refused(&t, &text);
    assert_eq!(error, ManifestError::DuplicateName("alpha".into()));
    assert!(shown.contains("'alpha' appears more than once"), "{shown}");
}

#[test]
fn a_manifest_from_a_newer_format_says_to_upgrade() {
    let t = Tree::new("newer");
    let valid = valid_json(&t);
    // A newer format may also add fields this version does not know: the
    // version is still what is reported, not an unknown field.
    let now = format!("\"format\":{}", ck_jit_build::manifest::FORMAT_VERSION);
    let next = ck_jit_build::manifest::FORMAT_VERSION + 1;
    let newer = valid
        .replacen(&now, &format!("\"format\":{next}"), 1)
        .replacen("\"groups\":", "\"features\":[\"zstd\"],\n\"groups\":", 1);
    for (text, found) in [
        (valid.replacen(&now, &format!("\"format\":{next}"), 1), next),
        (newer, next),
        (valid.replacen(&now, "\"format\":4294967295", 1), u32::MAX),
    ] {
        let (error, shown) = refused(&t, &text);
        assert_eq!(error, ManifestError::NewerFormat { found });
        assert!(
            shown.contains(&format!("format {found} is newer")) && shown.contains("upgrade ck-jit"),
            "{shown}"
        );
    }
    // A version that is not a version at all is malformed, not newer.
    let (error, _) = refused(&t, &valid.replacen(&now, "\"format\":-1", 1));
    assert!(matches!(error, ManifestError::Parse(_)), "{error:?}");
}

#[test]
fn a_group_index_out_of_range_is_refused_naming_the_blob() {
    let t = Tree::new("group");
    for group in [1u64, 7, u64::from(u32::MAX)] {
        let text = valid_json(&t).replacen(
            "\"name\":\"beta\",\"source\":\"kernels/beta.c\",\"group\":0",
            &format!("\"name\":\"beta\",\"source\":\"kernels/beta.c\",\"group\":{group}"),
            1,
        );
        let (error, shown) = refused(&t, &text);
        assert_eq!(
            error,
            ManifestError::BadGroup {
                blob: "beta".into(),
                group: group as u32
            }
        );
        assert!(
            shown.contains(&format!(
                "blob 'beta' names group {group}, which does not exist"
            )),
            "{shown}"
        );
    }
    // Past u32: malformed.
    let text = valid_json(&t).replacen("\"group\":0", "\"group\":4294967296", 1);
    assert!(matches!(refused(&t, &text).0, ManifestError::Parse(_)));
}

#[test]
fn unsorted_blobs_are_refused_naming_both() {
    let t = Tree::new("unsorted");
    let m = c_manifest(&t.dir, &["alpha", "beta"], "cc", &[]);
    let mut swapped = m.clone();
    swapped.blobs.swap(0, 1);
    // to_json writes the blobs as they are; only finish() sorts.
    let (error, shown) = refused(&t, &swapped.to_json());
    assert!(matches!(error, ManifestError::Parse(_)), "{error:?}");
    assert!(
        shown.contains("not sorted") && shown.contains("'alpha' after 'beta'"),
        "{shown}"
    );
}

const N: usize = 100_000;

/// A manifest file of `N` CK-like blob names.
fn large_manifest(t: &Tree) -> (std::path::PathBuf, Vec<String>) {
    let names: Vec<String> = (0..N)
        .map(|i| {
            format!(
                "fmha_fwd_d{}_{}_batch_b128x64_r4x1x1_w32x32x16_qr_vr_{i:06}",
                [64, 128, 256][i % 3],
                ["fp16", "bf16"][i % 2]
            )
        })
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let m = c_manifest(&t.dir, &refs, "cc", &[]);
    (t.write("large.json", &m.to_json()), names)
}

#[test]
fn a_manifest_of_100000_blobs_parses_and_looks_up_a_blob() {
    let t = Tree::new("large");
    let (path, names) = large_manifest(&t);
    let size = std::fs::metadata(&path).unwrap().len();

    let t0 = Instant::now();
    let rt = Runtime::from_file(&path).unwrap();
    let parsed = t0.elapsed();
    let wanted = &names[N / 2];
    let t1 = Instant::now();
    let blob = rt.manifest().blob(wanted).map(|b| b.name.clone());
    let first_lookup = t1.elapsed();
    assert_eq!(blob.as_ref(), Some(wanted));
    assert_eq!(rt.manifest().blobs.len(), N);

    // Validation again without the file read.
    let text = std::fs::read_to_string(&path).unwrap();
    let t2 = Instant::now();
    Manifest::from_json(&text).unwrap();
    let reparse = t2.elapsed();
    println!(
        "{N} blobs, {:.1} MB manifest: read + parse + validate {parsed:?}, first lookup \
         {first_lookup:?} (from_json alone {reparse:?})",
        size as f64 / 1e6
    );
}

/// Slow in a debug build (about 30 s on 2 busy cores): run with
/// `cargo test -p ck-jit-tests --test lying_trees -- --ignored --nocapture`.
#[test]
#[ignore]
fn an_unknown_name_in_100000_blobs_is_answered_with_suggestions() {
    let t = Tree::new("large-miss");
    let (path, _) = large_manifest(&t);
    let rt = Runtime::from_file(&path).unwrap();
    let t0 = Instant::now();
    let err = rt
        .resolve(
            "fmha_fwd_d64_fp16_batch_b128x64_r4x1x1_w32x32x16_qr_vr_00000x",
            None,
        )
        .unwrap_err();
    let miss = t0.elapsed();
    let Error::UnknownBlob { suggestions, .. } = &err else {
        panic!("{err}");
    };
    assert!(!suggestions.is_empty(), "{err}");
    println!("{N} blobs: an unknown name with 'did you mean' suggestions took {miss:?}");
}
