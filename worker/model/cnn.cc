#include "worker/model/cnn.h"

#include "worker/model/sequential_builder.h"

namespace ddp::model {

Status CnnConfig::validate() const {
  if (input.size() != 3 || input[0] <= 0 || input[1] <= 0 || input[2] <= 0) {
    return invalidArgument("cnn: input must be {C, H, W} with positive sizes, got " +
                           shapeString(input));
  }
  if (kernel <= 0 || kernel % 2 == 0) return invalidArgument("cnn: kernel must be odd and > 0");
  int64_t h = input[1], w = input[2];
  for (size_t i = 0; i < convChannels.size(); ++i) {
    if (convChannels[i] <= 0) {
      return invalidArgument("cnn: convChannels[" + std::to_string(i) + "] must be > 0");
    }
    h /= 2;
    w /= 2;
    if (h < 1 || w < 1) {
      return invalidArgument("cnn: " + std::to_string(convChannels.size()) +
                             " conv blocks pool the input " + shapeString(input) +
                             " below 1x1");
    }
  }
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (hidden[i] <= 0) return invalidArgument("cnn: hidden[" + std::to_string(i) + "] must be > 0");
  }
  if (classes < 1) return invalidArgument("cnn: classes must be >= 1 (1: one output, a regression)");
  return Status::ok();
}

// A preset of the declared stacks: per conv block conv (named conv0, ...), 2x2 max pool, relu;
// then flatten, [linear (fc0, ...), act] per hidden width and the final linear.
Result<std::unique_ptr<Sequential>> buildCnn(const CnnConfig& config, const ModelOptions& options) {
  DDP_RETURN_IF_ERROR(config.validate());
  DDP_ASSIGN_OR_RETURN(const LayerKind act, activationLayerKind(config.activation));
  std::vector<LayerSpec> layers;
  std::vector<std::string> names;
  const auto add = [&](LayerSpec l, std::string name = "") {
    layers.push_back(std::move(l));
    names.push_back(std::move(name));
  };
  for (size_t i = 0; i < config.convChannels.size(); ++i) {
    add({.kind = LayerKind::kConv2d, .out = config.convChannels[i], .kernel = config.kernel, .stride = 1,
         .padding = config.kernel / 2},
        "conv" + std::to_string(i));
    // Note [Pool before ReLU]: max-pool and ReLU commute (ReLU is monotone), so pooling first
    // gives the same function and gradients with ReLU on 4x fewer values.
    add({.kind = LayerKind::kMaxPool2d, .kernel = 2});
    add({.kind = LayerKind::kRelu});
  }
  add({.kind = LayerKind::kFlatten});
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    add({.kind = LayerKind::kLinear, .out = config.hidden[i]}, "fc" + std::to_string(i));
    add({.kind = act});
  }
  add({.kind = LayerKind::kLinear, .out = config.classes}, "fc" + std::to_string(config.hidden.size()));
  auto model = buildSequential(layers, config.input, options, names);
  if (!model.isOk()) return model.status().withContext("building cnn");
  return model;
}

}  // namespace ddp::model
