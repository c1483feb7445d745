#include "worker/training/checkpoint_policy.h"

namespace ddp::runtime {

bool CheckpointPolicy::periodicDue(int64_t step) const { return everySteps > 0 && step % everySteps == 0; }

bool CheckpointPolicy::afterStep(int64_t step, int64_t samplesLeft) const {
  return periodicDue(step) && samplesLeft > 0;
}

bool CheckpointPolicy::atEpochEnd(int64_t step, int64_t lastCheckpointStep) const {
  return eachEpoch || (periodicDue(step) && lastCheckpointStep != step);
}

bool CheckpointPolicy::onCommand(int64_t step, int64_t lastCheckpointStep) { return lastCheckpointStep != step; }

bool CheckpointPolicy::atJoinStop() const { return !eachEpoch; }

bool CheckpointPolicy::atRunEnd(int64_t step, int64_t lastCheckpointStep, bool stopped) const {
  return atEnd && !stopped && step != lastCheckpointStep;
}

}  // namespace ddp::runtime
