#include "worker/model/cnn.h"

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
  if (classes <= 1) return invalidArgument("cnn: classes must be > 1");
  return Status::ok();
}

Result<std::unique_ptr<Sequential>> buildCnn(const CnnConfig& config, const ModelOptions& options) {
  DDP_RETURN_IF_ERROR(config.validate());
  DDP_ASSIGN_OR_RETURN(auto ops, makeLayerOps(options));
  auto model = std::make_unique<Sequential>(std::move(ops), config.input);
  for (size_t i = 0; i < config.convChannels.size(); ++i) {
    DDP_RETURN_IF_ERROR(model->addConv2d(config.convChannels[i], config.kernel, 1,
                                         config.kernel / 2, "conv" + std::to_string(i)));
    // Note [Pool before ReLU]: max-pool and ReLU commute (ReLU is monotone), so pooling first
    // gives the same function and gradients with ReLU on 4x fewer values.
    DDP_RETURN_IF_ERROR(model->addMaxPool2d(2));
    DDP_RETURN_IF_ERROR(model->addActivation(kernels::Activation::kRelu));
  }
  for (size_t i = 0; i < config.hidden.size(); ++i) {
    DDP_RETURN_IF_ERROR(model->addLinear(config.hidden[i], "fc" + std::to_string(i)));
    DDP_RETURN_IF_ERROR(model->addActivation(config.activation));
  }
  DDP_RETURN_IF_ERROR(model->addLinear(config.classes, "fc" + std::to_string(config.hidden.size())));
  model->initialize(options.seed);
  DDP_RETURN_IF_ERROR(model->status().withContext("building cnn"));
  return model;
}

}  // namespace ddp::model
