#pragma once
// Dataset: an in-memory classification dataset (images as float, labels as int32), the form
// every source (Fashion-MNIST IDX files, synthetic data) is loaded into.
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
  std::vector<int32_t> labels;       // size() labels in [0, classes)

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
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
