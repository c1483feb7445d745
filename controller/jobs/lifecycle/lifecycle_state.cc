#include "controller/jobs/lifecycle/lifecycle_state.h"

namespace ddp::controller {

bool LifecycleState::requestCancel(TimePoint now) {
  if (cancelRequested) return false;
  cancelRequested = true;
  cancelAt = now;
  return true;
}

bool LifecycleState::stopDue(TimePoint now, Duration stopGrace) const {
  return cancelRequested && !stopSent && now - cancelAt >= stopGrace;
}

}  // namespace ddp::controller
