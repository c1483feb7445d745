#pragma once
// Note [Init file checks]
// spec.init.from (a safetensors file the parameters start from) is checked at submission like the
// data files (Note [Data checks at submission] in data_checks.h): always against the path policy
// (job_manager.cc), and, when the workers see the controller's filesystem, by reading the file's
// header only: it opens, it is a safetensors file whose offsets and sizes agree with its length,
// its tensors are F32, and the model its metadata names (what `ddpctl export` writes) has the
// job's model type. Which names and shapes the model needs depends on the data (fitModelToData),
// so that check, tensor by tensor, is the worker's, before its first step
// (worker/training/safetensors_weights.h).
// Thread model: a pure function of the spec and the filesystem.

#include "common/jobspec/job_spec.h"
#include "common/status.h"

namespace ddp::controller {

// InvalidArgument / NotFound naming spec.init.from and the file (and the tensor at fault); OK when
// the field is unset.
Status checkInitFile(const JobSpec& spec);

}  // namespace ddp::controller
