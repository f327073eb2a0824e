#!/usr/bin/env bash
# A warm process's first call through aiter's lazy libmha_fwd.so: a new
# process linked against the library makes one `aiter::mha_fwd` call
# (fp16, d128: CK's dispatcher, the stub, `ck_jit_resolve_with`, the blob's
# object loaded from the cache, its entry run up to the kernel launch the
# HIP stand-in refuses, the exception caught), nothing compiled: the
# object is already in the cache.
#
# - baseline: a process linked the same way (the HIP stand-in, the two HIP
#   device functions) that `dlopen`s libmha_fwd.so and the blob's cached
#   object (RTLD_NOW) and `dlsym`s the blob's entry symbol, no call;
# - context: the same process that `dlopen`s libmha_fwd.so only.
#
# Each process is timed from outside, spawn to exit; the modes are
# interleaved, R rounds, first mode alternating; figures are medians.
#
# The library is that of tests/tests/aiter.rs (aiter's own build of
# libmha_fwd intercepted, about 4 minutes, plus one real compile of the
# blob, about 20 s), linked with a release build of libck_jit_capi.a
# (CK_JIT_AITER_CAPI) and kept with its warm cache (CK_JIT_AITER_KEEP).
# Needs what the test needs: .ci/hip-toolchain.sh and .ci/aiter.sh
# (CK_JIT_REAL_HIP_ENV names another toolchain's env.sh).
#
# Usage: benches/scripts/aiter-first-call.sh [--rounds R] [--rebuild]
#   (defaults: 15 rounds; the kept build is reused unless --rebuild or a
#   newer libck_jit_capi.a)
# Work files: target/ck-jit-benches/aiter-first-call (CK_JIT_BENCH_DIR
# moves them).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)

rounds=15
rebuild=0
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    *) echo "usage: $0 [--rounds R] [--rebuild]" >&2; exit 2 ;;
    esac
done

target=${CARGO_TARGET_DIR:-$repo/target}
work=${CK_JIT_BENCH_DIR:-$repo/target/ck-jit-benches}/aiter-first-call
mkdir -p "$work"

# The C ABI the stubs call, as a program ships it.
cargo build -q --release -p ck-jit-capi
capi=$target/release/libck_jit_capi.a
env_file=$work/fwd/aiter-fwd.env
if [ "$rebuild" = 1 ] || [ ! -f "$env_file" ] || [ "$capi" -nt "$env_file" ]; then
    echo "building libmha_fwd.so with the release C ABI (tests/tests/aiter.rs, about 5 minutes)"
    CK_JIT_AITER_KEEP=$work CK_JIT_AITER_CAPI=$capi CK_JIT_REQUIRE_AITER=1 \
        cargo test -q -p ck-jit-tests --test aiter -- --nocapture \
        aiters_mha_fwd_build_links_a_lazy_library_that_compiles_one_blob_on_first_call \
        >"$work/test.log" 2>&1 || { tail -40 "$work/test.log"; exit 1; }
    grep '^aiter libmha_fwd: real compile' "$work/test.log" || true
fi
# EXE, LIB, STAND_IN, DEVICE_OBJ, CACHE, BLOB, OBJECT, HIPCC, DROP_FLAGS
# shellcheck disable=SC1090
. "$env_file"
entry=$(nm -D --defined-only "$OBJECT" | awk '$3 ~ /^_Z9fmha_fwd_I/ {print $3}' | head -1)
[ -n "$entry" ] || { echo "error: no fmha_fwd_ entry in $OBJECT" >&2; exit 1; }

cat >"$work/dlopen_blob.c" <<'C'
/* The baseline: what loading a blob costs a process that knows where it
 * is. argv: library, then optionally the blob's object and its entry. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (!dlopen(argv[1], RTLD_NOW)) {
        fprintf(stderr, "%s\n", dlerror());
        return 1;
    }
    if (argc > 3) {
        void *blob = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
        if (!blob || !dlsym(blob, argv[3])) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
    }
    return 0;
}
C
cc -O1 -c "$work/dlopen_blob.c" -o "$work/dlopen_blob.o"
# Linked as the calling program is (tests/tests/aiter.rs): the HIP device
# functions, the stand-in HIP runtime; the library is opened, not linked.
c++ "$work/dlopen_blob.o" "$DEVICE_OBJ" -o "$work/dlopen_blob" \
    -Wl,--no-as-needed -L"$STAND_IN" -lamdhip64 -ldl -Wl,-rpath,"$STAND_IN"

echo "aiter-first-call: $BLOB ($(stat -c %s "$OBJECT") bytes, entry $entry)"
echo "libmha_fwd.so: $(stat -c %s "$LIB") bytes, C ABI $(basename "$(dirname "$capi")") build"
echo "ck-jit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
# One first call told: what the runtime did (a cache hit, no compile).
CK_JIT_VERBOSE=1 CK_JIT_CACHE_DIR=$CACHE CK_JIT_HIPCC=$HIPCC CK_JIT_DROP_FLAGS=$DROP_FLAGS \
    "$EXE" 1 2>&1 | sed 's/^/  /' || true

python3 - "$rounds" "$EXE" "$LIB" "$OBJECT" "$entry" "$work/dlopen_blob" "$CACHE" "$HIPCC" "$DROP_FLAGS" <<'PY'
import json, os, statistics, subprocess, sys, time

rounds = int(sys.argv[1])
exe, lib, obj, entry, baseline, cache, hipcc, drop = sys.argv[2:]
env = dict(os.environ, CK_JIT_CACHE_DIR=cache, CK_JIT_HIPCC=hipcc, CK_JIT_DROP_FLAGS=drop)
for k in ("CK_JIT_VERBOSE", "CK_JIT_LOG"):
    env.pop(k, None)
modes = {
    "first call": ([exe, "1"], 3),
    "dlopen+dlsym": ([baseline, lib, obj, entry], 0),
    "library only": ([baseline, lib], 0),
}

def compiles():
    try:
        return json.load(open(os.path.join(cache, "counters.json")))["compiles"]
    except (OSError, KeyError, ValueError):
        return 0

def once(mode):
    argv, code = modes[mode]
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    dt = (time.perf_counter() - t0) * 1e3
    out = p.stdout.decode() + p.stderr.decode()
    if p.returncode != code:
        sys.exit(f"{mode}: exit {p.returncode}, expected {code}: {out}")
    if mode == "first call" and "threw: HIP Function Failed" not in out:
        sys.exit(f"{mode}: the call did not reach the kernel launch: {out}")
    return dt

before = compiles()
for mode in modes:  # untimed: the page cache
    for _ in range(2):
        once(mode)
times = {m: [] for m in modes}
names = list(modes)
for r in range(rounds):
    order = names if r % 2 == 0 else names[::-1]
    for m in order:
        times[m].append(once(m))
    print(f"round {r}: " + ", ".join(f"{m} {times[m][-1]:.2f} ms" for m in names))
if compiles() != before:
    sys.exit(f"a timed process compiled: counters.json compiles {before} -> {compiles()}")
med = {m: statistics.median(t) for m, t in times.items()}
print(f"nothing compiled (counters.json compiles stayed {before}); load {open('/proc/loadavg').read().split()[:3]}")
for m in names:
    print(f"{m}: median {med[m]:.2f} ms, min {min(times[m]):.2f}, max {max(times[m]):.2f}")
ratio = med["first call"] / med["dlopen+dlsym"]
print()
print("| what | baseline (same run) | measured (median) | ratio | target | met |")
print("|---|---|---|---|---|---|")
met = "yes" if ratio <= 1.2 else f"no: +{med['first call'] - med['dlopen+dlsym']:.2f} ms"
print(f"| warm process's first `aiter::mha_fwd` call through the lazy libmha_fwd.so, whole process ({rounds} rounds) "
      f"| `dlopen` libmha_fwd.so + the blob's object, `dlsym` its entry {med['dlopen+dlsym']:.2f} ms "
      f"| {med['first call']:.2f} ms | {ratio:.3f} (+{med['first call'] - med['dlopen+dlsym']:.2f} ms) | ≤ 1.2× | {met} |")
print(f"| the same baseline, against `dlopen` of libmha_fwd.so alone (context: what the blob's object adds) "
      f"| {med['library only']:.2f} ms | {med['dlopen+dlsym']:.2f} ms | {med['dlopen+dlsym'] / med['library only']:.3f} "
      f"(+{med['dlopen+dlsym'] - med['library only']:.2f} ms) | – (context) | – |")
PY
