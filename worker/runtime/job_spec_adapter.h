#pragma once
// From a validated JobSpec (common/job_spec.h) to the TrainerConfig of one worker. Fields the
// trainer cannot honour are refused here with their field path (never silently ignored):
// spec.device cuda maps to cuda:0 (worker_entry picks the rank's GPU); combinations the CUDA
// path does not support are refused in every build (TrainerConfig::validateDevice), and a
// build without CUDA refuses cuda with Unimplemented.
// Thread model: plain function.

#include "common/job_spec.h"
#include "common/status.h"
#include "worker/runtime/trainer_config.h"

namespace ddp::runtime {

Result<TrainerConfig> trainerConfigFromJobSpec(const JobSpec& spec);

}  // namespace ddp::runtime
