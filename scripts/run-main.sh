#!/usr/bin/env bash
# Set-up command 1: installs the dependencies, builds kiln (Release) and runs the main job.
# The main job trains the CNN on Fashion-MNIST (examples/fashion_mnist.cc; flags after the
# script's name are passed on, e.g. --model=mlp --epochs=1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
mkdir -p build/release/main-job
cd build/release/main-job
../examples/fashion_mnist --ckpt=checkpoints "$@"
