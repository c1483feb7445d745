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
  EXPECT_FALSE(parseLrScheduleKind("linear", &k));
}

}  // namespace
}  // namespace ddp::runtime
