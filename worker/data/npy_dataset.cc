#include "worker/data/npy_dataset.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <memory>
#include <vector>

#include "common/datafiles/npy_file.h"

namespace ddp::data {
namespace {

using datafiles::MappedNpy;
using datafiles::NpyDType;

// Every feature finite: one pass over the mapped file (paged in, not copied to the heap).
Status checkFeatures(const MappedNpy& f, int64_t numel) {
  if (!datafiles::npyDTypeIsFloat(f.header().dtype)) return Status::ok();  // bytes are finite
  constexpr int64_t kChunk = 1 << 16;
  std::vector<float> buf(static_cast<size_t>(kChunk));
  const int64_t n = f.header().count();
  for (int64_t at = 0; at < n; at += kChunk) {
    const int64_t m = std::min(kChunk, n - at);
    f.toFloat(at, m, buf.data());
    for (int64_t i = 0; i < m; ++i) {
      if (std::isfinite(buf[i])) continue;
      const int64_t k = at + i;
      return invalidArgument(f.path() + ": feature " + std::to_string(k % numel) + " of sample " +
                             std::to_string(k / numel) + " is not a finite float (" + std::to_string(f.at(k)) + ")");
    }
  }
  return Status::ok();
}

Status readTargets(const MappedNpy& t, Dataset* d) {
  const int64_t n = t.header().count();
  d->floatTargets = datafiles::npyDTypeIsFloat(t.header().dtype);
  if (d->floatTargets) d->values.resize(static_cast<size_t>(n));
  else d->labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double v = t.at(i);
    if (d->floatTargets) {
      d->values[i] = static_cast<float>(v);
      if (!std::isfinite(d->values[i])) {
        return invalidArgument(t.path() + ": target " + std::to_string(i) + " is not a finite float (" +
                               std::to_string(v) + ")");
      }
    } else {
      if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
        return invalidArgument(t.path() + ": class label " + std::to_string(static_cast<int64_t>(v)) + " at index " +
                               std::to_string(i) + " is not in [0, 2^31)");
      }
      d->labels[i] = static_cast<int32_t>(v);
    }
  }
  return Status::ok();
}

}  // namespace

Result<Dataset> loadNpyDataset(const std::string& featuresPath, const std::string& targetsPath) {
  DDP_ASSIGN_OR_RETURN(MappedNpy mappedFeatures, MappedNpy::open(featuresPath));
  auto features = std::make_shared<const MappedNpy>(std::move(mappedFeatures));
  DDP_ASSIGN_OR_RETURN(MappedNpy targets, MappedNpy::open(targetsPath));
  const auto& fh = features->header();
  if (fh.shape.empty()) return invalidArgument(featuresPath + ": a scalar; features are an array of samples (N, ...)");
  if (fh.dtype == NpyDType::kI32 || fh.dtype == NpyDType::kI64) {
    return invalidArgument(featuresPath + ": dtype " + std::string(datafiles::npyDTypeName(fh.dtype)) +
                           " (features are '<f4', '<f8' or '|u1')");
  }
  const auto& ts = targets.header().shape;
  if (ts.empty() || ts.size() > 2 || (ts.size() == 2 && ts[1] != 1)) {
    return invalidArgument(targetsPath + ": expected one target per sample, shape (N,) or (N, 1)");
  }
  if (ts[0] != fh.rows()) {
    return invalidArgument(targetsPath + " has " + std::to_string(ts[0]) + " targets but " + featuresPath + " has " +
                           std::to_string(fh.rows()) + " samples");
  }
  Dataset d;
  d.name = targetsPath;
  d.sampleShape = fh.trailingShape();
  if (d.sampleShape.empty()) d.sampleShape = {1};
  DDP_RETURN_IF_ERROR(checkFeatures(*features, std::max<int64_t>(1, d.sampleNumel())));
  DDP_RETURN_IF_ERROR(readTargets(targets, &d));
  d.mapped = MappedFeatures{std::move(features), 0, {}, {}};
  return d;
}

}  // namespace ddp::data
