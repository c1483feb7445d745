#!/usr/bin/env bash
# The whole test suite: setup (deps + build), then every test. Non-zero on any failure.
#   1. build/      DDP_WITH_CUDA=AUTO (CUDA kernels and the NCCL backend compile when nvcc is
#                  present; their tests skip without a GPU) -> full ctest
#   2. build-cpu/  DDP_WITH_CUDA=OFF -> builds and runs the full suite again (the CPU-only
#                  configuration must always build and pass)
# Set DDP_TEST_SKIP_CPU_ONLY=1 to skip step 2 during development.
set -euo pipefail
cd "$(dirname "$0")/.."
JOBS="${JOBS:-$(nproc)}"

scripts/setup.sh
(cd build && ctest --output-on-failure -j "$JOBS" --timeout 900)

if [ "${DDP_TEST_SKIP_CPU_ONLY:-0}" != "1" ]; then
  DDP_WITH_CUDA=OFF BUILD_DIR=build-cpu scripts/setup.sh
  (cd build-cpu && ctest --output-on-failure -j "$JOBS" --timeout 900)
fi
