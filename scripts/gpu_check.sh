#!/usr/bin/env bash
# The GPU check, run on a lent GPU machine from a bundle made here (Note [GPU bundle] in
# scripts/gpu_bundle.sh): every GPU test, the same job on cuda against cpu, and the GPU
# benchmarks against a device-to-device copy and against PyTorch on the same card.
#   scripts/gpu_check.sh [--bundle .gpu-bundle] [--out DIR] [--tests-only | --bench-only]
#                        [--profile] [--bench-steps 300]
# --out defaults to $OUT (the device tool's folder), else gpu-check-out. It receives four files:
# results.jsonl (one row per test, job check, benchmark figure and ratio: scripts/gpu/report.py),
# gpu_check.log (everything printed), summary.txt (printed last too) and artifacts.tar.gz (each
# program's own output and gtest report, nvidia-smi, the ncu profile with --profile). Sized to
# finish in about 5 minutes on one H100/H200, so that a rerun fits in a 15-minute lease.
# Without a GPU (the rehearsal here) every GPU test skips naming the missing device and the
# benchmarks are skipped rows: a failure then means a library or bundle problem.
# Exit 0 when no row failed (a missed performance target is "missed", not a failure).
set -uo pipefail
cd "$(dirname "$0")/.."
BUNDLE=.gpu-bundle
OUT_DIR="${OUT:-gpu-check-out}"
MODE=all PROFILE=0 BENCH_STEPS=300
while (($#)); do
  case "$1" in
    --bundle) BUNDLE="$2"; shift ;;
    --out) OUT_DIR="$2"; shift ;;
    --tests-only) MODE=tests ;;
    --bench-only) MODE=bench ;;
    --profile) PROFILE=1 ;;
    --bench-steps) BENCH_STEPS="$2"; shift ;;
    *) echo "usage: gpu_check.sh [--bundle DIR] [--out DIR] [--tests-only|--bench-only] [--profile] [--bench-steps N]" >&2
       exit 2 ;;
  esac
  shift
done
scratch="$(mktemp -d)"  # the unpacked bundle and the artifacts, removed at exit
trap 'rm -rf "$scratch"' EXIT
if [ -f "$BUNDLE/bundle.tar.xz" ]; then  # as scripts/gpu_bundle.sh makes it: unpack it first
  # Python's tarfile, not tar -J: the GPU machine's image need not have xz.
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$BUNDLE/bundle.tar.xz" "$scratch/bundle" || { echo "gpu_check: cannot unpack $BUNDLE/bundle.tar.xz" >&2; exit 2; }
  BUNDLE="$scratch/bundle"
fi
BUNDLE="$(cd "$BUNDLE" 2>/dev/null && pwd)" && [ -d "$BUNDLE/bin" ] ||
  { echo "gpu_check: no bundle (scripts/gpu_bundle.sh makes it)" >&2; exit 2; }
mkdir -p "$OUT_DIR" && OUT_DIR="$(cd "$OUT_DIR" && pwd)"
RESULTS="$OUT_DIR/results.jsonl"
: >"$RESULTS"
ART="$scratch/artifacts"
mkdir -p "$ART"
exec > >(tee "$OUT_DIR/gpu_check.log") 2>&1
report() { python3 scripts/gpu/report.py "$@"; }
started=$SECONDS
say() { printf '[gpu_check %4ds] %s\n' $((SECONDS - started)) "$*"; }

# ---- environment: the GPU, and the CUDA/NCCL libraries of the machine (PyTorch's wheels) ----
gpus=0
if command -v nvidia-smi >/dev/null && nvidia-smi -L >"$ART/nvidia-smi.txt" 2>&1; then
  gpus=$(grep -c '^GPU ' "$ART/nvidia-smi.txt")
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$ART/nvidia-smi.txt" 2>&1
fi
say "GPUs: $gpus $(head -1 "$ART/nvidia-smi.txt" 2>/dev/null)"
report row "$RESULTS" env gpu "$([ "$gpus" -gt 0 ] && echo passed || echo skipped)" \
  "$([ "$gpus" -gt 0 ] && head -1 "$ART/nvidia-smi.txt" || echo 'no CUDA device is visible (no nvidia-smi or no GPU)')"
libdirs=$(python3 scripts/gpu/find_cuda_libs.py 2>"$ART/find_cuda_libs.err")
say "CUDA/NCCL library folders: ${libdirs:-none found} $(cat "$ART/find_cuda_libs.err")"
export LD_LIBRARY_PATH="$BUNDLE/lib${libdirs:+:$libdirs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
unresolved=0
for f in "$BUNDLE"/bin/* "$BUNDLE"/bin/tests/*; do
  [ -f "$f" ] || continue
  if ldd "$f" | grep -q 'not found'; then
    report row "$RESULTS" library "${f#"$BUNDLE"/}" failed "$(ldd "$f" | grep 'not found' | tr -s ' \t\n' ' ')"
    unresolved=1
  fi
done
[ "$unresolved" = 0 ] && report row "$RESULTS" library all passed "every carried program's libraries resolve"

# ---- tests: every GPU test program ----
run_tests() {
  for t in "$BUNDLE"/bin/tests/*; do
    name=$(basename "$t")
    say "test $name"
    timeout -k 10 240 "$t" --gtest_output="json:$ART/$name.json" >"$ART/$name.log" 2>&1
    report gtest "$RESULTS" "$name" "$ART/$name.json" "$ART/$name.log" "$?" "$gpus"
  done
  # Features that have not landed yet: their rows say so instead of vanishing.
  for pending in transformer_ops_cuda_test:"the language model's CUDA ops are not in this bundle"; do
    [ -x "$BUNDLE/bin/tests/${pending%%:*}" ] || report row "$RESULTS" test "${pending%%:*}" skipped "${pending#*:}"
  done
}

# ---- the same job on cuda and on cpu (ddpctl run, the controller's code path) ----
run_jobs() {
  if [ "$gpus" -eq 0 ]; then
    report row "$RESULTS" job fashion_mnist_cuda_vs_cpu skipped "no CUDA device is visible"
    return
  fi
  for device in cpu cuda; do
    sed -e "s/^  device: .*/  device: $device/" -e 's/^    count: .*/    count: 1/' -e 's/^  epochs: .*/  epochs: 2/' \
        -e "s|^    dataset: fashion-mnist|&\n    dir: $BUNDLE/data/fashion-mnist|" \
        -e "s/^  name: .*/  name: gpu-check-$device/" examples/fashion-mnist.yaml >"$ART/job-$device.yaml"
    timeout -k 10 300 "$BUNDLE/bin/ddpctl" run "$ART/job-$device.yaml" --log-format json >"$ART/job-$device.log" 2>&1 &
  done
  say "job: fashion-mnist MLP, 1 worker, 2 epochs of 16384 samples, on cpu and cuda at once"
  wait
  report jobs "$RESULTS" "$ART/job-cpu.log" "$ART/job-cuda.log"
}

# ---- benchmarks ----
bench() {  # NAME COMMAND...: JSON lines into the results (exit 77: a skipped row)
  local name=$1; shift
  say "bench $name"
  timeout -k 10 300 "$@" >"$ART/$name.jsonl" 2>"$ART/$name.jsonl.err"
  report bench "$RESULTS" "$name" "$ART/$name.jsonl" "$?"
}
run_benches() {
  bench bench_kernels_cuda "$BUNDLE/bin/bench_kernels_cuda" --json
  if [ "$gpus" -gt 0 ]; then
    bench bench_train "$BUNDLE/bin/bench_train" --json --models '' --gpu on --gpu-steps "$BENCH_STEPS" \
      --repeats 3 --data-dir "$BUNDLE/data/fashion-mnist"
  else
    report row "$RESULTS" bench bench_train skipped "no CUDA device is visible"
  fi
  bench train_torch python3 bench/torch/train_torch.py --data-dir "$BUNDLE/data/fashion-mnist" --steps "$BENCH_STEPS"
  report ratios "$RESULTS"
  # The GPT's step with fp32 and bf16 matmuls and its MFU (exit 77 without a GPU: skipped rows).
  if [ -x "$BUNDLE/bin/bench_lm" ]; then
    bench bench_lm "$BUNDLE/bin/bench_lm" --json
  else
    report row "$RESULTS" bench bench_lm skipped "no bench_lm in the bundle (scripts/gpu_bundle.sh)"
  fi
  report row "$RESULTS" ratio lm_step_vs_torch skipped "no PyTorch GPT baseline on the GPU yet"
  if [ "$PROFILE" = 1 ] && [ "$gpus" -gt 0 ] && command -v ncu >/dev/null; then
    say "profile: ncu over bench_kernels_cuda (256 MiB)"
    timeout -k 10 180 ncu --section SpeedOfLight --launch-count 40 "$BUNDLE/bin/bench_kernels_cuda" --mib 256 --iters 1 \
      >"$ART/ncu_kernels.txt" 2>&1 || say "ncu failed (see ncu_kernels.txt)"
  fi
}

[ "$MODE" != bench ] && run_tests
[ "$MODE" != bench ] && run_jobs
[ "$MODE" != tests ] && run_benches
tar -C "$(dirname "$ART")" -czf "$OUT_DIR/artifacts.tar.gz" artifacts
say "done: $OUT_DIR (results.jsonl, gpu_check.log, summary.txt, artifacts.tar.gz)"
report summary "$RESULTS"
