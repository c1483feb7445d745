#pragma once
// From a JobSpec (common/jobspec/job_spec.h) to the TrainerConfig of one worker. The spec's choices keep
// their JobSpec enums; numbers become the trainer's types (shapes, float hyperparameters,
// durations); spec.device cuda maps to cuda:0 (worker_entry picks the rank's GPU).
// Refusals: none of the spec's own (Note [Validated once] in common/jobspec/job_spec.h: the gate
// validated it, refusing every combination the trainer would: Note [Trainer refusals]); only
// what depends on the build: cuda in a build without CUDA (Unimplemented).
// Thread model: plain functions.

#include <string_view>


#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "worker/training/trainer_config.h"

namespace ddp::runtime {

Result<TrainerConfig> trainerConfigFromJobSpec(const JobSpec& spec);

// The spec of a controller's assignment: `specYaml` decoded (decodeJobSpec: the controller
// validated it), after checking the controller speaks this worker's spec schema. A mismatch is
// FailedPrecondition naming both versions.
Result<JobSpec> jobSpecOfAssignment(int specSchema, std::string_view specYaml);

}  // namespace ddp::runtime
