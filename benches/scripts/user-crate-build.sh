#!/usr/bin/env bash
# What a user crate pays to depend on ck-jit: for each ck-jit checkout given,
# a minimal crate (one C kernel, the README's dependency lines, a build.rs
# and one #[lazy_kernel]) is built from scratch in a fresh target directory,
# and the quickstart example of that checkout likewise. Prints the number of
# crates in each dependency graph and the wall time of each clean build, and
# the ratio of each checkout's times to the first one's.
#
# usage: benches/scripts/user-crate-build.sh CHECKOUT [CHECKOUT ...]
#   (e.g. a `git worktree` of an older commit, then this checkout: `.`)
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 CHECKOUT [CHECKOUT ...]" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
declare -a labels times_user times_quick
i=0
for checkout in "$@"; do
    co=$(cd "$checkout" && pwd)
    crate=$work/user-$i
    mkdir -p "$crate/src" "$crate/kernels"
    cat >"$crate/Cargo.toml" <<TOML
[package]
name = "user-crate"
version = "0.1.0"
edition = "2021"
publish = false

[workspace]

[dependencies]
ck-jit-rt = { path = "$co/ck-jit-rt" }
ck-jit-macros = { path = "$co/ck-jit-macros" }

[build-dependencies]
ck-jit-build = { path = "$co/ck-jit-build" }
TOML
    cat >"$crate/build.rs" <<'RS'
fn main() {
    ck_jit_build::Build::new()
        .group(ck_jit_build::BlobGroup::new("k").glob("kernels/*.c").compiler("cc"))
        .write();
}
RS
    echo 'int twice(int x) { return 2 * x; }' >"$crate/kernels/twice.c"
    cat >"$crate/src/main.rs" <<'RS'
ck_jit_rt::embed_manifest!();

#[ck_jit_macros::lazy_kernel]
extern "C" {
    fn twice(x: i32) -> i32;
}

fn main() {
    println!("{}", unsafe { twice(21) });
}
RS
    crates=$(cd "$crate" && cargo tree -e normal,build --prefix none 2>/dev/null | sed 's/ (\*)//' | sort -u | wc -l)
    t0=$(date +%s.%N)
    (cd "$crate" && CARGO_TARGET_DIR=$work/target-user-$i cargo build -q 2>&1)
    t1=$(date +%s.%N)
    qcrates=$(cd "$co" && cargo tree -p quickstart -e normal,build --prefix none 2>/dev/null | sed 's/ (\*)//' | sort -u | wc -l)
    t2=$(date +%s.%N)
    (cd "$co" && CARGO_TARGET_DIR=$work/target-quick-$i cargo build -q -p quickstart 2>&1)
    t3=$(date +%s.%N)
    u=$(echo "$t1 - $t0" | bc)
    q=$(echo "$t3 - $t2" | bc)
    labels[$i]="$checkout ($(cd "$co" && git rev-parse --short HEAD 2>/dev/null || echo '?'))"
    times_user[$i]=$u
    times_quick[$i]=$q
    printf '%s\n  minimal user crate: %3d crates, clean build %6.1f s\n  quickstart:         %3d crates, clean build %6.1f s\n' \
        "${labels[$i]}" "$crates" "$u" "$qcrates" "$q"
    rm -rf "$work/target-user-$i" "$work/target-quick-$i"
    i=$((i + 1))
done
for ((j = 1; j < i; j++)); do
    printf 'ratio %s / %s: user crate %.2f, quickstart %.2f\n' "${labels[$j]}" "${labels[0]}" \
        "$(echo "${times_user[$j]} / ${times_user[0]}" | bc -l)" \
        "$(echo "${times_quick[$j]} / ${times_quick[0]}" | bc -l)"
done
