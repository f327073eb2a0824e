#!/usr/bin/env bash
# Benchmark 12 for several builds at once: interleaved pairs of `cold-start`
# runs, so that the machine's drift reaches every build alike.
#
#   benches/scripts/cold-start-pairs.sh PAIRS ROUNDS DIR...
#
# Each DIR holds a release `cold-start` and `load-probe` (one build each,
# e.g. of two commits: `cargo build --release -p ck-jit-benches --bin
# cold-start --bin load-probe`, then copy both). For each of PAIRS pairs,
# each DIR's `cold-start --compiler COMPILER --kernels 32 --rounds ROUNDS` runs
# in its own directory (`$CK_JIT_PAIRS_WORK/<dir's name>`, default under
# /tmp), printing everything it prints under a header with the time and
# the load average (`CK_JIT_PAIRS_COMPILER=hipcc` and the like for another
# compiler; `cc` by default). Then, per DIR, the whole-process ratio of every pair,
# their median and range, and the medians of the runtime and bare process.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

if [ $# -lt 3 ]; then
    echo "usage: $0 PAIRS ROUNDS DIR..." >&2
    exit 2
fi
pairs=$1
rounds=$2
shift 2
work=${CK_JIT_PAIRS_WORK:-/tmp/ck-jit-pairs}
mkdir -p "$work"
for d in "$@"; do
    [ -x "$d/cold-start" ] && [ -x "$d/load-probe" ] || {
        echo "$d: no cold-start and load-probe there" >&2
        exit 2
    }
done

out=$(mktemp)
trap 'rm -f "$out"' EXIT
compiler=${CK_JIT_PAIRS_COMPILER:-cc}
echo "host: $(uname -srm); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); cores $(nproc); $compiler: $("$compiler" --version 2>&1 | head -1)"
for p in $(seq "$pairs"); do
    for d in "$@"; do
        label=$(basename "$d")
        echo "=== pair $p: $label ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg)) ==="
        "$d/cold-start" --compiler "$compiler" --kernels 32 --rounds "$rounds" --dir "$work/$label" 2>&1
    done
done | tee "$out"

echo
echo "summary: whole process (spawn to exit), the runtime's against the bare one"
# One line per run: build, ratio, runtime ms, bare ms.
runs=$(awk '
    /^=== pair / { label = $4 }
    /^result: / && /"what":"whole process \(spawn to exit\)"/ {
        match($0, /"ratio":[0-9.]+/); r = substr($0, RSTART + 8, RLENGTH - 8)
        match($0, /"measured":[0-9.]+/); m = substr($0, RSTART + 11, RLENGTH - 11)
        match($0, /"baseline":[0-9.]+/); b = substr($0, RSTART + 11, RLENGTH - 11)
        print label, r, m, b
    }' "$out")
for d in "$@"; do
    label=$(basename "$d")
    mine=$(echo "$runs" | awk -v l="$label" '$1 == l')
    ratios=$(echo "$mine" | awk '{print $2}')
    printf '%s: ratios %s\n' "$label" "$(echo "$ratios" | awk '{printf "%s%.3f", (NR > 1 ? " / " : ""), $1}')"
    printf '  median %.3f (range %.3f-%.3f), runtime %.3f ms, bare %.3f ms (medians)\n' \
        "$(echo "$ratios" | median)" "$(echo "$ratios" | sort -g | head -1)" "$(echo "$ratios" | sort -g | tail -1)" \
        "$(echo "$mine" | awk '{print $3}' | median)" "$(echo "$mine" | awk '{print $4}' | median)"
done
