#!/usr/bin/env bash
# What making CK's C++ dispatcher lazy costs at build time: CK's own
# fmha_<direction>_api.cpp compiled alone (`-c`, as CK builds it), against
# the same dispatcher plus the stub sources ck-jit-build writes for every
# blob of the run, compiled two at a time. CPU seconds and wall time, and
# the ratio of the lazy build to the original.
#
# Needs the HIP toolchain of .ci/hip-toolchain.sh (CK_JIT_REAL_HIP_ENV, or
# target/hip-toolchain/env.sh) and a CK tree.
#
# usage: benches/scripts/lazy-dispatcher-cost.sh CK_TREE [DIRECTION] [ARCH]
#   (default fwd, gfx942; e.g. ../shared/data/ck/ck-2025-11)
set -euo pipefail
cd "$(dirname "$0")/../.."
tree=$(cd "$1" && pwd)
direction=${2:-fwd}
arch=${3:-gfx942}
env_sh=${CK_JIT_REAL_HIP_ENV:-target/hip-toolchain/env.sh}
# shellcheck disable=SC1090
. "$env_sh"
cargo build --release -q -p ck-jit-benches --bin ck-stubs
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/ck-stubs "$tree" "$work" "$direction" "$arch" >"$work/plan.txt"
head -1 "$work/plan.txt"
read -r -a args < <(grep '^args ' "$work/plan.txt" | cut -d' ' -f2-)
# One compile as CK compiles its sources, `-c` instead of `-shared`.
{
    declare -p args
    cat <<'SH'
argv=()
for a in "${args[@]}"; do
    case "$a" in
        -shared) argv+=(-c) ;;
        "{src}") argv+=("$1") ;;
        "{out}") argv+=("$2") ;;
        *) argv+=("$a") ;;
    esac
done
exec "$CK_JIT_REAL_HIPCC" -I"$CAPI_INCLUDE" "${argv[@]}"
SH
} >"$work/compile.sh"
export CK_JIT_REAL_HIPCC CAPI_INCLUDE="$PWD/ck-jit-capi/include"
api=$(grep "^dispatcher .*fmha_${direction}_api.cpp" "$work/plan.txt" | cut -d' ' -f2-)
/usr/bin/time -f '%e %U %S' -o "$work/t-api" bash "$work/compile.sh" "$api" "$work/api.o"
read -r api_wall api_user api_sys <"$work/t-api"
grep '^stub ' "$work/plan.txt" | cut -d' ' -f2- >"$work/stubs.txt"
/usr/bin/time -f '%e %U %S' -o "$work/t-stubs" \
    xargs -a "$work/stubs.txt" -P 2 -I{} bash "$work/compile.sh" {} {}.o
read -r stub_wall stub_user stub_sys <"$work/t-stubs"
cc -shared -o "$work/lazy.so" "$work/api.o" "$work"/stubs/*.o
undefined=$(nm -D --undefined-only "$work/lazy.so" | grep -c "fmha_${direction}_" || true)
api_cpu=$(echo "$api_user + $api_sys" | bc)
stub_cpu=$(echo "$stub_user + $stub_sys" | bc)
printf 'original dispatcher: %.1f s wall, %.1f s CPU\n' "$api_wall" "$api_cpu"
printf 'stubs (%d files, 2 at a time): %.1f s wall, %.1f s CPU\n' "$(wc -l <"$work/stubs.txt")" "$stub_wall" "$stub_cpu"
printf 'lazy build / original: %.2f (CPU), %.2f (wall, dispatcher then stubs)\n' \
    "$(echo "($api_cpu + $stub_cpu) / $api_cpu" | bc -l)" \
    "$(echo "($api_wall + $stub_wall) / $api_wall" | bc -l)"
echo "blob specialisations left undefined by the lazy library: $undefined"
