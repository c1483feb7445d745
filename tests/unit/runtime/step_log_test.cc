// StepLog: the step line's figures against closed forms over known per-step sums, and the
// lines' cadence.
#include "worker/training/step_log.h"

#include <gtest/gtest.h>

namespace ddp::runtime {
namespace {

model::BatchStats stats(double lossSum, int64_t correct, int64_t count) {
  model::BatchStats s;
  s.lossSum = lossSum;
  s.correct = correct;
  s.count = count;
  return s;
}

// Three steps: 16 + 16 + 8 samples, loss sums 8 + 4 + 8, 12 + 8 + 8 correct: the line's loss is
// 20 / 40 (a mean over samples, not the mean of the steps' means 0.5, 0.25, 1), its accuracy
// 28 / 40; 40 samples on each of 4 ranks in 2 s: 80 samples/s; 2 s for 3 steps, 6 steps left: 4 s.
TEST(StepLogTest, LineFiguresAreMeansOverSamplesSinceTheLastLine) {
  StepLog log;
  log.add(stats(8, 12, 16));
  log.add(stats(4, 8, 16));
  log.add(stats(8, 8, 8));
  const StepReport r = log.take(2.0, 4, 6);
  EXPECT_DOUBLE_EQ(r.loss, 0.5);
  EXPECT_DOUBLE_EQ(r.accuracy, 0.7);
  EXPECT_DOUBLE_EQ(r.samplesPerSecond, 80);
  EXPECT_DOUBLE_EQ(r.etaSeconds, 4);
  // The next line covers only the steps after this one.
  log.add(stats(3, 1, 4));
  const StepReport next = log.take(0.5, 1, 0);
  EXPECT_DOUBLE_EQ(next.loss, 0.75);
  EXPECT_DOUBLE_EQ(next.accuracy, 0.25);
  EXPECT_DOUBLE_EQ(next.samplesPerSecond, 8);
  EXPECT_DOUBLE_EQ(next.etaSeconds, 0);
}

TEST(StepLogTest, NoTimeNoRates) {
  StepLog log;
  log.add(stats(1, 1, 2));
  const StepReport r = log.take(0, 2, 5);
  EXPECT_EQ(r.samplesPerSecond, 0);
  EXPECT_EQ(r.etaSeconds, 0);
  EXPECT_DOUBLE_EQ(r.loss, 0.5);
}

// Over T steps with a line every K: floor(T / K) lines, plus one at the last step when T is not
// a multiple of K.
TEST(StepLogTest, LinesEveryKStepsAndAtTheLast) {
  for (int64_t total : {1, 9, 10, 50}) {
    for (int64_t every : {1, 3, 10, 1000}) {
      int64_t lines = 0;
      for (int64_t step = 1; step <= total; ++step) lines += StepLog::due(step, every, total) ? 1 : 0;
      EXPECT_EQ(lines, total / every + (total % every != 0 ? 1 : 0)) << "total " << total << " every " << every;
      EXPECT_TRUE(StepLog::due(total, every, total));
    }
  }
}

}  // namespace
}  // namespace ddp::runtime
