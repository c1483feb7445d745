#include "controller/jobs/job_timings.h"

#include <string>

namespace ddp::controller {

Status JobTimings::validate() const {
  const struct {
    const char* name;
    Duration value;
  } all[] = {{"killGrace", killGrace},
             {"idleStopGrace", idleStopGrace},
             {"deleteSignalBefore", deleteSignalBefore},
             {"deleteKillGrace", deleteKillGrace},
             {"hangScanEvery", hangScanEvery},
             {"flightRecordWaitMin", flightRecordWaitMin},
             {"flightRecordWaitMax", flightRecordWaitMax},
             {"restartBackoffBase", restartBackoffBase},
             {"restartBackoffMax", restartBackoffMax},
             {"exitSettle", exitSettle},
             {"checkpointForgetMin", checkpointForgetMin},
             {"deletePollEvery", deletePollEvery}};
  for (const auto& t : all) {
    if (t.value <= Duration::zero()) {
      return invalidArgument(std::string("job timings: ") + t.name + " must be > 0 (it is " +
                             formatDuration(t.value) + ")");
    }
  }
  if (flightRecordWaitMin > flightRecordWaitMax) {
    return invalidArgument("job timings: flightRecordWaitMin (" + formatDuration(flightRecordWaitMin) +
                           ") must not exceed flightRecordWaitMax (" + formatDuration(flightRecordWaitMax) + ")");
  }
  if (restartBackoffBase > restartBackoffMax) {
    return invalidArgument("job timings: restartBackoffBase (" + formatDuration(restartBackoffBase) +
                           ") must not exceed restartBackoffMax (" + formatDuration(restartBackoffMax) + ")");
  }
  return Status::ok();
}

}  // namespace ddp::controller
