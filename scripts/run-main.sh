#!/usr/bin/env bash
# Set-up command 1: installs the dependencies, builds kiln (Release) and the main job only, and
# runs it. The main job trains the CNN on Fashion-MNIST (examples/fashion_mnist.cc; flags after
# the script's name are passed on, e.g. --model=mlp --epochs=1 --seed=7). The training plot is
# rendered to training.png with headless Chromium (scripts/render-plot.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release -DKILN_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release -j "$(nproc)" --target fashion_mnist
out=build/release/main-job
mkdir -p "$out"
(cd "$out" && ../examples/fashion_mnist --ckpt=checkpoints "$@")
bash scripts/render-plot.sh "$out/training.html" "$out/training.png" || true
echo "main job: plot $out/training.html (rendered: $out/training.png), checkpoints $out/checkpoints/"
