#pragma once
// reconcileTick (pure, injected time): what the ticker does to one job's workers at one tick,
// from what it observed of the job (JobTickFacts), like decideJob and detectHang. The JobManager
// gathers the facts and records the decision under the job's lock, and carries the actions out
// with the launcher outside it (job_manager.cc, tickOnce).
//
// Note [Tick actions]
// Each tick, after the job's state advanced (rendezvous deadlines, expired long polls, the hang
// scan: job_manager.cc advanceJob), one job may need:
//  - its workers stopped (launcher stopJob, SIGTERM then SIGKILL after timings.killGrace): a
//    cancel whose stopGrace ran out (once), or a decision that asked for it (a verdict with no
//    restarts left, a failure, the job done with processes left);
//  - while it stops (cancelled or ended): its workers silent past the heartbeat window killed at
//    once (Note [Stopping an unresponsive worker] in job_decision.h);
//  - the workers a scale-down retired still running once their grace ran out, killed (Note
//    [Elastic membership]);
//  - the culprits of a verdict replaced once their backoff is over and the survivors' flight
//    records arrived (Note [Flight records before the replacement]), unless the job ended or
//    was cancelled meanwhile (Note [Recovery]).
// Thread model: pure function.

#include <string>
#include <vector>

#include "common/clock.h"
#include "controller/jobs/job_decision.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

struct JobTickFacts {
  TimePoint now{};
  JobPhase phase = JobPhase::kPending;
  bool cancelRequested = false;
  bool cancelStopDue = false;  // LifecycleState::stopDue: the cancel's stopGrace ran out
  bool stopPending = false;    // a decision asked to stop the remaining workers
  std::vector<WorkerFacts> alive;  // the job's worker processes still alive (id, outcome, lastSeen)
  Duration heartbeatWindow{};      // heartbeatSeconds x heartbeatMisses
  bool retireKillDue = false;      // a scale-down's grace ran out (MembershipState::retireKillAt)
  std::vector<std::string> retiredAlive;
  std::vector<std::string> toReplace;   // culprits waiting for a replacement
  bool replaceBackoffOver = false;      // RecoveryState::replacementsDue
  bool awaitingFlightRecords = false;   // FlightRecordState::awaiting
};

struct JobTickActions {
  bool stopJob = false;         // launcher stopJob(timings.killGrace)
  bool cancelStopSent = false;  // ... because of the cancel: it is not sent again
  std::vector<std::string> killUnresponsive;  // SIGKILL; each is Stopped, with an event
  std::vector<std::string> killRetired;       // SIGKILL
  std::vector<std::string> replace;           // launcher replaceWorker; toReplace is emptied

  bool empty() const { return !stopJob && killUnresponsive.empty() && killRetired.empty() && replace.empty(); }
};

JobTickActions reconcileTick(const JobTickFacts& facts);

}  // namespace ddp::controller
