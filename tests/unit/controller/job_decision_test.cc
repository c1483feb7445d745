// The job state machine's decision (pure, injected time): every transition of Note [Job state
// machine] and Note [Blaming the right rank].
#include "controller/jobs/job_decision.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

JobFacts running(int members) {
  JobFacts f;
  f.phase = JobPhase::kRunning;
  f.generationActive = true;
  f.liveProcesses = members;
  for (int i = 0; i < members; ++i) f.members.push_back({"w" + std::to_string(i)});
  f.now = at(10);
  return f;
}

TEST(JobDecisionTest, PendingBecomesRunningWhenTheRoundCloses) {
  JobFacts f = running(2);
  f.phase = JobPhase::kPending;
  EXPECT_EQ(decideJob(f).next, JobPhase::kRunning);
  f.generationActive = false;
  f.members = {{"w0"}, {"w1"}};
  EXPECT_FALSE(decideJob(f).next.has_value());
}

TEST(JobDecisionTest, SucceedsWhenEveryMemberFinished) {
  JobFacts f = running(2);
  f.members[0].outcome = WorkerOutcome::kSucceeded;
  EXPECT_FALSE(decideJob(f).next.has_value());
  f.members[1].outcome = WorkerOutcome::kSucceeded;
  auto v = decideJob(f);
  EXPECT_EQ(v.next, JobPhase::kSucceeded);
  EXPECT_TRUE(v.stopWorkers) << "processes still alive after their last heartbeat are stopped";
}

TEST(JobDecisionTest, AFailedExitFailsTheJobAtOnceAndStopsTheOthers) {
  JobFacts f = running(3);
  f.members[1] = {"w1", WorkerOutcome::kFailed, false, "worker rank 1 killed by signal 9", true, at(9.9)};
  auto v = decideJob(f);
  EXPECT_EQ(v.next, JobPhase::kFailed);
  EXPECT_EQ(v.message, "worker rank 1 killed by signal 9");
  EXPECT_TRUE(v.stopWorkers);
}

TEST(JobDecisionTest, ASelfReportedFailureWaitsForAnExitThatExplainsIt) {
  JobFacts f = running(2);
  f.members[0] = {"w0", WorkerOutcome::kFailed, true, "rank 0: peer closed the connection", false, at(9.5)};
  EXPECT_FALSE(decideJob(f).next.has_value()) << "within the settle time";
  f.members[1] = {"w1", WorkerOutcome::kFailed, false, "worker rank 1 killed by signal 9", true, at(9.8)};
  auto v = decideJob(f);
  EXPECT_EQ(v.next, JobPhase::kFailed);
  EXPECT_EQ(v.message, "worker rank 1 killed by signal 9") << "the killed rank is blamed, not its peer";
  f.members[1] = {"w1"};
  f.now = at(10.6);
  EXPECT_EQ(decideJob(f).message, "rank 0: peer closed the connection") << "no exit came: the report stands";
}

TEST(JobDecisionTest, CancelEndsOnlyOnceNoProcessIsLeft) {
  JobFacts f = running(2);
  f.cancelRequested = true;
  f.members[0].outcome = WorkerOutcome::kFailed;  // a cancel is not a failure
  EXPECT_FALSE(decideJob(f).next.has_value());
  f.liveProcesses = 0;
  EXPECT_EQ(decideJob(f).next, JobPhase::kCancelled);
}

TEST(JobDecisionTest, AJobThatFinishedBeforeALateCancelSucceeded) {
  JobFacts f = running(2);
  f.cancelRequested = true;
  f.members[0].outcome = WorkerOutcome::kSucceeded;
  f.members[1].outcome = WorkerOutcome::kSucceeded;
  f.liveProcesses = 0;
  EXPECT_EQ(decideJob(f).next, JobPhase::kSucceeded);
}

TEST(JobDecisionTest, EveryProcessGoneWithoutSuccessIsAFailure) {
  JobFacts f = running(2);
  f.members[0].outcome = WorkerOutcome::kSucceeded;
  f.members[1].outcome = WorkerOutcome::kStopped;
  f.liveProcesses = 0;
  auto v = decideJob(f);
  EXPECT_EQ(v.next, JobPhase::kFailed);
  EXPECT_EQ(v.reason, "WorkersExited");
}

TEST(JobDecisionTest, FinishedJobsStayFinished) {
  JobFacts f = running(1);
  for (JobPhase p : {JobPhase::kSucceeded, JobPhase::kFailed, JobPhase::kCancelled}) {
    f.phase = p;
    f.liveProcesses = 0;
    EXPECT_FALSE(decideJob(f).next.has_value());
  }
}

}  // namespace
}  // namespace ddp::controller
