#include "controller/kubernetes/lease_decision.h"

namespace ddp::controller::kube {

Status LeaseTiming::validate() const {
  if (!(retryPeriod > Duration::zero() && renewDeadline > retryPeriod && leaseDuration > renewDeadline)) {
    return invalidArgument("leader election: need leaseDuration (" + formatDuration(leaseDuration) +
                           ") > renewDeadline (" + formatDuration(renewDeadline) + ") > retryPeriod (" +
                           formatDuration(retryPeriod) + ") > 0");
  }
  return Status::ok();
}

LeaseAction decideLease(bool exists, const std::string& holder, TimePoint observedAt, const std::string& me,
                        TimePoint now, const LeaseTiming& timing) {
  if (!exists) return LeaseAction::kCreate;
  if (holder == me) return LeaseAction::kRenew;
  if (holder.empty() || now - observedAt >= timing.leaseDuration) return LeaseAction::kTakeOver;
  return LeaseAction::kWait;
}

bool stillLeading(TimePoint lastRenewed, TimePoint now, const LeaseTiming& timing) {
  return now - lastRenewed < timing.renewDeadline;
}

}  // namespace ddp::controller::kube
