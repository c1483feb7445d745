#include "worker/model/dropout.h"

#include "common/split_mix_rng.h"

namespace ddp::model {

Dropout::Dropout(kernels::LayerOps* ops, const Shape& in, float p, uint64_t salt) : Layer(ops, in), p_(p), salt_(salt) {
  outputShape_ = in;
}

void Dropout::setTraining(bool training, uint64_t seed) {
  training_ = training;
  seed_ = SplitMixRng::mix(seed, salt_);
}

void Dropout::forward(const float* x, float* y, int batch) {
  const size_t n = static_cast<size_t>(batch) * shapeNumel(inputShape_);
  if (training_ && p_ > 0.f) {
    ops_->dropoutForward(x, y, n, p_, seed_);
  } else {
    ops_->copyOnDevice(y, x, n * sizeof(float));
  }
}

void Dropout::backward(const float* /*x*/, const float* /*y*/, const float* dy, float* dx, int batch,
                       const GradReadyFn& /*ready*/, size_t /*offset*/) {
  if (dx == nullptr) return;
  const size_t n = static_cast<size_t>(batch) * shapeNumel(inputShape_);
  if (training_ && p_ > 0.f) {
    ops_->dropoutBackward(dy, dx, n, p_, seed_);
  } else {
    ops_->copyOnDevice(dx, dy, n * sizeof(float));
  }
}

}  // namespace ddp::model
