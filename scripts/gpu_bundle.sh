#!/usr/bin/env bash
# Makes the GPU bundle (Note [GPU bundle]): the stripped GPU test and benchmark programs of a CUDA
# build, the worker, controller and ddpctl, the shared libraries they need that the GPU machine
# lacks, and the data they read, in one ignored folder that the device tool carries.
#   scripts/gpu_bundle.sh [BUNDLE_DIR]        # default .gpu-bundle; BUILD_DIR=build
# BUNDLE_DIR receives bundle.tar.xz (bin/, bin/tests/, lib/, data/: about 21 MB; OpenBLAS alone
# is 36 MB unpacked) and MANIFEST.txt; gpu_check.sh unpacks the archive into a scratch folder.
# Then, on the GPU machine (device tool, carry [".gpu-bundle"]):
#   scripts/gpu_check.sh --bundle .gpu-bundle --out "$OUT"
#
# Note [GPU bundle]
# The GPU machine has CUDA 13, CMake and PyTorch 2.11 but none of the Debian libraries the
# project links (Gloo, yaml-cpp, OpenBLAS, SQLite, cpp-httplib, prometheus-cpp...), and no
# registry to fetch them from; what travels there is at most 64 MiB. So the programs are built
# here (build/ compiles the CUDA targets for sm_90) and carried with exactly the shared libraries
# `ldd` resolves for them here, copied from this machine's installed Debian packages (the
# package of each is recorded in MANIFEST.txt) into the bundle's lib/ folder: never unpacked over
# the machine's /. The libraries the GPU machine provides itself (its C and C++ runtime, the
# driver, and cudart, cuBLAS and NCCL from PyTorch's nvidia-* wheels) are listed in
# scripts/gpu/device_libs.txt and left behind: this machine's libnccl.so.2 alone is 218 MB.
# scripts/gpu/check_bundle.sh proves the bundle closed: every library any carried program or
# library needs is either in lib/ or on that list. The data: the first 16384 training and 2000
# test samples of Fashion-MNIST (bench_train reads 16384; the GPU check's job trains on them).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR="${BUILD_DIR:-build}"
BUNDLE="${1:-.gpu-bundle}"
DEVICE_LIBS=scripts/gpu/device_libs.txt
LIMIT_MIB=32  # of the device tool's 64 MiB for the tree and carried paths together

if [ "$(cat "$BUILD_DIR/ddp_cuda_enabled" 2>/dev/null)" != "ON" ]; then
  echo "gpu_bundle: $BUILD_DIR did not compile CUDA (no nvcc or NCCL found): nothing to bundle" >&2
  exit 2
fi
tests=()
while IFS= read -r src; do tests+=("$(basename "$src" .cc)"); done < <(find tests -name '*_cuda_test.cc' | sort)
benches=(bench_kernels_cuda bench_train bench_lm)
programs=(ddp-worker ddp-controller ddpctl)
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --target "${tests[@]}" "${benches[@]}" "${programs[@]}"

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE"
FINAL="$BUNDLE"
BUNDLE="$(mktemp -d)"
trap 'rm -rf "$BUNDLE"' EXIT
mkdir -p "$BUNDLE/bin/tests" "$BUNDLE/lib" "$BUNDLE/data/fashion-mnist"
for t in "${tests[@]}"; do strip -o "$BUNDLE/bin/tests/$t" "$BUILD_DIR/bin/tests/$t"; done
for b in "${benches[@]}" "${programs[@]}"; do strip -o "$BUNDLE/bin/$b" "$BUILD_DIR/bin/$b"; done

# The libraries: what ldd resolves here, less what the GPU machine provides.
declare -A provided=()
while read -r soname; do provided[$soname]=1; done < <(grep -v '^#' "$DEVICE_LIBS" | grep -v '^$')
declare -A carried=()
for f in "$BUNDLE"/bin/* "$BUNDLE"/bin/tests/*; do
  [ -f "$f" ] || continue
  while read -r soname path; do
    [ -n "${provided[$soname]:-}" ] && continue
    [ -n "${carried[$soname]:-}" ] && continue
    carried[$soname]="$path"
  done < <(ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
{
  echo "# GPU bundle made $(date -u +%FT%TZ) from $(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes') in $BUILD_DIR"
  echo "# soname  package  bytes"
} >"$BUNDLE/MANIFEST.txt"
for soname in $(printf '%s\n' "${!carried[@]}" | sort); do
  path="${carried[$soname]}"
  cp -L "$path" "$BUNDLE/lib/$soname"
  strip --strip-unneeded "$BUNDLE/lib/$soname" 2>/dev/null || true
  pkg=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | head -1 | cut -d: -f1 || true)
  echo "lib/$soname ${pkg:-unknown} $(stat -c %s "$BUNDLE/lib/$soname")" >>"$BUNDLE/MANIFEST.txt"
done
for f in "$BUNDLE"/bin/* "$BUNDLE"/bin/tests/*; do
  [ -f "$f" ] && echo "${f#"$BUNDLE"/} - $(stat -c %s "$f")" >>"$BUNDLE/MANIFEST.txt"
done

# The data: the first samples of each Fashion-MNIST file, as gzip IDX files.
python3 - "$BUNDLE/data/fashion-mnist" <<'PY'
import gzip, os, sys
src, dst = "/usr/share/datasets/fashion-mnist", sys.argv[1]
for stem, keep in (("train", 16384), ("t10k", 2000)):
    for kind, item in (("images-idx3-ubyte", 784), ("labels-idx1-ubyte", 1)):
        name = f"{stem}-{kind}.gz"
        data = gzip.open(os.path.join(src, name)).read()
        ndim = data[3]
        head = bytearray(data[:4 + 4 * ndim])
        head[4:8] = keep.to_bytes(4, "big")
        with gzip.open(os.path.join(dst, name), "wb", compresslevel=9) as out:
            out.write(bytes(head) + data[4 + 4 * ndim:4 + 4 * ndim + keep * item])
PY

scripts/gpu/check_bundle.sh "$BUNDLE"
cp "$BUNDLE/MANIFEST.txt" "$FINAL/MANIFEST.txt"
tar -C "$BUNDLE" -cf - bin lib data MANIFEST.txt | xz -T0 -6 >"$FINAL/bundle.tar.xz"
bytes=$(du -sb "$FINAL" | cut -f1)
echo "gpu_bundle: $FINAL holds $(( bytes / 1048576 )) MiB ($(du -sm "$BUNDLE" | cut -f1) MiB unpacked): ${#tests[@]} test programs, ${#benches[@]} benchmarks, ${#programs[@]} programs, ${#carried[@]} libraries"
if (( bytes > LIMIT_MIB * 1048576 )); then
  echo "gpu_bundle: over $LIMIT_MIB MiB: the device tool carries at most 64 MiB with the tree" >&2
  exit 1
fi
