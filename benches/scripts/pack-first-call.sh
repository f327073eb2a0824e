#!/usr/bin/env bash
# Prebuilt kernels shipped as a pack: what a new process pays for K kernels
# when it (a) compiles them itself (an empty cache), (b) finds them in a
# cache filled by `ck-jit unpack` of a pack built in another cache, and
# (c) the bare baseline, `dlopen`+`dlsym` of the very same objects; plus
# what the unpack itself costs and the pack's size per blob. Then "host
# B": the same compiler at another prefix, copied without its file times
# (`--host-b-compiler PATH`, or by default a `cp` of the compiler the
# manifest names into DIR/host-b/bin), named by CK_JIT_<PROGRAM>; the pack
# unpacked there and (d) a first process there with the default settings
# (not offline: its lookups must hit by the compiler's identity, which it
# works out once, hashing the compiler and running --version) and (e) a
# second process there (the identity remembered in the cache).
#
# Uses the tree `cold-start` writes (K small blobs and their manifest,
# compiled once into a "build machine" cache), `load-probe` for the three
# kinds of process, and the `ck-jit` tool for `pack` and `unpack`. Each
# round unpacks into a fresh cache, then starts one process of each kind in
# turn; figures are medians over the rounds.
#
# usage: benches/scripts/pack-first-call.sh [--compiler cc|hipcc|nvcc] [--kernels K]
#                                           [--rounds R] [--dir DIR]
#                                           [--host-b-compiler PATH]
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
    --host-b-compiler) host_b_compiler=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
bin=${CARGO_TARGET_DIR:-$repo/target}/release
if [ ! -x "$bin/cold-start" ] || [ ! -x "$bin/load-probe" ] || [ ! -x "$bin/ck-jit" ]; then
    cargo build --release -q -p ck-jit-benches --bin cold-start --bin load-probe -p ck-jit-cli --bin ck-jit
fi

rm -rf "$dir"
mkdir -p "$dir"
host_b_compiler=${host_b_compiler:-}
if [ -z "$host_b_compiler" ]; then
    mkdir -p "$dir/host-b/bin"
    host_b_compiler=$dir/host-b/bin/$compiler
    cp "$(readlink -f "$(command -v "$compiler")")" "$host_b_compiler"
fi
host_b_var=CK_JIT_$(echo "$compiler" | tr '[:lower:]-' '[:upper:]_')
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
declare -a compile_ms unpack_ms unpacked_ms bare_ms hostb_unpack_ms hostb_first_ms hostb_second_ms
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
    # Host B: the compiler at another prefix, copied without its times.
    t0=$(now)
    env "$host_b_var=$host_b_compiler" "$bin/ck-jit" --manifest "$manifest" --cache-dir "$fresh/host-b" unpack "$pack" "${arch_args[@]}" >/dev/null
    t1=$(now)
    hostb_unpack_ms[$r]=$(ms "$t0" "$t1")
    t0=$(now)
    env "$host_b_var=$host_b_compiler" "$bin/load-probe" runtime --manifest "$manifest" --cache-dir "$fresh/host-b" $blobs >"$fresh/d.json"
    t1=$(now)
    hostb_first_ms[$r]=$(ms "$t0" "$t1")
    grep -q '"compiles":0' "$fresh/d.json" || { echo "round $r: (d) host B compiled: $(cat "$fresh/d.json")" >&2; exit 1; }
    t0=$(now)
    env "$host_b_var=$host_b_compiler" "$bin/load-probe" runtime --manifest "$manifest" --cache-dir "$fresh/host-b" $blobs >"$fresh/e.json"
    t1=$(now)
    hostb_second_ms[$r]=$(ms "$t0" "$t1")
    grep -q '"compiles":0' "$fresh/e.json" || { echo "round $r: (e) host B compiled: $(cat "$fresh/e.json")" >&2; exit 1; }
    printf 'round %s: compiling %.1f ms, unpack %.1f ms, from the unpacked cache %.2f ms, bare dlopen+dlsym %.2f ms; host B: unpack %.1f ms, first process %.2f ms, second %.2f ms\n' \
        "$r" "${compile_ms[$r]}" "${unpack_ms[$r]}" "${unpacked_ms[$r]}" "${bare_ms[$r]}" \
        "${hostb_unpack_ms[$r]}" "${hostb_first_ms[$r]}" "${hostb_second_ms[$r]}"
done
spread() { sort -g | awk '{a[NR]=$1} END {printf "%.2f-%.2f", a[1], a[NR]}'; }
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
hu=$(printf '%s\n' "${hostb_unpack_ms[@]}" | median)
h1=$(printf '%s\n' "${hostb_first_ms[@]}" | median)
h2=$(printf '%s\n' "${hostb_second_ms[@]}" | median)
printf '| (d) host B (%s at another prefix, no file times kept): first process after ck-jit unpack, default settings (range %s ms) | (c) bare %.2f ms (range %s) | %.2f ms | %.3f |\n' \
    "$host_b_compiler" "$(printf '%s\n' "${hostb_first_ms[@]}" | spread)" "$md" "$(printf '%s\n' "${bare_ms[@]}" | spread)" "$h1" "$(ratio "$h1" "$md")"
printf '| (e) host B: a second process (range %s ms) | (c) bare %.2f ms | %.2f ms | %.3f |\n' \
    "$(printf '%s\n' "${hostb_second_ms[@]}" | spread)" "$md" "$h2" "$(ratio "$h2" "$md")"
printf '| host B: ck-jit unpack of the pack (a process) | (a) compiling %.1f ms | %.1f ms | %.3f |\n' "$mc" "$hu" "$(ratio "$hu" "$mc")"
