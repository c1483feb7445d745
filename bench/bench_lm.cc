// bench_lm: the GPT's training step on one GPU with fp32 and with bf16 matmuls (spec.precision;
// Note [bf16 matmuls] in kernels/bf16_ops.h), its tokens per second and its model FLOPs
// utilisation against the card's peak for that precision (docs/TRAINING.md, "Language-model
// figures"). The GPU check (scripts/gpu_check.sh) runs it.
//
//   build/bin/bench_lm [--json] [--steps 10] [--batch 8] [--context 1024] [--layers 12]
//                      [--heads 12] [--dmodel 768] [--vocab 50304] [--precision fp32,bf16] [--cpu]
//
// Default shape: GPT-2 small (124 M parameters with the tied embedding; the vocabulary padded
// to a multiple of 64). A step is Gpt::forwardBackward of --batch random windows after zeroGrad
// (forward, loss, backward; no optimizer step, no communication: the model's own FLOPs), timed
// on the host around the call, which returns once the step's loss has reached the host; each
// figure is the median of --steps steps after two warm-ups. mfu = gptFlopsPerToken x tokens/s /
// peak, the peak from gpuPeakFlopsF32 / gpuPeakFlopsBf16 by the card's name (absent when the
// table does not know the card).
// JSON lines: {"bench":"lm","model":"gpt_fp32"|"gpt_bf16","precision","device","params","batch",
//   "context","ms_per_step","tokens_per_s","flops_per_token","peak_tflops","mfu"}, then
//   {"bench":"lm","model":"bf16_speedup","ratio"} (fp32 step time over bf16's) when both ran.
// No CUDA device: "bench_lm: skipped: ..." on stderr and exit status 77, before allocating.
// --cpu runs the same steps on the CPU layer ops (one thread; no peak, so no MFU): a smoke run
// of the program where there is no GPU, with a small --layers/--dmodel/--context.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench/common/bench_args.h"
#include "bench/common/json_line.h"
#include "common/split_mix_rng.h"
#include "kernels/layer_ops.h"
#include "worker/model/gpt.h"
#include "worker/training/model_flops.h"

namespace ddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  bool json = false, cpu = false;
  int steps = 10, batch = 8;
  model::GptConfig shape;
  std::vector<std::string> precisions{"fp32", "bf16"};
};

struct Row {
  double msPerStep = 0, tokensPerS = 0, flopsPerToken = 0;
  size_t params = 0;
};

Result<Row> measure(const Options& o, model::GptConfig c) {
  std::unique_ptr<kernels::LayerOps> ops;
  if (o.cpu) {
    ops = kernels::makeCpuLayerOps(1);
  } else {
    DDP_ASSIGN_OR_RETURN(ops, kernels::makeCudaLayerOps(0));
  }
  DDP_ASSIGN_OR_RETURN(std::unique_ptr<model::Gpt> gpt, model::Gpt::create(c, std::move(ops), 1));
  const size_t n = static_cast<size_t>(o.batch) * c.contextLength;
  std::vector<int32_t> tokens(n), classes(n);
  SplitMixRng rng(7);
  for (size_t i = 0; i < n; ++i) {
    tokens[i] = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(c.vocabSize));
    classes[i] = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(c.vocabSize));
  }
  const model::Batch batch{o.batch, c.contextLength, nullptr, tokens.data(), classes.data(), nullptr};
  std::vector<double> ms;
  for (int s = 0; s < o.steps + 2; ++s) {
    gpt->zeroGrad();
    const auto t0 = Clock::now();
    DDP_RETURN_IF_ERROR(gpt->forwardBackward(batch).status());
    if (s >= 2) ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + static_cast<long>(ms.size() / 2), ms.end());
  Row r;
  r.msPerStep = ms[ms.size() / 2];
  r.tokensPerS = static_cast<double>(n) / (r.msPerStep / 1e3);
  r.flopsPerToken = runtime::gptFlopsPerToken(c, gpt->parameters());
  r.params = gpt->numParameters();
  return r;
}

void report(const Options& o, const std::string& precision, const std::string& device, const Row& r,
            std::optional<double> peak) {
  const double mfu = peak ? runtime::modelFlopsUtilisation(r.flopsPerToken, r.tokensPerS, 1, *peak) : 0;
  if (o.json) {
    JsonLine line;
    line.add("bench", "lm").add("model", "gpt_" + precision).add("precision", precision).add("device", device);
    line.add("params", static_cast<int64_t>(r.params)).add("batch", o.batch).add("context", o.shape.contextLength);
    line.add("ms_per_step", r.msPerStep).add("tokens_per_s", r.tokensPerS).add("flops_per_token", r.flopsPerToken);
    if (peak) line.add("peak_tflops", *peak / 1e12).add("mfu", mfu);
    line.print();
  } else {
    char mfuText[48] = "unknown (no peak for this device)";
    if (peak) std::snprintf(mfuText, sizeof mfuText, "%.1f%% of %.0f TFLOP/s", 100 * mfu, *peak / 1e12);
    std::printf("gpt %-5s %s: %zu params, %d x %d tokens: %9.2f ms/step %10.0f tokens/s  MFU %s\n", precision.c_str(),
                device.c_str(), r.params, o.batch, o.shape.contextLength, r.msPerStep, r.tokensPerS, mfuText);
  }
}

Options parse(int argc, char** argv) {
  Options o;
  o.shape.vocabSize = 50304;
  o.shape.contextLength = 1024;
  o.shape.layers = 12;
  o.shape.heads = 12;
  o.shape.dModel = 768;
  for (ArgReader a(argc, argv, "bench_lm"); a.next();) {
    const std::string& f = a.flag();
    auto number = [&] { return std::max(1, std::atoi(a.value().c_str())); };
    if (f == "--json") o.json = true;
    else if (f == "--cpu") o.cpu = true;
    else if (f == "--steps") o.steps = number();
    else if (f == "--batch") o.batch = number();
    else if (f == "--context") o.shape.contextLength = number();
    else if (f == "--layers") o.shape.layers = number();
    else if (f == "--heads") o.shape.heads = number();
    else if (f == "--dmodel") o.shape.dModel = number();
    else if (f == "--vocab") o.shape.vocabSize = std::max(2, number());
    else if (f == "--precision") o.precisions = splitList(a.value());
    else {
      std::fprintf(stderr, "bench_lm: unknown flag %s\n", f.c_str());
      std::exit(2);
    }
  }
  for (const std::string& p : o.precisions) {
    if (p != "fp32" && p != "bf16") {
      std::fprintf(stderr, "bench_lm: --precision: %s is not fp32 or bf16\n", p.c_str());
      std::exit(2);
    }
  }
  return o;
}

int run(int argc, char** argv) {
  const Options o = parse(argc, argv);
  if (!o.cpu && kernels::cudaDeviceCount() == 0) {
    std::fprintf(stderr, "bench_lm: skipped: no CUDA device is visible\n");
    return 77;
  }
  auto name = o.cpu ? Result<std::string>(unimplemented("cpu: no peak")) : runtime::cudaDeviceName(0);
  const std::string device = o.cpu ? "cpu" : name.isOk() ? *name : "unknown";
  std::map<std::string, double> msPerStep;
  for (const std::string& p : o.precisions) {
    model::GptConfig c = o.shape;
    c.precision = p == "bf16" ? model::GptPrecision::kBf16 : model::GptPrecision::kFp32;
    auto row = measure(o, c);
    if (!row.isOk()) {
      std::fprintf(stderr, "bench_lm: gpt %s: %s\n", p.c_str(), row.status().toString().c_str());
      return 1;
    }
    const std::optional<double> peak =
        !name.isOk() ? std::nullopt : p == "bf16" ? runtime::gpuPeakFlopsBf16(*name) : runtime::gpuPeakFlopsF32(*name);
    report(o, p, device, *row, peak);
    msPerStep[p] = row->msPerStep;
  }
  if (msPerStep.count("fp32") && msPerStep.count("bf16")) {
    const double ratio = msPerStep["fp32"] / msPerStep["bf16"];
    if (o.json) {
      JsonLine().add("bench", "lm").add("model", "bf16_speedup").add("ratio", ratio).print();
    } else {
      std::printf("bf16 step %.2fx as fast as fp32\n", ratio);
    }
  }
  return 0;
}

}  // namespace
}  // namespace ddp::bench

int main(int argc, char** argv) { return ddp::bench::run(argc, argv); }
