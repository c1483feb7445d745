// bench_gpt_ops: CPU time per call of every op of one GPT training step at the shapes of
// examples/gpt-fortunes.yaml (batch 16 x context 128 = 2048 rows, dModel 128, 4 heads, MLP 512,
// vocab 256, 4 layers), one thread, through the kernels::cpu functions the CPU LayerOps calls:
// where a step's time goes, op by op (docs/PERFORMANCE.md, "GPT").
//
//   build/bin/bench_gpt_ops [--json] [--reps 20]
//
// Each op runs once untimed, then --reps times; the figure is the process's CPU time
// (CLOCK_PROCESS_CPUTIME_ID) per call, which a machine busy with other work disturbs less than
// wall time. calls_per_step counts the op's calls in one forward + backward of the 4-layer
// model. JSON lines: {"bench":"gpt_ops","op","ms_per_call","calls_per_step","ms_per_step"}; the
// last line has op "total".
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/bench_args.h"
#include "bench/common/json_line.h"
#include "common/split_mix_rng.h"
#include "kernels/layer_ops.h"
#include "kernels/transformer_ops.h"

namespace {

using namespace ddp::kernels;

constexpr int kBatch = 16, kSeq = 128, kHeads = 4, kHeadDim = 32, kDim = 128, kHidden = 512, kVocab = 256;
constexpr int kLayers = 4, kRows = kBatch * kSeq;

double cpuMs() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

std::vector<float> normal(size_t n, uint64_t seed, float scale) {
  ddp::SplitMixRng r(seed);
  std::vector<float> v(n);
  for (float& x : v) x = scale * r.normal();
  return v;
}

struct Op {
  std::string name;
  int callsPerStep;
  std::function<void()> run;
};

// The ops of one step and the buffers they work on (kept alive by the closures' captures).
std::vector<Op> stepOps() {
  auto x = std::make_shared<std::vector<float>>(normal(size_t{kRows} * kHidden, 1, 1.f));
  auto y = std::make_shared<std::vector<float>>(size_t{kRows} * kHidden);
  auto dy = std::make_shared<std::vector<float>>(normal(size_t{kRows} * kHidden, 2, 0.01f));
  auto dx = std::make_shared<std::vector<float>>(size_t{kRows} * kHidden);
  auto w = std::make_shared<std::vector<float>>(normal(size_t{kHidden} * kHidden, 3, 0.02f));
  auto dw = std::make_shared<std::vector<float>>(size_t{kHidden} * kHidden);
  auto qkv = std::make_shared<std::vector<float>>(normal(size_t{kRows} * 3 * kDim, 4, 1.f));
  auto dqkv = std::make_shared<std::vector<float>>(qkv->size());
  auto probs = std::make_shared<std::vector<float>>(size_t{kBatch} * kHeads * kSeq * kSeq);
  auto stats = std::make_shared<std::vector<float>>(2 * kRows);
  auto gain = std::make_shared<std::vector<float>>(kHidden, 1.f);
  auto bias = std::make_shared<std::vector<float>>(kHidden, 0.f);
  auto labels = std::make_shared<std::vector<int32_t>>(kRows);
  auto correct = std::make_shared<std::vector<int32_t>>(kRows);
  for (int i = 0; i < kRows; ++i) (*labels)[i] = (i * 7) % kVocab;
  std::vector<Op> ops;
  // A linear layer in -> out over every row: forward, weight gradient, input gradient.
  auto linear = [&](const std::string& name, int in, int out, int calls) {
    ops.push_back({name + " fwd", calls, [=] { cpu::gemm(false, true, kRows, out, in, 1.f, x->data(), w->data(), 0.f, y->data()); }});
    ops.push_back({name + " dW", calls, [=] { cpu::gemm(true, false, out, in, kRows, 1.f, dy->data(), x->data(), 1.f, dw->data()); }});
    ops.push_back({name + " dx", calls, [=] { cpu::gemm(false, false, kRows, in, out, 1.f, dy->data(), w->data(), 0.f, y->data()); }});
  };
  linear("linear qkv 128->384", kDim, 3 * kDim, kLayers);
  linear("linear proj 128->128", kDim, kDim, kLayers);
  linear("linear fc 128->512", kDim, kHidden, kLayers);
  linear("linear mproj 512->128", kHidden, kDim, kLayers);
  linear("lm head 128->256", kDim, kVocab, 1);
  ops.push_back({"attention fwd", kLayers, [=] {
                   cpu::causalAttentionForward(qkv->data(), kBatch, kSeq, kHeads, kHeadDim, y->data(), probs->data());
                 }});
  ops.push_back({"attention bwd", kLayers, [=] {
                   cpu::causalAttentionBackward(qkv->data(), probs->data(), dy->data(), kBatch, kSeq, kHeads, kHeadDim,
                                                dqkv->data());
                 }});
  const size_t act = size_t{kRows} * kHidden;
  ops.push_back({"gelu fwd", kLayers, [=] { cpu::activationForward(Activation::kGeluTanh, x->data(), y->data(), act); }});
  ops.push_back({"gelu bwd", kLayers, [=] {
                   cpu::activationBackward(Activation::kGeluTanh, x->data(), y->data(), dy->data(), dx->data(), act);
                 }});
  const int norms = 2 * kLayers + 1;
  ops.push_back({"layernorm fwd", norms, [=] {
                   cpu::layerNormForward(x->data(), gain->data(), bias->data(), kRows, kDim, 1e-5f, y->data(),
                                         stats->data(), stats->data() + kRows);
                 }});
  ops.push_back({"layernorm bwd", norms, [=] {
                   cpu::layerNormBackward(x->data(), gain->data(), stats->data(), stats->data() + kRows, dy->data(), kRows,
                                          kDim, y->data(), dw->data(), dw->data() + kDim, true);
                 }});
  ops.push_back({"cross-entropy", 1, [=] {
                   cpu::crossEntropyInPlace(y->data(), labels->data(), kRows, kVocab, 1.f, stats->data(), correct->data());
                 }});
  return ops;
}

}  // namespace

int main(int argc, char** argv) {
  bool json = false;
  int reps = 20;
  for (ddp::bench::ArgReader a(argc, argv, "bench_gpt_ops"); a.next();) {
    if (a.flag() == "--json") json = true;
    else if (a.flag() == "--reps") reps = std::max(1, std::atoi(a.value().c_str()));
    else {
      std::fprintf(stderr, "usage: bench_gpt_ops [--json] [--reps N]\n");
      return 2;
    }
  }
  setCpuThreads(1);
  if (!json) std::printf("%-26s %10s %11s %10s\n", "op", "ms/call", "calls/step", "ms/step");
  double total = 0;
  for (const Op& op : stepOps()) {
    op.run();
    const double start = cpuMs();
    for (int i = 0; i < reps; ++i) op.run();
    const double perCall = (cpuMs() - start) / reps, perStep = perCall * op.callsPerStep;
    total += perStep;
    if (json) {
      ddp::bench::JsonLine().add("bench", "gpt_ops").add("op", op.name).add("ms_per_call", perCall)
          .add("calls_per_step", op.callsPerStep).add("ms_per_step", perStep).print();
    } else {
      std::printf("%-26s %10.3f %11d %10.2f\n", op.name.c_str(), perCall, op.callsPerStep, perStep);
    }
  }
  if (json) {
    ddp::bench::JsonLine().add("bench", "gpt_ops").add("op", "total").add("ms_per_step", total).print();
  } else {
    std::printf("%-26s %10s %11s %10.2f\n", "total", "", "", total);
  }
  return 0;
}
