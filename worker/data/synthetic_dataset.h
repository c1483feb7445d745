#pragma once
// A deterministic, learnable synthetic classification dataset: Gaussian clusters. Each class
// has a center drawn from the seed; a sample is its class center plus N(0, noise^2) per value.
// Centers depend only on `seed`, samples on (seed, split), so the train and test splits share
// the classes and differ in samples. Two classes overlap by about Phi(-separation / (2 noise))
// (6 / 1: 0.1%, a nearly separable problem; 3 / 1: 7%, a harder one).
// Thread model: plain functions.

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "worker/data/dataset.h"

namespace ddp::data {

struct SyntheticConfig {
  int64_t samples = 4096;
  std::vector<int64_t> sampleShape = {784};  // e.g. {784} or {1, 28, 28}
  int classes = 10;
  float separation = 6.0f;  // distance between two class centers (about), in noise units
  float noise = 1.0f;       // per-value standard deviation around the center
  uint64_t seed = 0;
  Status validate() const;
};

enum class SyntheticSplit : uint64_t { kTrain = 1, kTest = 2 };

// Same config and split -> bitwise-identical dataset.
Result<Dataset> makeSyntheticDataset(const SyntheticConfig& config,
                                     SyntheticSplit split = SyntheticSplit::kTrain);

}  // namespace ddp::data
