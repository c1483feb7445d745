// The tiny GPT (tests/support/gpt_runs.h) with the comm hooks, 2 ranks as threads. Oracles: the
// f32-allreduce run (one SGD step, whose applied gradient must match within the half format's
// rounding; 20 AdamW steps, which must learn as well), the hook's own compression rule applied
// to the model's shapes by hand (PowerSGD compresses the 2-D weights only), and the
// uninterrupted run for a PowerSGD resume.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "common/tokens/token_file.h"
#include "tests/support/gpt_runs.h"
#include "tests/support/temp_dir.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"
#include "worker/training/training_setup.h"

namespace ddp::runtime {
namespace {

using test::bitwiseEqual;
using test::kGptVocab;
using test::Params;
using test::trainRanks;

class TrainerGptHooksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.path() + "/train.bin";
    ASSERT_TRUE(tokens::writeTokenFile(path_, test::markovTokens(6000, 5), tokens::TokenDType::kUint16).isOk());
  }
  // 2 ranks x 4 windows.
  TrainerConfig config() const {
    TrainerConfig c = test::tinyGptConfig(path_);
    c.batchSize = 4;
    return c;
  }
  test::TempDir dir_{"trainer_gpt_hooks"};
  std::string path_;
};

struct HalfVariant {
  const char* name;
  CommHookType hook;
  MixedPrecision mixed;
  double unit;  // unit roundoff of the reduction's format
};
// fp16 keeps 11 significant bits, bf16 8. The fp16_compress / bf16_compress hooks and the
// reducer's mixed precision (spec.mixedPrecision) both reduce in the half format.
const HalfVariant kHalfVariants[] = {
    {"fp16 hook", CommHookType::kFp16, MixedPrecision::kNone, std::ldexp(1.0, -11)},
    {"bf16 hook", CommHookType::kBf16, MixedPrecision::kNone, std::ldexp(1.0, -8)},
    {"fp16 mixed precision", CommHookType::kAllreduce, MixedPrecision::kFp16, std::ldexp(1.0, -11)},
    {"bf16 mixed precision", CommHookType::kAllreduce, MixedPrecision::kBf16, std::ldexp(1.0, -8)},
};

// One plain SGD step (lr 1, no momentum, no decay) moves each parameter by the reduced gradient:
// the gradient a run applied is p0 - p1. A half reduction of g = (g0 + g1) / 2 rounds each
// rank's g_r / 2 and the sum (three roundings, each within `unit` of a value no larger than the
// tensor's largest contribution, bounded here by 2x the largest |g|), plus fp16's subnormal
// spacing 2^-24 for tiny values; recovering p0 - p1 in f32 adds 2^-24 |p| (p up to 1: the
// layer norms' gains).
TEST_F(TrainerGptHooksTest, HalfPrecisionReductionsApplyTheF32StepWithinTheirRounding) {
  TrainerConfig c = config();
  c.maxSteps = 1;
  c.evalEverySteps = 0;
  c.optimizer = optim::OptimizerConfig::sgd(1.0f);
  c.weightDecayOn = WeightDecayOn::kAll;
  c.lr = LrSchedule{};
  auto initial = buildModel(c);
  ASSERT_TRUE(initial.isOk()) << initial.status();
  const Params p0 = test::copyParams(**initial);
  auto f32 = trainRanks(2, c);
  ASSERT_TRUE(f32[0].status.isOk()) << f32[0].status;
  auto applied = [&](const Params& p1) {
    Params g = p0;
    for (size_t i = 0; i < g.size(); ++i) {
      for (size_t j = 0; j < g[i].size(); ++j) g[i][j] = p0[i][j] - p1[i][j];
    }
    return g;
  };
  const Params gRef = applied(f32[0].params);
  for (const HalfVariant& v : kHalfVariants) {
    SCOPED_TRACE(v.name);
    TrainerConfig h = c;
    h.hook = v.hook;
    h.mixedPrecision = v.mixed;
    auto half = trainRanks(2, h);
    ASSERT_TRUE(half[0].status.isOk()) << half[0].status;
    EXPECT_TRUE(bitwiseEqual(half[0].params, half[1].params));
    const Params g = applied(half[0].params);
    size_t differing = 0, total = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      float maxRef = 0, maxP = 0;
      for (float x : gRef[i]) maxRef = std::max(maxRef, std::abs(x));
      for (float x : p0[i]) maxP = std::max(maxP, std::abs(x));
      const double tol = 3 * v.unit * 2 * maxRef + 3 * std::ldexp(1.0, -25) + std::ldexp(1.0, -23) * maxP;
      for (size_t j = 0; j < g[i].size(); ++j) {
        ASSERT_NEAR(g[i][j], gRef[i][j], tol) << "parameter " << i << " element " << j;
        differing += g[i][j] != gRef[i][j];
        ++total;
      }
    }
    EXPECT_GT(differing, total / 10) << "too few elements rounded: the reduction was not in half precision";
  }
}

// 20 AdamW steps: every half reduction learns the rule as the f32 run does. Each step's gradient
// carries a few units of rounding; Adam normalises its step and 20 steps do not compound that
// into more than one unit of the loss, relative.
TEST_F(TrainerGptHooksTest, HalfPrecisionReductionsLearnLikeF32) {
  const TrainerConfig c = config();
  auto f32 = trainRanks(2, c);
  ASSERT_TRUE(f32[0].status.isOk()) << f32[0].status;
  ASSERT_TRUE(f32[0].result.valLoss.has_value());
  for (const HalfVariant& v : kHalfVariants) {
    SCOPED_TRACE(v.name);
    TrainerConfig h = c;
    h.hook = v.hook;
    h.mixedPrecision = v.mixed;
    auto half = trainRanks(2, h);
    ASSERT_TRUE(half[0].status.isOk()) << half[0].status;
    EXPECT_TRUE(bitwiseEqual(half[0].params, half[1].params));
    EXPECT_FALSE(bitwiseEqual(half[0].params, f32[0].params));
    ASSERT_TRUE(half[0].result.valLoss.has_value());
    EXPECT_LT(*half[0].result.valLoss, 0.75 * std::log(double{kGptVocab}));
    EXPECT_LT(half[0].result.valLosses.back(), half[0].result.valLosses.front());
    EXPECT_NEAR(*half[0].result.valLoss, *f32[0].result.valLoss, v.unit * *f32[0].result.valLoss);
  }
}

TrainerConfig powerSgd(TrainerConfig c) {
  c.hook = CommHookType::kPowerSgd;
  c.powerSgd.matrixApproximationRank = 2;
  c.powerSgd.startPowerSgdIter = 3;
  return c;
}

// PowerSGD compresses an n x m tensor (shape[0] x the rest) when (n + m) r rate < n m: every 2-D
// weight of this GPT, and none of its vectors (biases, norms: n x 1). The elements sent per step
// follow from the model's shapes; the run must send exactly those. Over 40 steps it must take
// the loss down from the uniform guess ln 16 by at least 70% as much as the f32 run does (a
// rank-2 approximation of 16-wide weights learns slower: about 85% here).
TEST_F(TrainerGptHooksTest, PowerSgdCompressesTheTwoDimensionalWeightsAndLearns) {
  TrainerConfig c = config();
  c.maxSteps = 40;
  c.evalEverySteps = 10;
  const TrainerConfig p = powerSgd(c);
  auto model = buildModel(p);
  ASSERT_TRUE(model.isOk()) << model.status();
  uint64_t before = 0, after = 0;
  int matrices = 0;
  for (const Parameter* param : (*model)->parameters()) {
    const uint64_t n = static_cast<uint64_t>(param->shape[0]), numel = static_cast<uint64_t>(param->numel());
    const uint64_t m = numel / n, r = std::min<uint64_t>({n, m, 2});
    const bool compress = (n + m) * r * p.powerSgd.minCompressionRate < static_cast<double>(numel);
    EXPECT_EQ(compress, param->shape.size() == 2) << param->name;
    matrices += compress;
    before += numel;
    after += compress ? (n + m) * r : numel;
  }
  ASSERT_GT(matrices, 0);
  auto f32 = trainRanks(2, c);
  auto psgd = trainRanks(2, p);
  ASSERT_TRUE(f32[0].status.isOk()) << f32[0].status;
  ASSERT_TRUE(psgd[0].status.isOk()) << psgd[0].status;
  EXPECT_TRUE(bitwiseEqual(psgd[0].params, psgd[1].params));
  const int64_t compressedSteps = p.maxSteps - p.powerSgd.startPowerSgdIter;  // iterations count from 0
  EXPECT_EQ(psgd[0].progress.compressionUncompressedBytes, static_cast<int64_t>(before * 4) * compressedSteps);
  EXPECT_EQ(psgd[0].progress.compressionSentBytes, static_cast<int64_t>(after * 4) * compressedSteps);
  ASSERT_TRUE(psgd[0].result.valLoss && f32[0].result.valLoss);
  const double uniform = std::log(double{kGptVocab});
  EXPECT_LT(psgd[0].result.valLosses.back(), psgd[0].result.valLosses.front());
  EXPECT_GT(uniform - *psgd[0].result.valLoss, 0.7 * (uniform - *f32[0].result.valLoss))
      << "PowerSGD " << *psgd[0].result.valLoss << ", f32 " << *f32[0].result.valLoss;
}

// PowerSGD's Q memories and error feedback are checkpointed: a run stopped at step 7 (after
// compression began at 3) and resumed ends bitwise as the uninterrupted run.
TEST_F(TrainerGptHooksTest, PowerSgdResumeIsBitwiseEqualToTheUninterruptedRun) {
  TrainerConfig c = powerSgd(config());
  test::TempDir ckpt("trainer_gpt_psgd_ckpt");
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

}  // namespace
}  // namespace ddp::runtime
