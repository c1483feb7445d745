// PowerSGD state saved by 4 ranks loads at 3, 2 and 5 (Note [Error feedback at another world
// size] in worker/ddp/powersgd_state.h): iteration, RNG and Q memories equal the saved ones
// bitwise; every new rank's error-feedback buffer is the closed form (sum over the saved ranks
// in rank order, in double, divided by 4, rounded to f32), so the average error over the new
// ranks, the correction the next update applies, equals the old average; training continues.
// The trainer's path (runtime::commHookStateForWorld) gives the same bytes. Ranks run over
// LocalBackend.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/support/local_backend.h"
#include "tests/unit/ddp/powersgd_test_util.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/powersgd_hook.h"
#include "worker/training/training_setup.h"

namespace ddp {
namespace {

using testing_util::randomVector;
using testing_util::runStep;
using testing_util::TensorSpec;
using testing_util::TestBucket;

const std::vector<TensorSpec> kTensors = {{"l1.w", {24, 16}}, {"l1.b", {24}}, {"l2.w", {6, 24}}};

PowerSgdOptions testOptions() {
  PowerSgdOptions o;
  o.matrixApproximationRank = 2;
  o.startPowerSgdIter = 2;
  return o;
}

Status train(PowerSgdHookBase& hook, int rank, int from, int to) {
  for (int step = from; step < to; ++step) {
    TestBucket bucket(0, true, kTensors);
    for (size_t i = 0; i < bucket.params().size(); ++i) {
      const auto& p = bucket.params()[i];
      auto g = randomVector(p.numel(), static_cast<uint32_t>(stableHash(p.name) + 1000 * step + 17 * rank));
      std::copy(g.begin(), g.end(), bucket.buffer().begin() + bucket.offset(i));
    }
    std::vector<TestBucket*> buckets{&bucket};
    DDP_RETURN_IF_ERROR(runStep(hook, buckets));
  }
  return Status::ok();
}

std::unique_ptr<PowerSgdHookBase> makeHook(bool batched, comm::Backend& b, PowerSgdOptions o) {
  if (batched) return std::make_unique<BatchedPowerSgdHook>(b, o);
  return std::make_unique<PowerSgdHook>(b, o);
}

constexpr int kSavedWorld = 4;
constexpr int kSavedAt = 5;

std::vector<std::string> saveAtFour(bool batched) {
  std::vector<std::string> saved(kSavedWorld);
  comm::runLocalRanks(kSavedWorld, [&](int rank, comm::Backend& backend) {
    auto hook = makeHook(batched, backend, testOptions());
    ASSERT_TRUE(train(*hook, rank, 0, kSavedAt).isOk());
    auto s = hook->saveState();
    ASSERT_TRUE(s.isOk()) << s.status();
    saved[static_cast<size_t>(rank)] = *s;
  });
  return saved;
}

// Closed form: (sum_r e_r) / N per element, the sum in double in rank order.
std::vector<float> averageError(const std::vector<PowerSgdState>& old, const std::string& key) {
  std::vector<double> sum(old[0].tensors.at(key).error.size(), 0.0);
  for (const auto& s : old)
    for (size_t k = 0; k < sum.size(); ++k) sum[k] += s.tensors.at(key).error[k];
  std::vector<float> out(sum.size());
  for (size_t k = 0; k < sum.size(); ++k) out[k] = static_cast<float>(sum[k] / static_cast<double>(old.size()));
  return out;
}

TEST(PowerSgdElasticTest, FourToThreeTwoAndFiveCarriesSharedStateAndRedistributesTheAverageError) {
  for (bool batched : {false, true}) {
    SCOPED_TRACE(batched ? "batched" : "powersgd");
    const std::vector<std::string> saved = saveAtFour(batched);
    std::vector<PowerSgdState> old;
    for (const auto& s : saved) old.push_back(*PowerSgdState::deserialize(s));
    // Preconditions: Q memories and the iteration are shared; the errors differ per rank.
    size_t withError = 0;
    for (const auto& [key, t] : old[0].tensors) {
      for (int r = 1; r < kSavedWorld; ++r) EXPECT_EQ(old[r].tensors.at(key).q, t.q) << key;
      if (!t.error.empty()) {
        ++withError;
        EXPECT_NE(old[1].tensors.at(key).error, t.error) << key;
      }
    }
    ASSERT_GT(withError, 0u);

    for (int world : {3, 2, 5}) {
      SCOPED_TRACE("4 -> " + std::to_string(world));
      std::mutex mu;
      std::map<std::string, std::vector<double>> newSum;
      comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
        auto mine = redistributeErrorFeedback(old, rank, world);
        ASSERT_TRUE(mine.isOk()) << mine.status();
        runtime::TrainerConfig c;
        c.hook = batched ? CommHookType::kBatchedPowerSgd : CommHookType::kPowerSgd;
        c.powerSgd = testOptions();
        auto viaTrainer = runtime::commHookStateForWorld(c, saved, rank, world);
        ASSERT_TRUE(viaTrainer.isOk()) << viaTrainer.status();
        EXPECT_EQ(*viaTrainer, mine->serialize()) << "the trainer's loading redistributes the same way";

        PowerSgdOptions o = testOptions();
        o.randomSeed = 99;  // the saved RNG state wins
        auto hook = makeHook(batched, backend, o);
        ASSERT_TRUE(hook->loadState(*viaTrainer).isOk());
        const PowerSgdState after = hook->stateSnapshot();
        EXPECT_EQ(after.iteration, old[0].iteration);
        EXPECT_EQ(after.randomSeed, old[0].randomSeed);
        EXPECT_EQ(after.worldSize, world);
        ASSERT_EQ(after.buckets.size(), old[0].buckets.size());
        for (const auto& [id, b] : old[0].buckets) EXPECT_EQ(after.buckets.at(id).q, b.q) << "bucket " << id;
        ASSERT_EQ(after.tensors.size(), old[0].tensors.size());
        EXPECT_TRUE(train(*hook, rank, kSavedAt, kSavedAt + 2).isOk()) << "training continues at the new size";
        EXPECT_EQ(hook->iteration(), static_cast<uint64_t>(kSavedAt + 2));
        std::lock_guard<std::mutex> lock(mu);
        for (const auto& [key, t] : old[0].tensors) {
          const PowerSgdTensorState& n = after.tensors.at(key);
          EXPECT_EQ(n.q, t.q) << key << ": Q memory, bitwise";
          if (t.error.empty()) {
            EXPECT_TRUE(n.error.empty()) << key;
            continue;
          }
          EXPECT_EQ(n.error, averageError(old, key)) << key << ": the closed form, bitwise";
          auto& s = newSum[key];
          s.resize(n.error.size(), 0.0);
          for (size_t k = 0; k < n.error.size(); ++k) s[k] += n.error[k];
        }
      });
      // The correction the next update applies is the average error: unchanged.
      for (const auto& [key, s] : newSum) {
        std::vector<double> oldSum(s.size(), 0.0);
        for (const auto& st : old)
          for (size_t k = 0; k < s.size(); ++k) oldSum[k] += st.tensors.at(key).error[k];
        for (size_t k = 0; k < s.size(); ++k) {
          ASSERT_NEAR(s[k] / world, oldSum[k] / kSavedWorld, 1e-6 * (1 + std::fabs(oldSum[k]))) << key << " " << k;
        }
      }
    }
  }
}

TEST(PowerSgdElasticTest, TrainerPathKeepsOwnStateAtTheSameSizeOrUnderAnotherPolicy) {
  const std::vector<std::string> saved = saveAtFour(false);
  runtime::TrainerConfig c;
  c.hook = CommHookType::kPowerSgd;
  c.powerSgd = testOptions();
  EXPECT_EQ(*runtime::commHookStateForWorld(c, saved, 2, kSavedWorld), saved[2]) << "same world size: its own";
  c.powerSgd.worldSizeChangePolicy = WorldSizeChangePolicy::kResetErrorFeedback;
  EXPECT_EQ(*runtime::commHookStateForWorld(c, saved, 1, 3), saved[1]) << "reset policy: the hook resets";
  EXPECT_EQ(*runtime::commHookStateForWorld(c, saved, 4, 5), saved[0]) << "a new rank: rank 0's";
  c.powerSgd.worldSizeChangePolicy = WorldSizeChangePolicy::kRedistributeErrorFeedback;
  std::vector<std::string> broken = saved;
  broken[3] = "not a state";
  EXPECT_EQ(runtime::commHookStateForWorld(c, broken, 0, 3).status().code(), StatusCode::kDataLoss);
  // Mixed iterations are refused.
  std::vector<PowerSgdState> old;
  for (const auto& s : saved) old.push_back(*PowerSgdState::deserialize(s));
  old[2].iteration += 1;
  EXPECT_EQ(redistributeErrorFeedback(old, 0, 3).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(redistributeErrorFeedback({}, 0, 3).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ddp
