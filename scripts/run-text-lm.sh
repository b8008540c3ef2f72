#!/usr/bin/env bash
# The second main job: installs the dependencies, builds kiln (Release) and the text job only, and
# runs it. It trains a small Llama-style language model on the fortunes of Debian's `fortunes`
# package (examples/text_lm.cc; flags after the script's name are passed on, e.g. --steps=300),
# then samples text. Its plot, checkpoints and the model in HuggingFace's layout go to
# build/release/text-job/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake --preset release -DKILN_BUILD_TESTS=OFF >/dev/null
cmake --build --preset release -j "$(nproc)" --target text_lm
out=build/release/text-job
mkdir -p "$out"
(cd "$out" && ../examples/text_lm --ckpt=checkpoints "$@")
echo "text job: plot $out/text_lm.html, checkpoints $out/checkpoints/, model $out/lm-model/"
