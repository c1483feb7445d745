// The tiny GPT (tests/support/gpt_runs.h) with sharded optimizer state, 2 ranks as threads:
// ZeRO-1 (spec.zero: zero1) and DistributedFusedAdam (dfa). Oracles: the replicated run
// (zero: none) on the same windows, the uninterrupted run for a resume, and the uninterrupted
// 2-rank run for a resume at other world sizes (the state resharded: Note [Checkpoints at any
// world size]). AdamW with decay on every parameter and no clipping, except where a test says
// otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/tokens/token_file.h"
#include "tests/support/gpt_runs.h"
#include "tests/support/temp_dir.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {
namespace {

using test::bitwiseEqual;
using test::maxAbsDiff;
using test::trainRanks;

const ZeroMode kShardedModes[] = {ZeroMode::kZero1, ZeroMode::kDfa};

class TrainerGptZeroTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/train.bin";
    ASSERT_TRUE(tokens::writeTokenFile(path_, test::markovTokens(6000, 5), tokens::TokenDType::kUint16).isOk());
  }
  // 2 ranks x 4 windows (a global batch of 8 at any world size).
  TrainerConfig config(ZeroMode mode) const {
    TrainerConfig c = test::tinyGptConfig(path_);
    c.batchSize = 4;
    c.nominalWorldSize = 2;
    c.weightDecayOn = WeightDecayOn::kAll;
    c.maxGradNorm = 0;
    c.sharding = mode;
    return c;
  }
  test::TempDir dir_{"trainer_gpt_zero"};
  std::string path_;
};

// ZeRO-1 allreduces the gradients as the replicated run does; DistributedFusedAdam
// reduce-scatters them, another order of summation in general, but at 2 ranks each element's
// sum is one addition, which is commutative in floating point: every reduction gives the same
// bits. Both then update each element with the replicated AdamW's arithmetic and allgather the
// shards, so both end bitwise equal to the replicated run. (At 3 ranks and more DFA's order
// differs from the allreduce's and the runs agree to float rounding only.)
TEST_F(TrainerGptZeroTest, ShardedOptimizersAtTwoRanksEndBitwiseAsTheReplicatedRun) {
  auto replicated = trainRanks(2, config(ZeroMode::kNone));
  ASSERT_TRUE(replicated[0].status.isOk()) << replicated[0].status;
  ASSERT_TRUE(replicated[0].result.valLoss.has_value());
  EXPECT_LT(*replicated[0].result.valLoss, 0.75 * std::log(double{test::kGptVocab}));
  for (ZeroMode mode : kShardedModes) {
    SCOPED_TRACE(zeroModeName(mode));
    auto sharded = trainRanks(2, config(mode));
    ASSERT_TRUE(sharded[0].status.isOk()) << sharded[0].status;
    ASSERT_TRUE(sharded[1].status.isOk()) << sharded[1].status;
    EXPECT_TRUE(bitwiseEqual(sharded[0].params, sharded[1].params)) << "the ranks' allgathered parameters differ";
    EXPECT_TRUE(bitwiseEqual(sharded[0].params, replicated[0].params))
        << "max difference " << maxAbsDiff(sharded[0].params, replicated[0].params);
    ASSERT_TRUE(sharded[0].result.valLoss.has_value());
    EXPECT_EQ(*sharded[0].result.valLoss, *replicated[0].result.valLoss);
    EXPECT_EQ(sharded[0].result.stepLosses, replicated[0].result.stepLosses);
  }
}

// With clipping (maxGradNorm 1.0) and weightDecayOn linearWeights (gpt's default) each mode
// follows the replicated run with the same settings. ZeRO-1 clips by the norm of the same
// allreduced gradient as the replicated run and steps each shard with the same mask: bitwise.
// DistributedFusedAdam's sharded arithmetic order differs: it takes the norm from its shards'
// sums of squares (another summation order), so the clip coefficient and what follows agree
// within float tolerance only.
TEST_F(TrainerGptZeroTest, ShardedOptimizersClipAndExemptLikeTheReplicatedRun) {
  auto settings = [&](ZeroMode mode) {
    TrainerConfig c = config(mode);
    c.maxGradNorm = 1.0;
    c.weightDecayOn = WeightDecayOn::kLinearWeights;
    return c;
  };
  auto replicated = trainRanks(2, settings(ZeroMode::kNone));
  ASSERT_TRUE(replicated[0].status.isOk()) << replicated[0].status;
  // Both are in play: without clipping, or decaying every parameter, the run ends elsewhere.
  TrainerConfig unclipped = settings(ZeroMode::kNone);
  unclipped.maxGradNorm = 0;
  TrainerConfig decayAll = settings(ZeroMode::kNone);
  decayAll.weightDecayOn = WeightDecayOn::kAll;
  for (const TrainerConfig& other : {unclipped, decayAll}) {
    auto out = trainRanks(2, other);
    ASSERT_TRUE(out[0].status.isOk()) << out[0].status;
    EXPECT_GT(maxAbsDiff(out[0].params, replicated[0].params), 1e-3f);
  }
  for (ZeroMode mode : kShardedModes) {
    SCOPED_TRACE(zeroModeName(mode));
    auto sharded = trainRanks(2, settings(mode));
    ASSERT_TRUE(sharded[0].status.isOk()) << sharded[0].status;
    ASSERT_TRUE(sharded[1].status.isOk()) << sharded[1].status;
    EXPECT_TRUE(bitwiseEqual(sharded[0].params, sharded[1].params)) << "the ranks' allgathered parameters differ";
    if (mode == ZeroMode::kZero1) {
      EXPECT_TRUE(bitwiseEqual(sharded[0].params, replicated[0].params))
          << "max difference " << maxAbsDiff(sharded[0].params, replicated[0].params);
    } else {
      EXPECT_LT(maxAbsDiff(sharded[0].params, replicated[0].params), 1e-4f);
    }
    const auto& want = replicated[0].result.stepLosses;
    const auto& got = sharded[0].result.stepLosses;
    ASSERT_EQ(got.size(), want.size());
    for (size_t s = 0; s < want.size(); ++s) EXPECT_NEAR(got[s], want[s], 1e-4 * std::max(1.0, want[s])) << "step " << s + 1;
  }
}

// The optimizer shards are checkpointed per rank: stopped at step 7 and resumed, each mode ends
// bitwise as its uninterrupted run.
TEST_F(TrainerGptZeroTest, ShardedResumeIsBitwiseEqualToTheUninterruptedRun) {
  for (ZeroMode mode : kShardedModes) {
    SCOPED_TRACE(zeroModeName(mode));
    TrainerConfig c = config(mode);
    test::TempDir ckpt("trainer_gpt_zero_ckpt");
    auto [reference, first, second] = test::stopAndResume(c, ckpt.path());
    ASSERT_TRUE(reference[0].status.isOk()) << reference[0].status;
    ASSERT_TRUE(first[0].status.isOk()) << first[0].status;
    ASSERT_TRUE(first[0].result.stopped);
    ASSERT_TRUE(second[0].status.isOk()) << second[0].status;
    ASSERT_TRUE(second[0].result.resumed);
    EXPECT_EQ(second[0].result.startStep, 7);
    for (int r = 0; r < 2; ++r) EXPECT_TRUE(bitwiseEqual(second[r].params, reference[r].params)) << "rank " << r;
    EXPECT_EQ(second[0].result.valLoss, reference[0].result.valLoss);
  }
}

// A 2-rank checkpoint resumed by 1 and by 4 ranks: the optimizer shards are resharded, the global
// batch of 8 windows is kept and every step reads the same windows (Note [Token windows]), so
// the run follows the uninterrupted 2-rank one up to the summation order of another world size
// (the loss over the batch, the reduction), which AdamW's normalised steps at lr 1e-2 carry into
// the parameters at a few 1e-5 over the 13 steps. With the GPT's own settings, clipping and
// decay on the linear weights only: each shard's decay mask must follow its new slice.
TEST_F(TrainerGptZeroTest, AShardedCheckpointResumesAtAnotherWorldSize) {
  for (ZeroMode mode : kShardedModes) {
    SCOPED_TRACE(zeroModeName(mode));
    TrainerConfig c = config(mode);
    c.maxGradNorm = 1.0;
    c.weightDecayOn = WeightDecayOn::kLinearWeights;
    auto reference = trainRanks(2, c);
    ASSERT_TRUE(reference[0].status.isOk()) << reference[0].status;
    test::TempDir ckpt("trainer_gpt_zero_elastic");
    c.checkpointDir = ckpt.path();
    const TrainingFaults stop = TrainingFaults().stopDuring(7);
    TrainerIo io;
    io.faults = &stop;
    auto first = trainRanks(2, c, io);
    ASSERT_TRUE(first[0].status.isOk()) << first[0].status;
    ASSERT_EQ(first[0].result.steps, 7);
    c.checkpointAtEnd = false;  // both resumes start from the stop's checkpoint
    for (int world : {1, 4}) {
      SCOPED_TRACE(std::to_string(world) + " ranks");
      auto resized = trainRanks(world, c);
      for (int r = 0; r < world; ++r) ASSERT_TRUE(resized[r].status.isOk()) << "rank " << r << ": " << resized[r].status;
      ASSERT_TRUE(resized[0].result.resumed);
      EXPECT_EQ(resized[0].result.startStep, 7);
      EXPECT_EQ(resized[0].result.steps, 20);
      for (int r = 1; r < world; ++r) EXPECT_TRUE(bitwiseEqual(resized[r].params, resized[0].params)) << "rank " << r;
      EXPECT_LT(maxAbsDiff(resized[0].params, reference[0].params), 2e-4f);
      ASSERT_TRUE(resized[0].result.valLoss && reference[0].result.valLoss);
      EXPECT_NEAR(*resized[0].result.valLoss, *reference[0].result.valLoss, 1e-4);
    }
  }
}

}  // namespace
}  // namespace ddp::runtime
