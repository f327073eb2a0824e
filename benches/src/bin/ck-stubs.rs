//! Records a CK tree with the CK preset and writes the lazy-dispatcher stub
//! sources, for `benches/scripts/lazy-dispatcher-cost.sh`: prints how long
//! recording took, the manifest's size, and the dispatchers and stub files
//! (one per line, `dispatcher PATH` / `stub PATH`) with the compile command
//! of their group (`args ARG...`, `{root}` expanded).
//!
//! usage: ck-stubs CK_TREE OUT_DIR DIRECTION ARCH

use std::path::PathBuf;
use std::time::Instant;

use ck_jit_ck::{write_stubs, CkFmha};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tree, out, direction, arch] = args.as_slice() else {
        eprintln!("usage: ck-stubs CK_TREE OUT_DIR DIRECTION ARCH");
        std::process::exit(2);
    };
    let out = PathBuf::from(out);
    let t0 = Instant::now();
    let files = match CkFmha::new()
        .source(tree)
        .direction(direction)
        .arch(arch)
        .out_dir(&out)
        .name("ck_stubs")
        .cargo_metadata(false)
        .try_write()
    {
        Ok(f) => f,
        Err(e) => {
            eprintln!("ck-stubs: {e}");
            std::process::exit(1);
        }
    };
    let recorded = t0.elapsed();
    let t0 = Instant::now();
    let stubs = match write_stubs(&files, &out.join("stubs")) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ck-stubs: {e}");
            std::process::exit(1);
        }
    };
    let manifest_bytes = files
        .manifest_path
        .as_ref()
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len());
    println!(
        "recorded {} blobs in {:.2} s (generator included); manifest {} bytes; \
         {} stub files ({} specialisations) in {:.2} s",
        files.manifest().blobs.len(),
        recorded.as_secs_f64(),
        manifest_bytes,
        stubs.files.len(),
        stubs.specialisations,
        t0.elapsed().as_secs_f64()
    );
    let m = files.manifest();
    let Some(blob) = m.blobs.first() else { return };
    let group = m.group_of(blob);
    print!("args");
    for a in &group.args {
        print!(" {}", a.replace("{root}", &m.root));
    }
    println!();
    for d in files.dispatchers() {
        println!("dispatcher {}", d.display());
    }
    for s in &stubs.files {
        println!("stub {}", s.display());
    }
}
