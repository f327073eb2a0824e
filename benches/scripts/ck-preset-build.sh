#!/usr/bin/env bash
# The CK preset's build script at CK scale, as cargo runs it (a build
# script in a debug build): a throwaway crate whose build.rs runs
# `CkFmha::new().source(CK).arch(ARCH).write()` over every direction CK's
# generator offers, built with `cargo build`.
#
# - baseline: the generator alone, `python3 -B generate.py --direction D
#   --receipt 1 --targets ARCH --output_dir DIR` for each direction the
#   preset runs, one after another, timed here; and the same runs side by
#   side, up to one per core at once (as the preset runs them);
# - first build: the build script with no generated files and no index
#   (its OUT_DIR removed), generator included;
# - rerun: the build script run again by cargo with nothing to regenerate
#   (an environment variable the build script watches changes; the
#   generator's stamps and the generated files are unchanged); measured to
#   where `write()` returns, and to where the manifest has been read back
#   (`files.manifest()`), which a reusing build defers.
#
# The build script's own time is what its build.rs prints (the whole
# `main`, read from cargo's `output` file of the build script); cargo's wall
# time around it is printed too. Rounds alternate baseline and first build;
# figures are medians, and the median of each round's first build less that
# round's generator alone (a host whose speed drifts between rounds moves
# both).
#
# Usage: benches/scripts/ck-preset-build.sh CK_TREE [--rounds R] [--reruns N] [--arch A]
#   (or CK_TREE from CK_JIT_BENCH_CK; defaults: 3 rounds, 5 reruns, gfx942)
# Work files: target/ck-jit-benches/ck-preset-build (CK_JIT_BENCH_DIR moves
# them). The first cargo build of the crate (its dependencies) is not timed.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

ck=${CK_JIT_BENCH_CK:-}
rounds=3
reruns=5
arch=gfx942
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --reruns) reruns=$2; shift 2 ;;
    --arch) arch=$2; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) ck=$1; shift ;;
    esac
done
if [ -z "$ck" ]; then
    echo "usage: $0 CK_TREE [--rounds R] [--reruns N] [--arch A]" >&2
    echo "  CK_TREE: a composable_kernel checkout (e.g. ../shared/data/ck/ck-2025-11), or set CK_JIT_BENCH_CK" >&2
    exit 2
fi
generate=$ck/example/ck_tile/01_fmha/generate.py
if [ ! -f "$generate" ]; then
    echo "error: '$ck' is no CK tree: $generate does not exist" >&2
    exit 2
fi
ck=$(cd "$ck" && pwd)
generate=$ck/example/ck_tile/01_fmha/generate.py

work=${CK_JIT_BENCH_DIR:-$repo/target/ck-jit-benches}/ck-preset-build
crate=$work/crate
mkdir -p "$crate/src"
cat >"$crate/Cargo.toml" <<TOML
[package]
name = "ck-preset-build"
version = "0.1.0"
edition = "2021"
publish = false
build = "build.rs"

[workspace]

[build-dependencies]
ck-jit-ck = { path = "$repo/ck-jit-ck" }
TOML
cat >"$crate/build.rs" <<'RS'
use std::time::Instant;

fn main() {
    let t0 = Instant::now();
    // Changing it makes cargo run this script again, nothing else changed.
    println!("cargo:rerun-if-env-changed=CK_PRESET_BENCH_ROUND");
    println!("cargo:rerun-if-env-changed=CK_PRESET_BENCH_CK");
    println!("cargo:rerun-if-env-changed=CK_PRESET_BENCH_ARCH");
    let ck = std::env::var("CK_PRESET_BENCH_CK").expect("CK_PRESET_BENCH_CK");
    let arch = std::env::var("CK_PRESET_BENCH_ARCH").expect("CK_PRESET_BENCH_ARCH");
    let files = ck_jit_ck::CkFmha::new().source(&ck).arch(&arch).write();
    let written = t0.elapsed().as_secs_f64();
    // What a build script that then looks at the manifest pays on top (a
    // build that reused the last one's output reads it back now).
    let m = files.manifest();
    println!(
        "ck-preset-build: {written:.4} s; manifest read {:.4} s; {} blobs, {} groups, {} together sets; reused {}; regenerated {}",
        t0.elapsed().as_secs_f64(),
        m.blobs.len(),
        m.groups.len(),
        m.together.len(),
        files.reused(),
        files.regenerated.join(",")
    );
}
RS
echo 'fn main() {}' >"$crate/src/main.rs"

export CARGO_TARGET_DIR=$work/target
export CK_PRESET_BENCH_CK=$ck CK_PRESET_BENCH_ARCH=$arch
directions=$(cd "$ck/example/ck_tile/01_fmha/codegen/ops" && ls fmha_*.py | sed 's/^fmha_//; s/\.py$//' | sort)

# The build script's own report of its last run.
script_time() {
    local out
    out=$(ls -t "$CARGO_TARGET_DIR"/debug/build/ck-preset-build-*/output | head -1)
    grep '^ck-preset-build:' "$out" | tail -1
}
now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

echo "ck-preset-build: CK $ck, $arch, directions: $(echo $directions | tr '\n' ' ')"
echo "ck-jit $(cd "$repo" && git rev-parse --short HEAD 2>/dev/null || echo '?'), $(rustc --version), $(python3 --version), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# Dependencies and the build script itself, once, untimed.
(cd "$crate" && CK_PRESET_BENCH_ROUND=warmup cargo build -q 2>&1) >/dev/null

declare -a base side first first_wall over rerun rerun_read rerun_wall
for ((r = 0; r < rounds; r++)); do
    gen=$work/generator
    rm -rf "$gen"
    t0=$(now)
    for d in $directions; do
        python3 -B "$generate" --direction "$d" --receipt 1 --targets "$arch" --output_dir "$gen/$d" >/dev/null
    done
    t1=$(now)
    base[$r]=$(echo "$t1 - $t0" | bc)
    echo "round $r: baseline generator alone, every direction: ${base[$r]} s"
    rm -rf "$gen"
    t0=$(now)
    printf '%s\n' $directions | xargs -P "$(nproc)" -I{} \
        python3 -B "$generate" --direction {} --receipt 1 --targets "$arch" --output_dir "$gen/{}" >/dev/null
    t1=$(now)
    side[$r]=$(echo "$t1 - $t0" | bc)
    echo "round $r: baseline generator alone, directions side by side ($(nproc) at once): ${side[$r]} s"

    rm -rf "$CARGO_TARGET_DIR"/debug/build/ck-preset-build-*/out
    t0=$(now)
    (cd "$crate" && CK_PRESET_BENCH_ROUND=first-$r cargo build -q 2>&1)
    t1=$(now)
    first_wall[$r]=$(echo "$t1 - $t0" | bc)
    line=$(script_time)
    first[$r]=$(echo "$line" | sed 's/^ck-preset-build: \([0-9.]*\) s.*/\1/')
    echo "round $r: first build: build script ${first[$r]} s (cargo build ${first_wall[$r]} s): $line"
    # Against this round's own baseline: what a slower or faster machine
    # from one round to the next does not move.
    over[$r]=$(echo "${first[$r]} - ${base[$r]}" | bc -l)
    printf 'round %s: first build - generator alone (same round): %+.2f s\n' "$r" "${over[$r]}"
done
for ((r = 0; r < reruns; r++)); do
    t0=$(now)
    (cd "$crate" && CK_PRESET_BENCH_ROUND=rerun-$r cargo build -q 2>&1)
    t1=$(now)
    rerun_wall[$r]=$(echo "$t1 - $t0" | bc)
    line=$(script_time)
    rerun[$r]=$(echo "$line" | sed 's/^ck-preset-build: \([0-9.]*\) s.*/\1/')
    rerun_read[$r]=$(echo "$line" | sed 's/.*manifest read \([0-9.]*\) s.*/\1/')
    echo "rerun $r: build script ${rerun[$r]} s (cargo build ${rerun_wall[$r]} s): $line"
done

mb=$(printf '%s\n' "${base[@]}" | median)
ms=$(printf '%s\n' "${side[@]}" | median)
mrr=$(printf '%s\n' "${rerun_read[@]}" | median)
mf=$(printf '%s\n' "${first[@]}" | median)
mfw=$(printf '%s\n' "${first_wall[@]}" | median)
mr=$(printf '%s\n' "${rerun[@]}" | median)
mrw=$(printf '%s\n' "${rerun_wall[@]}" | median)
mo=$(printf '%s\n' "${over[@]}" | median)
met() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo yes; else echo no; fi; }
echo
echo "| what | baseline (same run) | measured (median) | ratio | target | met |"
echo "|---|---|---|---|---|---|"
printf '| first build, build script (%s rounds) | generator alone %.2f s | %.2f s (cargo build %.2f s) | %.3f (+%.2f s) | ≤ generator + 2 s | %s |\n' \
    "$rounds" "$mb" "$mf" "$mfw" "$(echo "$mf / $mb" | bc -l)" "$(echo "$mf - $mb" | bc -l)" "$(met "$mf <= $mb + 2")"
printf '| first build, build script, each round against its own baseline (%s rounds) | generator alone, same round | median of (first build - generator) | +%.2f s | ≤ +2 s | %s |\n' \
    "$rounds" "$mo" "$(met "$mo <= 2")"
printf '| first build, build script (%s rounds) | generator side by side %.2f s | %.2f s | %.3f (+%.2f s) | (none: the preset runs them so) | - |\n' \
    "$rounds" "$ms" "$mf" "$(echo "$mf / $ms" | bc -l)" "$(echo "$mf - $ms" | bc -l)"
printf '| rerun, nothing to regenerate, build script to write() (%s runs) | generator alone %.2f s | %.3f s (cargo build %.3f s) | %.4f | ≤ 0.3 s | %s |\n' \
    "$reruns" "$mb" "$mr" "$mrw" "$(echo "$mr / $mb" | bc -l)" "$(met "$mr <= 0.3")"
printf '| rerun, then the manifest read back (%s runs) | generator alone %.2f s | %.3f s | %.4f | ≤ 0.3 s | %s |\n' \
    "$reruns" "$mb" "$mrr" "$(echo "$mrr / $mb" | bc -l)" "$(met "$mrr <= 0.3")"
