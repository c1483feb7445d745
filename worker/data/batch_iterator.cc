#include "worker/data/batch_iterator.h"

#include <algorithm>
#include <cstring>

namespace ddp::data {

bool BatchIterator::next(Batch* out) {
  if (batchSize_ <= 0) return false;
  const int64_t avail = sampler_.remaining();
  if (avail <= 0 || (dropLast_ && avail < batchSize_)) return false;
  const std::vector<int64_t> idx = sampler_.next(batchSize_);
  const int64_t numel = dataset_.sampleNumel();
  out->size = static_cast<int>(idx.size());
  if (out->images.size() < idx.size() * numel) out->images.resize(idx.size() * numel);
  const bool values = dataset_.floatTargets;
  if (!values && out->labels.size() < idx.size()) out->labels.resize(idx.size());
  if (values && out->values.size() < idx.size()) out->values.resize(idx.size());
  for (size_t i = 0; i < idx.size(); ++i) {
    dataset_.copySamples(idx[i], 1, out->images.data() + i * numel);
    if (values) {
      out->values[i] = dataset_.values[idx[i]];
    } else {
      out->labels[i] = dataset_.labels[idx[i]];
    }
  }
  return true;
}

int64_t BatchIterator::batchesPerEpoch() const {
  if (batchSize_ <= 0) return 0;
  const int64_t n = sampler_.numSamples();
  return dropLast_ ? n / batchSize_ : (n + batchSize_ - 1) / batchSize_;
}

}  // namespace ddp::data
