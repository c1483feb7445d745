#pragma once
// Process helpers for benchmarks that run several ranks as processes: spawn this very binary
// with extra flags (so one command runs the whole benchmark), wait for all children with a
// deadline, and measure process CPU time.
// Thread model: free functions; waitAll() blocks the caller until all children exit or the
// deadline passes (then it SIGKILLs the rest, so nothing outlives the parent).

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::bench {

// Absolute path of the running executable (/proc/self/exe).
std::string selfExe();

// Starts argv[0] with `argv` (stdout/stderr inherited). Unavailable with errno text on failure.
Result<pid_t> spawnProcess(const std::vector<std::string>& argv);

struct ProcessExit {
  pid_t pid = -1;
  bool exited = false;  // exited normally (see code)
  int code = -1;
  int signal = 0;       // killed by this signal (SIGKILL if the deadline passed)
  bool ok() const { return exited && code == 0; }
};

// Waits for every pid; children still running at `deadline` are killed.
std::vector<ProcessExit> waitAll(const std::vector<pid_t>& pids, Deadline deadline);

// CPU seconds (user + system) of this process, all threads (getrusage RUSAGE_SELF).
double processCpuSeconds();

}  // namespace ddp::bench
