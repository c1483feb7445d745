#include "controller/jobs/hang/recovery_state.h"

#include <algorithm>

namespace ddp::controller {

void RecoveryState::begin(int64_t ended, TimePoint now, bool planned, int64_t stepReached) {
  abortedGeneration = ended;
  recovering = true;
  plannedChange = planned;
  verdictAt = now;
  stepAtVerdict = stepReached;
  steppedSinceVerdict.clear();
}

bool RecoveryState::countAbort(const std::string& workerId, int64_t g) {
  if (g != abortsGeneration) {
    abortsGeneration = g;
    abortsCounted.clear();
  }
  return abortsCounted.insert(workerId).second;
}

bool RecoveryState::noteStepped(const std::string& workerId, int worldSize) {
  steppedSinceVerdict.insert(workerId);
  if (static_cast<int>(steppedSinceVerdict.size()) < worldSize) return false;
  recovering = false;
  return true;
}

int64_t RecoveryState::endedAt() const {
  if (stepAtRejoin.empty()) return stepAtVerdict;
  int64_t ended = 0;
  for (const auto& [id, step] : stepAtRejoin) ended = std::max(ended, step);
  return ended;
}

}  // namespace ddp::controller
