#include "worker/data/dataset.h"

#include <algorithm>
#include <cmath>

namespace ddp::data {

int64_t Dataset::sampleNumel() const {
  int64_t n = 1;
  for (int64_t d : sampleShape) n *= d;
  return n;
}

void Dataset::meanStd(double* mean, double* stddev) const {
  double s = 0, s2 = 0;
  for (float v : images) {
    s += v;
    s2 += static_cast<double>(v) * v;
  }
  const double n = images.empty() ? 1.0 : static_cast<double>(images.size());
  *mean = s / n;
  *stddev = std::sqrt(std::max(0.0, s2 / n - (*mean) * (*mean)));
}

void Dataset::normalize(float mean, float stddev) {
  const float inv = 1.f / stddev;
  for (float& v : images) v = (v - mean) * inv;
}

Dataset Dataset::head(int64_t n) const {
  n = std::clamp<int64_t>(n, 0, size());
  Dataset d;
  d.name = name;
  d.sampleShape = sampleShape;
  d.classes = classes;
  d.floatTargets = floatTargets;
  d.images.assign(images.begin(), images.begin() + n * sampleNumel());
  if (floatTargets) {
    d.values.assign(values.begin(), values.begin() + n);
  } else {
    d.labels.assign(labels.begin(), labels.begin() + n);
  }
  return d;
}

Status Dataset::validate() const {
  if (sampleShape.empty() || sampleNumel() <= 0) {
    return invalidArgument("dataset " + name + ": empty sample shape");
  }
  if (static_cast<int64_t>(images.size()) != size() * sampleNumel()) {
    return invalidArgument("dataset " + name + ": " + std::to_string(images.size()) +
                           " feature values for " + std::to_string(size()) + " samples of " +
                           std::to_string(sampleNumel()) + " values each");
  }
  if (floatTargets) return Status::ok();
  for (int64_t i = 0; i < size(); ++i) {
    if (labels[i] < 0 || labels[i] >= classes) {
      return invalidArgument("dataset " + name + ": label " + std::to_string(labels[i]) +
                             " of sample " + std::to_string(i) + " is outside [0, " +
                             std::to_string(classes) + ")");
    }
  }
  return Status::ok();
}

}  // namespace ddp::data
