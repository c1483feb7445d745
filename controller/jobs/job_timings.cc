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
             {"flightRecordWaitMax", flightRecordWaitMax}};
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
  return Status::ok();
}

}  // namespace ddp::controller
