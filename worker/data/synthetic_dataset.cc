#include "worker/data/synthetic_dataset.h"

#include <cmath>

#include "common/split_mix_rng.h"

namespace ddp::data {

Status SyntheticConfig::validate() const {
  if (samples < 0) return invalidArgument("synthetic: samples must be >= 0");
  if (classes < 2) return invalidArgument("synthetic: classes must be >= 2");
  if (sampleShape.empty()) return invalidArgument("synthetic: sampleShape must not be empty");
  for (int64_t d : sampleShape) {
    if (d <= 0) return invalidArgument("synthetic: sampleShape entries must be > 0");
  }
  if (!(noise >= 0.f) || !(separation >= 0.f)) {
    return invalidArgument("synthetic: noise and separation must be >= 0");
  }
  return Status::ok();
}

Result<Dataset> makeSyntheticDataset(const SyntheticConfig& config, SyntheticSplit split) {
  DDP_RETURN_IF_ERROR(config.validate());
  Dataset d;
  d.name = split == SyntheticSplit::kTrain ? "synthetic/train" : "synthetic/test";
  d.sampleShape = config.sampleShape;
  d.classes = config.classes;
  const int64_t dim = d.sampleNumel();
  // Centers: N(0, s^2) per value with s = separation / sqrt(2 dim), so that the distance
  // between two centers is about `separation`.
  std::vector<float> centers(static_cast<size_t>(config.classes) * dim);
  SplitMixRng centerRng(SplitMixRng::mix(config.seed, 0));
  const float s = config.separation / std::sqrt(2.f * static_cast<float>(dim));
  for (float& c : centers) c = s * centerRng.normal();
  SplitMixRng rng(SplitMixRng::mix(config.seed, static_cast<uint64_t>(split)));
  d.images.resize(static_cast<size_t>(config.samples * dim));
  d.labels.resize(static_cast<size_t>(config.samples));
  for (int64_t i = 0; i < config.samples; ++i) {
    const int32_t label = static_cast<int32_t>(rng.below(config.classes));
    d.labels[i] = label;
    const float* c = centers.data() + label * dim;
    float* x = d.images.data() + i * dim;
    for (int64_t j = 0; j < dim; ++j) x[j] = c[j] + config.noise * rng.normal();
  }
  return d;
}

}  // namespace ddp::data
