// The spec.model.stack entries of the DDPJob field table (Note [Job spec field table]): a list of
// single-key objects, one key per layer kind (Note [Declared layer stacks] in layer_spec.h). The
// same kinds are listed under a residual block's `layers`, without `residual` itself (blocks do
// not nest: the CRD schema must stay structural, without recursion).
#include <deque>
#include <string>

#include "common/jobspec/job_spec_field_builder.h"
#include "common/jobspec/job_spec_parser.h"

namespace ddp {
namespace {

using namespace spec_fields;  // NOLINT: the table's vocabulary

// The table keeps its paths as string_views: generated ones live here for the process's life.
std::string_view intern(std::string s) {
  static std::deque<std::string> paths;  // built once, with the table (jobSpecFields' static)
  return paths.emplace_back(std::move(s));
}

// The kinds a layer of the list at `list` may be, and their parameters.
void appendLayerKinds(std::vector<SpecField>* f, const std::string& list, bool withResidual) {
  const auto kind = [&](const char* name, std::string_view description) {
    f->push_back(item(intern(list + "[]." + name), SpecFieldType::kObject, description));
  };
  const auto param = [&](const char* name, const char* key, SpecFieldType type, std::string_view description) {
    return item(intern(list + "[]." + name + "." + key), type, description);
  };
  const auto window = [&](const char* name, std::string_view description) {
    kind(name, description);
    f->push_back(param(name, "kernel", SpecFieldType::kInteger, "The square window.").required().atLeast(1).atMost(kMaxLayerKernel));
    f->push_back(param(name, "stride", SpecFieldType::kInteger, "The step between windows.")
                     .atLeast(1).atMost(kMaxLayerKernel).documentedDefault("the kernel"));
  };
  kind("linear", "Fully connected, y = x W^T + b (weight [out, in]); needs a flat [features] input.");
  f->push_back(param("linear", "out", SpecFieldType::kInteger, "Output features.")
                   .required().atLeast(1).atMost(static_cast<double>(kMaxLayerWidth)));
  kind("conv2d", "2-D convolution over [C, H, W] (weight [out, C, k, k]).");
  f->push_back(param("conv2d", "out", SpecFieldType::kInteger, "Output channels.")
                   .required().atLeast(1).atMost(static_cast<double>(kMaxLayerWidth)));
  f->push_back(param("conv2d", "kernel", SpecFieldType::kInteger, "The square kernel.").required().atLeast(1).atMost(kMaxLayerKernel));
  f->push_back(param("conv2d", "stride", SpecFieldType::kInteger, "The step between windows.")
                   .atLeast(1).atMost(kMaxLayerKernel).documentedDefault("1"));
  f->push_back(param("conv2d", "padding", SpecFieldType::kInteger, "Zeros added on every side.")
                   .atLeast(0).atMost(kMaxLayerKernel).documentedDefault("0"));
  window("maxpool2d", "Max over each window of each channel (no padding).");
  window("avgpool2d", "Mean over each window of each channel (no padding).");
  kind("flatten", "[C, H, W] -> [C*H*W] (no parameters).");
  kind("layernorm", "Normalizes each sample's [features] to mean 0, variance 1, then scales and shifts (weight, bias [features]).");
  f->push_back(param("layernorm", "eps", SpecFieldType::kNumber, "Added to the variance.").above(0).atMost(1).documentedDefault("1e-05"));
  kind("dropout", "Zeroes each value with probability p while training (scaling the rest by 1/(1-p)); deterministic from the seed, rank and step.");
  f->push_back(param("dropout", "p", SpecFieldType::kNumber, "The probability of zeroing a value.").atLeast(0).below(1).documentedDefault("0.5"));
  kind("relu", "max(x, 0).");
  kind("gelu", "x * Phi(x), the exact (erf) GELU, as torch.nn.GELU().");
  kind("tanh", "tanh(x).");
  kind("sigmoid", "1 / (1 + exp(-x)).");
  if (withResidual) {
    kind("residual", "A block whose output is input + block(input); its layers must keep the input's shape.");
    const std::string inner = list + "[].residual.layers";
    f->push_back(item(intern(inner), SpecFieldType::kObjectList, "The block's layers (any kind but residual).")
                     .singleKey().required());
    appendLayerKinds(f, inner, false);
  }
}

}  // namespace

void appendStackFields(std::vector<SpecField>* out) {
  out->push_back(Field("spec.model.stack", SpecFieldType::kObjectList,
                       "The layers, in order, each {kind: {parameters}} (docs/MODELS.md).")
                     .list(job_spec_detail::parseLayerStack, job_spec_detail::emitLayerStack)
                     .singleKey()
                     .onlyWhen([](const JobSpec& s) { return s.model.type == ModelType::kSequential; },
                               "spec.model.type is sequential"));
  appendLayerKinds(out, "spec.model.stack", true);
}

}  // namespace ddp
