// TrainingFaults: the hooks' answers for the faults set, and the DDP_TEST_* parsing (Note
// [Injected faults]): formats, the first-generation and this-rank rules, malformed values.
#include "worker/training/training_faults.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace ddp::runtime {
namespace {

EnvLookup envOf(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

TEST(TrainingFaultsTest, NoFaultsAnswerNothingAtAnyStep) {
  const TrainingFaults none;
  EXPECT_TRUE(none.none());
  for (int64_t step = 0; step <= 100; ++step) {
    EXPECT_FALSE(none.stopRequestedDuring(step));
    EXPECT_FALSE(none.stallBeforeStep(step).has_value());
    EXPECT_FALSE(none.shardWrite(step).fail);
    EXPECT_EQ(none.shardWrite(step).delaySeconds, 0);
  }
}

// An injected stop holds from its step on: the ranks agree on it at the first command-word step
// at or after it, so it must still be asked for then.
TEST(TrainingFaultsTest, StopHoldsFromItsStepOn) {
  const TrainingFaults f = TrainingFaults().stopDuring(7);
  EXPECT_FALSE(f.none());
  for (int64_t step = 1; step <= 20; ++step) EXPECT_EQ(f.stopRequestedDuring(step), step >= 7) << step;
  EXPECT_TRUE(TrainingFaults().stopDuring(0).stopRequestedDuring(1));  // from the first step
}

TEST(TrainingFaultsTest, StallAndShardFaultsHitTheirStepOnly) {
  const TrainingFaults f = TrainingFaults().stallBefore(60, 2.5).failShardWrite(40).delayShardWrite(80, 3);
  int stalls = 0, fails = 0, delays = 0;
  for (int64_t step = 1; step <= 200; ++step) {
    if (auto s = f.stallBeforeStep(step)) {
      ++stalls;
      EXPECT_EQ(step, 60);
      EXPECT_EQ(*s, 2.5);
    }
    const ShardWriteFault w = f.shardWrite(step);
    if (w.fail) {
      ++fails;
      EXPECT_EQ(step, 40);
    }
    if (w.delaySeconds > 0) {
      ++delays;
      EXPECT_EQ(step, 80);
      EXPECT_EQ(w.delaySeconds, 3);
    }
    EXPECT_FALSE(f.stopRequestedDuring(step));
  }
  EXPECT_EQ(stalls, 1);
  EXPECT_EQ(fails, 1);
  EXPECT_EQ(delays, 1);
  // A delay of 0 seconds is no delay.
  EXPECT_EQ(TrainingFaults().delayShardWrite(5, 0).shardWrite(5).delaySeconds, 0);
}

TEST(TrainingFaultsTest, UnsetOrEmptyVariablesInjectNothing) {
  for (const auto& vars : {std::map<std::string, std::string>{},
                           std::map<std::string, std::string>{{"DDP_TEST_STALL", ""}, {"DDP_TEST_CHECKPOINT_FAULT", ""}}}) {
    auto f = trainingFaultsFromEnv(envOf(vars), 0, 1);
    ASSERT_TRUE(f.isOk()) << f.status();
    EXPECT_TRUE(f->none());
  }
}

TEST(TrainingFaultsTest, StallIsParsedForItsRankInTheFirstGeneration) {
  const EnvLookup env = envOf({{"DDP_TEST_STALL", "1:200:60"}});
  auto mine = trainingFaultsFromEnv(env, 1, 1);
  ASSERT_TRUE(mine.isOk()) << mine.status();
  EXPECT_EQ(mine->stallBeforeStep(200), std::optional<double>(60.0));
  EXPECT_FALSE(mine->stallBeforeStep(199).has_value());
  EXPECT_FALSE(mine->stopRequestedDuring(200));
  for (auto [rank, generation] : {std::pair{0, int64_t{1}}, {2, 1}, {1, 2}, {1, 7}}) {
    auto other = trainingFaultsFromEnv(env, rank, generation);
    ASSERT_TRUE(other.isOk()) << other.status();
    EXPECT_TRUE(other->none()) << "rank " << rank << " generation " << generation;
  }
  // Fractional seconds, as %lf reads them.
  auto frac = trainingFaultsFromEnv(envOf({{"DDP_TEST_STALL", "0:3:0.25"}}), 0, 1);
  ASSERT_TRUE(frac.isOk()) << frac.status();
  EXPECT_EQ(frac->stallBeforeStep(3), std::optional<double>(0.25));
}

TEST(TrainingFaultsTest, CheckpointFaultFailOrDelay) {
  auto fail = trainingFaultsFromEnv(envOf({{"DDP_TEST_CHECKPOINT_FAULT", "1:40:fail"}}), 1, 1);
  ASSERT_TRUE(fail.isOk()) << fail.status();
  EXPECT_TRUE(fail->shardWrite(40).fail);
  EXPECT_EQ(fail->shardWrite(40).delaySeconds, 0);
  EXPECT_FALSE(fail->shardWrite(60).fail);

  auto delay = trainingFaultsFromEnv(envOf({{"DDP_TEST_CHECKPOINT_FAULT", "0:40:delay:3"}}), 0, 1);
  ASSERT_TRUE(delay.isOk()) << delay.status();
  EXPECT_FALSE(delay->shardWrite(40).fail);
  EXPECT_EQ(delay->shardWrite(40).delaySeconds, 3);
  EXPECT_EQ(delay->shardWrite(41).delaySeconds, 0);

  auto otherRank = trainingFaultsFromEnv(envOf({{"DDP_TEST_CHECKPOINT_FAULT", "0:40:delay:3"}}), 1, 1);
  ASSERT_TRUE(otherRank.isOk());
  EXPECT_TRUE(otherRank->none());
  auto laterGeneration = trainingFaultsFromEnv(envOf({{"DDP_TEST_CHECKPOINT_FAULT", "1:40:fail"}}), 1, 2);
  ASSERT_TRUE(laterGeneration.isOk());
  EXPECT_TRUE(laterGeneration->none());
}

TEST(TrainingFaultsTest, BothVariablesCombineOnOneRank) {
  auto f = trainingFaultsFromEnv(envOf({{"DDP_TEST_STALL", "2:10:1"}, {"DDP_TEST_CHECKPOINT_FAULT", "2:20:fail"}}), 2, 1);
  ASSERT_TRUE(f.isOk()) << f.status();
  EXPECT_EQ(f->stallBeforeStep(10), std::optional<double>(1.0));
  EXPECT_TRUE(f->shardWrite(20).fail);
  // Each variable names its own rank.
  auto split = trainingFaultsFromEnv(envOf({{"DDP_TEST_STALL", "0:10:1"}, {"DDP_TEST_CHECKPOINT_FAULT", "1:20:fail"}}), 1, 1);
  ASSERT_TRUE(split.isOk());
  EXPECT_FALSE(split->stallBeforeStep(10).has_value());
  EXPECT_TRUE(split->shardWrite(20).fail);
}

TEST(TrainingFaultsTest, MalformedValuesAreRefusedNamingTheVariable) {
  const std::pair<const char*, const char*> bad[] = {
      {"DDP_TEST_STALL", "1:200"},           // no seconds
      {"DDP_TEST_STALL", "one:200:60"},      // not a number
      {"DDP_TEST_STALL", "1-200-60"},        // wrong separator
      {"DDP_TEST_CHECKPOINT_FAULT", "1:40"},             // no kind
      {"DDP_TEST_CHECKPOINT_FAULT", "1:40:crash"},       // unknown kind
      {"DDP_TEST_CHECKPOINT_FAULT", "1:40:delay"},       // delay without seconds
      {"DDP_TEST_CHECKPOINT_FAULT", "1:40:FAIL"},        // kinds are lower case
      {"DDP_TEST_CHECKPOINT_FAULT", "x:40:fail"},
  };
  for (const auto& [var, value] : bad) {
    // Refused whatever the rank and generation: a typo is never silently a clean run.
    for (int64_t generation : {1, 2}) {
      auto f = trainingFaultsFromEnv(envOf({{var, value}}), 0, generation);
      ASSERT_FALSE(f.isOk()) << var << "=" << value;
      EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(f.status().message().find(std::string(var) + "=" + value), std::string::npos) << f.status();
    }
  }
}

}  // namespace
}  // namespace ddp::runtime
