#!/usr/bin/env bash
# Set-up command 1: installs the dependencies, builds kiln (Release) and runs the main job.
# The main job trains the CNN on Fashion-MNIST (examples/fashion_mnist.cc; flags after the
# script's name are passed on, e.g. --model=mlp --epochs=1 --seed=7). When Chromium is installed,
# the training plot is also rendered to training.png (scripts/render-plot.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
mkdir -p build/release/main-job
cd build/release/main-job
../examples/fashion_mnist --ckpt=checkpoints "$@"
if command -v chromium >/dev/null 2>&1 && [ -f training.html ]; then
  bash ../../../scripts/render-plot.sh training.html training.png || true
fi
