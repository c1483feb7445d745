#pragma once
// spawnWorker: fork/exec of one worker process with its output appended to a log file.
//
// Note [Worker process setup]
// The child, between fork and exec (async-signal-safe calls only; everything is built first):
//  - setsid(): its own session and process group, no controlling terminal, so a terminal's
//    Ctrl-C or a signal to the controller's group does not reach it;
//  - with tieToParent, PR_SET_PDEATHSIG=SIGKILL. The kernel sends it when the *thread* that
//    forked exits, not the process: call spawnWorker only from a thread that lives as long as
//    the workers should (LocalLauncher forks from its own spawner thread);
//  - stdin is /dev/null, stdout and stderr the log file opened with O_APPEND (so a log truncated
//    by rotation is written from its new end, Note [Log rotation]);
//  - every other descriptor is closed on exec (close_range with CLOSE_RANGE_CLOEXEC, or a loop);
//  - signal dispositions back to default and an empty signal mask (the controller may ignore
//    SIGPIPE or block signals in its threads).
// An exec failure is reported back through a close-on-exec pipe, so a missing binary is an
// error from spawnWorker rather than a worker that "exited with status 127".
// Thread model: free functions; spawnWorker may run on several threads at once, but see
// tieToParent above.

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "controller/launch/pid_file.h"

namespace ddp::controller {

inline constexpr Duration kExecReportTimeout = std::chrono::seconds(5);

struct SpawnSpec {
  std::string exe;                 // absolute path (no PATH search)
  std::vector<std::string> args;   // argv[1..]
  std::vector<std::string> env;    // the complete environment, NAME=value
  std::string logPath;             // stdout and stderr are appended here (created 0644)
  bool tieToParent = false;        // PR_SET_PDEATHSIG=SIGKILL (Note [Worker process setup])
};

struct SpawnedProcess {
  ProcessIdentity id;
  int pidfd = -1;                  // owned by the caller (close-on-exec)
};

// Starts the process; returns once it has exec'd (or at `execDeadline`, assuming it did).
Result<SpawnedProcess> spawnWorker(const SpawnSpec& spec, Deadline execDeadline);

// This process's environment as NAME=value entries.
std::vector<std::string> currentEnvironment();
// `base` with `overrides` applied in order: an entry replaces the earlier one of the same NAME.
std::vector<std::string> mergeEnvironment(std::vector<std::string> base, const std::vector<std::string>& overrides);

}  // namespace ddp::controller
