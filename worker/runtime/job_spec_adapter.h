#pragma once
// From a JobSpec (common/jobspec/job_spec.h) to the TrainerConfig of one worker. The spec's choices keep
// their JobSpec enums; numbers become the trainer's types (shapes, float hyperparameters,
// durations); spec.device cuda maps to cuda:0 (worker_entry picks the rank's GPU).
// Refusals: JobSpec::validate() is the one gate for the spec (it refuses every combination the
// trainer would: Note [Trainer refusals] in common/jobspec/job_spec_validate.cc), so an invalid spec is
// refused with the validator's messages and a valid one adapts; beyond that only what depends
// on the build: cuda in a build without CUDA (Unimplemented).
// Thread model: plain function.

#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "worker/runtime/trainer_config.h"

namespace ddp::runtime {

Result<TrainerConfig> trainerConfigFromJobSpec(const JobSpec& spec);

}  // namespace ddp::runtime
