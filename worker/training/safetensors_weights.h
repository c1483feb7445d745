#pragma once
// A model's weights in and out of the service as safetensors (docs/MODELS.md, "Exported models"):
// the model of a checkpoint directory, its export under PyTorch's names (Note [PyTorch names] in
// worker/model/pytorch_names.h), and spec.init's import of such a file into a freshly built model.
// Thread model: plain functions; they read and write only the paths they are given.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/safetensors/safetensors.h"
#include "common/status.h"
#include "worker/core/parameter.h"
#include "worker/model/param_io.h"
#include "worker/model/trainable_model.h"

namespace ddp::runtime {

// One committed checkpoint's model, read from its directory.
struct CheckpointModel {
  std::string path;  // the step directory
  std::string job;   // the job that wrote it (its manifest)
  int64_t step = 0;
  model::ParameterSnapshot params;
  std::optional<std::string> modelSpec;    // the "model_spec" section (ModelDescription YAML)
  std::optional<std::string> standardize;  // the "standardize" section, when the data was standardized
};

// The newest complete checkpoint of `dir` (or the one of `step`), rank 0's shard. NotFound
// naming the directory when it holds none; DataLoss/InvalidArgument naming the file at fault.
Result<CheckpointModel> readCheckpointModel(const std::string& dir, std::optional<int64_t> step = std::nullopt);

// The checkpoint's parameters under PyTorch's names, F32, with metadata "format" = "pt", "job",
// "step" and "model" = `modelSpec` (when not empty).
Result<safetensors::File> exportWeights(const CheckpointModel& m, const std::string& modelSpec);

// The tensors of `file` for `params`, in their order: every parameter's PyTorch name must be
// in the file with dtype F32 and the parameter's shape, and the file may hold no other tensor;
// InvalidArgument naming `what` (the file) and the tensor otherwise.
Result<model::ParameterSnapshot> weightsForParameters(const safetensors::File& file,
                                                      const std::vector<Parameter*>& params, const std::string& what);

// Reads the safetensors file at `path` and loads it into `model` (weightsForParameters, then the
// parameters' values; the model is untouched on an error).
Status loadWeightsFile(const std::string& path, model::TrainableModel& model);

}  // namespace ddp::runtime
