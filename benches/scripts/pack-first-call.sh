#!/usr/bin/env bash
# Prebuilt kernels shipped as a pack: what a new process pays for K kernels
# when it (a) compiles them itself (an empty cache), (b) finds them in a
# cache filled by `ck-jit unpack` of a pack built in another cache, and
# (c) the bare baseline, `dlopen`+`dlsym` of the very same objects; plus
# what the unpack itself costs and the pack's size per blob.
#
# Uses the tree `cold-start` writes (K small blobs and their manifest,
# compiled once into a "build machine" cache), `load-probe` for the three
# kinds of process, and the `ck-jit` tool for `pack` and `unpack`. Each
# round unpacks into a fresh cache, then starts one process of each kind in
# turn; figures are medians over the rounds.
#
# usage: benches/scripts/pack-first-call.sh [--compiler cc|hipcc|nvcc] [--kernels K]
#                                           [--rounds R] [--dir DIR]
#   (defaults: cc, 32 kernels, 7 rounds, target/ck-jit-benches/pack-first-call)
# Needs the release binaries cold-start, load-probe and ck-jit
# (`cargo build --release -p ck-jit-benches -p ck-jit-cli`), or builds them.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
compiler=cc
kernels=32
rounds=7
dir=${CK_JIT_BENCH_DIR:-$repo/target/ck-jit-benches}/pack-first-call
while [ $# -gt 0 ]; do
    case "$1" in
    --compiler) compiler=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
bin=${CARGO_TARGET_DIR:-$repo/target}/release
if [ ! -x "$bin/cold-start" ] || [ ! -x "$bin/load-probe" ] || [ ! -x "$bin/ck-jit" ]; then
    cargo build --release -q -p ck-jit-benches --bin cold-start --bin load-probe -p ck-jit-cli --bin ck-jit
fi

rm -rf "$dir"
mkdir -p "$dir"
# The tree, its manifest and the build machine's cache (one unmeasured
# cold-start round fills it).
"$bin/cold-start" --compiler "$compiler" --kernels "$kernels" --rounds 1 --dir "$dir/build" >"$dir/cold-start.txt"
manifest=$dir/build/tree/out/ck_jit_manifest.json
built=$dir/build/cache
blobs=$(cut -f1 "$dir/build/objects.tsv" | tr '\n' ' ')
arch_args=()
[ "$compiler" = cc ] || arch_args=(--arch "${CK_JIT_ARCH:?set CK_JIT_ARCH to the architecture of the device}")

pack=$dir/kernels.tar.zst
"$bin/ck-jit" --manifest "$manifest" --cache-dir "$built" pack --all -o "$pack" "${arch_args[@]}" >/dev/null
size=$(stat -c %s "$pack")

now() { date +%s%N; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", a / b }'; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -a compile_ms unpack_ms unpacked_ms bare_ms
# The objects of an unpacked cache, for the bare baseline: the same files.
objects_of() {
    local cache=$1 out=$2
    : >"$out"
    for b in $blobs; do
        f=$(find "$cache/v1/$b" -name '*.so' | head -1)
        printf '%s\t%s\t%s\n' "$b" "$b" "$f" >>"$out"
    done
}
echo "pack-first-call: $compiler, $kernels kernels, $rounds rounds; ck-jit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "pack: $size bytes ($((size / kernels)) bytes a blob)"
for ((r = 0; r < rounds; r++)); do
    fresh=$dir/round-$r
    rm -rf "$fresh"
    mkdir -p "$fresh"
    # (a) a process that compiles every kernel (its cache empty).
    t0=$(now)
    "$bin/load-probe" runtime --manifest "$manifest" --cache-dir "$fresh/compiled" $blobs >"$fresh/a.json"
    t1=$(now)
    compile_ms[$r]=$(ms "$t0" "$t1")
    grep -q "\"compiles\":$kernels" "$fresh/a.json" || { echo "round $r: (a) did not compile $kernels kernels: $(cat "$fresh/a.json")" >&2; exit 1; }
    # The unpack into a fresh cache.
    t0=$(now)
    "$bin/ck-jit" --manifest "$manifest" --cache-dir "$fresh/unpacked" unpack "$pack" "${arch_args[@]}" >/dev/null
    t1=$(now)
    unpack_ms[$r]=$(ms "$t0" "$t1")
    # (b) a process served by the unpacked cache, compiling nothing.
    t0=$(now)
    CK_JIT_OFFLINE=1 "$bin/load-probe" runtime --manifest "$manifest" --cache-dir "$fresh/unpacked" $blobs >"$fresh/b.json"
    t1=$(now)
    unpacked_ms[$r]=$(ms "$t0" "$t1")
    grep -q '"compiles":0' "$fresh/b.json" || { echo "round $r: (b) compiled: $(cat "$fresh/b.json")" >&2; exit 1; }
    # (c) the bare baseline over the same objects.
    objects_of "$fresh/unpacked" "$fresh/objects.tsv"
    t0=$(now)
    "$bin/load-probe" dlopen "$fresh/objects.tsv" >"$fresh/c.json"
    t1=$(now)
    bare_ms[$r]=$(ms "$t0" "$t1")
    printf 'round %s: compiling %.1f ms, unpack %.1f ms, from the unpacked cache %.2f ms, bare dlopen+dlsym %.2f ms\n' \
        "$r" "${compile_ms[$r]}" "${unpack_ms[$r]}" "${unpacked_ms[$r]}" "${bare_ms[$r]}"
done
mc=$(printf '%s\n' "${compile_ms[@]}" | median)
mu=$(printf '%s\n' "${unpack_ms[@]}" | median)
mb=$(printf '%s\n' "${unpacked_ms[@]}" | median)
md=$(printf '%s\n' "${bare_ms[@]}" | median)
echo
echo "| what ($kernels kernels, $compiler, whole processes, medians of $rounds) | baseline (same run) | measured | ratio |"
echo "|---|---|---|---|"
printf '| (b) first calls from a cache filled by ck-jit unpack | (c) bare dlopen+dlsym %.2f ms | %.2f ms | %.3f |\n' "$md" "$mb" "$(ratio "$mb" "$md")"
printf '| (a) first calls compiling every kernel | (c) bare %.2f ms | %.1f ms | %.1f |\n' "$md" "$mc" "$(ratio "$mc" "$md")"
printf '| ck-jit unpack of the pack (a process) | (a) compiling %.1f ms | %.1f ms | %.3f |\n' "$mc" "$mu" "$(ratio "$mu" "$mc")"
printf '| pack size | - | %s bytes, %s a blob | - |\n' "$size" "$((size / kernels))"
