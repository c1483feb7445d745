#pragma once
// JobTimings: the controller's own timeouts and graces for every job (the job's own are in
// spec.timeouts). Defaults inline; ControllerConfig carries one (controller_config.h) and the
// JobManager reads it from JobManagerOptions, so no grace is a literal in controller/jobs/.
// Thread model: plain value.

#include <chrono>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::controller {

struct JobTimings {
  // A job the ticker stops (a verdict ended it, or a cancel's stopGrace, which is
  // JobManagerOptions::stopGrace, ran out): the launcher's SIGTERM, then SIGKILL after this.
  Duration killGrace = std::chrono::seconds(10);
  // A cancel before the rendezvous closed (nothing to checkpoint yet): the launcher's grace is
  // JobManagerOptions::stopGrace, at most this.
  Duration idleStopGrace = std::chrono::seconds(5);
  // A delete: the last part of its deadline in which the workers still running are signalled
  // (stopJob with deleteKillGrace); the rest of the deadline lets them stop on their own.
  Duration deleteSignalBefore = std::chrono::seconds(4);
  Duration deleteKillGrace = std::chrono::seconds(2);
  // How often the ticker scans every running job's heartbeats for a hang (Note [Recovery]).
  Duration hangScanEvery = std::chrono::milliseconds(250);
  // Note [Flight records before the replacement]: a culprit's replacement waits for the asked
  // survivors' records at most two heartbeat periods, clamped to [flightRecordWaitMin, Max].
  Duration flightRecordWaitMin = std::chrono::seconds(1);
  Duration flightRecordWaitMax = std::chrono::seconds(5);
  // Note [Recovery]: the wait before a restart replaces its culprits: none before the first,
  // then restartBackoffBase, doubling with each restart, up to restartBackoffMax.
  Duration restartBackoffBase = std::chrono::seconds(1);
  Duration restartBackoffMax = std::chrono::seconds(30);
  // Note [Blaming the right rank]: a failure a worker reports about itself, or a member that
  // left on its own, waits this long for an exit that explains it.
  Duration exitSettle = std::chrono::seconds(1);
  // A decided checkpoint is remembered twice the job's commit timeout, at least this long.
  Duration checkpointForgetMin = std::chrono::seconds(60);
  // A delete looks for its workers still alive this often.
  Duration deletePollEvery = std::chrono::milliseconds(20);

  // InvalidArgument naming the field when one is not positive or a minimum (Min, Base) exceeds
  // its maximum.
  Status validate() const;
};

}  // namespace ddp::controller
