#!/usr/bin/env bash
# Installs every Debian 12 package that kiln's build, tests and main job need.
# Idempotent: runs `apt-get update` and `apt-get install` only when something is missing.
set -euo pipefail

packages=(
  build-essential g++ clang cmake ninja-build pkg-config
  libfmt-dev zlib1g-dev libjpeg62-turbo-dev libdw-dev libdnnl-dev libhwy-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy
  dataset-fashion-mnist
  clang-format
)

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
