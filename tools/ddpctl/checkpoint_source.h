#pragma once
// Where ddpctl's model commands (export, predict, generate) find a job's model: a job on a
// controller (`JOB`: its checkpoint catalog through the API gives the step directory, read where
// it is visible: the local launcher, a mounted volume) or a checkpoint directory given directly
// (`--checkpoint-dir DIR`: a local `ddpctl run` job). Also the argument parsing those commands
// share.
// Thread model: runs on the calling thread; a JOB costs one API request (bounded by --timeout).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/training/model_description.h"
#include "worker/training/safetensors_weights.h"

namespace ddp::ddpctl {

// A command's arguments: --flag VALUE pairs (also --flag=VALUE), and the positionals.
struct ModelArgs {
  std::map<std::string, std::string> flags;
  std::vector<std::string> positional;
  std::optional<std::string> flag(const std::string& name) const;
};
// `valued` lists the flags that take a value (with their short aliases as "-o=--output").
// InvalidArgument naming an unknown flag or a missing value.
Result<ModelArgs> parseModelArgs(const std::vector<std::string>& args, const std::vector<std::string>& valued);

// The checkpoint the arguments name: exactly one of a positional JOB or --checkpoint-dir, and
// --step N (else the newest committed). JOB mode takes the controller options (--server,
// --token-file, --timeout, the environment) from `clientArgs`.
Result<runtime::CheckpointModel> loadNamedCheckpoint(const ModelArgs& args, std::vector<std::string> clientArgs);

// The checkpoint's model description (section model_spec); FailedPrecondition naming the step
// directory when the checkpoint predates it.
Result<runtime::ModelDescription> describedModel(const runtime::CheckpointModel& m);

// The model of the checkpoint, built on the CPU with its parameters loaded.
Result<std::unique_ptr<model::TrainableModel>> loadCheckpointModel(const runtime::CheckpointModel& m,
                                                                    const runtime::ModelDescription& d);

}  // namespace ddp::ddpctl
