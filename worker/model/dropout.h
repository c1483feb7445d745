#pragma once
// Dropout: while training, zeroes each value with probability p and scales the others by
// 1/(1-p), with the counter-based mask of the transformer ops (Note [Dropout mask] in
// kernels/transformer_ops.h) seeded by mix(step seed, salt): the trainer's step seed comes from
// the job's seed, the rank's slice of the batch and the step, so a rerun or a resumed run draws
// the same masks; `salt` tells the model's dropout layers apart. In evaluation, the identity.
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

class Dropout final : public Layer {
 public:
  Dropout(kernels::LayerOps* ops, const Shape& in, float p, uint64_t salt);
  std::string describe() const override { return "Dropout(p " + std::to_string(p_) + ")"; }
  void setTraining(bool training, uint64_t seed) override;
  // Its mask is drawn by element position in the batch: no sample chunks (Note [Sample chunks]).
  int64_t sampleFloats() const override { return p_ > 0.f ? 0 : shapeNumel(outputShape_); }
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  float p_;
  uint64_t salt_;
  bool training_ = false;
  uint64_t seed_ = 0;
};

}  // namespace ddp::model
