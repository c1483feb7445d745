// reconcileTick and answerHeartbeat (controller/jobs/lifecycle/job_tick.h, pure, injected time): every
// action of Note [Tick actions] and what holds each back; a heartbeat's command.
#include "controller/jobs/lifecycle/job_tick.h"

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

TEST(JobTickTest, ANeverLaunchedJobIsLaunchedUnlessItEnded) {
  JobTickFacts f;
  f.now = at(0);
  f.phase = JobPhase::kPending;
  EXPECT_FALSE(reconcileTick(f).launch) << "launched, being launched, held or suspended: not due";
  f.launchDue = true;
  JobTickActions a = reconcileTick(f);
  EXPECT_TRUE(a.launch);
  EXPECT_FALSE(a.empty()) << "a launcher call, carried out with no lock held";
  f.cancelRequested = true;
  EXPECT_TRUE(reconcileTick(f).launch) << "a cancel before the launch stops the workers once they exist";
  f.phase = JobPhase::kFailed;
  EXPECT_FALSE(reconcileTick(f).launch) << "an ended job starts nothing";
  f.phase = JobPhase::kRunning;
  f.launchDue = false;
  EXPECT_TRUE(reconcileTick(f).empty()) << "the running job of running(), needing nothing";
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

TEST(JobTickTest, ADueBatchIsWrittenOnceAtATime) {
  JobTickFacts f = running();
  EXPECT_FALSE(reconcileTick(f).persist) << "nothing due";
  f.persistDue = true;
  EXPECT_TRUE(reconcileTick(f).persist);
  f.persisting = true;
  EXPECT_FALSE(reconcileTick(f).persist) << "a write of the job is queued or under way: its batches stay in order";
}

TEST(JobTickTest, AFinishedJobLeavesTheRegistryOnlyOnceNothingIsLeft) {
  JobTickFacts f = running();
  EXPECT_FALSE(reconcileTick(f).drop) << "running";
  f.phase = JobPhase::kSucceeded;
  f.anyProcessAlive = true;
  EXPECT_FALSE(reconcileTick(f).drop) << "a process is still exiting";
  f.anyProcessAlive = false;
  f.persistDue = true;
  EXPECT_FALSE(reconcileTick(f).drop) << "its last batch is not written";
  f.persistDue = false;
  f.persisting = true;
  EXPECT_FALSE(reconcileTick(f).drop) << "its last batch is being written";
  f.persisting = false;
  f.waitersLeft = true;
  EXPECT_FALSE(reconcileTick(f).drop) << "a long poll is still open";
  f.waitersLeft = false;
  EXPECT_TRUE(reconcileTick(f).drop);
}

HeartbeatFacts runningBeat() {
  HeartbeatFacts f;
  f.phase = JobPhase::kRunning;
  return f;
}

TEST(JobTickTest, AHealthyHeartbeatIsAnsweredWithNothing) {
  EXPECT_EQ(answerHeartbeat(runningBeat()).type, CommandType::kNone);
}

TEST(JobTickTest, AHeartbeatCommandsInPriorityOrder) {
  HeartbeatFacts f = runningBeat();
  f.checkpointRequests = 2;
  f.checkpointAsked = 1;
  f.checkpointStep = 40;
  Command c = answerHeartbeat(f);
  EXPECT_EQ(c.type, CommandType::kCheckpoint);
  EXPECT_EQ(c.step, 40);
  f.checkpointAsked = 2;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kNone) << "each worker is told of a request once";
  f.checkpointAsked = 1;
  f.cancelRequested = true;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kStop) << "a stop outranks a checkpoint request";
  f.flightRecordAsked = true;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kFlightRecord) << "the record a verdict waits for comes first";
}

TEST(JobTickTest, AFinalHeartbeatIsToldOnlyToStopWhenCancelled) {
  HeartbeatFacts f = runningBeat();
  f.final = true;
  f.flightRecordAsked = true;
  f.checkpointRequests = 1;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kNone);
  f.phase = JobPhase::kFailed;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kNone) << "it ended already";
  f.cancelRequested = true;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kStop);
  f.final = false;
  f.cancelRequested = false;
  f.flightRecordAsked = false;
  EXPECT_EQ(answerHeartbeat(f).type, CommandType::kStop) << "a live worker of an ended job stops";
}

}  // namespace
}  // namespace ddp::controller
