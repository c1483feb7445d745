#pragma once
// Dataset: a dataset of float features and targets (int32 class labels or, with floatTargets,
// float values), the form every source (Fashion-MNIST and other IDX files, NPY and CSV files,
// synthetic data) is loaded into. Features are an in-memory matrix, or a view of a mapped NPY
// file converted as samples are copied (Note [Mapped features]); targets are in memory.
// Thread model: a plain value; read-only while training threads use it.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/data/mapped_features.h"

namespace ddp::data {

struct Dataset {
  std::string name;
  std::vector<int64_t> sampleShape;  // per-sample, e.g. {1, 28, 28}
  int classes = 0;
  std::vector<float> images;         // size() * sampleNumel() values, sample-major (in memory)
  std::optional<MappedFeatures> mapped;  // else: the features are in a mapped file
  std::vector<int32_t> labels;       // size() labels in [0, classes) (not floatTargets)
  bool floatTargets = false;         // regression: `values` instead of `labels`
  std::vector<float> values;         // size() float targets (floatTargets)

  int64_t size() const { return static_cast<int64_t>(floatTargets ? values.size() : labels.size()); }
  int64_t sampleNumel() const;
  bool inMemory() const { return !mapped.has_value(); }
  // In-memory features only.
  const float* sample(int64_t i) const { return images.data() + i * sampleNumel(); }
  // Samples [first, first + n) as float, from memory or the mapped file.
  void copySamples(int64_t first, int64_t n, float* out) const;
  // Every sample's features (size() x sampleNumel() values).
  std::vector<float> features() const;

  // In-memory features: mean and standard deviation over every pixel of every sample.
  void meanStd(double* mean, double* stddev) const;
  // x <- (x - mean) / stddev for every value (stddev > 0).
  void normalize(float mean, float stddev);
  // Samples [first, first + n) (clamped to size()); a mapped dataset's view narrows.
  Dataset slice(int64_t first, int64_t n) const;
  // The first n samples (n clamped to size()).
  Dataset head(int64_t n) const { return slice(0, n); }
  // Checks shapes, sizes and the label range; names what is wrong.
  Status validate() const;
};

}  // namespace ddp::data
