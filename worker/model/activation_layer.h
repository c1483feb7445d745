#pragma once
// ActivationLayer: elementwise relu / tanh / gelu (or identity).
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

class ActivationLayer final : public Layer {
 public:
  ActivationLayer(kernels::LayerOps* ops, const Shape& in, kernels::Activation a);
  std::string describe() const override;
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  kernels::Activation act_;
};


}  // namespace ddp::model
