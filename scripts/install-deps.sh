#!/usr/bin/env bash
# Installs the Debian 12 packages that kiln needs, with --no-install-recommends, so every package
# the build uses is named here (libdnnl-dev's CMake config needs the OpenCL headers and loader,
# which Debian lists only as a Recommends).
#
#   scripts/install-deps.sh           the build, the tests, the main job and the docs
#   scripts/install-deps.sh --bench   also the benchmark peers (PyTorch on OpenBLAS)
#
# Idempotent: runs `apt-get update` and `apt-get install` only when something is missing.
set -euo pipefail

packages=(
  # toolchain
  build-essential g++ clang cmake ninja-build pkg-config git
  # libraries kiln links (and what their CMake configs require)
  libfmt-dev zlib1g-dev libjpeg62-turbo-dev libdw-dev
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libhwy-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy
  # data for the tests and the main job
  dataset-fashion-mnist
  # the training plot (Chart.js is inlined into the page) and its rendering check
  libjs-chart.js chromium fonts-dejavu-core
  # docs and formatting
  doxygen clang-format
)
bench_packages=(python3-torch libopenblas0-pthread)

for arg in "$@"; do
  case "$arg" in
    --bench) packages+=("${bench_packages[@]}") ;;
    *) echo "install-deps: unknown argument '$arg' (expected --bench)" >&2; exit 2 ;;
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
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
