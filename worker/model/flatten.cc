#include "worker/model/flatten.h"

namespace ddp::model {

Flatten::Flatten(kernels::LayerOps* ops, const Shape& in) : Layer(ops, in) { outputShape_ = {shapeNumel(in)}; }

void Flatten::forward(const float* x, float* y, int batch) {
  ops_->copyOnDevice(y, x, static_cast<size_t>(batch) * shapeNumel(inputShape_) * sizeof(float));
}

void Flatten::backward(const float* /*x*/, const float* /*y*/, const float* dy, float* dx, int batch,
                       const GradReadyFn& /*ready*/, size_t /*offset*/) {
  if (dx != nullptr) ops_->copyOnDevice(dx, dy, static_cast<size_t>(batch) * shapeNumel(inputShape_) * sizeof(float));
}

}  // namespace ddp::model
