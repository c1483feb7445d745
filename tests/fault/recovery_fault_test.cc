// Fault tolerance with real processes (Note [Recovery] in controller/jobs/job_manager.h, Note
// [Worker generations] in worker/control/worker_entry.cc): an in-process controller starts real
// ddp-worker processes over loopback; the tests SIGKILL or SIGSTOP one of them by PID, or make one
// stall inside training (DDP_TEST_STALL), and check the controller's verdict, that the survivors
// recover without their processes restarting, and that training ends as an uninterrupted run
// resumed from the same checkpoint does (bitwise, CPU): from the survivor's own state when it
// holds the whole state (Note [Healing from live peers]), else from the checkpoint. Short synthetic jobs keep CI fast; the
// timeouts are the fault-test ones (heartbeat 1 s x 3 misses, hang 5 s).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>

#include "controller/launch/pid_file.h"
#include "tests/fault/fault_harness.h"
#include "tests/support/launcher_pid_files.h"

namespace ddp {
namespace {

using test::FaultHarness;
using test::faultJobYaml;
using test::finalModel;

constexpr double kJobSeconds = 120;  // bound of any wait on a job (they finish in seconds)

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

// One run of `name` (a fault job with `extraSpec`) with `sig` sent to the worker of `rank` once
// it trains (test::runWithFault). Returns its final model.
std::string runWithFault(FaultHarness& h, const std::string& name, const std::string& extraSpec, int rank, int sig,
                         int64_t* step) {
  const std::string dir = h.dir() + "/ckpt-" + name;
  return test::runWithFault(h, name, faultJobYaml(name, dir, test::kMidRunSteps, 3, extraSpec), dir, rank, sig, 50,
                            kJobSeconds, step);
}

// A killed (SIGKILL) and a hung (SIGSTOP) rank 1 are replaced; both runs end with parameters
// bitwise equal to the uninterrupted run's: recovery resumes from the last committed
// checkpoint or a survivor's state, so each continues as one resumed from it (bitwise on CPU).
TEST(RecoveryFaultTest, KilledOrHungWorkerIsReplacedAndTheRunEndsBitwiseAsAnUninterruptedOne) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  // Uninterrupted.
  ASSERT_TRUE(h.submit(faultJobYaml("clean", h.dir() + "/ckpt-clean", test::kMidRunSteps, 3)).isOk());
  ASSERT_TRUE(h.waitPhase("clean", "Succeeded", kJobSeconds)) << h.describeEvents("clean");
  int64_t cleanStep = 0;
  const std::string clean = finalModel(h.dir() + "/ckpt-clean", &cleanStep);
  ASSERT_FALSE(clean.empty());
  EXPECT_EQ(cleanStep, test::kMidRunSteps);
  for (int sig : {SIGKILL, SIGSTOP}) {
    const std::string name = sig == SIGKILL ? "killed" : "hung";
    SCOPED_TRACE(name);
    int64_t step = 0;
    const std::string faulted = runWithFault(h, name, "", /*rank=*/1, sig, &step);
    // Note [Healing from live peers]: the new generation started from the survivor's state, not
    // the checkpoint, so at most the interrupted step was redone.
    const std::string survivorLog = h.launchedWorkerLog(name, name + "-w0");
    EXPECT_NE(survivorLog.find("resumed from the state of rank 0"), std::string::npos) << survivorLog;
    EXPECT_EQ(step, test::kMidRunSteps);
    EXPECT_TRUE(clean == faulted) << "the recovered run's final parameters differ from the uninterrupted run's";
    EXPECT_EQ(h.record(name).progress.testAccuracy, h.record("clean").progress.testAccuracy);
  }
}

// PowerSGD (error feedback, Q) with a killed rank 0 and a hung rank 1: no survivor holds the
// whole state, so every rank resumes from the checkpoint; both runs end bitwise equal to the
// uninterrupted one.
TEST(RecoveryFaultTest, PowerSgdStateSurvivesRecoveryFromAKillAndAHangBitwise) {
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  const std::string hook =
      "  commHook:\n    type: powerSGD\n    powerSGD:\n      rank: 2\n      startIter: 10\n"
      "      minCompressionRate: 1\n";
  ASSERT_TRUE(h.submit(faultJobYaml("psgd-clean", h.dir() + "/ckpt-psgd-clean", test::kMidRunSteps, 3, hook)).isOk());
  ASSERT_TRUE(h.waitPhase("psgd-clean", "Succeeded", kJobSeconds)) << h.describeEvents("psgd-clean");
  int64_t a = 0;
  const std::string clean = finalModel(h.dir() + "/ckpt-psgd-clean", &a);
  ASSERT_FALSE(clean.empty());
  for (int sig : {SIGKILL, SIGSTOP}) {
    const std::string name = sig == SIGKILL ? "psgd-killed" : "psgd-hung";
    const int rank = sig == SIGKILL ? 0 : 1;
    SCOPED_TRACE(name);
    int64_t b = 0;
    const std::string faulted = runWithFault(h, name, hook, rank, sig, &b);
    // PowerSGD's error feedback of the lost rank lives only in the checkpoint: no healing.
    const std::string log = h.launchedWorkerLog(name, name + "-w" + std::to_string(1 - rank));
    EXPECT_EQ(log.find("resumed from the state of rank"), std::string::npos) << log;
    EXPECT_NE(log.find("resumed from /"), std::string::npos) << log;
    EXPECT_TRUE(clean == faulted) << "PowerSGD's error feedback and Q must be restored with the checkpoint";
  }
}

// Note [Stopping an unresponsive worker]: Ctrl-C / cancel of a job with a SIGSTOPped worker.
// The controller's stop grace is 30 s (the default), but the stopped worker is SIGKILLed as soon
// as its heartbeat is older than the job's heartbeat window (1 s x 3), and the job is Cancelled
// within seconds.

TEST(RecoveryFaultTest, CancelWithAStoppedWorkerKillsItWithoutWaitingOutTheGrace) {
  FaultHarness h("local", "127.0.0.1", std::chrono::seconds(30));  // a long stop grace
  ASSERT_TRUE(h.ok()) << h.startError();
  auto spec = parseJobSpec(faultJobYaml("ctrlc", h.dir() + "/ckpt", 100000, 3));
  ASSERT_TRUE(spec.isOk()) << spec.status();
  ASSERT_TRUE(h.jobs().submit(*spec).isOk());
  ASSERT_TRUE(h.waitFor(kJobSeconds, [&] {
    auto r = h.record("ctrlc");
    return (r.phase == controller::JobPhase::kRunning && r.progress.step > 50) || controller::isTerminal(r.phase);
  })) << h.describeEvents("ctrlc");
  ASSERT_EQ(h.record("ctrlc").phase, controller::JobPhase::kRunning) << h.describeEvents("ctrlc");
  const int64_t stopped = h.pidOfRank("ctrlc", 1);
  const int64_t healthy = h.pidOfRank("ctrlc", 0);
  ASSERT_GT(stopped, 0);
  ASSERT_GT(healthy, 0);
  h.signal(stopped, SIGSTOP);  // continued by the harness if still there at the end
  // Readiness: the kernel reports it stopped ('T'), so it sends no heartbeat from here on.
  ASSERT_TRUE(h.waitFor(5, [&] {
    auto st = controller::readProcStat(stopped);
    return st.isOk() && st->state == 'T';
  }));
  // Ctrl-C at once, before its heartbeat is stale: the hang detector (which would name it
  // Unresponsive after 3 s) stands down for a cancel, and the stop path must deal with it.
  const auto cancelAt = std::chrono::steady_clock::now();
  ASSERT_TRUE(h.jobs().cancel("ctrlc").isOk());
  ASSERT_TRUE(h.waitFor(25, [&] { return controller::isTerminal(h.record("ctrlc").phase); })) << h.describeEvents("ctrlc");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - cancelAt).count();
  std::printf("cancel with a SIGSTOPped worker: Cancelled after %.2f s (stop grace 30 s)\n", seconds);
  EXPECT_EQ(h.record("ctrlc").phase, controller::JobPhase::kCancelled) << h.describeEvents("ctrlc");
  EXPECT_LT(seconds, 10) << "the stopped worker must not cost the stop grace\n" << h.describeEvents("ctrlc");
  auto killed = h.event("ctrlc", "UnresponsiveKilled");
  ASSERT_NE(killed, nullptr) << h.describeEvents("ctrlc");
  EXPECT_NE(killed->message.find("worker rank 1 (ctrlc-w1)"), std::string::npos) << killed->message;
  EXPECT_EQ(h.event("ctrlc", "Unresponsive"), nullptr) << "no verdict and no restart once cancelled";
  EXPECT_EQ(h.record("ctrlc").restarts, 0);
  EXPECT_EQ(test::processStartTime(stopped), 0) << "the stopped worker is gone";
  EXPECT_EQ(test::processStartTime(healthy), 0) << "the healthy worker stopped too";
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
