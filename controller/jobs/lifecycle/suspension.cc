#include "controller/jobs/lifecycle/suspension.h"

namespace ddp::controller {

SuspendAction decideSuspension(JobPhase phase, bool suspending, bool wantSuspended) {
  if (isTerminal(phase)) return SuspendAction::kNone;
  if (wantSuspended) {
    return phase == JobPhase::kSuspended || suspending ? SuspendAction::kNone : SuspendAction::kSuspend;
  }
  return phase == JobPhase::kSuspended ? SuspendAction::kResume : SuspendAction::kNone;
}

}  // namespace ddp::controller
