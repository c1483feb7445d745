#pragma once
// MaxPool2d: square window max-pooling over NCHW planes.
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

// MaxPool2d over NCHW input {C, H, W}: square window, stride (default = window), no padding.
class MaxPool2d final : public Layer {
 public:
  MaxPool2d(kernels::LayerOps* ops, const Shape& in, int kernel, int stride);
  std::string describe() const override;
  void reserve(int batch) override;
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  kernels::ConvGeometry geometry(int batch) const;
  int kernel_, stride_;
  kernels::DeviceBuffer argmax_;
};


}  // namespace ddp::model
