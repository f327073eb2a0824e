#!/usr/bin/env bash
# What tests/tests/aiter.rs needs to run aiter's own build of libmha_fwd:
# - the amd-aiter wheel (40 MB), downloaded into target/aiter, not
#   installed: the test unpacks it into its own directory;
# - the Python packages aiter's build imports (packaging, psutil, pandas)
#   and ninja, which it runs.
# Usage: .ci/aiter.sh [dir]   (default target/aiter)
set -euo pipefail
cd "$(dirname "$0")/.."
AITER_VERSION=0.1.7.post2.dev18
D=${1:-target/aiter}
mkdir -p "$D"
if ! ls "$D"/amd_aiter-"$AITER_VERSION"-*.whl >/dev/null 2>&1; then
    python3 -m pip download -q --disable-pip-version-check --no-deps -d "$D" \
        "amd-aiter==$AITER_VERSION"
fi
python3 -m pip install -q --disable-pip-version-check packaging psutil pandas ninja
command -v ninja >/dev/null
echo "aiter: $(ls "$D"/amd_aiter-*.whl)"
