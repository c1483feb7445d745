#pragma once
// `ddpctl run JOB.yaml`: the embedded local mode. Validates the job, starts the HTTP store in
// this process and N ddp-worker processes on this machine, streams their merged output
// (Note [Merged worker output]), forwards Ctrl-C / SIGTERM (workers checkpoint and stop), and
// reports a dead worker with its last lines (Note [Worker supervision]).
// Thread model: main thread; the store server runs its own threads.

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
