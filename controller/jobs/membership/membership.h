#pragma once
// Elastic membership decisions (pure: no threads, no I/O; every call takes `now`). The job
// manager asks them under its lock and carries out what they decide (job_membership.cc).
//
// Note [Elastic membership]
//  - A job runs with anywhere between spec.workers.min and spec.workers.max workers; its
//    target is spec.workers.count (the launcher keeps that many slots, `<job>-w0` ...).
//  - Shrink: a lost member is a failure (Note [Recovery]: a verdict, restarts + 1) and its
//    replacement is asked for. The round that follows closes at max, or at min once
//    spec.timeouts.lastCallSeconds passed (Note [Rendezvous rounds]); if no replacement joined by
//    then, the next generation goes on with the survivors. Nothing here insists on `count`.
//  - Grow: a worker that registers while a generation runs is a late joiner. While the world is
//    below max (and below the target), the active generation is ended for it: its members get
//    `abort` and rejoin without restarting, and the next round takes the joiners in. This is a
//    planned membership change, not a failure: restarts do not change. Joiners are gathered
//    first: the generation ends at once when they fill the world up to the target, otherwise
//    `gather` after the first of them joined (a scale that starts several processes ends one
//    generation, not one per process).
//  - A planned change waits until every member of the active generation has stepped in it
//    (its heartbeats' step counter): a member still setting up its communicator (store
//    rendezvous, connecting to its peers) cannot be interrupted by an abort and would miss the
//    next round.
//  - Scale (`POST /v1/jobs/{name}/scale`, `ddpctl scale`, the DDPJob's scale subresource): a new
//    target within [min, max] is stored with the spec (durably, before the answer). Scaling up
//    starts workers in the new slots (they join late: grow above). Scaling down retires the
//    workers of the highest slots: the generation ends without them (its other members rejoin),
//    and the retired ones are stopped; their exits are no failures.
// Thread model: pure functions.

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/jobspec/job_spec.h"
#include "common/status.h"

namespace ddp::controller {

struct MembershipFacts {
  bool running = false;                  // phase Running, not cancelled, a generation active
  // Every member has stepped in the active generation. Until then no planned change ends it: a
  // member may still be setting up its communicator, which an abort does not interrupt.
  bool settled = true;
  std::vector<std::string> members;      // the active generation's members, by rank
  std::vector<std::string> lateJoiners;  // registered while it runs, in join order
  std::optional<TimePoint> firstLateJoinAt;
  int target = 1;                        // spec.workers.count
  int maxWorkers = 1;                    // spec.workers.max
  std::vector<std::string> retiring;     // workers a scale-down removes (their slots >= target)
  Duration gather = std::chrono::seconds(1);
  TimePoint now{};
};

struct MembershipDecision {
  bool endGeneration = false;
  std::string reason;   // "ScaledDown", "WorkersJoined"
  std::string message;  // for the event
};

// Whether the active generation ends now to change its membership (Note [Elastic membership]).
MembershipDecision decideMembership(const MembershipFacts& facts);

// Validates a new target for spec.workers.count: `field` names the request's field in errors
// ("workers: 5 is outside [spec.workers.min, spec.workers.max] = [2, 4]").
Status validateScale(const WorkersSpec& workers, int target, int launcherMax, const std::string& field);

// The workers a scale to `target` retires: those of slots >= target, from `slots` (workerId,
// slot) pairs, highest slot first.
std::vector<std::string> retiredBy(const std::vector<std::pair<std::string, int>>& slots, int target);

}  // namespace ddp::controller
