#include "worker/training/model_flops.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace ddp::runtime {

double gptFlopsPerToken(const model::GptConfig& c, const std::vector<Parameter*>& params) {
  double n = 0;
  for (const Parameter* p : params) {
    if (p->name == "embed.positions") continue;
    if (p->name == "embed.tokens" && !c.tiedEmbeddings) continue;
    n += static_cast<double>(p->numel());
  }
  return 6 * n + 12.0 * c.layers * c.contextLength * c.dModel;
}

Result<double> measureCpuPeakFlops(kernels::LayerOps& ops, int n, int runs) {
  if (!ops.device().isCpu()) return invalidArgument("measureCpuPeakFlops: a CPU LayerOps only");
  const size_t count = static_cast<size_t>(n) * static_cast<size_t>(n);
  std::vector<float> a(count, 0.5f), b(count, 0.25f), c(count, 0.f);
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r <= runs; ++r) {  // run 0 warms up
    const auto t0 = std::chrono::steady_clock::now();
    ops.gemm(false, false, n, n, n, 1.f, a.data(), b.data(), 0.f, c.data());
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, s);
  }
  DDP_RETURN_IF_ERROR(ops.status());
  if (!(best > 0)) return internalError("measureCpuPeakFlops: no time measured");
  return 2.0 * n * n * static_cast<double>(n) / best;
}

namespace {

// Dense datasheet peaks in TFLOP/s (no 2:4 sparsity): f32 without tensor cores, and bf16 on
// tensor cores (0: the card has no bf16 tensor cores). Ordered: a longer name before a shorter
// one it contains ("A100" before "A10", "L40S" before "L40" before "L4", the H100 variants
// before the SXM default).
struct Card {
  std::string_view part;
  double f32, bf16;
};
constexpr Card kCards[] = {
    {"H200", 67.0, 989.0},  {"H100 PCIe", 51.0, 756.0}, {"H100 NVL", 60.0, 835.0}, {"H100", 67.0, 989.0},
    {"A100", 19.5, 312.0},  {"A10", 31.2, 125.0},       {"L40S", 91.6, 362.0},     {"L40", 90.5, 181.0},
    {"L4", 30.3, 121.0},    {"V100-PCIE", 14.0, 0.0},   {"V100", 15.7, 0.0},       {"T4", 8.1, 0.0},
};

std::optional<double> lookup(std::string_view name, double Card::*column) {
  for (const Card& c : kCards) {
    if (name.find(c.part) == std::string_view::npos) continue;
    if (!(c.*column > 0)) return std::nullopt;
    return c.*column * 1e12;
  }
  return std::nullopt;
}

}  // namespace

std::optional<double> gpuPeakFlopsF32(std::string_view name) { return lookup(name, &Card::f32); }

std::optional<double> gpuPeakFlopsBf16(std::string_view name) { return lookup(name, &Card::bf16); }

#if !DDP_WITH_CUDA
Result<std::string> cudaDeviceName(int) { return unimplemented("cudaDeviceName: this build has no CUDA"); }
#endif

double modelFlopsUtilisation(double flopsPerToken, double tokensPerSecond, int ranks, double peakFlopsPerRank) {
  if (!(peakFlopsPerRank > 0) || ranks <= 0) return 0;
  return flopsPerToken * tokensPerSecond / (ranks * peakFlopsPerRank);
}

}  // namespace ddp::runtime
