#include "controller/jobs/checkpoints/checkpoint_state.h"

#include <algorithm>
#include <chrono>

namespace ddp::controller {

CheckpointLedger& CheckpointState::ledgerFor(const TimeoutsSpec& timeouts, Duration forgetMin) {
  if (!ledger) {
    LedgerConfig c;
    c.commitTimeout = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(timeouts.collectiveSeconds));
    c.forgetAfter = std::max<Duration>(c.commitTimeout * 2, forgetMin);
    ledger.emplace(c);
  }
  return *ledger;
}

std::optional<int> CheckpointState::noteOutcome(int64_t step, bool committed, bool conditionShown) {
  // Note [Checkpoints failing]: the condition appears with the first failure and turns False at
  // the next commit of a later step (reports arrive out of order: rank 0's commit report of an
  // earlier step can follow a later step's failure); a job whose checkpoints never failed has none.
  if (committed && !conditionShown) return std::nullopt;
  if (committed && step < lastFailedStep) return std::nullopt;
  if (!committed) lastFailedStep = std::max(lastFailedStep, step);
  failuresInARow = committed ? 0 : failuresInARow + 1;
  return failuresInARow;
}

}  // namespace ddp::controller
