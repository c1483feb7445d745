#pragma once
// Residual: a block of layers whose output is input + block(input) (the block keeps the input's
// shape). Its parameters are its layers', in order; backward reports them ready in descending
// order, then adds the skip path's gradient (dy) to the block's input gradient.
// See layer.h for the forward/backward contract. Thread model: used by one training thread.

#include <memory>
#include <string>
#include <vector>

#include "worker/model/layer.h"

namespace ddp::model {

class Residual final : public Layer {
 public:
  // `layers` is non-empty, the first takes `in` and the last gives `in` back (the builder checks).
  Residual(kernels::LayerOps* ops, const Shape& in, std::vector<std::unique_ptr<Layer>> layers);
  std::string describe() const override;
  std::vector<Parameter*> parameters() override { return params_; }
  void initialize(uint64_t seed, size_t offset) override;
  void setTraining(bool training, uint64_t seed) override;
  void reserve(int batch) override;
  void reserveBackward(int batch) override;
  int64_t sampleFloats() const override;
  void forward(const float* x, float* y, int batch) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                const GradReadyFn& ready, size_t offset) override;

 private:
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> paramOffset_;  // index of each layer's first parameter within the block
  std::vector<Parameter*> params_;
  std::vector<kernels::DeviceBuffer> acts_;   // acts_[i]: output of layer i
  std::vector<kernels::DeviceBuffer> grads_;  // grads_[i]: gradient of layer i's input (i >= 1)
};

}  // namespace ddp::model
