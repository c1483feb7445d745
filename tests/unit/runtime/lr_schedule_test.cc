#include "worker/training/lr_schedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ddp::runtime {
namespace {

TEST(LrScheduleTest, WarmupIsLinearThenConstant) {
  LrSchedule s;
  s.baseLr = 0.1;
  s.warmupSteps = 4;
  EXPECT_DOUBLE_EQ(s.lrAt(0), 0.025);
  EXPECT_DOUBLE_EQ(s.lrAt(1), 0.05);
  EXPECT_DOUBLE_EQ(s.lrAt(3), 0.1);
  EXPECT_DOUBLE_EQ(s.lrAt(1000), 0.1);
}

TEST(LrScheduleTest, StepDecaysEveryPeriodAfterWarmup) {
  LrSchedule s;
  s.kind = LrScheduleKind::kStep;
  s.baseLr = 1.0;
  s.warmupSteps = 2;
  s.stepSize = 3;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(s.lrAt(2), 1.0);   // first step after warmup
  EXPECT_DOUBLE_EQ(s.lrAt(4), 1.0);
  EXPECT_DOUBLE_EQ(s.lrAt(5), 0.5);
  EXPECT_DOUBLE_EQ(s.lrAt(8), 0.25);
}

TEST(LrScheduleTest, CosineGoesFromBaseToMinOverTheRun) {
  LrSchedule s;
  s.kind = LrScheduleKind::kCosine;
  s.baseLr = 1.0;
  s.minLr = 0.1;
  s.warmupSteps = 10;
  s.totalSteps = 110;
  EXPECT_DOUBLE_EQ(s.lrAt(10), 1.0);
  EXPECT_NEAR(s.lrAt(60), 0.55, 1e-12);           // halfway: mean of base and min
  EXPECT_NEAR(s.lrAt(35), 0.1 + 0.9 * 0.5 * (1 + std::cos(M_PI / 4)), 1e-12);
  EXPECT_DOUBLE_EQ(s.lrAt(110), 0.1);
  EXPECT_DOUBLE_EQ(s.lrAt(500), 0.1);             // clamped past the end
}

TEST(LrScheduleTest, ValidateNamesTheProblem) {
  LrSchedule s;
  s.kind = LrScheduleKind::kStep;
  s.stepSize = 0;
  EXPECT_NE(s.validate().message().find("step size"), std::string::npos);
  s = LrSchedule{};
  s.kind = LrScheduleKind::kCosine;
  s.minLr = 1.0;
  s.baseLr = 0.5;
  EXPECT_NE(s.validate().message().find("min lr"), std::string::npos);
  LrScheduleKind k;
  EXPECT_TRUE(parseLrScheduleKind("cosine", &k));
  EXPECT_TRUE(parseLrScheduleKind("linear", &k));
  EXPECT_EQ(k, LrScheduleKind::kLinear);
  EXPECT_FALSE(parseLrScheduleKind("exponential", &k));
  s = LrSchedule{};
  s.kind = LrScheduleKind::kLinear;
  s.minLr = 1.0;
  s.baseLr = 0.5;
  EXPECT_NE(s.validate().message().find("linear schedule: min lr"), std::string::npos);
}

TEST(LrScheduleTest, LinearDecaysFromBaseToMinAfterWarmup) {
  LrSchedule s;
  s.kind = LrScheduleKind::kLinear;
  s.baseLr = 1.0;
  s.minLr = 0.2;
  s.warmupSteps = 4;
  s.totalSteps = 20;  // 16 steps of decay
  EXPECT_DOUBLE_EQ(s.lrAt(0), 0.25);  // warmup as for every kind
  EXPECT_DOUBLE_EQ(s.lrAt(4), 1.0);
  EXPECT_DOUBLE_EQ(s.lrAt(8), 1.0 - 0.8 * 0.25);
  EXPECT_DOUBLE_EQ(s.lrAt(12), 0.6);  // halfway: mean of base and min
  EXPECT_DOUBLE_EQ(s.lrAt(20), 0.2);
  EXPECT_DOUBLE_EQ(s.lrAt(100), 0.2);  // clamped past the end
  for (int64_t step = 5; step < 20; ++step) EXPECT_LT(s.lrAt(step), s.lrAt(step - 1));
}

}  // namespace
}  // namespace ddp::runtime
