#!/usr/bin/env bash
# Installs the Debian 12 packages that kiln needs, with --no-install-recommends, so every package
# the build uses is named here (libdnnl-dev's CMake config needs the OpenCL headers and loader,
# which Debian lists only as a Recommends).
#
#   scripts/install-deps.sh           the build, the tests, the main job and the docs
#   scripts/install-deps.sh --bench   also the benchmark peers (PyTorch on OpenBLAS)
#   scripts/install-deps.sh --peers   also Node.js and the npm packages that
#                                     tools/npm/package-lock.json pins (a GGUF parser, ONNX
#                                     Runtime and published ONNX models the `peers` tests check
#                                     kiln against), into tools/npm
#
# Idempotent: runs `apt-get update` and `apt-get install` only when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ clang cmake ninja-build pkg-config git
  # libraries kiln links (and what their CMake configs require)
  libfmt-dev zlib1g-dev libjpeg62-turbo-dev libdw-dev
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libhwy-dev libeigen3-dev libxbyak-dev
  libonnx-dev libprotobuf-dev
  # tokenizers: regexes, Unicode, SentencePiece
  libpcre2-dev libicu-dev libsentencepiece-dev
  # distributed training: Open MPI (mpirun starts the processes)
  libopenmpi-dev openmpi-bin
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # sanitizer and libFuzzer runtimes for clang (the fuzz and clang presets, scripts/fuzz.sh)
  libclang-rt-14-dev
  python3 python3-numpy
  # data for the tests and the main jobs (Fashion-MNIST, ONNX test cases, the text job's fortunes)
  dataset-fashion-mnist libonnx-testdata fortunes
  # the training plot (Chart.js is inlined into the page) and its rendering check
  libjs-chart.js chromium fonts-dejavu-core
  # docs and formatting
  doxygen clang-format
)
bench_packages=(python3-torch libopenblas0-pthread)
peers=0

for arg in "$@"; do
  case "$arg" in
    --bench) packages+=("${bench_packages[@]}") ;;
    --peers)
      peers=1
      # A machine that already has node and npm (from another source) keeps them.
      if ! command -v npm >/dev/null || ! command -v node >/dev/null; then packages+=(nodejs npm); fi
      ;;
    *) echo "install-deps: unknown argument '$arg' (expected --bench or --peers)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The npm peers, at the versions package-lock.json pins (no install scripts run).
npm_dir="$(dirname "$0")/../tools/npm"
if [ "$peers" = 1 ] && { [ ! -f "$npm_dir/node_modules/.package-lock.json" ] ||
  ! cmp -s "$npm_dir/package-lock.json" "$npm_dir/node_modules/.kiln-lock"; }; then
  echo "install-deps: installing the npm peers in tools/npm"
  (cd "$npm_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error &&
    cp package-lock.json node_modules/.kiln-lock)
fi
