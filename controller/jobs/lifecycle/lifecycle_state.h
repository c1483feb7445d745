#pragma once
// LifecycleState: where one job is between launch and stop, apart from its phase (the record's):
// whether the launcher was asked for its workers, whether and when a cancel came, and the stops
// the ticker still owes it (Note [Stopping an unresponsive worker] in job_decision.h).
// Thread model: a plain value, guarded by its Job's mutex (controller/jobs/job.h).

#include "common/clock.h"
#include "controller/store/job_record.h"

namespace ddp::controller {

struct LifecycleState {
  // The launcher was asked for the workers and answered (until then no verdict: no process has
  // existed).
  bool launched = false;
  // A tick decided the launch and the JobManager is carrying it out (so no other tick decides it).
  bool launching = false;
  // The launch waits for the call that registered the job (submit, resume): that call runs the
  // job's first reconcile itself, so the launch's outcome is in its answer (Note [Tick actions]).
  bool launchHeld = false;
  bool cancelRequested = false;
  // The cancel is a suspension (Note [Suspended jobs]): the job ends up Suspended, not Cancelled.
  bool suspendRequested = false;
  TimePoint cancelAt{};
  bool stopSent = false;        // the launcher was told to stop the job's workers
  bool stopPending = false;     // a decision asked to stop the remaining workers (the ticker does)
  bool awaitingSettle = false;  // a worker reported its own failure: re-evaluate each tick

  // The workers are to be launched now: never asked for, not being asked for, not held.
  bool launchDue() const { return !launched && !launching && !launchHeld; }
  // Records the first cancel (true); a second one changes nothing (false).
  bool requestCancel(TimePoint now);
  // A cancelled job whose workers had `stopGrace` to stop on their own and were not stopped yet
  // (the ticker then stops them and sets stopSent: reconcileTick in job_tick.h).
  bool stopDue(TimePoint now, Duration stopGrace) const;
  // Cancelled, or ended: what is still running is being stopped.
  bool stopping(JobPhase phase) const { return cancelRequested || isTerminal(phase); }
  // The job takes no new work (registrations, scale, checkpoint requests).
  bool closed(JobPhase phase) const { return stopping(phase); }
};

}  // namespace ddp::controller
