// Any checkpoint at any world size, through the whole trainer (Note [Checkpoints at any world
// size] in worker/checkpointing/checkpoint_coordinator.h): a run at world 4 stops at step 3 and
// checkpoints; a run at world 2 and one at world 3 resume that checkpoint at step 3 (not step
// 0) and train to the end, for SGD, Adam, AdamW, ZeRO-1, DistributedFusedAdam and PowerSGD; a
// run grown from 2 to 3 workers resumes too. Ranks are threads over LocalBackend, real files.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "common/checkpoint/checkpoint_store.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trainer_runs.h"

namespace ddp::runtime {
namespace {

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("elastic_ckpt_test") {}
};

TrainerConfig smallConfig(const std::string& dir) {
  TrainerConfig c = test::smallTrainerConfig("elastic", 32, 16, 384);
  c.checkpointDir = dir;
  return c;
}

std::vector<Result<TrainResult>> train(int world, const TrainerConfig& config, int64_t stopAfterStep = -1) {
  return test::trainOnThreads(world, config, stopAfterStep);
}

struct Variant {
  const char* name;
  std::function<void(TrainerConfig&)> apply;
};

const Variant kVariants[] = {
    {"sgd", [](TrainerConfig& c) { c.optimizer = optim::OptimizerConfig::sgd(0.05f, 0.9f); }},
    {"adam", [](TrainerConfig& c) { c.optimizer = optim::OptimizerConfig::adam(0.01f); }},
    {"adamw", [](TrainerConfig& c) { c.optimizer = optim::OptimizerConfig::adamw(0.01f); }},
    {"zero1", [](TrainerConfig& c) {
       c.optimizer = optim::OptimizerConfig::adam(0.01f);
       c.sharding = ZeroMode::kZero1;
     }},
    {"dfa", [](TrainerConfig& c) {
       c.optimizer = optim::OptimizerConfig::adamw(0.01f);
       c.sharding = ZeroMode::kDfa;
     }},
    {"powersgd", [](TrainerConfig& c) {
       c.optimizer = optim::OptimizerConfig::sgd(0.05f, 0.9f);
       c.hook = CommHookType::kPowerSgd;
       c.powerSgd.matrixApproximationRank = 2;
       c.powerSgd.startPowerSgdIter = 2;
     }},
};

void expectResumedAndFinished(const std::vector<Result<TrainResult>>& results, int64_t step) {
  for (size_t r = 0; r < results.size(); ++r) {
    ASSERT_TRUE(results[r].isOk()) << "rank " << r << ": " << results[r].status();
    EXPECT_TRUE(results[r]->resumed) << "rank " << r;
    EXPECT_EQ(results[r]->startStep, step) << "rank " << r;
    EXPECT_FALSE(results[r]->stopped) << "rank " << r;
    EXPECT_GT(results[r]->steps, step) << "rank " << r << " trained on";
    for (double loss : results[r]->stepLosses) EXPECT_TRUE(std::isfinite(loss)) << "rank " << r;
  }
}

TEST(ElasticCheckpointTest, CheckpointWrittenAtFourResumesAtTwoAndThreeForEveryOptimizer) {
  for (const Variant& v : kVariants) {
    for (int world : {2, 3}) {
      SCOPED_TRACE(std::string(v.name) + ": 4 -> " + std::to_string(world));
      TempDir dir;
      TrainerConfig c = smallConfig(dir.path());
      v.apply(c);
      auto first = train(4, c, 3);
      ASSERT_TRUE(first[0].isOk()) << first[0].status();
      ASSERT_TRUE(first[0]->stopped);
      auto latest = CheckpointStore(dir.path()).findLatestComplete();
      ASSERT_TRUE(latest.isOk() && latest->manifest.has_value());
      EXPECT_EQ(latest->manifest->step, 3);
      EXPECT_EQ(latest->manifest->worldSize, 4);
      ASSERT_NO_FATAL_FAILURE(expectResumedAndFinished(train(world, c), 3));
    }
  }
}

TEST(ElasticCheckpointTest, GrownRunResumesWithNewRanksForEveryOptimizer) {
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(std::string(v.name) + ": 2 -> 3");
    TempDir dir;
    TrainerConfig c = smallConfig(dir.path());
    v.apply(c);
    auto first = train(2, c, 3);
    ASSERT_TRUE(first[0].isOk()) << first[0].status();
    ASSERT_NO_FATAL_FAILURE(expectResumedAndFinished(train(3, c), 3));
  }
}

}  // namespace
}  // namespace ddp::runtime
