#!/usr/bin/env bash
# Whole processes loading 32 cached C kernels, each through the memo of
# hits: first with the memo holding all 32 (the steady state), then after
# it was made to hold 31, so that the first process remembers one new hit
# and appends it. Every process after that should find all 32 in the memo
# again: no source read, the same time as the steady state. Prints each
# process's in-process resolve time (the sum over its kernels) and source
# reads, the medians and their ratio.
# Usage: benches/scripts/memo-after-new-hit.sh [rounds]
#   CK_JIT_BENCH_BIN=DIR: cold-start and load-probe from DIR (another build)
set -euo pipefail
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
rounds=${1:-15}
bin=${CK_JIT_BENCH_BIN:-}
if [ -z "$bin" ]; then
    cargo build -q --release -p ck-jit-benches --bin cold-start --bin load-probe
    bin=target/release
fi
dir=${CK_JIT_BENCH_DIR:-target/ck-jit-benches}/memo-after-new-hit
rm -rf "$dir"
# Builds the tree, compiles its 32 blobs and fills the memo.
"$bin/cold-start" --compiler cc --kernels 32 --rounds 1 --dir "$dir" >/dev/null
dir=$(cd "$dir" && pwd)
probe() {
    "$bin/load-probe" runtime --manifest "$dir/tree/out/ck_jit_manifest.json" \
        --cache-dir "$dir/cache" "$@"
}
all=$(cut -f1 "$dir/objects.tsv" | tr '\n' ' ')
some=$(cut -f1 "$dir/objects.tsv" | head -n 31 | tr '\n' ' ')
phase() {
    local label=$1 times="" line
    for r in $(seq "$rounds"); do
        # shellcheck disable=SC2086
        out=$(probe $all)
        t=$(echo "$out" | sed 's/.*"kernels_ms":\[\([^]]*\)\].*/\1/' | tr ',' '\n' |
            awk '{s += $1} END {printf "%.3f", s}')
        reads=$(echo "$out" | grep -o '"sources_read":[0-9]*' | cut -d: -f2 || echo -)
        line+="$t ms/$reads  "
        times+="$t "
    done
    echo "$label: each process's resolve time / sources read: $line" >&2
    echo "$times" | median
}
full=$(phase "memo of 32")
rm -rf "$dir/cache/hits"
# shellcheck disable=SC2086
probe $some >/dev/null
after=$(phase "memo of 31, then the processes")
printf 'median resolve time of a process, 32 kernels: memo of 32 %.3f ms, after one new hit %.3f ms, ratio %.3f\n' \
    "$full" "$after" "$(awk -v a="$after" -v f="$full" 'BEGIN {print a / f}')"
