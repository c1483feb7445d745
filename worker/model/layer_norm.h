#pragma once
// LayerNorm over a flat [features] sample: y = (x - mean) / sqrt(var + eps) * weight + bias, the
// biased variance, weight [features] initialized to 1 and bias to 0 (torch.nn.LayerNorm). Runs on
// the transformer ops' layer norm (kernels/transformer_ops.h) with one row per sample.
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

class LayerNorm final : public Layer {
 public:
  LayerNorm(kernels::LayerOps* ops, const Shape& in, float eps, const std::string& name);
  std::string describe() const override;
  std::vector<Parameter*> parameters() override { return {&weight_.param, &bias_.param}; }
  void initialize(uint64_t seed, size_t offset) override;
  void reserve(int batch) override;
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  int features_;
  float eps_;
  ParamStorage weight_, bias_;
  kernels::DeviceBuffer mean_, rstd_;
  kernels::DeviceBuffer dxScratch_;  // the input gradient when the caller needs none
};

}  // namespace ddp::model
