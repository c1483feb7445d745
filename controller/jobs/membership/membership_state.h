#pragma once
// MembershipState: one job's elastic membership between generations (Note [Elastic membership]
// in controller/jobs/membership/membership.h): the slots a scale-down retired and when their processes are
// killed, the late joiners' clock, and what the next MembershipChanged event compares against.
// The decisions are membership.h's pure functions; this is what they are fed.
// Thread model: a plain value, guarded by its Job's mutex (controller/jobs/job.h).

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"

namespace ddp::controller {

struct MembershipState {
  std::set<std::string> retired;              // removed by a scale-down (slots >= count): refused
  std::set<std::string> stoppedSlots;         // retired workers whose process exited
  TimePoint retireKillAt = TimePoint::max();  // retired workers still alive then are SIGKILLed
  std::optional<TimePoint> firstLateJoinAt;   // the first late joiner of the active generation
  std::vector<std::string> lastMembers;       // the previous generation's members, by rank
  std::string note;                           // why the next generation's membership changes
  std::set<std::string> steppedInGeneration;  // members that reported a step in the active one

  // A late joiner arrived at `now` (the first one starts the gathering clock).
  void noteLateJoin(TimePoint now) {
    if (!firstLateJoinAt) firstLateJoinAt = now;
  }
  // Every one of `members` reported a step of the active generation.
  bool settled(const std::vector<std::string>& members) const;
  // The retired workers whose process is still `alive`.
  std::vector<std::string> retiredAlive(const std::function<bool(const std::string&)>& alive) const;
  // A new generation formed with `members`: the next change is compared against them.
  void generationFormed(const std::vector<std::string>& members);
};

}  // namespace ddp::controller
