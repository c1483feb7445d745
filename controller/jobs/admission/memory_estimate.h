#pragma once
// What one worker of a job needs in memory, estimated from its spec at submission (Note [Memory
// estimate] in memory_estimate.cc), and the check against the memory a worker gets.
// Thread model: pure functions.

#include <cstdint>
#include <optional>
#include <string>

#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "controller/launch/launcher.h"

namespace ddp::controller {

struct MemoryEstimate {
  int64_t parameters = 0;
  int64_t modelBytes = 0;       // parameters and gradients, f32
  int64_t bucketBytes = 0;      // the reducer's gradient buckets
  int64_t optimizerBytes = 0;   // this rank's optimizer state (sharded under ZeRO / DFA)
  int64_t activationBytes = 0;  // one batch's activations and their gradients
  int64_t dataBytes = 0;        // the data set, decoded into memory
  int64_t totalBytes() const { return modelBytes + bucketBytes + optimizerBytes + activationBytes + dataBytes; }
};

MemoryEstimate estimateWorkerMemory(const JobSpec& spec);

// InvalidArgument naming `budget.field` (or spec.model) when the estimate does not fit.
Status checkWorkerMemory(const JobSpec& spec, const std::optional<WorkerMemoryBudget>& budget);

}  // namespace ddp::controller
