#pragma once
// The built-in small CNN for 28x28 images: for each entry of convChannels a block
// Conv2d(k x k, pad k/2) -> MaxPool2d(2) -> ReLU (the same as ReLU then pool, cheaper); then
// Linear -> act for each hidden width and a
// final Linear to the classes. Default: 1x28x28 -> conv8 -> pool -> conv16 -> pool (16x7x7)
// -> 128 -> 10. Conv weights are [out, in, k, k]: PowerSGD views them as out x (in*k*k).
// Thread model: plain functions.

#include <memory>
#include <vector>

#include "worker/model/model_options.h"
#include "worker/model/sequential.h"

namespace ddp::model {

struct CnnConfig {
  Shape input = {1, 28, 28};
  std::vector<int> convChannels = {8, 16};
  int kernel = 3;
  std::vector<int64_t> hidden = {128};
  int64_t classes = 10;
  kernels::Activation activation = kernels::Activation::kRelu;
  Status validate() const;
};

// Builds and initializes (options.seed) the CNN. Parameters: conv0.weight, conv0.bias, ...,
// fc0.weight, fc0.bias, ...
Result<std::unique_ptr<Sequential>> buildCnn(const CnnConfig& config, const ModelOptions& options);

}  // namespace ddp::model
