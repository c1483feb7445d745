#pragma once
// Conv2d via im2col + GEMM; weight [outChannels, inChannels, k, k], bias [outChannels].
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

// Conv2d over NCHW input {C, H, W}: square kernel, stride, zero padding.
class Conv2d final : public Layer {
 public:
  Conv2d(kernels::LayerOps* ops, const Shape& in, int outChannels, int kernel, int stride,
         int pad, const std::string& name);
  std::string describe() const override;
  std::vector<Parameter*> parameters() override { return {&weight_.param, &bias_.param}; }
  int64_t fanIn() const override { return int64_t{inChannels_} * kernel_ * kernel_; }
  void reserve(int batch) override;
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;
  // Samples lowered at once: on the CPU as many as keep a chunk's im2col within
  // kConvChunkColBytes (common/conv_lowering.h; at least 1), on a GPU the whole batch.
  int samplesPerChunk(int batch) const;

 private:
  kernels::ConvGeometry geometry(int batch) const;
  int64_t outPixels() const;       // OH * OW
  int64_t inSampleFloats() const;  // C * H * W of one input sample
  int inChannels_, outChannels_, kernel_, stride_, pad_;
  ParamStorage weight_, bias_;
  kernels::DeviceBuffer col_;   // im2col of the last chunk lowered
  kernels::DeviceBuffer work_;  // [OC, n*OH*OW] product / transposed output gradient of a chunk
  kernels::DeviceBuffer dcol_;  // column gradient
};


}  // namespace ddp::model
