#pragma once
// StepLog: the step loop's log phase. It accumulates the steps since the last step line and
// makes the line's figures (Note [Progress line contract] in progress_reporter.h): loss and
// accuracy are means over this rank's samples since the last line; throughput is global (this
// rank's samples times the world size, a rank's share being the same on every rank up to one
// sample); the ETA extrapolates the mean step time since the last line.
// Thread model: plain value; the training thread only.

#include <cstdint>

#include "worker/model/module.h"
#include "worker/training/progress_reporter.h"

namespace ddp::runtime {

class StepLog {
 public:
  // Adds one step's figures (the sums over its micro-batches).
  void add(const model::BatchStats& step);
  // Whether a line follows step `step` (steps done): every `everySteps` steps and the last step.
  static bool due(int64_t step, int64_t everySteps, int64_t totalSteps);
  // The line's loss, accuracy, samplesPerSecond and etaSeconds for the steps added since the
  // last take(), `seconds` after it, with `stepsLeft` steps to go; then starts over. The caller
  // fills the position (step, epoch, lr).
  StepReport take(double seconds, int worldSize, int64_t stepsLeft);

 private:
  int64_t steps_ = 0;
  int64_t samples_ = 0;
  double lossSum_ = 0;
  double correct_ = 0;
  double count_ = 0;
};

}  // namespace ddp::runtime
