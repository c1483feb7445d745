#pragma once
// The builder of declared layer stacks (spec.model.type sequential; Note [Declared layer stacks]
// in common/jobspec/layer_spec.h): a Sequential from a list of LayerSpecs and the per-sample input
// shape. The MLP and CNN presets (mlp.h, cnn.h) build their layers through it too.
// Thread model: plain functions.

#include <memory>
#include <string>
#include <vector>

#include "common/jobspec/layer_spec.h"
#include "worker/model/model_options.h"
#include "worker/model/sequential.h"

namespace ddp::model {

// Checks the shapes (inferStackShapes: an error names the layer's path under
// spec.model.stack and both shapes), then builds and initializes (options.seed) the model.
// Layer i is named names[i] when given (the presets: "fc0", "conv0"), else "i", and a residual
// block's layer j "<block name>.j", so parameters are "0.weight", "3.1.bias", ... as
// torch.nn.Sequential names them. Activations: relu, tanh, sigmoid and the exact (erf) gelu.
Result<std::unique_ptr<Sequential>> buildSequential(const std::vector<LayerSpec>& layers, const Shape& input,
                                                    const ModelOptions& options,
                                                    const std::vector<std::string>& names = {});

// The layer kind of an activation of the presets (relu, tanh, gelu, sigmoid); InvalidArgument
// for one no declared layer has (identity, gelu_tanh).
Result<LayerKind> activationLayerKind(kernels::Activation a);

}  // namespace ddp::model
