#!/usr/bin/env bash
# Whole processes whose kernels are all cached (the hip-kernels example,
# 9 HIP blobs compiled by Debian's hipcc), with the default compiler check
# (CK_JIT_COMPILER_CHECK=mtime: the compiler's identity kept in the cache)
# against CK_JIT_COMPILER_CHECK=command (hipcc --version in every process,
# as before), interleaved; prints the medians and their ratio.
# Usage: benches/scripts/first-hit-compiler-check.sh [rounds]   (needs hipcc)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
rounds=${1:-7}
cargo build -q --release -p hip-kernels
export CK_JIT_CACHE_DIR=${CK_JIT_BENCH_DIR:-target/ck-jit-benches}/first-hit-cache
rm -rf "$CK_JIT_CACHE_DIR"
target/release/hip-kernels >/dev/null 2>&1 # fills the cache (compiles)
declare -A whole first
for r in $(seq "$rounds"); do
    for p in mtime command; do
        s=$(date +%s%N)
        out=$(CK_JIT_COMPILER_CHECK=$p target/release/hip-kernels 2>&1)
        e=$(date +%s%N)
        whole[$p]+="$(( (e - s) / 1000 )) "
        first[$p]+="$(echo "$out" | awk '/ms \(/ {print $2; exit}') "
    done
done
for p in command mtime; do
    w=$(echo "${whole[$p]}" | median)
    f=$(echo "${first[$p]}" | median)
    printf '%-8s whole process %8.1f ms   first cached kernel %8.1f ms\n' "$p" "$(echo "$w / 1000" | bc -l)" "$f"
done
wc=$(echo "${whole[command]}" | median)
wm=$(echo "${whole[mtime]}" | median)
printf 'whole process, mtime / command: %.3f\n' "$(echo "$wm / $wc" | bc -l)"
