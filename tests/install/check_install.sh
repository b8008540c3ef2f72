#!/usr/bin/env bash
# Installs kiln from BUILD_DIR into a temporary prefix, then configures, builds and runs a
# consumer project that finds it with find_package(kiln), as a user's project would.
#   check_install.sh BUILD_DIR SOURCE_DIR [CXX_FLAGS [LINKER_FLAGS]]
# (the flags of kiln's own build, so that a sanitizer build's consumer links the same runtime)
set -eu
build=$1; src=$2; cxxflags=${3:-}; ldflags=${4:-}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
# Public headers include only the standard library: no third-party header may leak.
if grep -rhoE '#include <(fmt|dnnl|hwy|omp|elfutils|zlib|gtest)[^>]*>' "$work/prefix/include/kiln"; then
  echo "check_install: a public header includes a third-party header"; exit 1
fi
cmake -S "$src/tests/install/consumer" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
cmake --build "$work/build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib:${LD_LIBRARY_PATH:-}" "$work/build/consumer"
