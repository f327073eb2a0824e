//! CK support on arbitrary text: the dispatcher rewriter over a small fixed
//! index of real-shaped blobs (one per blob kind, `fixtures/ck/`), the blob
//! indexer, and the blob-name trait parser.
//!
//! Invariants: nothing panics; a rewrite that changes no call returns the
//! input unchanged, and every blob a rewritten call resolves is one the
//! index knows and is named, quoted, in the new text.
#![no_main]

use std::sync::OnceLock;

use ck_jit_build::ck::{rewrite_dispatcher, BlobIndex, BlobTraits};
use libfuzzer_sys::fuzz_target;

macro_rules! blobs {
    ($($name:literal),* $(,)?) => {
        [$(($name, include_str!(concat!("../fixtures/ck/", $name, ".cpp")))),*]
    };
}

const BLOBS: [(&str, &str); 7] = blobs![
    "fmha_fwd_d64_fp16_batch_shb_b128x64x32x64x32x64_r4x1x1_w32x32x16_qr_vr_psskddv",
    "fmha_fwd_splitkv_d64_fp16_batch_b64x64x32x64x32x64_r4x1x1_w16x16x16_qr_vr_psk",
    "fmha_fwd_splitkv_combine_d64_fp16_batch_b32x32_unused",
    "fmha_fwd_appendkv_d64_fp16_b64x64x64x64_vr_psk",
    "fmha_bwd_dot_do_o_d64_fp16_batch_o2_psdv",
    "fmha_bwd_d64_fp16_batch_b32x128x64x32x64x32x32x64x64_r1x4x1_r4x1x1_r1x4x1_w16x16x32_w16x16x16_o1_kr_ktr_vr_psskddv",
    "fmha_bwd_convert_dq_d64_fp16_b64x128_batch_o2_psd",
];

fn index() -> &'static BlobIndex {
    static INDEX: OnceLock<BlobIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut index = BlobIndex::new();
        for (name, src) in BLOBS {
            index.add_source(name, src).expect("fixture blob indexes");
        }
        assert_eq!(index.len(), BLOBS.len());
        index
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };

    match rewrite_dispatcher(text, index()) {
        Ok(out) => {
            if out.calls.is_empty() {
                assert_eq!(out.text, text);
            }
            for call in &out.calls {
                assert!(!call.blobs.is_empty());
                for blob in &call.blobs {
                    assert!(BLOBS.iter().any(|(n, _)| n == blob), "unknown blob {blob}");
                    assert!(out.text.contains(&format!("\"{blob}\"")));
                }
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }

    let mut fresh = BlobIndex::new();
    if fresh.add_source("fuzzed", text).is_ok() {
        // Indexing the same source again under the same name is a no-op.
        let n = fresh.len();
        fresh.add_source("fuzzed", text).expect("same blob twice");
        assert_eq!(fresh.len(), n);
    }

    // Blob names are one line; try each of the first few.
    for line in text.lines().take(8) {
        if let Ok(t) = BlobTraits::parse(line) {
            let meta = t.meta();
            assert_eq!(meta.get("kind").map(String::as_str), Some(t.kind.as_str()));
            assert_eq!(meta.get("hdim"), Some(&t.hdim.to_string()));
        }
    }
});
