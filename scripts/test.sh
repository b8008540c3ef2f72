#!/usr/bin/env bash
# Set-up command 2: installs the dependencies, builds kiln and its tests, and runs the test
# suite through ctest (tests labelled `slow` excluded; `ctest --preset slow` runs those).
# Prints how long each phase took.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$(date +%s)
bash scripts/install-deps.sh
t1=$(date +%s)
cmake --preset test >/dev/null
cmake --build --preset test -j "$(nproc)"
t2=$(date +%s)
status=0
ctest --preset test || status=$?
t3=$(date +%s)
echo "timing: install $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
exit $status
