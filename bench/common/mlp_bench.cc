#include "bench/common/mlp_bench.h"

#include <algorithm>
#include <random>

#include "kernels/layer_ops.h"

namespace ddp::bench {

Result<std::unique_ptr<model::Sequential>> buildBenchMlp(int batch) {
  model::MlpConfig cfg;
  cfg.inputs = kMlpInputs;
  cfg.hidden = {2048, 2048, 2048, 2048};
  cfg.classes = kMlpClasses;
  model::ModelOptions mo;
  mo.seed = 7;
  mo.cpuThreads = 1;
  DDP_ASSIGN_OR_RETURN(auto model, model::buildMlp(cfg, mo));
  kernels::setCpuThreads(1);
  model->reserve(batch);
  return model;
}

SyntheticBatches::SyntheticBatches(int rank, int batch)
    : batch_(batch),
      images_(static_cast<size_t>(kSyntheticBatches) * batch * kMlpInputs),
      labels_(static_cast<size_t>(kSyntheticBatches) * batch) {
  std::mt19937 rng(1234 + rank);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int32_t> label(0, kMlpClasses - 1);
  for (auto& x : images_) x = normal(rng);
  for (auto& y : labels_) y = label(rng);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace ddp::bench
