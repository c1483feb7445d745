#include "controller/jobs/membership/worker_claim.h"

// Note [Worker incarnations]
// A second process started with a live worker's id and job token was accepted: it ended the
// generation (a restart used) and both held the rank in the next one. So a registration issues
// an incarnation nonce (X-DDP-Incarnation) that the process sends on every later call, and a
// slot is held by one incarnation while its holder lives:
//  - a new process claiming a slot whose holder runs and was heard within the fresh window
//    (1.5 heartbeat intervals) is refused (409) and exits; the holder keeps its place;
//  - a holder that may be gone but has not been seen gone (no exit event, heartbeats late but
//    not yet judged) makes the claimant wait (503, retried with backoff) until its exit is seen
//    or the hang detector replaces it; a replacement the controller launched itself always comes
//    after that (replacing, or no live process), so it is accepted at once;
//  - the holder itself re-registering (a survivor rejoining the next generation) keeps its nonce;
//  - a heartbeat or assignment poll with another incarnation than the slot's is fenced (410): the
//    old process of a slot that went to a successor (a pod still being deleted) stops.
// The nonce lives in memory: a restarted controller adopts the first one a slot's heartbeat
// presents. A call without one (an older worker, a test client) is not checked; the real worker
// always sends it.

namespace ddp::controller {

ClaimVerdict decideClaim(const SlotHolder& holder, const std::string& claimant, TimePoint now, Duration freshWindow) {
  if (holder.incarnation.empty()) return ClaimVerdict::kAccept;
  if (!claimant.empty() && claimant == holder.incarnation) return ClaimVerdict::kAccept;
  if (!holder.processAlive || holder.replacing || !holder.running) return ClaimVerdict::kAccept;
  return now - holder.lastSeen <= freshWindow ? ClaimVerdict::kRefuse : ClaimVerdict::kWait;
}

bool incarnationMatches(const std::string& holder, const std::string& presented, bool* adopt) {
  *adopt = false;
  if (presented.empty()) return true;
  if (holder.empty()) {
    *adopt = true;
    return true;
  }
  return holder == presented;
}

}  // namespace ddp::controller
