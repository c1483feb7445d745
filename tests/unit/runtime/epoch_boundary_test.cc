// The step loop's boundaries (epoch_boundary.h) over whole simulated runs against closed forms:
// the steps run, the epochs completed and the evaluations of a run of E epochs of S steps capped
// at maxSteps, fresh or resumed at any step.
#include "worker/training/epoch_boundary.h"

#include <gtest/gtest.h>

#include <vector>

#include <algorithm>

namespace ddp::runtime {
namespace {

struct Outcome {
  int64_t steps = 0;           // steps run in this process
  int epochsCompleted = 0;
  int evaluations = 0;
};

// The loop's order (trainer_loop.cc), one sample a step, starting `resumeAt` steps in.
Outcome simulate(int64_t s, int epochs, int64_t maxSteps, bool evalEachEpoch, int64_t resumeAt) {
  int64_t total = s * epochs;
  if (maxSteps > 0) total = std::min(total, maxSteps);
  Outcome out;
  int64_t step = resumeAt;
  int epoch = static_cast<int>(resumeAt / s);
  int64_t left = s - resumeAt % s;
  out.epochsCompleted = epoch;
  bool finished = step >= total;
  while (!finished && epoch < epochs) {
    while (stepDue(step, total, left)) {
      ++step;
      --left;
      ++out.steps;
    }
    const EpochBoundary b = epochBoundary(left, step, total, evalEachEpoch);
    finished = b.finished;
    if (b.evaluate) ++out.evaluations;
    if (b.epochDone) {
      out.epochsCompleted = ++epoch;
      left = s;
    }
  }
  if (finalEvaluationDue(false, static_cast<size_t>(out.evaluations))) ++out.evaluations;
  return out;
}

TEST(EpochBoundaryTest, StepsEpochsAndEvaluationsFollowTheClosedForm) {
  for (int64_t s : {1, 2, 5}) {
    for (int epochs : {1, 2, 3}) {
      for (int64_t maxSteps : {0, 1, 4, 7, 100}) {
        for (bool evalEachEpoch : {false, true}) {
          const int64_t total = maxSteps > 0 ? std::min(s * epochs, maxSteps) : s * epochs;
          for (int64_t resumeAt = 0; resumeAt <= total; ++resumeAt) {
            SCOPED_TRACE(::testing::Message() << "S " << s << " E " << epochs << " maxSteps " << maxSteps << " eachEpoch "
                                              << evalEachEpoch << " resumeAt " << resumeAt);
            const Outcome o = simulate(s, epochs, maxSteps, evalEachEpoch, resumeAt);
            EXPECT_EQ(o.steps, total - resumeAt);
            EXPECT_EQ(o.epochsCompleted, static_cast<int>(total / s));
            // Each epoch ended in this process, plus the run's end when it falls mid-epoch; at least one.
            const int64_t endedHere = total / s - resumeAt / s;
            const int64_t expected = evalEachEpoch ? endedHere + (total % s != 0 && resumeAt < total ? 1 : 0) : 1;
            EXPECT_EQ(o.evaluations, std::max<int64_t>(1, expected));
          }
        }
      }
    }
  }
}

TEST(EpochBoundaryTest, TheRunsEndEvaluatesEvenWithoutEachEpoch) {
  const EpochBoundary midEpochEnd = epochBoundary(3, 10, 10, false);
  EXPECT_FALSE(midEpochEnd.epochDone);
  EXPECT_TRUE(midEpochEnd.finished);
  EXPECT_TRUE(midEpochEnd.evaluate);
  const EpochBoundary epochEnd = epochBoundary(0, 5, 10, false);
  EXPECT_TRUE(epochEnd.epochDone);
  EXPECT_FALSE(epochEnd.finished);
  EXPECT_FALSE(epochEnd.evaluate);
  EXPECT_FALSE(finalEvaluationDue(true, 0));  // a stopped run does not evaluate
}

TEST(EpochBoundaryTest, LanguageModelsEvaluateEveryNStepsAndAtTheEnd) {
  std::vector<int64_t> due;
  for (int64_t step = 1; step <= 23; ++step) {
    if (stepEvaluationDue(step, 5, 23)) due.push_back(step);
  }
  EXPECT_EQ(due, (std::vector<int64_t>{5, 10, 15, 20, 23}));
  due.clear();
  for (int64_t step = 1; step <= 20; ++step) {
    if (stepEvaluationDue(step, 0, 20)) due.push_back(step);
  }
  EXPECT_EQ(due, std::vector<int64_t>{20});  // everySteps 0: at the end only
}

TEST(EpochBoundaryTest, JoinStopEndsTheRunOnlyWithEpochsLeft) {
  EXPECT_TRUE(joinStopEndsRun(true, 1, 3));
  EXPECT_FALSE(joinStopEndsRun(true, 3, 3));   // the last epoch ended: the run ends anyway
  EXPECT_FALSE(joinStopEndsRun(false, 1, 3));
}

}  // namespace
}  // namespace ddp::runtime
