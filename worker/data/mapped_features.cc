// Note [Mapped features] (mapped_features.h).
#include "worker/data/mapped_features.h"

namespace ddp::data {

void MappedFeatures::copy(int64_t row, int64_t n, int64_t numel, float* out) const {
  file->toFloat((firstRow + row) * numel, n * numel, out);
  if (shift.empty()) return;
  const bool one = shift.size() == 1;
  for (int64_t i = 0; i < n; ++i) {
    float* x = out + i * numel;
    for (int64_t j = 0; j < numel; ++j) {
      const size_t k = one ? 0 : static_cast<size_t>(j);
      x[j] = (x[j] - shift[k]) * scale[k];
    }
  }
}

}  // namespace ddp::data
