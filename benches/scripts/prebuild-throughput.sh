#!/usr/bin/env bash
# Benchmark 5, prebuild throughput: `ck-jit build --all -j 2` over a few
# hundred CK-shaped host blobs against `make -j 2` running the identical
# compile commands (a Makefile generated from the same manifest, same argv).
#
# Usage: benches/scripts/prebuild-throughput.sh [--blobs N] [--rounds R] [--jobs J]
# (defaults: 300 blobs, 5 rounds, 2 jobs)
#
# Work files: target/ck-jit-benches/prebuild (CK_JIT_BENCH_DIR to move).
set -euo pipefail
cd "$(dirname "$0")/../.."
target="${CARGO_TARGET_DIR:-target}"
cargo build --release -q -p ck-jit-benches --bin bench-tool
if ! cargo build --release -q -p ck-jit-cli --bin ck-jit; then
    echo "prebuild-throughput: the ck-jit CLI (crate ck-jit-cli) does not build" >&2
    exit 2
fi
exec "$target/release/bench-tool" prebuild --ck-jit "$target/release/ck-jit" "$@"
