#!/usr/bin/env bash
# The test suite under the sanitizers, each part in its own build folder (run
# scripts/install-deps.sh first). Prints how long each part took.
#   asan     AddressSanitizer + UndefinedBehaviorSanitizer, every test but the slow and peer ones
#            (build/asan; the check before an issue is resolved).
#   asan-ci  the same build, only the test binaries labelled `sanitize` (the readers, checkpoints,
#            datasets, bad input, crash and thread safety, the fused and quantized SIMD kernels):
#            what CI runs, since the whole suite under ASan does not fit CI's time on 2 cores.
#   tsan     ThreadSanitizer over the thread-safety tests (build/tsan).
#
#   bash scripts/check-sanitizers.sh [asan|asan-ci|tsan]...   # asan and tsan when none is named
set -euo pipefail
cd "$(dirname "$0")/.."
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(asan tsan)
status=0
for p in "${parts[@]}"; do
  case "$p" in
    asan | asan-ci) configure=asan ;;
    tsan) configure=tsan ;;
    *) echo "check-sanitizers: unknown part '$p' (asan, asan-ci or tsan)" >&2; exit 2 ;;
  esac
  t0=$(date +%s)
  cmake --preset "$configure" >/dev/null
  cmake --build --preset "$p" -j "$(nproc)"
  t1=$(date +%s)
  ctest --preset "$p" || status=1
  t2=$(date +%s)
  echo "timing: $p build $((t1 - t0)) s, tests $((t2 - t1)) s"
done
exit $status
