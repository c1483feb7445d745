#include "worker/data/dataset.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

void Dataset::copySamples(int64_t first, int64_t n, float* out) const {
  const int64_t numel = sampleNumel();
  if (mapped) {
    mapped->copy(first, n, numel, out);
  } else {
    std::memcpy(out, images.data() + first * numel, static_cast<size_t>(n * numel) * sizeof(float));
  }
}

std::vector<float> Dataset::features() const {
  std::vector<float> out(static_cast<size_t>(size() * sampleNumel()));
  if (!out.empty()) copySamples(0, size(), out.data());
  return out;
}

Dataset Dataset::slice(int64_t first, int64_t n) const {
  first = std::clamp<int64_t>(first, 0, size());
  n = std::clamp<int64_t>(n, 0, size() - first);
  Dataset d;
  d.name = name;
  d.sampleShape = sampleShape;
  d.classes = classes;
  d.floatTargets = floatTargets;
  if (mapped) {
    d.mapped = mapped;
    d.mapped->firstRow += first;
  } else {
    d.images.assign(images.begin() + first * sampleNumel(), images.begin() + (first + n) * sampleNumel());
  }
  if (floatTargets) {
    d.values.assign(values.begin() + first, values.begin() + first + n);
  } else {
    d.labels.assign(labels.begin() + first, labels.begin() + first + n);
  }
  return d;
}

Status Dataset::validate() const {
  if (sampleShape.empty() || sampleNumel() <= 0) {
    return invalidArgument("dataset " + name + ": empty sample shape");
  }
  if (mapped) {
    const int64_t rows = mapped->file->header().count() / sampleNumel();
    if (mapped->firstRow + size() > rows) {
      return invalidArgument("dataset " + name + ": a view of " + std::to_string(size()) + " samples from row " +
                             std::to_string(mapped->firstRow) + " of " + std::to_string(rows));
    }
  } else if (static_cast<int64_t>(images.size()) != size() * sampleNumel()) {
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
