// copyProgressFigures (common/protocol/progress_figures.h): every figure is copied, and an absent
// optional one clears or keeps the destination's as asked.
#include "common/protocol/progress_figures.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>

namespace ddp::protocol {
namespace {

struct Source {  // the worker's side: int epochs
  int64_t step = 0, totalSteps = 0;
  int epoch = 0, epochs = 0;
  double loss = 0, samplesPerSecond = 0;
  std::optional<double> testAccuracy, valLoss, tokensPerSecond, mfu;
};
struct Destination {  // the controller's side: int64_t epochs
  int64_t step = 0, totalSteps = 0, epoch = 0, epochs = 0;
  double loss = 0, samplesPerSecond = 0;
  std::optional<double> testAccuracy, valLoss, tokensPerSecond, mfu;
};

TEST(ProgressFiguresTest, EveryFigureIsCopied) {
  Source s{120, 1000, 2, 5, 0.25, 512.5, 0.91, 1.7, 4096, 0.31};
  Destination d;
  copyProgressFigures(s, &d);
  EXPECT_EQ(d.step, 120);
  EXPECT_EQ(d.totalSteps, 1000);
  EXPECT_EQ(d.epoch, 2);
  EXPECT_EQ(d.epochs, 5);
  EXPECT_EQ(d.loss, 0.25);
  EXPECT_EQ(d.samplesPerSecond, 512.5);
  EXPECT_EQ(d.testAccuracy, 0.91);
  EXPECT_EQ(d.valLoss, 1.7);
  EXPECT_EQ(d.tokensPerSecond, 4096);
  EXPECT_EQ(d.mfu, 0.31);
}

TEST(ProgressFiguresTest, AnAbsentFigureClearsOrKeepsTheLastOne) {
  Destination d;
  d.testAccuracy = 0.9;
  d.mfu = 0.3;
  Source s;
  s.valLoss = 2.0;
  copyProgressFigures(s, &d, AbsentFigures::kKeepLast);
  EXPECT_EQ(d.testAccuracy, 0.9);
  EXPECT_EQ(d.mfu, 0.3);
  EXPECT_EQ(d.valLoss, 2.0);
  copyProgressFigures(s, &d);
  EXPECT_FALSE(d.testAccuracy.has_value());
  EXPECT_FALSE(d.mfu.has_value());
  EXPECT_EQ(d.valLoss, 2.0);
}

}  // namespace
}  // namespace ddp::protocol
