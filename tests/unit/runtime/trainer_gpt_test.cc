// Trainer on a tiny GPT over LocalBackend (ranks as threads), reading token files the test writes.
// Oracles: one process on the same global batch (the same windows: Note [Token windows]), an
// uninterrupted run for resume, and the data's own errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
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
using test::kGptVocab;
using test::markovTokens;
using test::maxAbsDiff;
using test::tinyGptConfig;
using test::trainRanks;

class TrainerGptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/train.bin";
    ASSERT_TRUE(tokens::writeTokenFile(path_, markovTokens(6000, 5), tokens::TokenDType::kUint16).isOk());
  }
  test::TempDir dir_{"trainer_gpt_test"};
  std::string path_;
};

TEST_F(TrainerGptTest, TwoRanksMatchOneRankOnTheSameGlobalBatchAndLearn) {
  TrainerConfig two = tinyGptConfig(path_);
  two.batchSize = 4;  // 2 x 4 = the single process's 8 windows, the same ones
  auto ranks = trainRanks(2, two);
  ASSERT_TRUE(ranks[0].status.isOk()) << ranks[0].status;
  ASSERT_TRUE(ranks[1].status.isOk()) << ranks[1].status;
  auto single = trainRanks(1, tinyGptConfig(path_));
  ASSERT_TRUE(single[0].status.isOk()) << single[0].status;

  EXPECT_TRUE(bitwiseEqual(ranks[0].params, ranks[1].params));
  EXPECT_LT(maxAbsDiff(ranks[0].params, single[0].params), 1e-4f);
  // Each rank's loss is the mean over its half of the windows: their mean is the whole batch's.
  const auto& one = single[0].result.stepLosses;
  ASSERT_EQ(one.size(), 20u);
  ASSERT_EQ(ranks[0].result.stepLosses.size(), 20u);
  for (size_t s = 0; s < one.size(); ++s) {
    const double mean = (ranks[0].result.stepLosses[s] + ranks[1].result.stepLosses[s]) / 2;
    EXPECT_NEAR(mean, one[s], 1e-4 * std::max(1.0, one[s])) << "step " << s + 1;
  }
  // Evaluation every 5 steps and at the end; the sums are allreduced: every rank reports the same.
  EXPECT_EQ(ranks[0].result.evalSteps, (std::vector<int64_t>{5, 10, 15, 20}));
  EXPECT_EQ(ranks[0].result.valLosses, ranks[1].result.valLosses);
  ASSERT_EQ(single[0].result.valLosses.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(ranks[0].result.valLosses[i], single[0].result.valLosses[i], 1e-4);
  // It learns the rule: well below the uniform guess ln 16.
  ASSERT_TRUE(single[0].result.valLoss.has_value());
  EXPECT_LT(*single[0].result.valLoss, 0.75 * std::log(double{kGptVocab}));
  EXPECT_LT(single[0].result.valLosses.back(), single[0].result.valLosses.front());
}

TEST_F(TrainerGptTest, ResumeAfterStopIsBitwiseEqualToUninterruptedRun) {
  TrainerConfig c = tinyGptConfig(path_);
  c.batchSize = 4;
  c.gpt.dropout = 0.1f;  // the masks come from (seed, rank, step): a resumed step draws the same
  c.gradAccumulation = 2;
  test::TempDir ckpt("trainer_gpt_ckpt");
  auto [reference, first, second] = test::stopAndResume(c, ckpt.path());
  ASSERT_TRUE(reference[0].status.isOk()) << reference[0].status;
  ASSERT_TRUE(first[0].status.isOk()) << first[0].status;
  ASSERT_TRUE(first[0].result.stopped);
  ASSERT_EQ(first[0].result.steps, 7);
  ASSERT_TRUE(second[0].status.isOk()) << second[0].status;
  ASSERT_TRUE(second[0].result.resumed);
  EXPECT_EQ(second[0].result.startStep, 7);
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(bitwiseEqual(second[r].params, reference[r].params)) << "rank " << r;
  const auto& ref = reference[0].result.stepLosses;
  const auto& res = second[0].result.stepLosses;
  ASSERT_EQ(res.size(), ref.size() - 7);
  EXPECT_TRUE(std::equal(res.begin(), res.end(), ref.begin() + 7));
  EXPECT_EQ(second[0].result.valLoss, reference[0].result.valLoss);
}

// Note [Token windows]: a checkpoint of 2 ranks resumed by 1 keeps the global batch of 8 windows
// and reads the same windows at every step, so it follows the uninterrupted 2-rank run (up to the
// summation order of the loss over the batch).
TEST_F(TrainerGptTest, AResumeAtAnotherWorldSizeReadsTheSameWindows) {
  TrainerConfig c = tinyGptConfig(path_);
  c.batchSize = 4;
  c.nominalWorldSize = 2;  // the global batch is 8 at any world size
  auto reference = trainRanks(2, c);
  ASSERT_TRUE(reference[0].status.isOk()) << reference[0].status;

  test::TempDir ckpt("trainer_gpt_elastic");
  c.checkpointDir = ckpt.path();
  const TrainingFaults stop = TrainingFaults().stopDuring(7);
  TrainerIo io;
  io.faults = &stop;
  auto first = trainRanks(2, c, io);
  ASSERT_TRUE(first[0].status.isOk()) << first[0].status;
  ASSERT_EQ(first[0].result.steps, 7);
  auto single = trainRanks(1, c);
  ASSERT_TRUE(single[0].status.isOk()) << single[0].status;
  ASSERT_TRUE(single[0].result.resumed);
  EXPECT_EQ(single[0].result.steps, 20);
  EXPECT_LT(maxAbsDiff(single[0].params, reference[0].params), 1e-4f);
  const auto& ref0 = reference[0].result.stepLosses;
  const auto& ref1 = reference[1].result.stepLosses;
  const auto& res = single[0].result.stepLosses;
  ASSERT_EQ(res.size(), 13u);
  for (size_t i = 0; i < res.size(); ++i) EXPECT_NEAR(res[i], (ref0[7 + i] + ref1[7 + i]) / 2, 1e-4) << "step " << 8 + i;
  ASSERT_TRUE(single[0].result.valLoss && reference[0].result.valLoss);
  EXPECT_NEAR(*single[0].result.valLoss, *reference[0].result.valLoss, 1e-4);
}

TEST_F(TrainerGptTest, ATokenOutsideTheVocabularyNamesTheFile) {
  const std::string bad = dir_.path() + "/bad.bin";
  std::vector<int32_t> tokens(600, kGptVocab);  // every token is one past the vocabulary
  ASSERT_TRUE(tokens::writeTokenFile(bad, tokens, tokens::TokenDType::kUint16).isOk());
  auto out = trainRanks(1, tinyGptConfig(bad));
  ASSERT_FALSE(out[0].status.isOk());
  EXPECT_EQ(out[0].status.code(), StatusCode::kInvalidArgument) << out[0].status;
  EXPECT_NE(out[0].status.message().find("bad.bin"), std::string::npos) << out[0].status;
}

TEST_F(TrainerGptTest, TextIsReadAsBytesAndSplitByValFraction) {
  const std::string text = dir_.path() + "/corpus.txt";
  {
    std::ofstream f(text, std::ios::binary);
    for (int i = 0; i < 300; ++i) f << "the quick brown fox jumps over the lazy dog. ";
  }
  TrainerConfig c = tinyGptConfig(text);
  c.data = DatasetKind::kText;
  c.gpt.vocabSize = 256;
  c.maxSteps = 6;
  c.evalEverySteps = 0;  // at the end only
  c.batchSize = 2;
  c.testLimit = 16;      // the first 16 validation windows
  auto out = trainRanks(2, c);
  ASSERT_TRUE(out[0].status.isOk()) << out[0].status;
  ASSERT_TRUE(out[1].status.isOk()) << out[1].status;
  EXPECT_EQ(out[0].result.evalSteps, std::vector<int64_t>{6});
  ASSERT_TRUE(out[0].result.valLoss.has_value());
  EXPECT_EQ(out[0].result.valLoss, out[1].result.valLoss);
  EXPECT_LT(*out[0].result.valLoss, std::log(256.0));
}

// spec.precision: bf16 (Note [bf16 matmuls] in kernels/bf16_ops.h): two ranks train the bf16 GPT
// with bitwise equal replicas, learn the rule, and end near the fp32 run of the same data and
// init (its matmul operands keep 8 significant bits; the weights, gradients and the allreduce
// stay fp32).
TEST_F(TrainerGptTest, TwoRanksTrainTheBf16GptAndLearn) {
  TrainerConfig c = tinyGptConfig(path_);
  c.batchSize = 4;
  auto fp32 = trainRanks(2, c);
  c.gpt.precision = model::GptPrecision::kBf16;
  auto bf16 = trainRanks(2, c);
  for (const auto* run : {&fp32, &bf16}) {
    ASSERT_TRUE((*run)[0].status.isOk()) << (*run)[0].status;
    ASSERT_TRUE((*run)[1].status.isOk()) << (*run)[1].status;
  }
  EXPECT_TRUE(bitwiseEqual(bf16[0].params, bf16[1].params));
  EXPECT_FALSE(bitwiseEqual(bf16[0].params, fp32[0].params)) << "another computation";
  ASSERT_TRUE(bf16[0].result.valLoss.has_value() && fp32[0].result.valLoss.has_value());
  EXPECT_EQ(bf16[0].result.valLosses, bf16[1].result.valLosses);
  EXPECT_LT(*bf16[0].result.valLoss, 0.75 * std::log(double{kGptVocab}));
  EXPECT_LT(bf16[0].result.valLosses.back(), bf16[0].result.valLosses.front());
  // 20 AdamW steps from the same init: the runs part by bf16's rounding (2^-8 relative per
  // product), which AdamW's normalized steps do not amplify much in so few steps.
  EXPECT_NEAR(*bf16[0].result.valLoss, *fp32[0].result.valLoss, 0.05 * *fp32[0].result.valLoss);
}

TEST(TrainerGptConfigTest, WeightDecayMaskTakesLinearWeightsOnly) {
  TrainerConfig c;
  c.weightDecayOn = WeightDecayOn::kLinearWeights;
  Parameter embed{"embed.tokens", {16, 8}}, qkv{"blocks.0.attn.qkv.weight", {24, 8}},
      bias{"blocks.0.attn.qkv.bias", {24}}, gain{"blocks.0.norm1.weight", {8}}, head{"head.weight", {16, 8}};
  std::vector<Parameter*> ps = {&embed, &qkv, &bias, &gain, &head};
  EXPECT_EQ(weightDecayMask(c, ps), (std::vector<bool>{false, true, false, false, true}));
  c.weightDecayOn = WeightDecayOn::kAll;
  EXPECT_TRUE(weightDecayMask(c, ps).empty());
}

}  // namespace
}  // namespace ddp::runtime
