#include "worker/training/epoch_boundary.h"

namespace ddp::runtime {

bool stepDue(int64_t step, int64_t totalSteps, int64_t samplesLeft) { return step < totalSteps && samplesLeft > 0; }

EpochBoundary epochBoundary(int64_t samplesLeft, int64_t step, int64_t totalSteps, bool evalEachEpoch) {
  EpochBoundary b;
  b.epochDone = samplesLeft == 0;
  b.finished = step >= totalSteps;
  b.evaluate = (b.epochDone || b.finished) && (evalEachEpoch || b.finished);
  return b;
}

bool stepEvaluationDue(int64_t step, int64_t everySteps, int64_t totalSteps) {
  return step >= totalSteps || (everySteps > 0 && step % everySteps == 0);
}

bool finalEvaluationDue(bool stopped, size_t evaluations) { return !stopped && evaluations == 0; }

bool joinStopEndsRun(bool agreedStop, int epoch, int epochs) { return agreedStop && epoch < epochs; }

}  // namespace ddp::runtime
