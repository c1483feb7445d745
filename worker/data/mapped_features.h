#pragma once
// Note [Mapped features]
// An NPY dataset's features stay in the mapped file (common/datafiles/npy_file.h): a Dataset
// holds a view of rows [firstRow, firstRow + size()) and converts a sample to float only when a
// batch or an evaluation copies it, so a file of uint8 images costs its size in page cache, not
// four times that in heap. Standardization (Note [Standardization]) is applied during that copy,
// x -> (x - shift) * scale with scale = 1 / std: the same float operations as standardizing an
// in-memory matrix, so both give the same bits. Holding out the validation split and
// spec.data.limit narrow the view; nothing is copied.
// Thread model: read-only after construction; any number of threads may copy at once.

#include <cstdint>
#include <memory>
#include <vector>

#include "common/datafiles/npy_file.h"

namespace ddp::data {

struct MappedFeatures {
  std::shared_ptr<const datafiles::MappedNpy> file;
  int64_t firstRow = 0;
  std::vector<float> shift;  // one value, one per feature, or empty (no standardization)
  std::vector<float> scale;

  // Samples [row, row + n) of the view, `numel` values each, into out.
  void copy(int64_t row, int64_t n, int64_t numel, float* out) const;
};

}  // namespace ddp::data
