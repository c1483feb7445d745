// reconcileTick (controller/jobs/job_tick.h, pure, injected time): every action of Note [Tick
// actions] and what holds each back.
#include "controller/jobs/job_tick.h"

#include <gtest/gtest.h>

namespace ddp::controller {
namespace {

TimePoint at(double s) { return TimePoint{} + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s)); }

JobTickFacts running() {
  JobTickFacts f;
  f.now = at(100);
  f.phase = JobPhase::kRunning;
  f.heartbeatWindow = std::chrono::seconds(3);
  for (int i = 0; i < 2; ++i) {
    WorkerFacts w{"w" + std::to_string(i)};
    w.lastSeen = at(99.5);
    f.alive.push_back(w);
  }
  return f;
}

TEST(JobTickTest, AHealthyRunningJobNeedsNothing) {
  EXPECT_TRUE(reconcileTick(running()).empty());
}

TEST(JobTickTest, ACancelsGraceRunningOutStopsTheJobOnce) {
  JobTickFacts f = running();
  f.cancelRequested = true;
  EXPECT_FALSE(reconcileTick(f).stopJob) << "within the grace: the workers stop on their own";
  f.cancelStopDue = true;
  JobTickActions a = reconcileTick(f);
  EXPECT_TRUE(a.stopJob);
  EXPECT_TRUE(a.cancelStopSent) << "recorded, so the next tick does not send it again";
}

TEST(JobTickTest, ADecisionsStopIsNotACancels) {
  JobTickFacts f = running();
  f.phase = JobPhase::kFailed;
  f.stopPending = true;
  JobTickActions a = reconcileTick(f);
  EXPECT_TRUE(a.stopJob);
  EXPECT_FALSE(a.cancelStopSent);
}

TEST(JobTickTest, WhileStoppingASilentWorkerIsKilledAtOnce) {
  JobTickFacts f = running();
  f.alive[1].lastSeen = at(96.9);  // 3.1 s: past the 3 s window
  EXPECT_TRUE(reconcileTick(f).killUnresponsive.empty()) << "a running job leaves that to the hang detector";
  f.cancelRequested = true;
  EXPECT_EQ(reconcileTick(f).killUnresponsive, (std::vector<std::string>{"w1"}));
  f.cancelRequested = false;
  f.phase = JobPhase::kSucceeded;
  EXPECT_EQ(reconcileTick(f).killUnresponsive, (std::vector<std::string>{"w1"})) << "ended with processes left";
  f.alive[1].outcome = WorkerOutcome::kSucceeded;
  EXPECT_TRUE(reconcileTick(f).killUnresponsive.empty()) << "it reported its outcome: exiting, not unresponsive";
}

TEST(JobTickTest, RetiredWorkersAreKilledOnlyOnceTheirGraceRanOut) {
  JobTickFacts f = running();
  f.retiredAlive = {"w3"};
  EXPECT_TRUE(reconcileTick(f).killRetired.empty());
  f.retireKillDue = true;
  EXPECT_EQ(reconcileTick(f).killRetired, (std::vector<std::string>{"w3"}));
}

TEST(JobTickTest, CulpritsAreReplacedAfterTheBackoffAndTheFlightRecords) {
  JobTickFacts f = running();
  f.phase = JobPhase::kRestarting;
  f.toReplace = {"w1"};
  EXPECT_TRUE(reconcileTick(f).replace.empty()) << "backoff";
  f.replaceBackoffOver = true;
  f.awaitingFlightRecords = true;
  EXPECT_TRUE(reconcileTick(f).replace.empty()) << "killing it first would end the collective the others wait in";
  f.awaitingFlightRecords = false;
  EXPECT_EQ(reconcileTick(f).replace, (std::vector<std::string>{"w1"}));
  f.cancelRequested = true;
  EXPECT_TRUE(reconcileTick(f).replace.empty()) << "no replacement starts once a job is cancelled";
  f.cancelRequested = false;
  f.phase = JobPhase::kFailed;
  EXPECT_TRUE(reconcileTick(f).replace.empty()) << "nor once it ended";
}

}  // namespace
}  // namespace ddp::controller
