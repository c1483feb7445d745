// Trainer on a tiny GPT over LocalBackend (ranks as threads), reading token files the test writes.
// Oracles: one process on the same global batch (the same windows: Note [Token windows]), an
// uninterrupted run for resume, and the data's own errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "common/split_mix_rng.h"
#include "common/tokens/token_file.h"
#include "tests/support/local_backend.h"
#include "tests/support/temp_dir.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {
namespace {

using Params = std::vector<std::vector<float>>;

constexpr int kVocab = 16;

// A learnable sequence: next = (3 prev + 1) mod 16, with one token in ten drawn at random.
std::vector<int32_t> markovTokens(int64_t n, uint64_t seed) {
  SplitMixRng rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  int32_t prev = 0;
  for (auto& x : t) {
    x = rng.next() % 10 == 0 ? static_cast<int32_t>(rng.next() % kVocab) : (3 * prev + 1) % kVocab;
    prev = x;
  }
  return t;
}

TrainerConfig gptConfig(const std::string& trainPath) {
  TrainerConfig c;
  c.job = "gpt-unit";
  c.seed = 11;
  c.model = ModelType::kGpt;
  c.gpt.vocabSize = kVocab;
  c.gpt.contextLength = 8;
  c.gpt.layers = 1;
  c.gpt.heads = 2;
  c.gpt.dModel = 16;
  c.data = DatasetKind::kTokens;
  c.trainTokens.path = trainPath;
  c.valFraction = 0.1;
  c.batchSize = 8;
  c.epochs = 0;
  c.maxSteps = 20;
  c.evalEverySteps = 5;
  c.optimizer = optim::OptimizerConfig::adamw(1e-2f, 0.9f, 0.99f, 1e-8f, 0.1f);
  c.weightDecayOn = WeightDecayOn::kLinearWeights;
  c.lr.kind = LrScheduleKind::kCosine;
  c.lr.warmupSteps = 2;
  c.lr.minLr = 1e-3;
  c.logEverySteps = 1000;
  return c;
}

struct RankOutput {
  Params params;
  TrainResult result;
  Status status;
};

Params copyParams(model::TrainableModel& m) {
  Params out;
  for (Parameter* p : m.parameters()) {
    const float* d = static_cast<const float*>(p->data);
    out.emplace_back(d, d + p->numel());
  }
  return out;
}

std::vector<RankOutput> train(int world, const TrainerConfig& config, TrainerIo io = {}) {
  std::vector<RankOutput> out(static_cast<size_t>(world));
  io.progress = nullptr;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    RankOutput& mine = out[static_cast<size_t>(rank)];
    auto trainer = Trainer::create(config, backend, io);
    if (!trainer.isOk()) {
      mine.status = trainer.status();
      return;
    }
    auto r = (*trainer)->run();
    if (!r.isOk()) {
      mine.status = r.status();
      (*trainer)->stopCommunication();
      return;
    }
    mine.result = *r;
    mine.params = copyParams((*trainer)->model());
  });
  return out;
}

bool bitwiseEqual(const Params& a, const Params& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) return false;
  }
  return true;
}

float maxAbsDiff(const Params& a, const Params& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  }
  return m;
}

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
  TrainerConfig two = gptConfig(path_);
  two.batchSize = 4;  // 2 x 4 = the single process's 8 windows, the same ones
  auto ranks = train(2, two);
  ASSERT_TRUE(ranks[0].status.isOk()) << ranks[0].status;
  ASSERT_TRUE(ranks[1].status.isOk()) << ranks[1].status;
  auto single = train(1, gptConfig(path_));
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
  EXPECT_LT(*single[0].result.valLoss, 0.75 * std::log(double{kVocab}));
  EXPECT_LT(single[0].result.valLosses.back(), single[0].result.valLosses.front());
}

TEST_F(TrainerGptTest, ResumeAfterStopIsBitwiseEqualToUninterruptedRun) {
  TrainerConfig c = gptConfig(path_);
  c.batchSize = 4;
  c.gpt.dropout = 0.1f;  // the masks come from (seed, rank, step): a resumed step draws the same
  c.gradAccumulation = 2;
  auto reference = train(2, c);
  ASSERT_TRUE(reference[0].status.isOk()) << reference[0].status;

  test::TempDir ckpt("trainer_gpt_ckpt");
  c.checkpointDir = ckpt.path();
  c.checkpointEverySteps = 4;
  const TrainingFaults stop = TrainingFaults().stopDuring(7);
  TrainerIo io;
  io.faults = &stop;
  auto first = train(2, c, io);
  ASSERT_TRUE(first[0].status.isOk()) << first[0].status;
  ASSERT_TRUE(first[0].result.stopped);
  ASSERT_EQ(first[0].result.steps, 7);
  auto second = train(2, c);
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
  TrainerConfig c = gptConfig(path_);
  c.batchSize = 4;
  c.nominalWorldSize = 2;  // the global batch is 8 at any world size
  auto reference = train(2, c);
  ASSERT_TRUE(reference[0].status.isOk()) << reference[0].status;

  test::TempDir ckpt("trainer_gpt_elastic");
  c.checkpointDir = ckpt.path();
  const TrainingFaults stop = TrainingFaults().stopDuring(7);
  TrainerIo io;
  io.faults = &stop;
  auto first = train(2, c, io);
  ASSERT_TRUE(first[0].status.isOk()) << first[0].status;
  ASSERT_EQ(first[0].result.steps, 7);
  auto single = train(1, c);
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
  std::vector<int32_t> tokens(600, kVocab);  // every token is one past the vocabulary
  ASSERT_TRUE(tokens::writeTokenFile(bad, tokens, tokens::TokenDType::kUint16).isOk());
  auto out = train(1, gptConfig(bad));
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
  TrainerConfig c = gptConfig(text);
  c.data = DatasetKind::kText;
  c.gpt.vocabSize = 256;
  c.maxSteps = 6;
  c.evalEverySteps = 0;  // at the end only
  c.batchSize = 2;
  c.testLimit = 16;      // the first 16 validation windows
  auto out = train(2, c);
  ASSERT_TRUE(out[0].status.isOk()) << out[0].status;
  ASSERT_TRUE(out[1].status.isOk()) << out[1].status;
  EXPECT_EQ(out[0].result.evalSteps, std::vector<int64_t>{6});
  ASSERT_TRUE(out[0].result.valLoss.has_value());
  EXPECT_EQ(out[0].result.valLoss, out[1].result.valLoss);
  EXPECT_LT(*out[0].result.valLoss, std::log(256.0));
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
