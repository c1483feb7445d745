#pragma once
// The built-in multi-layer perceptron: Linear -> act -> ... -> Linear (logits).
// E.g. {inputs 784, hidden {256, 256}, classes 10, relu} is the README's Fashion-MNIST model;
// {1024, {2048 x4}, 10} is the DDP benchmark model. Thread model: plain functions.

#include <memory>
#include <vector>

#include "worker/model/model_options.h"
#include "worker/model/sequential.h"

namespace ddp::model {

struct MlpConfig {
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {256, 256};
  int64_t classes = 10;
  kernels::Activation activation = kernels::Activation::kRelu;
  Status validate() const;
};

// Builds and initializes (options.seed) the MLP. Parameters: fc0.weight, fc0.bias, fc1...
Result<std::unique_ptr<Sequential>> buildMlp(const MlpConfig& config, const ModelOptions& options);

}  // namespace ddp::model
