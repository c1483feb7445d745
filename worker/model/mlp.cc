#include "worker/model/mlp.h"

namespace ddp::model {

Status MlpConfig::validate() const {
  if (inputs <= 0) return invalidArgument("mlp: inputs must be > 0");
  if (classes <= 1) return invalidArgument("mlp: classes must be > 1");
  for (size_t i = 0; i < hidden.size(); ++i) {
    if (hidden[i] <= 0) {
      return invalidArgument("mlp: hidden[" + std::to_string(i) + "] must be > 0");
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<Sequential>> buildMlp(const MlpConfig& config, const ModelOptions& options) {
  DDP_RETURN_IF_ERROR(config.validate());
  DDP_ASSIGN_OR_RETURN(auto ops, makeLayerOps(options));
  auto model = std::make_unique<Sequential>(std::move(ops), Shape{config.inputs});
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    DDP_RETURN_IF_ERROR(model->addLinear(config.hidden[i], "fc" + std::to_string(i)));
    DDP_RETURN_IF_ERROR(model->addActivation(config.activation));
  }
  DDP_RETURN_IF_ERROR(model->addLinear(config.classes, "fc" + std::to_string(config.hidden.size())));
  model->initialize(options.seed);
  DDP_RETURN_IF_ERROR(model->status().withContext("building mlp"));
  return model;
}

}  // namespace ddp::model
