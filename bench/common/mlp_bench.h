#pragma once
// The training benchmarks' workload (bench_ddp_step, bench_optim): the MLP 1024 -> 2048 x4 -> 10
// (about 14.7M parameters) with one compute thread, and a rank's synthetic data set of
// kSyntheticBatches batches, cycled by the step loop.
// Thread model: plain functions and values; call from the benchmark's main thread.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/status.h"
#include "worker/model/mlp.h"

namespace ddp::bench {

inline constexpr int kMlpInputs = 1024;
inline constexpr int kMlpClasses = 10;
inline constexpr int kSyntheticBatches = 4;

// The MLP (seed 7, one CPU thread; also sets the kernels' CPU threads to 1), with buffers
// reserved for `batch` rows.
Result<std::unique_ptr<model::Sequential>> buildBenchMlp(int batch);

// kSyntheticBatches batches of `batch` normal(0, 1) images and uniform labels, from a generator
// seeded with 1234 + rank.
class SyntheticBatches {
 public:
  SyntheticBatches(int rank, int batch);
  // Batch b (0 <= b < kSyntheticBatches).
  const float* images(int b) const { return images_.data() + static_cast<size_t>(b) * batch_ * kMlpInputs; }
  const int32_t* labels(int b) const { return labels_.data() + static_cast<size_t>(b) * batch_; }

 private:
  int batch_;
  std::vector<float> images_;
  std::vector<int32_t> labels_;
};

// The middle element (upper median) of v; 0 if v is empty.
double median(std::vector<double> v);

}  // namespace ddp::bench
