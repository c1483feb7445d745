#pragma once
// Who may hold a worker id (Note [Worker incarnations] in worker_claim.cc): the pure decision
// on a registration for a slot that may already be held, and the check of a later call's
// incarnation nonce.
// Thread model: pure functions.

#include <cstdint>
#include <string>

#include "common/clock.h"

namespace ddp::controller {

// What the controller knows of a slot's current holder.
struct SlotHolder {
  std::string incarnation;     // "" when no process holds it (never registered, or lost at a restart)
  bool processAlive = false;   // its process is thought to run (no exit seen)
  bool replacing = false;      // the controller is replacing it: its successor is expected
  bool running = false;        // it has not finished, failed or stopped
  TimePoint lastSeen{};        // its last heartbeat, poll or registration
  int64_t pid = 0;
};

enum class ClaimVerdict {
  kAccept,  // the claimant holds the slot (a new incarnation unless it already held it)
  kWait,    // its holder may be gone but has not been seen gone: 503, the claimant retries
  kRefuse,  // a live, heartbeating process holds it: 409, the claimant exits
};

// `claimant`: the incarnation the registering process already holds ("" for a new process).
// A holder heard within `freshWindow` is live.
ClaimVerdict decideClaim(const SlotHolder& holder, const std::string& claimant, TimePoint now, Duration freshWindow);

// A later call's incarnation against the holder's: true when it may act for the slot. A call
// without one (an older client) passes; a holder with none (a restarted controller) adopts it:
// `adopt` is set to true then.
bool incarnationMatches(const std::string& holder, const std::string& presented, bool* adopt);

}  // namespace ddp::controller
