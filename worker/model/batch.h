#pragma once
// Note [Typed batches]
// What a training or evaluation step hands a model, typed by what the data holds: float features
// (Fashion-MNIST pixels, synthetic clusters, a user's NPY or CSV columns) or int32 token ids (a
// language model's windows), and targets that are int32 classes (one per sample, or one per
// token) or float values (regression). All pointers are host memory, row-major, valid for the
// duration of the call; a model uploads what it needs. Exactly one of features / tokens is set,
// and exactly one of classes / values.
// Thread model: a plain view.

#include <cstdint>

namespace ddp::model {

struct Batch {
  int size = 0;                       // samples in the batch
  int tokensPerSample = 0;            // tokens: the window length T (0 for features)
  const float* features = nullptr;    // size x numel(input shape)
  const int32_t* tokens = nullptr;    // size x tokensPerSample token ids
  const int32_t* classes = nullptr;   // one per sample, or one per token (size x tokensPerSample)
  const float* values = nullptr;      // float targets (regression), one per sample
};

}  // namespace ddp::model
