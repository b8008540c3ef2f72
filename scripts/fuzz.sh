#!/usr/bin/env bash
# Builds the libFuzzer targets (the `fuzz` preset: clang, AddressSanitizer, UndefinedBehavior-
# Sanitizer) and runs each for SECONDS (default 60) from its committed seed corpus
# (fuzz/corpus/TARGET, copied into build/fuzz/corpus so that the inputs libFuzzer adds stay out
# of the tree). Ends with one line, `fuzz: T targets, E execs, C crashes`; exits non-zero on any
# crash, keeping the reproducer in build/fuzz/crashes/ (rerun one: build/fuzz/fuzz/TARGET_fuzz FILE).
#
#   bash scripts/fuzz.sh [SECONDS] [TARGET...]
#   FUZZ_RUNS=1000000 bash scripts/fuzz.sh 0 [TARGET...]   # each target for that many inputs instead
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)" >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in build/fuzz/fuzz/*_fuzz; do targets+=("$(basename "$f" _fuzz)"); done
fi
mkdir -p build/fuzz/crashes
total_execs=0
crashes=0
for t in "${targets[@]}"; do
  corpus=build/fuzz/corpus/$t
  mkdir -p "$corpus"
  cp -n fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  log=build/fuzz/$t.log
  status=0
  # One worker; bounded memory per input (a parser must not allocate what a header claims).
  limit=(-max_total_time="$seconds")
  [ -n "${FUZZ_RUNS:-}" ] && limit=(-runs="$FUZZ_RUNS")
  build/fuzz/fuzz/"$t"_fuzz "${limit[@]}" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -timeout=30 -print_final_stats=1 -artifact_prefix=build/fuzz/crashes/"$t"- "$corpus" >"$log" 2>&1 ||
    status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  execs=${execs:-0}
  total_execs=$((total_execs + execs))
  if [ $status -ne 0 ]; then
    crashes=$((crashes + 1))
    echo "$t: CRASH after $execs inputs (exit $status); reproducer and log:"
    ls build/fuzz/crashes/"$t"-* 2>/dev/null || true
    grep -m 5 -E "ERROR|runtime error|terminate|SUMMARY" "$log" || tail -5 "$log"
  else
    echo "$t: $execs inputs, no crash"
  fi
done
echo "fuzz: ${#targets[@]} targets, $total_execs execs, $crashes crashes"
[ $crashes -eq 0 ]
