#pragma once
// TrainableModel: what the trainer drives, whatever the model (docs/MODELS.md). The classifiers
// (Module: MLP, CNN, a user's module) and the language model (Gpt) both implement it, so one step
// loop trains either; what differs is the batch they read (Note [Typed batches] in batch.h).
// Contract:
//  - parameters(): a stable list for the model's life; an index there is the index passed to
//    GradReadyFn, and backward reports every index once, in strictly descending order.
//  - forwardBackward(batch, ready, gradScale, dropoutSeed): forward, the loss (mean over the
//    batch's targets, times gradScale) and backward, accumulating into Parameter::grad (read
//    afresh each time: worker/core/parameter.h). Returns the loss summed over the targets, the
//    correct guesses and the target count (samples for a classifier, tokens for a language
//    model). `dropoutSeed` seeds the step's dropout (models without dropout ignore it).
//  - evaluate(batch): forward and loss only, no dropout.
//  - status(): the first device error (Note [Sticky device errors] in kernels/layer_ops.h).
// Thread model: one training thread; GradReadyFn runs on it, inside forwardBackward().

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"
#include "worker/model/batch.h"

namespace ddp::model {

// Loss and accuracy summed over a batch (or a whole evaluation pass).
struct BatchStats {
  double lossSum = 0;
  int64_t correct = 0;
  int64_t count = 0;
  double meanLoss() const { return count ? lossSum / static_cast<double>(count) : 0.0; }
  double accuracy() const { return count ? static_cast<double>(correct) / count : 0.0; }
  BatchStats& operator+=(const BatchStats& o) {
    lossSum += o.lossSum;
    correct += o.correct;
    count += o.count;
    return *this;
  }
};

class TrainableModel {
 public:
  virtual ~TrainableModel() = default;

  virtual std::string describe() const = 0;
  virtual std::vector<Parameter*> parameters() = 0;
  virtual void zeroGrad() = 0;
  virtual size_t numParameters() = 0;
  virtual kernels::LayerOps& ops() = 0;
  virtual Status status() const = 0;
  Device device() { return ops().device(); }
  // Preallocates activations for batches up to `batch` samples (optional).
  virtual void reserve(int /*batch*/) {}

  virtual Result<BatchStats> forwardBackward(const Batch& batch, const GradReadyFn& ready = {}, float gradScale = 1.f,
                                             uint64_t dropoutSeed = 0) = 0;
  virtual Result<BatchStats> evaluate(const Batch& batch) = 0;
};

}  // namespace ddp::model
