#pragma once
// ModelDescription: the model a checkpoint's parameters belong to, with the shapes the data
// decided (fitModelToData): the job's spec.model plus the resolved widths. The trainer writes it
// into every checkpoint (section "model_spec", YAML) so that export, predict and generate can
// rebuild the model from the checkpoint directory alone; the export also puts it in the
// safetensors metadata ("model"). Inference is fp32 and without dropout, whatever the job's
// spec.precision and dropout were.
// Thread model: plain value and pure functions.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "worker/model/cnn.h"
#include "worker/model/gpt_block.h"
#include "worker/model/mlp.h"
#include "worker/model/trainable_model.h"

namespace ddp::runtime {

struct TrainerConfig;

inline constexpr const char* kModelSpecSection = "model_spec";

struct ModelDescription {
  ModelType type = ModelType::kMlp;
  model::MlpConfig mlp;  // type mlp
  model::CnnConfig cnn;  // type cnn
  model::GptConfig gpt;  // type gpt
  std::vector<LayerSpec> stack;  // type sequential: the declared layers
  model::Shape stackInput;       // and the per-sample input shape
  bool byteText = false; // gpt trained on text as bytes (spec.data.dataset text): prompts may be text

  // A YAML mapping: type and that type's fields (docs/MODELS.md, "Exported models").
  std::string toYaml() const;
};

// The model `config` trains (call after fitModelToData).
ModelDescription describeModel(const TrainerConfig& config);
// The inverse of toYaml(); InvalidArgument naming `what` and the field.
Result<ModelDescription> parseModelDescription(std::string_view yaml, const std::string& what);
// The model on the CPU with `cpuThreads` compute threads (its initial values are overwritten by
// the caller's checkpoint or export).
Result<std::unique_ptr<model::TrainableModel>> buildDescribedModel(const ModelDescription& d, int cpuThreads = 1);

}  // namespace ddp::runtime
