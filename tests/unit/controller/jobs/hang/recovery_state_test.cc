// RecoveryState (controller/jobs/hang/recovery_state.h): Note [Recovery figures]'s counting
// (one abort per worker and generation; the step a generation ended at) and when the
// replacements are due.
#include "controller/jobs/hang/recovery_state.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

TEST(RecoveryStateTest, AnAbortCountsOncePerWorkerAndGeneration) {
  RecoveryState s;
  EXPECT_TRUE(s.countAbort("w0", 1));
  EXPECT_FALSE(s.countAbort("w0", 1)) << "its heartbeat's abort after its own";
  EXPECT_TRUE(s.countAbort("w1", 1));
  EXPECT_TRUE(s.countAbort("w0", 2)) << "a later generation counts again";
  EXPECT_FALSE(s.countAbort("w0", 2));
}

TEST(RecoveryStateTest, RecoveredOnceEveryMemberStepped) {
  RecoveryState s;
  s.begin(/*ended=*/3, at(10), /*planned=*/false, /*stepReached=*/120);
  EXPECT_TRUE(s.recovering);
  EXPECT_EQ(s.abortedGeneration, 3);
  EXPECT_FALSE(s.noteStepped("w0", 3));
  EXPECT_FALSE(s.noteStepped("w0", 3)) << "the same member twice is one";
  EXPECT_FALSE(s.noteStepped("w1", 3));
  EXPECT_TRUE(s.noteStepped("w2", 3));
  EXPECT_FALSE(s.recovering);
  s.begin(4, at(20), true, 0);
  EXPECT_TRUE(s.steppedSinceVerdict.empty()) << "a new change counts from nothing";
  EXPECT_TRUE(s.plannedChange);
}

TEST(RecoveryStateTest, TheGenerationEndedWhereTheLastRejoiningSurvivorStopped) {
  RecoveryState s;
  s.begin(1, at(0), false, /*stepReached=*/565);
  EXPECT_EQ(s.endedAt(), 565) << "no survivor reported: the verdict's estimate";
  s.stepAtRejoin["w0"] = 598;
  s.stepAtRejoin["w1"] = 600;
  EXPECT_EQ(s.endedAt(), 600);
}

TEST(RecoveryStateTest, SurvivorsOfTheEndedGenerationOnly) {
  RecoveryState s;
  s.begin(2, at(0), false, 0);
  s.survivors = {"w0"};
  EXPECT_TRUE(s.survived(2, "w0"));
  EXPECT_FALSE(s.survived(2, "w1")) << "a culprit";
  EXPECT_FALSE(s.survived(1, "w0")) << "an older generation";
}

TEST(RecoveryStateTest, ReplacementsAreDueAfterTheBackoff) {
  RecoveryState s;
  EXPECT_FALSE(s.replacementsDue(at(100))) << "nobody to replace";
  s.toReplace = {"w1", "w2"};
  s.replaceAt = at(10);
  EXPECT_FALSE(s.replacementsDue(at(9.9))) << "backoff";
  EXPECT_TRUE(s.replacementsDue(at(10)));
}

}  // namespace
}  // namespace ddp::controller
