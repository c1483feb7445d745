// Note [Suspended jobs]: decideSuspension, pure.
#include "controller/jobs/lifecycle/suspension.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TEST(SuspensionTest, SuspendsALiveJobOnce) {
  for (JobPhase p : {JobPhase::kPending, JobPhase::kRunning, JobPhase::kRestarting}) {
    EXPECT_EQ(decideSuspension(p, false, true), SuspendAction::kSuspend) << jobPhaseName(p);
    EXPECT_EQ(decideSuspension(p, true, true), SuspendAction::kNone) << "already suspending";
    EXPECT_EQ(decideSuspension(p, false, false), SuspendAction::kNone) << "nothing asked";
  }
  EXPECT_EQ(decideSuspension(JobPhase::kSuspended, true, true), SuspendAction::kNone);
}

TEST(SuspensionTest, ResumesOnlyASuspendedJob) {
  EXPECT_EQ(decideSuspension(JobPhase::kSuspended, true, false), SuspendAction::kResume);
  EXPECT_EQ(decideSuspension(JobPhase::kRunning, true, false), SuspendAction::kNone) << "still stopping: later";
}

TEST(SuspensionTest, AFinishedJobIsLeftAsItIs) {
  for (JobPhase p : {JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kCancelled}) {
    EXPECT_EQ(decideSuspension(p, false, true), SuspendAction::kNone);
    EXPECT_EQ(decideSuspension(p, false, false), SuspendAction::kNone);
  }
  EXPECT_FALSE(isTerminal(JobPhase::kSuspended));
  JobPhase parsed{};
  ASSERT_TRUE(parseJobPhase("Suspended", &parsed));
  EXPECT_EQ(parsed, JobPhase::kSuspended);
}

}  // namespace
}  // namespace ddp::controller
