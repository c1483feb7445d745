#pragma once
// Flatten: [C, H, W] (any per-sample shape) -> [C*H*W]; the values are copied unchanged.
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

class Flatten final : public Layer {
 public:
  Flatten(kernels::LayerOps* ops, const Shape& in);
  std::string describe() const override { return "Flatten(" + shapeString(inputShape_) + ")"; }
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;
};

}  // namespace ddp::model
