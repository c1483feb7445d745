#pragma once
// One bench_train run: a job on a fresh in-process controller, the code path of `ddpctl run`
// (Note [bench_train runs] in bench/bench_train.cc), and rank 0's summary figures.
// Thread model: runTrainJob blocks the calling thread for the run (at most kRunLimit plus
// kDrainLimit); the controller it starts runs its own threads and is stopped before it returns.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/jobspec/job_spec.h"

namespace ddp::bench {

// What every run of one bench_train invocation shares.
struct TrainRunOptions {
  std::string workerBin;                               // the ddp-worker program
  std::optional<CommThreadPriority> operatorPriority;  // DDP_COMM_THREAD_PRIORITY, if set
};

// Rank 0's `{"event":"summary",...}` line (Note [Progress line contract]), in seconds over the
// step loop; ok when the job succeeded and the line was seen with steps > 0.
struct TrainSample {
  double samplesPerS = 0, compute = 0, exposedComm = 0, hook = 0, optimizer = 0, data = 0;
  int64_t steps = 0;
  bool ok = false;
  // compute + exposed communication + optimizer + data, per step, in milliseconds.
  double stepMs() const;
};

// Runs `spec` with spec.workers.count = min = max = `workers` to its end. A failure (the job
// did not succeed, or printed no summary) is reported on stderr and gives ok == false.
TrainSample runTrainJob(const TrainRunOptions& options, JobSpec spec, int workers);

// The median of the ok samples by samples/s (the upper one of an even count); nullopt when none
// is ok. `okCount` receives how many were.
std::optional<TrainSample> medianSample(std::vector<TrainSample> samples, size_t* okCount = nullptr);

}  // namespace ddp::bench
