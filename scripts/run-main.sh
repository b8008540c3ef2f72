#!/usr/bin/env bash
# Set-up command 1: installs the dependencies, builds kiln (Release) and runs the main job.
# The main job is, for now, the tensors tour (examples/tensors_tour.cc): the most complete
# example that exists until the Fashion-MNIST training lands.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)"
mkdir -p build/release/main-job
build/release/examples/tensors_tour build/release/main-job
