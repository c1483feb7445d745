#pragma once
// Dataset: an in-memory dataset (features as float, targets as int32 class labels or, with
// floatTargets, float values), the form every source (Fashion-MNIST and other IDX files, NPY
// and CSV files, synthetic data) is loaded into.
// Thread model: a plain value; read-only while training threads use it.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace ddp::data {

struct Dataset {
  std::string name;
  std::vector<int64_t> sampleShape;  // per-sample, e.g. {1, 28, 28}
  int classes = 0;
  std::vector<float> images;         // size() * sampleNumel() values, sample-major
  std::vector<int32_t> labels;       // size() labels in [0, classes) (not floatTargets)
  bool floatTargets = false;         // regression: `values` instead of `labels`
  std::vector<float> values;         // size() float targets (floatTargets)

  int64_t size() const { return static_cast<int64_t>(floatTargets ? values.size() : labels.size()); }
  int64_t sampleNumel() const;
  const float* sample(int64_t i) const { return images.data() + i * sampleNumel(); }

  // Mean and standard deviation over every pixel of every sample.
  void meanStd(double* mean, double* stddev) const;
  // x <- (x - mean) / stddev for every value (stddev > 0).
  void normalize(float mean, float stddev);
  // The first n samples (n clamped to size()).
  Dataset head(int64_t n) const;
  // Checks shapes, sizes and the label range; names what is wrong.
  Status validate() const;
};

}  // namespace ddp::data
