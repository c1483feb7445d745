#pragma once
// Layer: one building block of a Sequential model (Linear, Conv2d, pools, activations, norms,
// dropout, flatten, residual blocks: worker/model/sequential_builder.h).
// A layer knows its per-sample input and output shapes (fixed at construction), owns its
// parameters and scratch buffers, and runs on the device of the LayerOps it was given.
//
// Contracts:
//  - forward(x, y, batch): x is batch x inputNumel, y is batch x outputNumel (device memory
//    owned by the caller). Scratch kept for backward (e.g. im2col) lives in the layer.
//  - backward(x, y, dy, dx, batch, ready, offset): called after forward with the same x, y.
//    Accumulates parameter gradients into `Parameter::grad`, read afresh on every call (the
//    reducer may rebind it; see worker/core/parameter.h), and calls ready(offset + i) for each
//    local parameter i as soon as its gradient is final, in descending i. Then writes the input
//    gradient into dx unless dx is nullptr (the first layer's input needs no gradient).
// Thread model: used by one training thread.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/layer_ops.h"
#include "worker/core/parameter.h"

namespace ddp::model {

using Shape = std::vector<int64_t>;  // per-sample shape, e.g. {784} or {1, 28, 28}
int64_t shapeNumel(const Shape& s);
std::string shapeString(const Shape& s);  // "[1, 28, 28]"
// The window geometry of a pool over a {C, H, W} input (no padding).
kernels::ConvGeometry poolGeometry(const Shape& in, int batch, int kernel, int stride);

// A trainable tensor and its storage (the Parameter points into the two buffers).
struct ParamStorage {
  Parameter param;
  kernels::DeviceBuffer data;
  kernels::DeviceBuffer grad;
  void allocate(kernels::LayerOps* ops, std::string name, Shape shape);
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string describe() const = 0;  // "Linear(784 -> 256)"
  const Shape& inputShape() const { return inputShape_; }
  const Shape& outputShape() const { return outputShape_; }
  virtual std::vector<Parameter*> parameters() { return {}; }
  // Inputs per output unit, for the default init bound 1/sqrt(fanIn) (0: no parameters).
  virtual int64_t fanIn() const { return 0; }
  // Grows scratch buffers for `batch` samples (called before forward; never shrinks).
  virtual void reserve(int /*batch*/) {}
  // Grows the buffers backward needs for `batch` samples (a block's inner gradients), so that a
  // step run in sample chunks keeps the whole batch's sizes (Note [Sample chunks]).
  virtual void reserveBackward(int /*batch*/) {}
  // Floats of outputs one sample keeps in this layer during a step (a block adds its inner
  // layers'), or 0 when a sample's result depends on its position in the batch (dropout), so
  // that the batch must run whole (Note [Sample chunks]).
  virtual int64_t sampleFloats() const { return shapeNumel(outputShape_); }
  // Deterministic init of the layer's parameters, whose indices in the model are offset,
  // offset + 1, ...: by default each is drawn from U(-1/sqrt(fanIn), 1/sqrt(fanIn)) with a
  // generator seeded by mix(seed, index) (PyTorch's Linear and Conv2d bound); norms set 1 and 0,
  // blocks initialize their layers.
  virtual void initialize(uint64_t seed, size_t offset);
  // The mode of the next forward and backward: training with the step's dropout seed, or
  // evaluation (dropout is the identity). Only dropout and blocks holding it care.
  virtual void setTraining(bool /*training*/, uint64_t /*seed*/) {}
  virtual void forward(const float* x, float* y, int batch) = 0;
  virtual void backward(const float* x, const float* y, const float* dy, float* dx, int batch,
                        const GradReadyFn& ready, size_t offset) = 0;

 protected:
  Layer(kernels::LayerOps* ops, Shape in) : ops_(ops), inputShape_(std::move(in)) {}
  kernels::LayerOps* ops_;
  Shape inputShape_;
  Shape outputShape_;
};

// A stack of layers each feeding the next (Sequential, Residual), Note [Sample chunks]: the sum
// of their sampleFloats(), or 0 when any is 0.
int64_t stackSampleFloats(const std::vector<std::unique_ptr<Layer>>& layers);
// Grows grads[i] (i >= 1: the gradient of layer i's input; layer 0's goes to the stack's caller)
// for `batch` samples, and the layers' own backward buffers.
void reserveStackBackward(const std::vector<std::unique_ptr<Layer>>& layers, std::vector<kernels::DeviceBuffer>& grads,
                          int batch);

}  // namespace ddp::model
