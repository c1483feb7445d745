#pragma once
// Sequential: a Module made of a stack of Layers, each feeding the next. It owns one activation
// buffer per layer output (grown to the largest batch seen, or reserved up front) and one
// gradient buffer per layer input (grown on the first backward of the largest training batch),
// so after the first step of each size a training step allocates nothing.
// Parameters are named "<layer name>.weight" / ".bias" and ordered by layer (a declared stack
// names layer i "i", as torch.nn.Sequential does: Note [Declared layer stacks]); backward visits
// layers in reverse and each layer reports its parameters ready in descending order, so the
// GradReadyFn indices are strictly descending over the whole model.
// Thread model: one training thread.

#include <memory>
#include <string>
#include <vector>

#include "worker/model/module.h"

namespace ddp::model {

class Sequential final : public Module {
 public:
  Sequential(std::unique_ptr<kernels::LayerOps> ops, Shape inputShape);

  // Builders: each appends a layer fed by the current output shape. Names default to
  // "layers.<i>". Shapes must fit (Conv2d / MaxPool2d need a {C, H, W} input).
  Status addLinear(int64_t outFeatures, const std::string& name = "");
  Status addActivation(kernels::Activation a);
  Status addConv2d(int outChannels, int kernel, int stride, int pad, const std::string& name = "");
  Status addMaxPool2d(int kernel, int stride = 0);
  // Any layer whose input shape is the current output shape (the declared stacks'
  // builder, sequential_builder.h, checks shapes first).
  Status addLayer(std::unique_ptr<Layer> layer);

  // Deterministic init: every parameter p (index i) is drawn from U(-1/sqrt(fanIn),
  // 1/sqrt(fanIn)) with a generator seeded by mix(seed, i); same seed -> bitwise same values.
  void initialize(uint64_t seed);

  std::string describe() const override;
  std::vector<Parameter*> parameters() override { return params_; }
  Shape inputShape() const override { return inputShape_; }
  int64_t outputFeatures() const override { return shapeNumel(currentShape()); }
  const float* forward(const float* input, int batch) override;
  void backward(const float* gradOutput, const GradReadyFn& ready) override;
  void reserve(int batch) override;
  void reserveBackward(int batch) override;
  int64_t chunkFloatsPerSample() const override;
  void setTraining(bool training, uint64_t seed) override;

  size_t numLayers() const { return layers_.size(); }
  const Layer& layer(size_t i) const { return *layers_[i]; }

 private:
  const Shape& currentShape() const {
    return layers_.empty() ? inputShape_ : layers_.back()->outputShape();
  }
  void append(std::unique_ptr<Layer> layer);

  Shape inputShape_;
  std::vector<std::unique_ptr<Layer>> layers_;
  std::vector<size_t> paramOffset_;  // index of each layer's first parameter
  std::vector<Parameter*> params_;
  std::vector<kernels::DeviceBuffer> acts_;   // acts_[i]: output of layer i
  std::vector<kernels::DeviceBuffer> grads_;  // grads_[i]: gradient of layer i's input (i >= 1)
  int reserved_ = 0;
  int batch_ = 0;  // batch of the last forward
  const float* input_ = nullptr;
};

}  // namespace ddp::model
