#pragma once
// From a validated JobSpec (common/job_spec.h) to the TrainerConfig of one worker. Fields the
// CPU trainer cannot honour are refused here with their field path (never silently ignored).
// Thread model: plain function.

#include "common/job_spec.h"
#include "common/status.h"
#include "worker/runtime/trainer_config.h"

namespace ddp::runtime {

Result<TrainerConfig> trainerConfigFromJobSpec(const JobSpec& spec);

}  // namespace ddp::runtime
