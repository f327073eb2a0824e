#!/usr/bin/env bash
# Assembles, from registry packages only, a HIP compiler that turns real
# ComposableKernel (CK) ck_tile FMHA blobs into gfx942/gfx90a shared objects
# on a machine with neither ROCm nor an AMD GPU. Used by .ci/run for
# tests/tests/real_ck.rs.
#
# usage: .ci/hip-toolchain.sh [DEST]      (default: target/hip-toolchain)
#
# What it installs and why:
# - apt clang-tools-15: only for `clang-offload-bundler` (which the HIP
#   driver runs to bundle host and device code) and, through its
#   dependencies, clang 15's `__clang_hip_*` / `cuda_wrappers` headers;
# - pip ziglang==0.15.2 (in a venv under DEST): `zig clang` is an upstream
#   clang 20.1 with lld and the AMDGPU target, the compiler itself;
# - pip download triton==3.2.0 (never installed): its ROCm backend carries
#   the HIP 6.1 headers and the `ocml.bc`/`ockl.bc` device libraries; the
#   tiny `oclc_*` control libraries clang links with them are generated
#   here;
#
# Writes DEST/env.sh, which sets HIPCC (a clang wrapper), HIPFLAGS (what
# that clang needs besides a CK command line: -x hip, the fake ROCm root,
# -no-hip-rt, -fPIC ...), CK_JIT_REAL_HIPCC (DEST/bin/hipcc: both in one
# program, a drop-in for ROCm's hipcc). `-no-hip-rt` leaves the
# HIP runtime symbols undefined in every object: they load only where a HIP
# runtime (or a stand-in) is already in the process.
#
# About 390 MB downloaded, 700 MB on disk; under a minute on 2 cores.
# Running it again with DEST complete does nothing.
set -euo pipefail

ZIG_VERSION=0.15.2
TRITON_VERSION=3.2.0
STAMP="zig=$ZIG_VERSION triton=$TRITON_VERSION v3"

cd "$(dirname "$0")/.."
D=${1:-target/hip-toolchain}
mkdir -p "$D"
D=$(cd "$D" && pwd)
if [ -f "$D/env.sh" ] && [ "$(cat "$D/stamp" 2>/dev/null)" = "$STAMP" ]; then
    echo "hip-toolchain: $D is ready"
    exit 0
fi
rm -f "$D/env.sh" "$D/stamp"

# clang-offload-bundler and the HIP wrapper headers; and what this script
# itself runs (a Python that can make a venv, unzip).
LLVM15=/usr/lib/llvm-15
need=()
[ -x "$LLVM15/bin/clang-offload-bundler" ] || need+=(clang-tools-15)
command -v unzip >/dev/null || need+=(unzip)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3 python3-venv)
if [ ${#need[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" = 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${need[@]}"
fi
wrappers=$(ls -d "$LLVM15"/lib/clang/*/include | head -1)

# The compiler: zig's clang.
python3 -m venv "$D/venv"
"$D/venv/bin/pip" install -q --disable-pip-version-check "ziglang==$ZIG_VERSION"
ZL=$("$D/venv/bin/python" -c 'import os, ziglang; print(os.path.dirname(ziglang.__file__))')
ZIG="$ZL/zig"

# HIP headers and device libraries from triton's wheel.
mkdir -p "$D/dl"
"$D/venv/bin/pip" download -q --disable-pip-version-check --no-deps -d "$D/dl" \
    "triton==$TRITON_VERSION"
rm -rf "$D/x"
mkdir -p "$D/x"
unzip -q -o "$D"/dl/triton-"$TRITON_VERSION"-*.whl \
    'triton/backends/amd/include/hip/*' \
    'triton/backends/amd/lib/ocml.bc' 'triton/backends/amd/lib/ockl.bc' -d "$D/x"
TRITON_AMD=$D/x/triton/backends/amd

# Clang's resource directory: zig's builtin headers plus clang 15's HIP and
# CUDA wrapper headers (zig ships none).
rm -rf "$D/rd"
mkdir -p "$D/rd"
cp -r "$ZL/lib/include" "$D/rd/include"
for f in "$wrappers"/__clang_hip_* "$wrappers"/__clang_cuda_*; do
    [ -e "$D/rd/include/$(basename "$f")" ] || cp "$f" "$D/rd/include/"
done
[ -e "$D/rd/include/cuda_wrappers" ] || cp -r "$wrappers/cuda_wrappers" "$D/rd/include/"

# The programs the HIP driver starts, found through -B: `lld -flavor gnu`
# (zig's ld.lld) and clang-offload-bundler; and the compiler wrapper.
mkdir -p "$D/bin"
printf '#!/bin/sh\nif [ "$1" = "-flavor" ]; then shift 2; fi\nexec "%s" ld.lld "$@"\n' "$ZIG" >"$D/bin/lld"
ln -sf "$LLVM15/bin/clang-offload-bundler" "$D/bin/clang-offload-bundler"
printf '#!/bin/sh\nexec "%s" clang --driver-mode=g++ -target x86_64-linux-gnu -resource-dir "%s/rd" -B"%s/bin" "$@"\n' \
    "$ZIG" "$D" "$D" >"$D/bin/hipclang"
chmod +x "$D/bin/lld" "$D/bin/hipclang"

# A ROCm root as clang looks for one: HIP headers, version file, device
# libraries.
R=$D/rocm
rm -rf "$R"
mkdir -p "$R/include" "$R/share/hip" "$R/bin" "$R/amdgcn/bitcode"
cp -r "$TRITON_AMD/include/hip" "$R/include/"
printf 'HIP_VERSION_MAJOR=6\nHIP_VERSION_MINOR=1\nHIP_VERSION_PATCH=40091\n' >"$R/share/hip/version"
cp "$R/share/hip/version" "$R/bin/.hipVersion"
BC=$R/amdgcn/bitcode
cp "$TRITON_AMD/lib/ocml.bc" "$TRITON_AMD/lib/ockl.bc" "$BC/"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# One control library: a single constant, as ROCm-Device-Libs defines it.
control() { # file symbol type value align
    printf 'target triple = "amdgcn-amd-amdhsa"\n@%s = linkonce_odr protected local_unnamed_addr addrspace(4) constant %s %s, align %s\n' \
        "$2" "$3" "$4" "$5" >"$tmp/c.ll"
    "$ZIG" clang -cc1 -triple amdgcn-amd-amdhsa -emit-llvm-bc -x ir "$tmp/c.ll" -o "$BC/$1.bc"
}
for v in 900:9000 906:9006 908:9008 90a:9010 940:9400 941:9401 942:9402 950:9500; do
    control "oclc_isa_version_${v%%:*}" __oclc_ISA_version i32 "${v##*:}" 4
done
for v in 400 500 600; do
    control "oclc_abi_version_$v" __oclc_ABI_version i32 "$v" 4
done
for p in wavefrontsize64:__oclc_wavefrontsize64 unsafe_math:__oclc_unsafe_math_opt \
    finite_only:__oclc_finite_only_opt correctly_rounded_sqrt:__oclc_correctly_rounded_sqrt32 \
    daz_opt:__oclc_daz_opt; do
    control "oclc_${p%%:*}_on" "${p##*:}" i8 1 1
    control "oclc_${p%%:*}_off" "${p##*:}" i8 0 1
done
# Clang's ROCm detection wants these two to exist; nothing links them.
printf 'target triple = "amdgcn-amd-amdhsa"\n' >"$tmp/e.ll"
"$ZIG" clang -cc1 -triple amdgcn-amd-amdhsa -emit-llvm-bc -x ir "$tmp/e.ll" -o "$BC/opencl.bc"
cp "$BC/opencl.bc" "$BC/hip.bc"

HIPFLAGS="-x hip --rocm-path=$R -isystem $R/include -mcode-object-version=5 -no-hip-rt -std=c++17 -O3 -fPIC"
# A drop-in for ROCm's hipcc: the clang wrapper with HIPFLAGS first, so a
# command line recorded for hipcc (CK's flags, --offload-arch, -I, -shared
# {src} -o {out}) runs unchanged. Callers must not pass
# `-mllvm -amdgpu-function-calls=false` (with this clang the compile does
# not finish) nor `-mllvm -amdgpu-coerce-illegal-types=1` (AMD's compiler
# only).
printf '#!/bin/sh\nexec "%s/bin/hipclang" %s "$@"\n' "$D" "$HIPFLAGS" >"$D/bin/hipcc"
chmod +x "$D/bin/hipcc"

cat >"$D/env.sh" <<ENV
# Written by .ci/hip-toolchain.sh; source it.
HIPCC="$D/bin/hipclang"
HIPFLAGS="$HIPFLAGS"
CK_JIT_REAL_HIPCC="$D/bin/hipcc"
export HIPCC HIPFLAGS CK_JIT_REAL_HIPCC
ENV
echo "$STAMP" >"$D/stamp"
echo "hip-toolchain: ready; . $D/env.sh"
