// The job state machine's decision (pure, injected time): every transition of Note [Job state
// machine] and Note [Blaming the right rank].
#include "controller/jobs/lifecycle/job_decision.h"

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

// Note [Stopping an unresponsive worker]: the Unresponsive rule (silent for longer than
// heartbeatSeconds x heartbeatMisses), applied while the job stops.
TEST(JobDecisionTest, WhileStoppingOnlyAWorkerSilentPastTheHeartbeatWindowIsKilledAtOnce) {
  const Duration window = std::chrono::seconds(3);  // heartbeatSeconds 1 x heartbeatMisses 3
  auto worker = [](const std::string& id, WorkerOutcome outcome, bool alive, double lastSeen) {
    WorkerFacts w{id, outcome, alive};
    w.lastSeen = at(lastSeen);
    return w;
  };
  const std::vector<WorkerFacts> workers = {
      worker("healthy", WorkerOutcome::kRunning, true, 9.5),   // beat 0.5 s ago: keeps its grace
      worker("stopped", WorkerOutcome::kRunning, true, 6.9),   // SIGSTOPped 3.1 s ago
      worker("edge", WorkerOutcome::kRunning, true, 7.0),      // exactly the window: not yet
      worker("final", WorkerOutcome::kStopped, true, 1.0),     // sent its final heartbeat: exiting
      worker("done", WorkerOutcome::kSucceeded, true, 1.0),    // finished, still tearing down
      worker("gone", WorkerOutcome::kRunning, false, 1.0),     // no process to kill
  };
  EXPECT_EQ(workersToKillOnStop(workers, window, at(10)), std::vector<std::string>{"stopped"});
  // The injected clock moves on: the next silent one goes too, the healthy one still waits.
  EXPECT_EQ(workersToKillOnStop(workers, window, at(10.1)), (std::vector<std::string>{"stopped", "edge"}));
  EXPECT_EQ(workersToKillOnStop(workers, window, at(12.4)), (std::vector<std::string>{"stopped", "edge"}));
  EXPECT_EQ(workersToKillOnStop(workers, window, at(12.6)),
            (std::vector<std::string>{"healthy", "stopped", "edge"}));
  EXPECT_TRUE(workersToKillOnStop({}, window, at(10)).empty());
  // A longer window (heartbeatMisses 5) spares the one silent for 3.1 s.
  EXPECT_TRUE(workersToKillOnStop({workers[1]}, std::chrono::seconds(5), at(10)).empty());
}

// Note [Recovery]: none before the first restart, then the base doubling up to the maximum (the
// controller's defaults, JobTimings: 1 s up to 30 s).
TEST(JobDecisionTest, RestartBackoffDoublesFromOneSecondUpToThirty) {
  using std::chrono::seconds;
  auto backoff = [](int restart) { return restartBackoff(restart, seconds(1), seconds(30)); };
  EXPECT_EQ(backoff(0), Duration::zero());
  EXPECT_EQ(backoff(1), Duration::zero());
  EXPECT_EQ(backoff(2), seconds(1));
  EXPECT_EQ(backoff(3), seconds(2));
  EXPECT_EQ(backoff(4), seconds(4));
  EXPECT_EQ(backoff(5), seconds(8));
  EXPECT_EQ(backoff(6), seconds(16));
  EXPECT_EQ(backoff(7), seconds(30));
  EXPECT_EQ(backoff(8), seconds(30));
  EXPECT_EQ(backoff(1000), seconds(30)) << "no shift overflow for a large count";
}

TEST(JobDecisionTest, RestartBackoffFollowsItsConfiguredBaseAndMaximum) {
  using std::chrono::milliseconds;
  auto backoff = [](int restart) { return restartBackoff(restart, milliseconds(250), milliseconds(1500)); };
  EXPECT_EQ(backoff(1), Duration::zero());
  EXPECT_EQ(backoff(2), milliseconds(250));
  EXPECT_EQ(backoff(4), milliseconds(1000));
  EXPECT_EQ(backoff(5), milliseconds(1500));
  EXPECT_EQ(restartBackoff(40, milliseconds(10), std::chrono::hours(1)), milliseconds(320))
      << "the doubling stops at 32 x the base";
}

}  // namespace
}  // namespace ddp::controller
