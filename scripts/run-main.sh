#!/usr/bin/env bash
# Set-up command 1: installs the dependencies, builds kiln (Release) and the main job only, and
# runs it. The main job trains the CNN on Fashion-MNIST (examples/fashion_mnist.cc; flags after
# the script's name are passed on, e.g. --model=mlp --epochs=1 --seed=7). The training plot is
# rendered to training.png with headless Chromium (scripts/render-plot.sh). With
# KILN_PROCESSES=N the job runs data-parallel as N processes under Open MPI's mpirun (in
# build/release/main-job-mpi), each on its share of every batch.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release -DKILN_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release -j "$(nproc)" --target fashion_mnist
out=build/release/main-job
launch=()
if [ "${KILN_PROCESSES:-1}" -gt 1 ]; then
  out=build/release/main-job-mpi
  # As root and on machines with fewer cores than processes; no cross-memory attach in containers.
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  launch=(mpirun --allow-run-as-root --oversubscribe -np "$KILN_PROCESSES")
fi
mkdir -p "$out"
(cd "$out" && "${launch[@]}" ../examples/fashion_mnist --ckpt=checkpoints "$@")
bash scripts/render-plot.sh "$out/training.html" "$out/training.png" || true
echo "main job: plot $out/training.html (rendered: $out/training.png), checkpoints $out/checkpoints/"
