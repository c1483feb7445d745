#include "controller/jobs/job_tick.h"

namespace ddp::controller {

JobTickActions reconcileTick(const JobTickFacts& f) {
  // Note [Tick actions].
  JobTickActions a;
  a.cancelStopSent = f.cancelStopDue;
  a.stopJob = f.cancelStopDue || f.stopPending;
  if (f.cancelRequested || isTerminal(f.phase)) {
    a.killUnresponsive = workersToKillOnStop(f.alive, f.heartbeatWindow, f.now);
  }
  if (f.retireKillDue) a.killRetired = f.retiredAlive;
  if (f.replaceBackoffOver && !f.awaitingFlightRecords && !isTerminal(f.phase) && !f.cancelRequested) {
    a.replace = f.toReplace;
  }
  return a;
}

}  // namespace ddp::controller
