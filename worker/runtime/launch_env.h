#pragma once
// What a local launcher (ddpctl run, bench_train) adds to each worker's environment beyond the
// rendezvous variables. Thread model: pure functions.

#include <optional>
#include <string>

#include "common/job_spec.h"

namespace ddp::runtime {

// Cores this process may run on (its affinity mask, so a container's cpuset counts).
int usableCores();

// Note [Comm thread priority]: real-time comm threads are safe while compute threads do not
// outnumber the cores. When `workers` x spec.threadsPerWorker exceed `cores`, the job left
// spec.commThreadPriority at auto and DDP_COMM_THREAD_PRIORITY is not set in this process,
// returns "DDP_COMM_THREAD_PRIORITY=normal"; otherwise nothing.
std::optional<std::string> commPriorityEnvFor(const JobSpec& spec, int workers, int cores);

}  // namespace ddp::runtime
