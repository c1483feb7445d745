#include "worker/model/activation_layer.h"

namespace ddp::model {

ActivationLayer::ActivationLayer(kernels::LayerOps* ops, const Shape& in, kernels::Activation a)
    : Layer(ops, in), act_(a) {
  outputShape_ = in;
}

std::string ActivationLayer::describe() const {
  return std::string("Activation(") + kernels::activationName(act_) + ")";
}

void ActivationLayer::forward(const float* x, float* y, int batch) {
  ops_->activationForward(act_, x, y, static_cast<size_t>(batch) * shapeNumel(inputShape_));
}

void ActivationLayer::backward(const float* x, const float* y, const float* dy, float* dx,
                               int batch, const GradReadyFn& /*ready*/, size_t /*offset*/) {
  if (dx == nullptr) return;
  ops_->activationBackward(act_, x, y, dy, dx, static_cast<size_t>(batch) * shapeNumel(inputShape_));
}

}  // namespace ddp::model
