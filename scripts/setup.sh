#!/usr/bin/env bash
# Idempotent: installs the Debian packages the project needs, configures (Release, Ninja) and
# builds into build/ (executables in build/bin/).
#   scripts/setup.sh               # deps + build (CUDA when nvcc and NCCL are found)
#   DDP_WITH_CUDA=OFF scripts/setup.sh
#   BUILD_DIR=build-cpu scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config unzip ccache libgloo-dev libyaml-cpp-dev
  libcpp-httplib-dev prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libssl-dev libsqlite3-dev libspdlog-dev libfmt-dev
  libcli11-dev prometheus dataset-fashion-mnist)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

BUILD_DIR="${BUILD_DIR:-build}"
CUDA_MODE="${DDP_WITH_CUDA:-AUTO}"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
if [ ! -f "$BUILD_DIR/build.ninja" ] || ! grep -q "DDP_WITH_CUDA:STRING=$CUDA_MODE" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_WITH_CUDA="$CUDA_MODE" "${launcher[@]}"
fi
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
