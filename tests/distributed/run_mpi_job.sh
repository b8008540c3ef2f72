#!/usr/bin/env bash
# Runs the data-parallel job (mpi_job.cc) as one process with one device, one process with two
# devices and two processes under mpirun, and checks that the two-replica layouts print the same
# digits and the one-replica one agrees with them within 1e-5; that one process of four devices and
# two processes of two print the same digits; then the two-process job again, stopped at step 30
# and resumed from its checkpoint.
#   run_mpi_job.sh PATH/TO/kiln_mpi_job
set -euo pipefail
job="$1"
# As root (CI), on 2 cores, in containers that forbid cross-memory attach.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
one=$(KILN_BACKEND=cpu:threads=1 "$job")
two_devices=$(KILN_BACKEND=cpu:threads=2,devices=2 "$job")
two_processes=$(KILN_BACKEND=cpu:threads=1 mpirun -np 2 "$job")
# Four replicas: one process of four devices, and two processes of two devices each, must print
# the same digits (replica ids are device-major, so example i lands on replica i mod 4 in both).
four_devices=$(KILN_BACKEND=cpu:threads=4,devices=4 "$job")
mixed=$(KILN_BACKEND=cpu:threads=2,devices=2 mpirun -np 2 "$job")
# Resuming under mpirun: 30 steps with checkpoints, then a second job that resumes from rank 0's
# last checkpoint and trains to 60, must end where the uninterrupted job ends.
ckpt=$(mktemp -d)
trap 'rm -rf "$ckpt"' EXIT
KILN_BACKEND=cpu:threads=1 KILN_TEST_CKPT="$ckpt" KILN_TEST_STEPS=30 mpirun -np 2 "$job" >/dev/null
resumed=$(KILN_BACKEND=cpu:threads=1 KILN_TEST_CKPT="$ckpt" mpirun -np 2 "$job")
echo "1 process x 1 device:  $one"
echo "1 process x 2 devices: $two_devices"
echo "2 processes x 1 device: $two_processes"
echo "2 processes, resumed at step 30: $resumed"
echo "1 process x 4 devices: $four_devices"
echo "2 processes x 2 devices: $mixed"
[ "$two_devices" = "$two_processes" ] || { echo "FAIL: the two-replica layouts differ"; exit 1; }
[ "$resumed" = "$two_processes" ] || { echo "FAIL: the resumed job ends elsewhere"; exit 1; }
[ "$four_devices" = "$mixed" ] || { echo "FAIL: the four-replica layouts differ"; exit 1; }
case "$mixed" in "replicas 4 "*) ;; *) echo "FAIL: expected 4 replicas: $mixed"; exit 1 ;; esac
python3 - "$one" "$two_devices" <<'PY'
import sys
a = sys.argv[1].split(); b = sys.argv[2].split()
assert a[1] == "1" and b[1] == "2", (a, b)
for key in ("loss", "mae", "median", "checksum"):
    x = float(a[a.index(key) + 1]); y = float(b[b.index(key) + 1])
    if abs(x - y) > 1e-5 * max(1.0, abs(x)):
        sys.exit(f"FAIL: {key} {x} (one replica) and {y} (two) differ by more than 1e-5")
print("ok")
PY
