#pragma once
// AvgPool2d: square window average pooling over NCHW planes (no padding).
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

class AvgPool2d final : public Layer {
 public:
  // `stride` 0: the window.
  AvgPool2d(kernels::LayerOps* ops, const Shape& in, int kernel, int stride);
  std::string describe() const override;
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  kernels::ConvGeometry geometry(int batch) const;
  int kernel_, stride_;
};

}  // namespace ddp::model
