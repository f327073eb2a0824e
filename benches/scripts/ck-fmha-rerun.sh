#!/usr/bin/env bash
# examples/ck-fmha's build script run again by cargo with nothing changed:
# the CK tree beside the workspace (`../shared/data/ck/ck-2025-11`, what the
# example reads when `CK_FMHA_CK` is unset), its four directions for
# gfx942, a debug build as `cargo build` makes it.
#
# Each rerun flips `CK_FMHA_CK` between unset and the same tree's canonical
# path: cargo runs the build script again (it watches that variable), and
# the script sees exactly the inputs of the run before. Printed per rerun:
#
# - the build script's own time, `main` to its end (its last output line);
# - the same program started as cargo started it (the command `cargo build
#   -vv` shows), timed here as a whole process, once after each rerun;
# - cargo's wall time, which includes compiling the crate again (cargo
#   compiles a crate again whenever its build script ran).
#
# Baseline, same run: `cargo build` with nothing to do, and the first build
# (OUT_DIR removed: the generator, the manifest, rules, stubs, bindings).
#
# Usage: benches/scripts/ck-fmha-rerun.sh [--reruns N]   (default 9)
set -euo pipefail
cd "$(dirname "$0")/../.."
reruns=9
[ "${1:-}" = --reruns ] && reruns=$2
ck=$(readlink -f ../shared/data/ck/ck-2025-11)
[ -f "$ck/example/ck_tile/01_fmha/generate.py" ] || { echo "no CK tree at $ck" >&2; exit 2; }
now() { date +%s.%N; }
secs() { printf '%.3f' "$(echo "$(now) - $1" | bc)"; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { sort -g | awk 'NR==1{lo=$1} {hi=$1} END {printf "%.3f–%.3f", lo, hi}'; }
output() { ls -t target/debug/build/ck-fmha-*/output | head -1; }
script_line() { grep '^ck-fmha:' "$(output)" | tail -1; }
whole() { script_line | sed 's/.*whole build script \([0-9.]*\) s.*/\1/'; }

echo "ck-fmha-rerun: CK $ck; ck-jit $(git rev-parse --short HEAD 2>/dev/null || echo '?'), $(rustc --version), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
cargo build -q -p ck-fmha
t0=$(now); cargo build -q -p ck-fmha; noop=$(secs "$t0")
rm -rf "$(dirname "$(output)")/out"
t0=$(now); CK_FMHA_CK=$ck cargo build -q -p ck-fmha; first_wall=$(secs "$t0")
first=$(whole)
echo "first build: build script $first s, cargo build $first_wall s: $(script_line)"
# The command cargo runs (this call itself runs the script again, unset).
cmd=$(cargo build -vv -p ck-fmha 2>&1 | grep 'Running `.*ck-fmha-[0-9a-f]*/build-script-build`' | head -1 | sed 's/^ *Running `//; s/`$//')
[ -n "$cmd" ] || { echo "cargo did not run the build script again" >&2; exit 1; }

declare -a script proc wall
for ((r = 0; r < reruns; r++)); do
    t0=$(now)
    if ((r % 2 == 0)); then CK_FMHA_CK=$ck cargo build -q -p ck-fmha; else cargo build -q -p ck-fmha; fi
    wall[$r]=$(secs "$t0")
    script[$r]=$(whole)
    line=$(script_line)
    t0=$(now); (cd examples/ck-fmha && bash -c "$cmd" >/dev/null); proc[$r]=$(secs "$t0")
    echo "rerun $r: build script ${script[$r]} s, as a process ${proc[$r]} s, cargo build ${wall[$r]} s: $line"
done
ms=$(printf '%s\n' "${script[@]}" | median); rs=$(printf '%s\n' "${script[@]}" | range)
mp=$(printf '%s\n' "${proc[@]}" | median); rp=$(printf '%s\n' "${proc[@]}" | range)
mw=$(printf '%s\n' "${wall[@]}" | median); rw=$(printf '%s\n' "${wall[@]}" | range)
met() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo yes; else echo no; fi; }
echo
echo "| what ($reruns reruns) | baseline (same run) | median | spread | target | met |"
echo "|---|---|---|---|---|---|"
printf '| build script, main to end | first build %.2f s | %.3f s | %s s | ≤ 0.3 s | %s |\n' "$first" "$ms" "$rs" "$(met "$ms <= 0.3")"
printf '| build script as a process, as cargo starts it | first build %.2f s | %.3f s | %s s | ≤ 0.3 s | %s |\n' "$first" "$mp" "$rp" "$(met "$mp <= 0.3")"
printf '| cargo build (build script, then the crate compiled again) | nothing to do %.3f s; first build %.2f s | %.3f s | %s s | (none) | - |\n' "$noop" "$first_wall" "$mw" "$rw"
