#pragma once
// Linear: y = x W^T + b with weight [out, in] and bias [out] (PyTorch layout).
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <string>

#include "worker/model/layer.h"

namespace ddp::model {

class Linear final : public Layer {
 public:
  Linear(kernels::LayerOps* ops, const Shape& in, int64_t outFeatures, const std::string& name);
  std::string describe() const override;
  std::vector<Parameter*> parameters() override { return {&weight_.param, &bias_.param}; }
  int64_t fanIn() const override { return inFeatures_; }
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  int64_t inFeatures_, outFeatures_;
  ParamStorage weight_, bias_;
};


}  // namespace ddp::model
