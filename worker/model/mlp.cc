#include "worker/model/mlp.h"

#include "worker/model/sequential_builder.h"

namespace ddp::model {

Status MlpConfig::validate() const {
  if (inputs <= 0) return invalidArgument("mlp: inputs must be > 0");
  if (classes < 1) return invalidArgument("mlp: classes must be >= 1 (1: one output, a regression)");
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (hidden[i] <= 0) {
      return invalidArgument("mlp: hidden[" + std::to_string(i) + "] must be > 0");
    }
  }
  return Status::ok();
}

// A preset of the declared stacks: [linear, act] per hidden width, then the final linear, named
// fc0, fc1, ... (the names checkpoints carry).
Result<std::unique_ptr<Sequential>> buildMlp(const MlpConfig& config, const ModelOptions& options) {
  DDP_RETURN_IF_ERROR(config.validate());
  DDP_ASSIGN_OR_RETURN(const LayerKind act, activationLayerKind(config.activation));
  std::vector<LayerSpec> layers;
  std::vector<std::string> names;
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    layers.push_back({.kind = LayerKind::kLinear, .out = config.hidden[i]});
    names.push_back("fc" + std::to_string(i));
    layers.push_back({.kind = act});
    names.emplace_back();
  }
  layers.push_back({.kind = LayerKind::kLinear, .out = config.classes});
  names.push_back("fc" + std::to_string(config.hidden.size()));
  auto model = buildSequential(layers, Shape{config.inputs}, options, names);
  if (!model.isOk()) return model.status().withContext("building mlp");
  return model;
}

}  // namespace ddp::model
