#pragma once
// The job state machine's decision (pure): from what is known about a job's workers, the
// phase it moves to next. Note [Job state machine]:
//   Pending --(first rendezvous round closed)--> Running
//   Running --(every member of the generation finished its steps)--> Succeeded
//   any     --(a worker failed: non-zero exit, killed by a signal it was not sent by us, or a
//              final heartbeat saying Failed)--> Failed (the others are stopped)
//   any     --(cancel requested, and no worker process is left)--> Cancelled
//   any     --(suspend requested, and no worker process is left)--> Suspended (Note [Suspended
//              jobs] in suspension.h; not terminal)
//   Pending/Running --(every worker process exited without the job succeeding)--> Failed
// Note [Blaming the right rank]: when a rank is killed, its peers' collectives fail at once and
// they report it in their final heartbeat, often before the killed process's exit is seen. So a
// failure known from an exit is blamed first; one a worker reported itself becomes the verdict
// only after `settle` without such an exit.
// Restarting is not decided here: the recovery logic enters it (job_recovery.cc: a hang verdict
// or a death with restarts left, Note [Hang verdicts] in hang_detector.h), and decideJob() then
// reads the new generation's workers as it reads the first's.
// Thread model: pure function.

#include <optional>

#include "common/clock.h"
#include <string>
#include <vector>

#include "controller/store/job_record.h"

namespace ddp::controller {

enum class WorkerOutcome { kRunning, kSucceeded, kStopped, kFailed };

struct WorkerFacts {
  std::string id;
  WorkerOutcome outcome = WorkerOutcome::kRunning;
  bool processAlive = true;
  std::string message;  // why it failed
  // How the failure became known: the process's exit (a crash, a kill) or the worker's own
  // final heartbeat (often "a peer went away": the consequence of another rank's death).
  bool failureFromExit = false;
  TimePoint failedAt{};
  TimePoint lastSeen{};  // its last sign of life (heartbeat, registration, poll, launch)
};

struct JobFacts {
  JobPhase phase = JobPhase::kPending;
  bool cancelRequested = false;
  bool suspendRequested = false;        // the cancel suspends (Note [Suspended jobs])
  bool generationActive = false;        // a rendezvous round has closed
  std::vector<WorkerFacts> members;     // the active generation's members (all workers before)
  int liveProcesses = 0;                // worker processes of the job still running
  TimePoint now{};
  // A failure a worker reports about itself waits this long for an exit that explains it
  // (Note [Blaming the right rank]; the controller's is JobTimings::exitSettle).
  Duration settle = std::chrono::seconds(1);
};

struct JobVerdict {
  std::optional<JobPhase> next;
  std::string reason;   // condition reason, e.g. "WorkerFailed"
  std::string message;
  bool stopWorkers = false;  // stop the workers still running
};

JobVerdict decideJob(const JobFacts& facts);

// Note [Stopping an unresponsive worker]
// A cancel gives every worker stopGrace to checkpoint and exit (heartbeat `stop`, SIGTERM),
// then SIGTERM/SIGKILL through the launcher; a job that ended with workers still running stops
// them the same way. A worker whose last sign of life is older than the job's heartbeat window
// (heartbeatSeconds x heartbeatMisses: the rule of the Unresponsive verdict, Note [Hang
// verdicts]) can act on neither: it is SIGSTOPped, frozen or cut off, and waiting out the grace
// only delays the end of the job (and its healthy peers, blocked in a collective with it, cannot
// finish their checkpoint either). So it is killed at once (SIGKILL); the others keep their
// grace. A worker that already reported its outcome (its final heartbeat) is exiting, not
// unresponsive, and is left alone. Returns the ids to kill, in the order given.
std::vector<std::string> workersToKillOnStop(const std::vector<WorkerFacts>& workers, Duration heartbeatWindow,
                                             TimePoint now);

// Note [Recovery]: the wait before the `restart`-th restart replaces its culprits: none before
// the first, then base, 2 x base, 4 x base, ... up to `max` (and 32 x base). The controller's
// base and max are JobTimings' (1 s, 30 s).
Duration restartBackoff(int restart, Duration base, Duration max);

}  // namespace ddp::controller
