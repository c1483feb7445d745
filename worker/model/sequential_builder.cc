#include "worker/model/sequential_builder.h"

#include "worker/model/activation_layer.h"
#include "worker/model/avg_pool2d.h"
#include "worker/model/conv2d.h"
#include "worker/model/dropout.h"
#include "worker/model/flatten.h"
#include "worker/model/layer_norm.h"
#include "worker/model/linear.h"
#include "worker/model/max_pool2d.h"
#include "worker/model/residual.h"

namespace ddp::model {
namespace {

// The layers of one list, each fed the previous one's output (shapes already checked).
class LayerFactory {
 public:
  explicit LayerFactory(kernels::LayerOps* ops) : ops_(ops) {}

  std::unique_ptr<Layer> make(const LayerSpec& l, const Shape& in, const std::string& name) {
    switch (l.kind) {
      case LayerKind::kLinear: return std::make_unique<Linear>(ops_, in, l.out, name);
      case LayerKind::kConv2d:
        return std::make_unique<Conv2d>(ops_, in, static_cast<int>(l.out), l.kernel, effectiveStride(l), l.padding,
                                        name);
      case LayerKind::kMaxPool2d: return std::make_unique<MaxPool2d>(ops_, in, l.kernel, effectiveStride(l));
      case LayerKind::kAvgPool2d: return std::make_unique<AvgPool2d>(ops_, in, l.kernel, effectiveStride(l));
      case LayerKind::kFlatten: return std::make_unique<Flatten>(ops_, in);
      case LayerKind::kLayerNorm: return std::make_unique<LayerNorm>(ops_, in, static_cast<float>(l.eps), name);
      case LayerKind::kDropout: return std::make_unique<Dropout>(ops_, in, static_cast<float>(l.p), dropouts_++);
      case LayerKind::kRelu: return std::make_unique<ActivationLayer>(ops_, in, kernels::Activation::kRelu);
      case LayerKind::kGelu: return std::make_unique<ActivationLayer>(ops_, in, kernels::Activation::kGelu);
      case LayerKind::kTanh: return std::make_unique<ActivationLayer>(ops_, in, kernels::Activation::kTanh);
      case LayerKind::kSigmoid: return std::make_unique<ActivationLayer>(ops_, in, kernels::Activation::kSigmoid);
      case LayerKind::kResidual: {
        std::vector<std::unique_ptr<Layer>> block;
        Shape shape = in;
        for (size_t j = 0; j < l.layers.size(); ++j) {
          block.push_back(make(l.layers[j], shape, name + "." + std::to_string(j)));
          shape = block.back()->outputShape();
        }
        return std::make_unique<Residual>(ops_, in, std::move(block));
      }
    }
    return nullptr;
  }

 private:
  kernels::LayerOps* ops_;
  uint64_t dropouts_ = 0;  // each dropout layer's salt (Note in dropout.h)
};

}  // namespace

Result<std::unique_ptr<Sequential>> buildSequential(const std::vector<LayerSpec>& layers, const Shape& input,
                                                    const ModelOptions& options, const std::vector<std::string>& names) {
  const StackShapes shapes = inferStackShapes(layers, input);
  if (!shapes.ok()) return invalidArgument(shapes.errorPath + ": " + shapes.error);
  DDP_ASSIGN_OR_RETURN(auto ops, makeLayerOps(options));
  auto model = std::make_unique<Sequential>(std::move(ops), input);
  LayerFactory factory(&model->ops());
  Shape shape = input;
  for (size_t i = 0; i < layers.size(); ++i) {
    const std::string name = i < names.size() && !names[i].empty() ? names[i] : std::to_string(i);
    std::unique_ptr<Layer> layer = factory.make(layers[i], shape, name);
    shape = layer->outputShape();
    DDP_RETURN_IF_ERROR(model->addLayer(std::move(layer)));
  }
  model->initialize(options.seed);
  DDP_RETURN_IF_ERROR(model->status());
  return model;
}

Result<LayerKind> activationLayerKind(kernels::Activation a) {
  switch (a) {
    case kernels::Activation::kRelu: return LayerKind::kRelu;
    case kernels::Activation::kTanh: return LayerKind::kTanh;
    case kernels::Activation::kGelu: return LayerKind::kGelu;
    case kernels::Activation::kSigmoid: return LayerKind::kSigmoid;
    default: break;
  }
  return invalidArgument(std::string("activation ") + kernels::activationName(a) + " is not a layer kind");
}

}  // namespace ddp::model
