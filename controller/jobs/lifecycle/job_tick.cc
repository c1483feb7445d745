#include "controller/jobs/lifecycle/job_tick.h"

namespace ddp::controller {

JobTickActions reconcileTick(const JobTickFacts& f) {
  // Note [Tick actions].
  JobTickActions a;
  a.launch = f.launchDue && !isTerminal(f.phase);
  a.cancelStopSent = f.cancelStopDue;
  a.stopJob = f.cancelStopDue || f.stopPending;
  if (f.cancelRequested || isTerminal(f.phase)) {
    a.killUnresponsive = workersToKillOnStop(f.alive, f.heartbeatWindow, f.now);
  }
  if (f.retireKillDue) a.killRetired = f.retiredAlive;
  if (f.replaceBackoffOver && !f.awaitingFlightRecords && !isTerminal(f.phase) && !f.cancelRequested) {
    a.replace = f.toReplace;
  }
  a.persist = f.persistDue && !f.persisting;
  a.drop = isTerminal(f.phase) && !f.anyProcessAlive && !f.waitersLeft && !f.persistDue && !f.persisting;
  return a;
}

Command answerHeartbeat(const HeartbeatFacts& f) {
  Command c;
  if (f.flightRecordAsked && !f.final) {
    c.type = CommandType::kFlightRecord;
  } else if (f.cancelRequested || (isTerminal(f.phase) && !f.final)) {
    c.type = CommandType::kStop;
  } else if (f.checkpointAsked < f.checkpointRequests && !f.final) {
    c.type = CommandType::kCheckpoint;
    c.step = f.checkpointStep;
  }
  return c;
}

}  // namespace ddp::controller
