#!/usr/bin/env bash
# Benchmark 4, build time at CK scale: writes the 10,554 blobs of CK's FMHA
# codegen list (benches/data/ck-fmha-blobs.txt) as small CK-shaped files
# and a crate whose build.rs records them, then times that crate's cargo
# build (and its build.rs) against a 4-blob tree, reports the manifest and
# binary sizes, and compares with compiling every blob ahead of time,
# extrapolated from a sample of real host c++ compiles.
#
# Usage: benches/scripts/ck-scale-build.sh [--rounds R] [--aot-sample N] [--jobs J]
# (defaults: 3 rounds, 20 sampled compiles, 2 jobs; the tree is recorded with
# plain BlobGroup globs; --groups, once the choice of that mode, is accepted)
#
# Work files: target/ck-jit-benches/ck-scale (CK_JIT_BENCH_DIR to move).
# The first run also builds the crate's dependencies once (reported apart).
set -euo pipefail
cd "$(dirname "$0")/../.."
cargo build --release -q -p ck-jit-benches --bin bench-tool
exec "${CARGO_TARGET_DIR:-target}/release/bench-tool" ck-scale "$@"
