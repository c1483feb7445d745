#pragma once
// The leader-election rules on a coordination.k8s.io/v1 Lease, as pure functions (the loop that
// reads and writes the Lease is LeaderElector). As in client-go, a replica judges a lease held
// by another by its OWN clock: the time at which it last saw the lease's record change, not the
// renewTime written in it, so clock skew between nodes cannot make two replicas lead at once.
// Defaults (client-go's): lease 15 s, renew deadline 10 s, retry 2 s.
// Thread model: pure functions.

#include <string>

#include "common/clock.h"
#include "common/status.h"

namespace ddp::controller::kube {

struct LeaseTiming {
  Duration leaseDuration = std::chrono::seconds(15);  // a holder that did not renew this long lost it
  Duration renewDeadline = std::chrono::seconds(10);  // a leader that could not renew this long steps down
  Duration retryPeriod = std::chrono::seconds(2);     // between attempts (and renewals)
  // leaseDuration > renewDeadline > retryPeriod > 0, so a leader steps down before a standby
  // may take over.
  Status validate() const;
};

enum class LeaseAction {
  kCreate,    // no Lease yet: create it holding it
  kRenew,     // we hold it: write a new renewTime
  kTakeOver,  // free, or its holder did not renew for leaseDuration: write ourselves in
  kWait,      // another replica holds it
};

// What to do on one attempt. `exists`: the Lease was found; `holder`: its holderIdentity;
// `observedAt`: when this replica last saw the record (holder, renewTime, resourceVersion) change.
LeaseAction decideLease(bool exists, const std::string& holder, TimePoint observedAt, const std::string& me,
                        TimePoint now, const LeaseTiming& timing);

// A leader whose last successful renewal was at `lastRenewed` still leads at `now`.
bool stillLeading(TimePoint lastRenewed, TimePoint now, const LeaseTiming& timing);

}  // namespace ddp::controller::kube
