// Fault tolerance with real processes (Note [Recovery] in controller/jobs/job_manager.h, Note
// [Worker generations] in worker/runtime/worker_entry.cc): an in-process controller starts real
// ddp-worker processes over loopback; the tests SIGKILL or SIGSTOP one of them by PID, or make one
// stall inside training (DDP_TEST_STALL), and check the controller's verdict, that the survivors
// recover without their processes restarting, and that training ends as an uninterrupted run
// resumed from the same checkpoint does (bitwise, CPU): from the survivor's own state when it
// holds the whole state (Note [Healing from live peers]), else from the checkpoint. Short synthetic jobs keep CI fast; the
// timeouts are the fault-test ones (heartbeat 1 s x 3 misses, hang 5 s).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdlib>

#include "common/checkpoint/checkpoint_store.h"
#include "tests/fault/fault_harness.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;

constexpr double kJobSeconds = 120;  // bound of any wait on a job (they finish in seconds)

// The model parameters of rank 0's newest complete checkpoint in `dir` (the run's final one).
std::string finalModel(const std::string& dir, int64_t* step) {
  runtime::CheckpointStore store(dir);
  auto latest = store.findLatestComplete();
  if (!latest.isOk() || !latest->manifest) return "";
  *step = latest->manifest->step;
  auto shard = store.readShard(*latest->manifest, 0);
  if (!shard.isOk()) return "";
  auto model = shard->section("model");
  return model.isOk() ? std::string(*model) : "";
}

TEST(RecoveryFaultTest, SigstoppedWorkerIsNamedUnresponsiveAndTheSurvivorRecoversInProcess) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("stop", h.dir() + "/ckpt", test::kMidRunSteps, 3)).isOk());
  ASSERT_TRUE(h.waitTraining("stop", 200, kJobSeconds)) << h.describeEvents("stop");
  const int64_t survivor = h.pidOfRank("stop", 0);
  const int64_t stopped = h.pidOfRank("stop", 1);
  ASSERT_GT(stopped, 0);
  h.signal(stopped, SIGSTOP);
  ASSERT_TRUE(h.waitFor(20, [&] { return h.event("stop", "Recovered") != nullptr; })) << h.describeEvents("stop");
  auto verdict = h.event("stop", "Unresponsive");
  ASSERT_NE(verdict, nullptr) << h.describeEvents("stop");
  EXPECT_NE(verdict->message.find("worker rank 1 (stop-w1)"), std::string::npos) << verdict->message;
  EXPECT_EQ(h.event("stop", "CollectiveStuck"), nullptr) << "the waiting rank 0 is never blamed";
  EXPECT_EQ(h.pidOfRank("stop", 0), survivor) << "the survivor kept its process";
  EXPECT_EQ(test::processStartTime(stopped), 0) << "the stopped worker was killed and replaced";
  ASSERT_TRUE(h.waitPhase("stop", "Succeeded", kJobSeconds)) << h.describeEvents("stop");
  EXPECT_EQ(h.record("stop").restarts, 1);
}

TEST(RecoveryFaultTest, SigkilledWorkerIsReplacedAndTheRunEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  // Uninterrupted.
  ASSERT_TRUE(h.submit(faultJobYaml("clean", h.dir() + "/ckpt-clean", test::kMidRunSteps, 3)).isOk());
  ASSERT_TRUE(h.waitPhase("clean", "Succeeded", kJobSeconds)) << h.describeEvents("clean");
  // The same training with rank 1 SIGKILLed mid-run: recovery resumes both ranks from the last
  // committed checkpoint, so the run continues as one resumed from it (bitwise on CPU).
  ASSERT_TRUE(h.submit(faultJobYaml("killed", h.dir() + "/ckpt-killed", test::kMidRunSteps, 3)).isOk());
  ASSERT_TRUE(h.waitTraining("killed", 50, kJobSeconds)) << h.describeEvents("killed");
  const int64_t survivor = h.pidOfRank("killed", 0);
  h.signal(h.pidOfRank("killed", 1), SIGKILL);
  ASSERT_TRUE(h.waitPhase("killed", "Succeeded", kJobSeconds)) << h.describeEvents("killed");
  auto verdict = h.event("killed", "Exited");
  ASSERT_NE(verdict, nullptr) << h.describeEvents("killed");
  EXPECT_NE(verdict->message.find("worker rank 1 killed by signal 9"), std::string::npos) << verdict->message;
  EXPECT_NE(h.event("killed", "Recovered"), nullptr) << h.describeEvents("killed");
  EXPECT_EQ(h.pidOfRank("killed", 0), survivor);
  EXPECT_EQ(h.record("killed").restarts, 1);
  // Note [Healing from live peers]: the new generation started from the survivor's state, not
  // the checkpoint, so at most the interrupted step was redone.
  const std::string survivorLog = h.launchedWorkerLog("killed", "killed-w0");
  EXPECT_NE(survivorLog.find("resumed from the state of rank 0"), std::string::npos) << survivorLog;

  int64_t cleanStep = 0, killedStep = 0;
  const std::string clean = finalModel(h.dir() + "/ckpt-clean", &cleanStep);
  const std::string killed = finalModel(h.dir() + "/ckpt-killed", &killedStep);
  ASSERT_FALSE(clean.empty());
  EXPECT_EQ(cleanStep, test::kMidRunSteps);
  EXPECT_EQ(killedStep, test::kMidRunSteps);
  EXPECT_TRUE(clean == killed) << "the recovered run's final parameters differ from the uninterrupted run's";
  EXPECT_EQ(h.record("killed").progress.testAccuracy, h.record("clean").progress.testAccuracy);
}

TEST(RecoveryFaultTest, PowerSgdStateSurvivesRecoveryBitwise) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string hook =
      "  commHook:\n    type: powerSGD\n    powerSGD:\n      rank: 2\n      startIter: 10\n"
      "      minCompressionRate: 1\n";
  ASSERT_TRUE(h.submit(faultJobYaml("psgd-clean", h.dir() + "/ckpt-clean", test::kMidRunSteps, 3, hook)).isOk());
  ASSERT_TRUE(h.waitPhase("psgd-clean", "Succeeded", kJobSeconds)) << h.describeEvents("psgd-clean");
  ASSERT_TRUE(h.submit(faultJobYaml("psgd-killed", h.dir() + "/ckpt-killed", test::kMidRunSteps, 3, hook)).isOk());
  ASSERT_TRUE(h.waitTraining("psgd-killed", 50, kJobSeconds)) << h.describeEvents("psgd-killed");
  h.signal(h.pidOfRank("psgd-killed", 0), SIGKILL);
  ASSERT_TRUE(h.waitPhase("psgd-killed", "Succeeded", kJobSeconds)) << h.describeEvents("psgd-killed");
  EXPECT_EQ(h.record("psgd-killed").restarts, 1);
  // PowerSGD's error feedback of the lost rank lives only in the checkpoint: no healing.
  const std::string log = h.launchedWorkerLog("psgd-killed", "psgd-killed-w1");
  EXPECT_EQ(log.find("resumed from the state of rank"), std::string::npos) << log;
  EXPECT_NE(log.find("resumed from /"), std::string::npos) << log;
  int64_t a = 0, b = 0;
  const std::string clean = finalModel(h.dir() + "/ckpt-clean", &a);
  const std::string killed = finalModel(h.dir() + "/ckpt-killed", &b);
  ASSERT_FALSE(clean.empty());
  EXPECT_TRUE(clean == killed) << "PowerSGD's error feedback and Q must be restored with the checkpoint";
}

TEST(RecoveryFaultTest, ARankStalledInsideTrainingIsNamedCollectiveStuck) {
  // Rank 1 keeps heartbeating but stops before step 200 (its peers wait in a collective it
  // never issues). The local launcher passes its environment on to the workers it starts;
  // the stall applies to the job's first generation only.
  ::setenv("DDP_TEST_STALL", "1:200:60", 1);
  struct Unset {
    ~Unset() { ::unsetenv("DDP_TEST_STALL"); }
  } unset;
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("stuck", h.dir() + "/ckpt", 1000, 3)).isOk());
  ASSERT_TRUE(h.waitFor(30, [&] { return h.event("stuck", "Recovered") != nullptr; })) << h.describeEvents("stuck");
  auto verdict = h.event("stuck", "CollectiveStuck");
  ASSERT_NE(verdict, nullptr) << h.describeEvents("stuck");
  EXPECT_NE(verdict->message.find("rank 1 never reached allreduce #"), std::string::npos) << verdict->message;
  EXPECT_NE(verdict->message.find("which rank 0 has waited in for"), std::string::npos) << verdict->message;
  EXPECT_EQ(h.event("stuck", "Unresponsive"), nullptr) << "the stalled rank kept heartbeating";
  ASSERT_TRUE(h.waitPhase("stuck", "Succeeded", kJobSeconds)) << h.describeEvents("stuck");
}

TEST(RecoveryFaultTest, NoRestartsLeftFailsTheJobWithTheReason) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("norestart", h.dir() + "/ckpt", 100000, 0)).isOk());
  ASSERT_TRUE(h.waitTraining("norestart", 100, kJobSeconds)) << h.describeEvents("norestart");
  h.signal(h.pidOfRank("norestart", 1), SIGKILL);
  ASSERT_TRUE(h.waitPhase("norestart", "Failed", 30)) << h.describeEvents("norestart");
  const auto rec = h.record("norestart");
  bool found = false;
  for (const auto& c : rec.conditions) {
    if (c.type == controller::kConditionFailed) {
      found = true;
      EXPECT_EQ(c.reason, "Exited");
      EXPECT_NE(c.message.find("no restarts left: spec.maxRestarts is 0"), std::string::npos) << c.message;
      EXPECT_NE(c.message.find("worker rank 1 killed by signal 9"), std::string::npos) << c.message;
    }
  }
  EXPECT_TRUE(found) << h.describeEvents("norestart");
  EXPECT_EQ(rec.restarts, 0);
  // The other worker is stopped, not left running.
  EXPECT_TRUE(h.waitFor(15, [&] { return h.jobs().isFinished("norestart") && test::processStartTime(h.pidOfRank("norestart", 0)) == 0; }));
}

// Workers started by something else (external launcher): the controller cannot kill the
// SIGSTOPped culprit, so the test starts its replacement. SIGCONTed after the recovery, the old
// process is fenced (its heartbeat and its rejoin get 410) and exits: never two ranks with the
// same number.
TEST(RecoveryFaultTest, AStoppedWorkerThatWakesUpAfterRecoveryIsFencedAndExits) {
  FaultHarness h("external");
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(faultJobYaml("fence", h.dir() + "/ckpt", test::kMidRunSteps, 3)).isOk());
  const pid_t w0 = h.startWorker("fence", "fence-w0");
  const pid_t w1 = h.startWorker("fence", "fence-w1");
  ASSERT_GT(w0, 0);
  ASSERT_GT(w1, 0);
  ASSERT_TRUE(h.waitTraining("fence", 50, kJobSeconds)) << h.describeEvents("fence");
  h.signal(w1, SIGSTOP);
  ASSERT_TRUE(h.waitFor(20, [&] { return h.event("fence", "WaitingForReplacement") != nullptr; }))
      << h.describeEvents("fence");
  EXPECT_NE(h.event("fence", "Unresponsive"), nullptr) << h.describeEvents("fence");
  const pid_t replacement = h.startWorker("fence", "fence-w1");
  ASSERT_TRUE(h.waitFor(30, [&] { return h.event("fence", "Recovered") != nullptr; })) << h.describeEvents("fence");
  h.signal(w1, SIGCONT);
  const int status = h.waitWorker(w1, 20);
  EXPECT_NE(status, -1) << "the woken worker exits";
  EXPECT_NE(status, 0) << "... with a failure status";
  const std::string log = h.workerLog("fence-w1");
  EXPECT_NE(log.find("fenced"), std::string::npos) << "exit status " << status << "; log:\n"
                                                   << log.substr(log.size() > 6000 ? log.size() - 6000 : 0);
  ASSERT_TRUE(h.waitPhase("fence", "Succeeded", kJobSeconds)) << h.describeEvents("fence");
  EXPECT_EQ(h.waitWorker(w0, 20), 0) << "the survivor finished the job";
  EXPECT_EQ(h.waitWorker(replacement, 20), 0) << "the replacement finished the job";
}

}  // namespace
}  // namespace ddp
