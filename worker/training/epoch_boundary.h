#pragma once
// The step loop's boundaries (Note [Trainer step] in trainer.h): whether another step of the
// epoch runs, and what follows when the pass over an epoch ends (the epoch's end, the run's end,
// an evaluation). Pure: every rank decides the same from the same position.
// Thread model: pure functions.

#include <cstddef>
#include <cstdint>

namespace ddp::runtime {

// Another step of this epoch runs: the run has steps left (`step` done of `totalSteps`) and this
// rank has samples of the epoch left.
bool stepDue(int64_t step, int64_t totalSteps, int64_t samplesLeft);

struct EpochBoundary {
  bool epochDone = false;  // this rank read every sample of the epoch: the next epoch starts
  bool finished = false;   // the run's last step is done (maxSteps may end it mid-epoch)
  bool evaluate = false;   // evaluate on the test set now
};

// When the loop over an epoch stopped (stepDue false): an evaluation follows each epoch with
// `evalEachEpoch`, and the run's end always.
EpochBoundary epochBoundary(int64_t samplesLeft, int64_t step, int64_t totalSteps, bool evalEachEpoch);

// Language models (no epochs): after step `step` of `totalSteps`, an evaluation is due every
// `everySteps` steps (0: none) and after the last step.
bool stepEvaluationDue(int64_t step, int64_t everySteps, int64_t totalSteps);

// After the loop: the run evaluates once when this process evaluated nothing (it resumed at the
// very end) and did not stop.
bool finalEvaluationDue(bool stopped, size_t evaluations);

// Join: a stop agreed at the end of epoch `epoch` (0-based: the epoch now starting) ends the run
// when epochs are left (at the last epoch's end the run ends anyway).
bool joinStopEndsRun(bool agreedStop, int epoch, int epochs);

}  // namespace ddp::runtime
