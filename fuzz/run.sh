#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for N seconds each, one after
# the other, on one core. Seeds come from corpus/<target>/ and are never
# written to; what a run discovers goes to target/corpus/<target>/ and is
# reused by the next run. A crash stops the script with its input under
# artifacts/<target>/.
#
#   fuzz/run.sh 600                 # every target, 10 minutes each
#   fuzz/run.sh 30 manifest argv    # two targets, 30 s each
#
# Needs cargo-fuzz (`cargo install cargo-fuzz`). On a stable toolchain the
# unstable flags it uses are enabled with RUSTC_BOOTSTRAP=1.
set -euo pipefail
cd "$(dirname "$0")"

secs="${1:?usage: fuzz/run.sh <seconds-per-target> [target...]}"
shift
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(manifest config depfile argv dynsym compact cond)
fi

export RUSTC_BOOTSTRAP=1
# Debug assertions and overflow checks on: an arithmetic overflow on
# hostile input is a finding too.
build=(--debug-assertions)

start=$(date +%s)
nice -n 10 cargo fuzz build "${build[@]}"
echo "== built in $(($(date +%s) - start)) s"
bin_dir="target/$(rustc -vV | sed -n 's/^host: //p')/release"

mkdir -p target/fuzz-logs
for t in "${targets[@]}"; do
    mkdir -p "target/corpus/$t" "artifacts/$t"
    log="target/fuzz-logs/$t.log"
    echo "== $t: ${secs} s"
    # The binary cargo-fuzz built, run directly (as `cargo fuzz run` does,
    # without rebuilding between targets). -jobs=1 -workers=1: one fuzzing
    # process beside a busy machine; libFuzzer then writes to fuzz-0.log.
    rm -f fuzz-0.log
    status=0
    t0=$(date +%s)
    ASAN_OPTIONS="${ASAN_OPTIONS:-detect_odr_violation=0}" nice -n 10 "$bin_dir/$t" \
        -artifact_prefix="artifacts/$t/" \
        -max_total_time="$secs" -jobs=1 -workers=1 -print_final_stats=1 \
        -rss_limit_mb=2048 -timeout=10 \
        "target/corpus/$t" "corpus/$t" >/dev/null 2>&1 || status=$?
    echo "wall: $(($(date +%s) - t0)) s"
    if [ -f fuzz-0.log ]; then
        mv fuzz-0.log "$log"
    fi
    grep -E "^Done [0-9]+ runs|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb" "$log" || true
    grep -E "^#[0-9]+.*(DONE|INITED)" "$log" | tail -2 || true
    if [ "$status" -ne 0 ] || grep -qE "panicked at|SUMMARY:|Test unit written|ERROR: libFuzzer" "$log"; then
        echo "!! $t failed (exit $status); log: fuzz/$log"
        grep -E "panicked at|SUMMARY:|Test unit written|ERROR:" "$log" | head -5 || true
        exit 1
    fi
done
