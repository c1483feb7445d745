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

  // InvalidArgument naming the field when one is not positive or Min > Max.
  Status validate() const;
};

}  // namespace ddp::controller
