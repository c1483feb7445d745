#pragma once
// BatchIterator: turns a rank's sampler positions into (images, labels) batches copied out of a
// Dataset. Batch buffers are reused (no allocation after the first batch of each size).
// Thread model: one thread; the dataset must outlive the iterator and stay unchanged.

#include <cstdint>
#include <vector>

#include "worker/data/dataset.h"
#include "worker/data/distributed_sampler.h"

namespace ddp::data {

struct Batch {
  int size = 0;                  // samples in this batch
  std::vector<float> images;     // size * sampleNumel values (capacity may be larger)
  std::vector<int32_t> labels;   // size labels (capacity may be larger); class targets
  std::vector<float> values;     // size float targets instead (Dataset::floatTargets)
};

class BatchIterator {
 public:
  // dropLastBatch: a final batch smaller than batchSize is not returned.
  BatchIterator(const Dataset& dataset, DistributedSampler& sampler, int batchSize,
                bool dropLastBatch = false)
      : dataset_(dataset), sampler_(sampler), batchSize_(batchSize), dropLast_(dropLastBatch) {}

  // Fills `out` with the next batch; false at the end of the sampler's epoch.
  bool next(Batch* out);
  // Batches this epoch will yield in total (from the epoch's start).
  int64_t batchesPerEpoch() const;
  int batchSize() const { return batchSize_; }

 private:
  const Dataset& dataset_;
  DistributedSampler& sampler_;
  int batchSize_;
  bool dropLast_;
};

}  // namespace ddp::data
