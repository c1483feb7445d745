#pragma once
// `ddpctl run JOB.yaml`: the embedded local mode. Validates the job, starts an in-process
// controller (the service's code path) whose local launcher runs N ddp-worker processes on this
// machine, tied to this process, streams their merged output (Note [Merged worker output]),
// turns Ctrl-C / SIGTERM into a cancel (workers checkpoint and stop), and reports a dead worker
// with its last lines (Note [ddpctl run] in run_command.cc).
// Thread model: main thread; the embedded controller runs its own threads.

#include <string>
#include <vector>

namespace ddp::ddpctl {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;     // a worker failed
inline constexpr int kExitUsage = 2;      // bad arguments or invalid job
inline constexpr int kExitTimeLimit = 124;

// args: everything after "run". Returns the process exit status.
int runCommand(const std::vector<std::string>& args);
std::string runUsage();

}  // namespace ddp::ddpctl
