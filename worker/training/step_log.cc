#include "worker/training/step_log.h"

namespace ddp::runtime {

void StepLog::add(const model::BatchStats& step) {
  steps_++;
  samples_ += step.count;
  lossSum_ += step.lossSum;
  correct_ += static_cast<double>(step.correct);
  count_ += static_cast<double>(step.count);
}

bool StepLog::due(int64_t step, int64_t everySteps, int64_t totalSteps) {
  return step % everySteps == 0 || step == totalSteps;
}

StepReport StepLog::take(double seconds, int worldSize, int64_t stepsLeft) {
  StepReport r;
  r.loss = count_ > 0 ? lossSum_ / count_ : 0;
  r.accuracy = count_ > 0 ? correct_ / count_ : 0;
  r.samplesPerSecond = seconds > 0 ? static_cast<double>(samples_) * worldSize / seconds : 0;
  r.etaSeconds = seconds > 0 ? seconds / static_cast<double>(steps_) * static_cast<double>(stepsLeft) : 0;
  *this = StepLog();
  return r;
}

}  // namespace ddp::runtime
