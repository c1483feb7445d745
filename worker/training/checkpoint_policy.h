#pragma once
// CheckpointPolicy: at which points of the step loop this rank writes a checkpoint (with a
// checkpoint directory; the trainer asks only then). Pure: every rank decides the same from the
// same step, so the ranks checkpoint the same steps without talking.
//
// Note [Checkpoint policy]
// A run checkpoints
//  - every `everySteps` steps (spec.checkpoint.everySteps): after the step, except when it is
//    the epoch's last step for this rank; that one is taken after the epoch ends, so that the
//    checkpoint records the next epoch's sampler (afterStep, then atEpochEnd);
//  - at each epoch's end with `eachEpoch` (atEpochEnd);
//  - when the ranks agreed on a command word that asks for one, or on a stop (onCommand);
//  - at a stop agreed at an epoch's end (Join), unless the epoch's end just wrote one
//    (atJoinStop);
//  - at the end of the run with `atEnd`, unless it stopped (atRunEnd);
// and, lastCheckpointStep being the step of the last checkpoint written or resumed from (-1:
// none), not twice at the same step, with one exception: an epoch's end with `eachEpoch`
// writes even when a command word already checkpointed its last step (that one recorded the
// ended epoch's sampler position, this one the next epoch's start).
// Thread model: plain value.

#include <cstdint>

namespace ddp::runtime {

struct CheckpointPolicy {
  int64_t everySteps = 0;  // 0: no periodic checkpoints
  bool eachEpoch = false;
  bool atEnd = true;

  // `step` (steps done) is a multiple of everySteps.
  bool periodicDue(int64_t step) const;
  // In the step loop, after step `step`, with `samplesLeft` samples of the epoch left for this rank.
  bool afterStep(int64_t step, int64_t samplesLeft) const;
  // After the epoch that ended with step `step`.
  bool atEpochEnd(int64_t step, int64_t lastCheckpointStep) const;
  // The agreed command word asked for a checkpoint or a stop after step `step`.
  static bool onCommand(int64_t step, int64_t lastCheckpointStep);
  // A stop agreed at an epoch's end (Join), after atEpochEnd had its say.
  bool atJoinStop() const;
  // After the loop; `stopped`: the run stopped on request.
  bool atRunEnd(int64_t step, int64_t lastCheckpointStep, bool stopped) const;
};

}  // namespace ddp::runtime
