#!/usr/bin/env bash
# The GPU check rehearsed up to the GPU (ctest GpuCheckRehearsal, label gpu_bundle; CUDA builds
# only): makes the bundle from this build, proves it closed, proves the closure check can fail
# (a carried library taken out), and runs scripts/gpu_check.sh on it. On this GPU-less machine
# every GPU test must skip naming the missing device (report.py fails a row that does not),
# every library must resolve from the bundle plus the CUDA libraries found, no row may fail,
# and at most 8 files may land in the output folder (the device tool brings back no more).
#   tests/gpu/gpu_check_rehearsal.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD_DIR="$(cd "${1:?usage: gpu_check_rehearsal.sh BUILD_DIR}" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "gpu_check_rehearsal: $*" >&2; exit 1; }

BUILD_DIR="$BUILD_DIR" scripts/gpu_bundle.sh "$work/bundle"
mkdir -p "$work/unpacked"
tar -C "$work/unpacked" -xJf "$work/bundle/bundle.tar.xz"
scripts/gpu/check_bundle.sh "$work/unpacked" >/dev/null || fail "the unpacked bundle is not closed"
rm "$work/unpacked/lib/libgloo.so.0"
if scripts/gpu/check_bundle.sh "$work/unpacked" 2>"$work/check.err" >/dev/null; then
  fail "check_bundle.sh passed a bundle without libgloo.so.0"
fi
grep -q "needs libgloo.so.0" "$work/check.err" || fail "check_bundle.sh did not name libgloo.so.0: $(cat "$work/check.err")"

scripts/gpu_check.sh --bundle "$work/bundle" --out "$work/out" || fail "gpu_check.sh failed (rows above)"
files=$(find "$work/out" -type f | wc -l)
((files <= 8)) || fail "$files files in the output folder (at most 8 come back)"
results="$work/out/results.jsonl"
programs=$(tar -tJf "$work/bundle/bundle.tar.xz" | grep -c '^bin/tests/.')
test_rows=$(grep -c '"kind": "test"' "$results")
((test_rows > programs)) || fail "$test_rows test rows for $programs test programs"
if ! grep -q '"name": "gpu", "result": "skipped"' "$results"; then
  echo "gpu_check_rehearsal: a GPU is visible here: the no-GPU assertions do not apply"
  exit 0
fi
grep -q '"result": "passed"' <(grep '"kind": "library"' "$results") || fail "the libraries did not resolve"
if grep '"kind": "test"' "$results" | grep -v '"name": "lm_' | grep -q '"result": "skipped", "message": "skipped"'; then
  fail "a GPU test skipped without a message"
fi
echo "gpu_check_rehearsal: $test_rows test rows from $programs programs, all skipped or passed; $files files"
