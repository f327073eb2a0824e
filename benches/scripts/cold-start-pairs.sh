#!/usr/bin/env bash
# Benchmark 12 for several builds at once: interleaved pairs of `cold-start`
# runs, so that the machine's drift reaches every build alike.
#
#   benches/scripts/cold-start-pairs.sh PAIRS ROUNDS DIR...
#
# Each DIR holds a release `cold-start` and `load-probe` (one build each,
# e.g. of two commits: `cargo build --release -p ck-jit-benches --bin
# cold-start --bin load-probe`, then copy both). For each of PAIRS pairs,
# each DIR's `cold-start --compiler cc --kernels 32 --rounds ROUNDS` runs
# in its own directory (`$CK_JIT_PAIRS_WORK/<dir's name>`, default under
# /tmp), printing everything it prints under a header with the time and
# the load average. Then, per DIR, the whole-process ratio of every pair,
# their median and range, and the medians of the runtime and bare process.
set -euo pipefail

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
echo "host: $(uname -srm); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-); cores $(nproc); cc: $(cc --version | head -1)"
for p in $(seq "$pairs"); do
    for d in "$@"; do
        label=$(basename "$d")
        echo "=== pair $p: $label ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg)) ==="
        "$d/cold-start" --compiler cc --kernels 32 --rounds "$rounds" --dir "$work/$label" 2>&1
    done
done | tee "$out"

echo
echo "summary: whole process (spawn to exit), the runtime's against the bare one"
awk '
    /^=== pair / { label = $4 }
    /^result: / && /"what":"whole process \(spawn to exit\)"/ {
        match($0, /"ratio":[0-9.]+/); r = substr($0, RSTART + 8, RLENGTH - 8)
        match($0, /"measured":[0-9.]+/); m = substr($0, RSTART + 11, RLENGTH - 11)
        match($0, /"baseline":[0-9.]+/); b = substr($0, RSTART + 11, RLENGTH - 11)
        if (!(label in n)) { order[++labels] = label }
        n[label]++; ratio[label, n[label]] = r; meas[label, n[label]] = m; bare[label, n[label]] = b
    }
    function median(arr, l, k,   i, j, t, v) {
        for (i = 1; i <= k; i++) v[i] = arr[l, i] + 0
        for (i = 2; i <= k; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
        return k % 2 ? v[(k + 1) / 2] : (v[k / 2] + v[k / 2 + 1]) / 2
    }
    END {
        for (o = 1; o <= labels; o++) {
            l = order[o]; k = n[l]; lo = 1e9; hi = 0; list = ""
            for (i = 1; i <= k; i++) {
                r = ratio[l, i] + 0; if (r < lo) lo = r; if (r > hi) hi = r
                list = list sprintf("%s%.3f", i > 1 ? " / " : "", r)
            }
            printf "%s: ratios %s\n  median %.3f (range %.3f-%.3f), runtime %.3f ms, bare %.3f ms (medians)\n", l, list, median(ratio, l, k), lo, hi, median(meas, l, k), median(bare, l, k)
        }
    }
' "$out"
