#include "worker/training/safetensors_weights.h"

#include <set>

#include "common/checkpoint/checkpoint_store.h"
#include "worker/model/layer.h"
#include "worker/model/pytorch_names.h"
#include "worker/training/model_description.h"

namespace ddp::runtime {
namespace {

std::optional<std::string> optionalSection(const CheckpointShard& shard, const char* name) {
  auto s = shard.section(name);
  if (!s.isOk()) return std::nullopt;
  return std::string(*s);
}

}  // namespace

Result<CheckpointModel> readCheckpointModel(const std::string& dir, std::optional<int64_t> step) {
  CheckpointStore store(dir);
  CheckpointManifest manifest;
  if (step) {
    DDP_ASSIGN_OR_RETURN(manifest, store.verify(*step));
  } else {
    DDP_ASSIGN_OR_RETURN(LatestCheckpoint latest, store.findLatestComplete());
    if (!latest.manifest) return notFound(dir + " holds no complete checkpoint");
    manifest = *latest.manifest;
  }
  DDP_ASSIGN_OR_RETURN(CheckpointShard shard, store.readShard(manifest, 0));
  CheckpointModel m;
  m.path = store.stepDir(manifest.step);
  m.job = manifest.job;
  m.step = manifest.step;
  DDP_ASSIGN_OR_RETURN(std::string_view modelBytes, shard.section("model"));
  auto params = model::decodeParameters(modelBytes);
  if (!params.isOk()) return params.status().withContext(m.path);
  m.params = std::move(*params);
  m.modelSpec = optionalSection(shard, kModelSpecSection);
  m.standardize = optionalSection(shard, "standardize");
  return m;
}

Result<safetensors::File> exportWeights(const CheckpointModel& m, const std::string& modelSpec) {
  std::vector<std::string> ours;
  for (const auto& e : m.params.entries) ours.push_back(e.name);
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> names, model::pytorchNames(ours));
  safetensors::File file;
  file.metadata = {{"format", "pt"}, {"job", m.job}, {"step", std::to_string(m.step)}};
  if (!modelSpec.empty()) file.metadata["model"] = modelSpec;
  for (size_t i = 0; i < names.size(); ++i) {
    const auto& e = m.params.entries[i];
    if (e.dtype != DType::kF32) {
      return invalidArgument(m.path + ": parameter '" + e.name + "' is " + dtypeName(e.dtype) + ", not f32");
    }
    file.tensors.push_back({names[i], "F32", e.shape, e.bytes});
  }
  return file;
}

Result<model::ParameterSnapshot> weightsForParameters(const safetensors::File& file,
                                                      const std::vector<Parameter*>& params, const std::string& what) {
  std::vector<std::string> ours;
  for (const Parameter* p : params) ours.push_back(p->name);
  DDP_ASSIGN_OR_RETURN(std::vector<std::string> names, model::pytorchNames(ours));
  model::ParameterSnapshot out;
  std::set<std::string> wanted(names.begin(), names.end());
  for (const safetensors::Tensor& t : file.tensors) {
    if (wanted.count(t.name) == 0) {
      return invalidArgument(what + ": tensor '" + t.name + "' is not a parameter of this job's model");
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = *params[i];
    const safetensors::Tensor* t = file.find(names[i]);
    if (t == nullptr) return invalidArgument(what + ": tensor '" + names[i] + "' is missing (the model's " + p.name + ")");
    if (t->dtype != "F32") return invalidArgument(what + ": tensor '" + t->name + "' is " + t->dtype + ", the model's is F32");
    if (t->shape != p.shape) {
      return invalidArgument(what + ": tensor '" + t->name + "' has shape " + model::shapeString(t->shape) +
                             ", the model's is " + model::shapeString(p.shape));
    }
    out.entries.push_back({p.name, p.dtype, p.shape, t->bytes});
  }
  return out;
}

Status loadWeightsFile(const std::string& path, model::TrainableModel& model) {
  DDP_ASSIGN_OR_RETURN(safetensors::File file, safetensors::readFile(path));
  DDP_ASSIGN_OR_RETURN(model::ParameterSnapshot weights, weightsForParameters(file, model.parameters(), path));
  return model::loadSnapshot(weights, model.parameters(), model.ops());
}

}  // namespace ddp::runtime
