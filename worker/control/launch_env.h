#pragma once
// What a local launcher (ddpctl run, bench_train) decides for its workers beyond the rendezvous
// variables. Thread model: pure functions.

#include <optional>

#include "common/jobspec/job_spec.h"
#include "common/status.h"
#include "common/thread_priority.h"
#include "worker/control/worker_config.h"

namespace ddp::runtime {

// The operator's comm thread priority for every worker of a local launch: the launcher's own
// DDP_COMM_THREAD_PRIORITY (launch::kEnvCommThreadPriority), looked up through `env`
// (processEnv() in a launcher; a map in tests). Nothing when unset or empty; InvalidArgument
// naming the variable for anything but auto, realtime or normal (a worker would refuse it).
Result<std::optional<CommThreadPriority>> operatorCommPriority(const EnvLookup& env);

// Note [Comm thread priority]: the priority a local launcher gives its workers (the worker's
// DDP_COMM_THREAD_PRIORITY, which wins over the job's). The operator's choice when there is one.
// Otherwise real-time comm threads are safe while compute threads do not outnumber the cores:
// kNormal when `workers` x spec.threadsPerWorker exceed `cores` and the job left
// spec.commThreadPriority at auto; else nothing (the job's own setting rules).
std::optional<CommThreadPriority> workerCommPriority(const JobSpec& spec, int workers, int cores,
                                                     std::optional<CommThreadPriority> operatorChoice);

}  // namespace ddp::runtime
