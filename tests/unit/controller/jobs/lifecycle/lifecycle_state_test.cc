// LifecycleState (controller/jobs/lifecycle/lifecycle_state.h): a launch is due once; a cancel is
// recorded once, its stop falls due after the grace until it was sent.
#include "controller/jobs/lifecycle/lifecycle_state.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

TEST(LifecycleStateTest, TheFirstCancelCountsAndKeepsItsTime) {
  LifecycleState s;
  EXPECT_TRUE(s.requestCancel(at(5)));
  EXPECT_FALSE(s.requestCancel(at(9)));
  EXPECT_EQ(s.cancelAt, at(5));
  EXPECT_TRUE(s.stopping(JobPhase::kRunning));
}

TEST(LifecycleStateTest, ALaunchIsDueOnceUntilDecidedAndNotWhileHeld) {
  LifecycleState s;
  EXPECT_TRUE(s.launchDue()) << "a new job";
  s.launchHeld = true;
  EXPECT_FALSE(s.launchDue()) << "the call that registered it runs its first reconcile itself";
  s.launchHeld = false;
  s.launching = true;
  EXPECT_FALSE(s.launchDue()) << "a tick decided it: no second launch";
  s.launching = false;
  s.launched = true;
  EXPECT_FALSE(s.launchDue()) << "the launcher answered";
}

TEST(LifecycleStateTest, TheCancelsStopIsDueAfterTheGraceUntilSent) {
  LifecycleState s;
  EXPECT_FALSE(s.stopDue(at(100), std::chrono::seconds(30))) << "no cancel, no stop";
  s.requestCancel(at(10));
  EXPECT_FALSE(s.stopDue(at(39.9), std::chrono::seconds(30)));
  EXPECT_TRUE(s.stopDue(at(40), std::chrono::seconds(30)));
  s.stopSent = true;
  EXPECT_FALSE(s.stopDue(at(50), std::chrono::seconds(30))) << "sent once";
}

TEST(LifecycleStateTest, AStopSentAtTheCancelIsNotSentAgain) {
  LifecycleState s;
  s.requestCancel(at(10));
  s.stopSent = true;  // no worker was training: stopped at once
  EXPECT_FALSE(s.stopDue(at(100), std::chrono::seconds(30)));
}

TEST(LifecycleStateTest, StoppingMeansCancelledOrEnded) {
  LifecycleState s;
  EXPECT_FALSE(s.stopping(JobPhase::kRunning));
  EXPECT_FALSE(s.stopping(JobPhase::kRestarting));
  EXPECT_TRUE(s.stopping(JobPhase::kFailed));
  EXPECT_TRUE(s.stopping(JobPhase::kSucceeded));
  EXPECT_TRUE(s.stopping(JobPhase::kCancelled));
}

}  // namespace
}  // namespace ddp::controller
