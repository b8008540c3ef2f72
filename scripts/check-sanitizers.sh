#!/usr/bin/env bash
# The test suite under the sanitizers: the `asan` preset (AddressSanitizer and
# UndefinedBehaviorSanitizer, every test but the slow and peer ones) and the `tsan` preset
# (ThreadSanitizer, the thread-safety tests). Each builds in its own folder (build/asan,
# build/tsan); run scripts/install-deps.sh first. Prints how long each part took.
#
#   bash scripts/check-sanitizers.sh [asan] [tsan]   # both when none is named
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(asan tsan)
status=0
for p in "${parts[@]}"; do
  case "$p" in
    asan | tsan) ;;
    *) echo "check-sanitizers: unknown part '$p' (asan or tsan)" >&2; exit 2 ;;
  esac
  t0=$(date +%s)
  cmake --preset "$p" >/dev/null
  cmake --build --preset "$p" -j "$(nproc)"
  t1=$(date +%s)
  ctest --preset "$p" || status=1
  t2=$(date +%s)
  echo "timing: $p build $((t1 - t0)) s, tests $((t2 - t1)) s"
done
exit $status
