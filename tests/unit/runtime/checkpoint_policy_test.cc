// CheckpointPolicy (Note [Checkpoint policy]) and the loop boundaries it is asked at
// (epoch_boundary.h), over whole simulated runs: the steps checkpointed must be the closed-form
// set {multiples of everySteps} + {epoch ends, with eachEpoch} + {the last step, with atEnd},
// each once, and one taken at an epoch's last step must be taken after the epoch ended (so it
// records the next epoch's start).
#include "worker/training/checkpoint_policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "worker/training/epoch_boundary.h"

namespace ddp::runtime {
namespace {

struct Written {
  int64_t step = 0;
  bool afterEpochEnd = false;  // written once the epoch ended (the sampler at the next epoch)
};

struct SimRun {
  int64_t stepsPerEpoch = 1;
  int epochs = 1;
  int64_t maxSteps = 0;
  std::set<int64_t> commandSteps;  // steps whose agreed command word asks for a checkpoint
};

// The order the step loop asks the policy in (trainer_loop.cc), one sample a step.
std::vector<Written> simulate(const SimRun& run, const CheckpointPolicy& policy) {
  int64_t total = run.stepsPerEpoch * run.epochs;
  if (run.maxSteps > 0) total = std::min(total, run.maxSteps);
  std::vector<Written> out;
  int64_t step = 0, last = -1;
  bool epochEnded = false;  // no step since the last epoch's end
  auto write = [&] {
    out.push_back({step, epochEnded});
    last = step;
  };
  for (int epoch = 0; epoch < run.epochs && step < total;) {
    int64_t left = run.stepsPerEpoch;
    while (stepDue(step, total, left)) {
      ++step;
      --left;
      epochEnded = false;
      if (policy.afterStep(step, left)) write();
      if (run.commandSteps.count(step) != 0 && CheckpointPolicy::onCommand(step, last)) write();
    }
    const EpochBoundary b = epochBoundary(left, step, total, true);
    if (b.epochDone) {
      ++epoch;
      epochEnded = true;
      if (policy.atEpochEnd(step, last)) write();
    }
  }
  if (policy.atRunEnd(step, last, false)) write();
  return out;
}

TEST(CheckpointPolicyTest, RunsCheckpointTheClosedFormStepsOnce) {
  for (int64_t s : {1, 3, 4, 5}) {
    for (int e : {1, 2, 3}) {
      for (int64_t maxSteps : {0, 7}) {
        for (int64_t every : {0, 1, 2, 4, 5}) {
          for (bool eachEpoch : {false, true}) {
            for (bool atEnd : {false, true}) {
              const SimRun run{s, e, maxSteps, {}};
              const CheckpointPolicy policy{every, eachEpoch, atEnd};
              SCOPED_TRACE(::testing::Message() << "stepsPerEpoch " << s << " epochs " << e << " maxSteps " << maxSteps
                                                << " every " << every << " eachEpoch " << eachEpoch << " atEnd " << atEnd);
              const int64_t total = maxSteps > 0 ? std::min(s * e, maxSteps) : s * e;
              std::set<int64_t> expected;
              for (int64_t k = every; every > 0 && k <= total; k += every) expected.insert(k);
              for (int64_t k = s; eachEpoch && k <= total; k += s) expected.insert(k);
              if (atEnd) expected.insert(total);

              const std::vector<Written> written = simulate(run, policy);
              std::set<int64_t> steps;
              for (const Written& w : written) {
                EXPECT_TRUE(steps.insert(w.step).second) << "step " << w.step << " written twice";
                // At an epoch's last step (not the run's mid-epoch end): after the epoch ended.
                if (w.step % s == 0 && w.step <= s * e) EXPECT_TRUE(w.afterEpochEnd) << "step " << w.step;
              }
              EXPECT_EQ(steps, expected);
            }
          }
        }
      }
    }
  }
}

// A command word's checkpoint is one more step to write, unless that step already has one.
TEST(CheckpointPolicyTest, CommandCheckpointsAddTheirStepOnce) {
  const SimRun run{5, 2, 0, {3, 4, 8}};
  const CheckpointPolicy policy{4, false, true};
  std::vector<int64_t> steps;
  for (const Written& w : simulate(run, policy)) steps.push_back(w.step);
  EXPECT_EQ(steps, (std::vector<int64_t>{3, 4, 8, 10}));  // 4 and 8 periodic; 10 the end
}

// The documented exception: a command word at an epoch's last step writes there with the ended
// epoch's position, and eachEpoch writes the same step again with the next epoch's start.
TEST(CheckpointPolicyTest, EachEpochRewritesAStepACommandAlreadyWrote) {
  const SimRun run{5, 2, 0, {5}};
  const CheckpointPolicy policy{0, true, true};
  const std::vector<Written> w = simulate(run, policy);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[0].step, 5);
  EXPECT_FALSE(w[0].afterEpochEnd);
  EXPECT_EQ(w[1].step, 5);
  EXPECT_TRUE(w[1].afterEpochEnd);
  EXPECT_EQ(w[2].step, 10);
}

TEST(CheckpointPolicyTest, NoEndCheckpointAfterAStopAndJoinStopDefersToEachEpoch) {
  const CheckpointPolicy policy{0, false, true};
  EXPECT_TRUE(policy.atRunEnd(7, 4, false));
  EXPECT_FALSE(policy.atRunEnd(7, 4, true));   // the stop wrote its own
  EXPECT_FALSE(policy.atRunEnd(7, 7, false));  // already written
  EXPECT_TRUE(policy.atJoinStop());
  EXPECT_FALSE((CheckpointPolicy{0, true, true}).atJoinStop());  // the epoch's end just wrote it
}

}  // namespace
}  // namespace ddp::runtime
