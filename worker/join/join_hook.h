#pragma once
// JoinHook: what a Joinable does for a rank that has run out of inputs (Note [Join protocol]
// in join.h). mainHook() shadows one iteration of the collectives the still-active ranks issue;
// postHook(isLastJoiner) runs once every rank has joined (e.g. DDP broadcasts the final model
// from the last joiner).
// Thread model: called on the thread that runs Join::finish(), in joinable order.

#include "common/clock.h"
#include "common/status.h"

namespace ddp::join {

class JoinHook {
 public:
  virtual ~JoinHook() = default;
  // Issues the same collectives, in the same order, as one active iteration of this joinable.
  virtual Status mainHook(Deadline /*deadline*/) { return Status::ok(); }
  // Runs once after all ranks joined. `isLastJoiner` is true on the rank(s) that joined last.
  virtual Status postHook(bool /*isLastJoiner*/, Deadline /*deadline*/) { return Status::ok(); }
};

}  // namespace ddp::join
