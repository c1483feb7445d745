#pragma once
// CheckpointState: one job's checkpoints as the controller follows them: the two-phase commit's
// ledger (Note [Two-phase checkpoint commit] in checkpoint_ledger.h, made on first use from the
// spec's timeouts), the last step committed, the failures behind the CheckpointsFailing
// condition (Note [Checkpoints failing]) and the on-demand requests (the heartbeat's
// `checkpoint` command).
// Thread model: a plain value, guarded by its Job's mutex (controller/jobs/job.h).

#include <cstdint>
#include <optional>

#include "common/jobspec/job_spec.h"
#include "controller/jobs/checkpoints/checkpoint_ledger.h"

namespace ddp::controller {

struct CheckpointState {
  std::optional<CheckpointLedger> ledger;  // made on first use (ledgerFor)
  int64_t lastStep = -1;                   // the last committed (or resumed-from) step
  int64_t lastFailedStep = -1;             // Note [Checkpoints failing]
  int failuresInARow = 0;                  // Note [Checkpoints failing]
  int64_t requests = 0;                    // on-demand checkpoint requests so far
  int64_t requestStep = -1;                // rank 0's step when the last one was made

  // The ledger, made from `timeouts` on first use: every rank's background write has as long as
  // one collective may take; decisions are forgotten after twice that, at least `forgetMin`
  // (JobTimings::checkpointForgetMin).
  CheckpointLedger& ledgerFor(const TimeoutsSpec& timeouts, Duration forgetMin);
  // A commit or a failure of `step` (Note [Checkpoints failing]): the failures in a row to show
  // in the condition, or nullopt when the condition stays as it is (a commit while it was never
  // shown, `conditionShown` false; a commit of a step before the last failure).
  std::optional<int> noteOutcome(int64_t step, bool committed, bool conditionShown);
  // `step` committed (or rank 0 resumed from it).
  void noteCommitted(int64_t step) {
    if (step > lastStep) lastStep = step;
  }
  // An on-demand request at rank 0's `step`; returns the request's number.
  int64_t request(int64_t step) {
    requestStep = step;
    return ++requests;
  }
};

}  // namespace ddp::controller
