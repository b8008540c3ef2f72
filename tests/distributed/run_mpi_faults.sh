#!/usr/bin/env bash
# Processes that disagree, die or stop answering under mpirun end the job with an error, not a hang: runs the
# data-parallel job (mpi_job.cc) with rank 1 misbehaving (KILN_TEST_FAULT) and checks the exit
# status, the message and the time taken.
#   run_mpi_faults.sh PATH/TO/kiln_mpi_job
set -uo pipefail
job="$1"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
export KILN_BACKEND=cpu:threads=1 KILN_COLLECTIVE_TIMEOUT=10
fail=0
run() {  # run FAULT -> $out, $status, $seconds
  local start=$SECONDS
  out=$(KILN_TEST_FAULT="$1" timeout 120 mpirun -np 2 "$job" 2>&1)
  status=$?
  seconds=$((SECONDS - start))
}
for fault in shapes steps; do
  run "$fault"
  if [ "$status" -eq 0 ] || ! grep -q "processes disagree: rank 0 runs .* but rank 1 runs" <<<"$out"; then
    echo "FAIL: $fault: exit $status, expected an error naming rank 1:"; echo "$out" | tail -20; fail=1
  else
    echo "ok: $fault ($seconds s): $(grep -m1 "processes disagree" <<<"$out")"
  fi
done
run die
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || [ "$seconds" -gt 60 ]; then
  echo "FAIL: die: exit $status after $seconds s, expected the job to stop with an error"; echo "$out" | tail -20
  fail=1
else
  echo "ok: die (exit $status after $seconds s)"
fi
# Rank 1 stops answering: rank 0 times out (10 s), every later exchange is refused, and Finalize
# returns at once (the timed-out request is still in flight).
run hang
if [ "$status" -eq 0 ] || [ "$status" -eq 124 ] || [ "$seconds" -gt 28 ] ||
  ! grep -q "rank 0: .*waited more than 10 s for the other processes" <<<"$out" ||
  ! grep -q "rank 0: then: .*rank 0 cannot exchange with the other processes any more" <<<"$out" ||
  ! grep -q "rank 0: finalized" <<<"$out"; then
  echo "FAIL: hang: exit $status after $seconds s, expected a timeout, a refused barrier and a prompt exit"
  echo "$out" | tail -20
  fail=1
else
  echo "ok: hang (exit $status after $seconds s): $(grep -m1 "then:" <<<"$out")"
fi
exit $fail
