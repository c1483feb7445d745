// LocalLauncher with real processes (/bin/sh scripts as workers): the environment contract,
// slots, exit reports, kill/replace, holding replacements back, stop with escalation.
#include "controller/launch/local_launcher.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/controller/launcher_test_util.h"

namespace ddp::controller {
namespace {

using namespace std::chrono_literals;
using testing::LauncherTest;

constexpr const char* kSleeper = "echo \"start $$\"; exec sleep 30";

class LocalLauncherTest : public LauncherTest {};

TEST(WorkerExitTest, Describe) {
  WorkerExit e;
  e.workerId = "fmnist-w1";
  e.pid = 123;
  e.code = 3;
  EXPECT_EQ(e.describe(), "worker fmnist-w1 (pid 123) exited with status 3");
  e.signaled = true;
  e.code = SIGKILL;
  EXPECT_EQ(e.describe(), "worker fmnist-w1 (pid 123) killed by signal 9 (Killed)");
  e.statusKnown = false;
  EXPECT_NE(e.describe().find("exit status unknown"), std::string::npos);
  e.startError = "exec /x: No such file";
  EXPECT_EQ(e.describe(), "worker fmnist-w1 could not be started: exec /x: No such file");
}

TEST(WorkerIdTest, RoundTripsAndValidates) {
  EXPECT_EQ(workerIdFor("job", 3), "job-w3");
  EXPECT_EQ(slotOfWorkerId("job", "job-w3"), 3);
  EXPECT_EQ(slotOfWorkerId("job", "job-w12"), 12);
  EXPECT_FALSE(slotOfWorkerId("job", "job-w").has_value());
  EXPECT_FALSE(slotOfWorkerId("job", "job-w01").has_value());
  EXPECT_FALSE(slotOfWorkerId("job", "other-w1").has_value());
  EXPECT_FALSE(slotOfWorkerId("job", "job-w1x").has_value());
  EXPECT_TRUE(validateJobName("fmnist-1.a_b").isOk());
  EXPECT_FALSE(validateJobName("").isOk());
  EXPECT_FALSE(validateJobName("..").isOk());
  EXPECT_FALSE(validateJobName("a/b").isOk());
  EXPECT_FALSE(validateJobName(std::string(64, 'a')).isOk());
}

TEST_F(LocalLauncherTest, OptionsAreValidated) {
  auto o = options(kSleeper);
  EXPECT_TRUE(o.validate().isOk());
  EXPECT_GE(o.effectiveMaxWorkersPerJob(), 4);
  EXPECT_LE(o.effectiveMaxWorkersPerJob(), 256);
  auto bad = o;
  bad.workerBinary = "sh";
  EXPECT_EQ(bad.validate().code(), StatusCode::kInvalidArgument);
  bad = o;
  bad.monitorPeriod = 2s;
  EXPECT_FALSE(bad.validate().isOk());
  bad = o;
  bad.workerBinary = "/nonexistent/ddp-worker";
  EXPECT_EQ(LocalLauncher::create(bad).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(LocalLauncherTest, EveryWorkerGetsTheEnvironmentContract) {
  // A descriptor without close-on-exec must not leak into the workers either.
  const int leaky = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(leaky, 3);
  launcher_ = make(options(
      "echo \"id=$DDP_WORKER_ID job=$DDP_JOB_NAME url=$DDP_CONTROLLER_URL token=$DDP_JOB_TOKEN "
      "fmt=$DDP_LOG_FORMAT extra=$EXTRA_VAR stdin=$(cat | wc -c)\"; echo \"fds: $(ls /proc/self/fd | wc -l)\"; "
      "exec sleep 30"));
  ASSERT_NE(launcher_, nullptr);
  EXPECT_EQ(launcher_->name(), "local");
  EXPECT_TRUE(launcher_->ready().isOk());
  ASSERT_TRUE(launcher_->ensureWorkers(job("envjob", 2)).isOk());
  EXPECT_EQ(waitForPids(*launcher_, "envjob", 2).size(), 2u);
  ::close(leaky);
  for (int slot = 0; slot < 2; ++slot) {
    const std::string id = "envjob-w" + std::to_string(slot);
    ASSERT_TRUE(waitForLog(*launcher_, "envjob", id, "fds: ")) << readAll(*launcher_, "envjob", id);
    EXPECT_NE(readAll(*launcher_, "envjob", id)
                  .find("id=" + id + " job=envjob url=http://127.0.0.1:9 token=secret-token fmt=human "
                        "extra=extra-value stdin=0"),
              std::string::npos)
        << readAll(*launcher_, "envjob", id);
    // ls sees 0, 1, 2, the pipe of $(...) on 1, and its own directory descriptor: 4 entries.
    EXPECT_NE(readAll(*launcher_, "envjob", id).find("fds: 4\n"), std::string::npos)
        << readAll(*launcher_, "envjob", id);
    EXPECT_TRUE(runtime::pathExists(stateDir_ + "/jobs/envjob/workers/" + id + ".pid"));
    EXPECT_TRUE(runtime::pathExists(stateDir_ + "/jobs/envjob/logs/" + id + ".log"));
  }
  ASSERT_TRUE(launcher_->forgetJob("envjob").isOk());
  EXPECT_TRUE(launcher_->livePids("envjob").empty());
  EXPECT_FALSE(runtime::pathExists(stateDir_ + "/jobs/envjob"));
}

// Open descriptors of this process.
size_t openFds() {
  auto names = runtime::listDir("/proc/self/fd");
  return names.isOk() ? names->size() : 0;
}

// spec.worker.command (Note [Worker commands]): the job's program and arguments instead of the
// launcher's worker binary, with the same environment contract.
TEST_F(LocalLauncherTest, AJobsWorkerCommandRunsInsteadOfTheWorkerBinary) {
  launcher_ = make(options("echo \"ddp-worker ran\"; exec sleep 30"));
  ASSERT_NE(launcher_, nullptr);
  JobLaunch l = job("cmdjob", 1);
  l.command = {"/bin/sh", "-c", "echo \"own program: $0 $1 id=$DDP_WORKER_ID token=$DDP_JOB_TOKEN\"; exec sleep 30",
               "first-arg", "second-arg"};
  ASSERT_TRUE(launcher_->ensureWorkers(l).isOk());
  EXPECT_EQ(waitForPids(*launcher_, "cmdjob", 1).size(), 1u);
  ASSERT_TRUE(waitForLog(*launcher_, "cmdjob", "cmdjob-w0", "own program")) << readAll(*launcher_, "cmdjob", "cmdjob-w0");
  const std::string log = readAll(*launcher_, "cmdjob", "cmdjob-w0");
  EXPECT_NE(log.find("own program: first-arg second-arg id=cmdjob-w0 token=secret-token"), std::string::npos) << log;
  EXPECT_EQ(log.find("ddp-worker ran"), std::string::npos) << log;
  ASSERT_TRUE(launcher_->forgetJob("cmdjob").isOk());
}

TEST_F(LocalLauncherTest, EnsureWorkersFillsEachSlotOnce) {
  const size_t fdsBefore = openFds();
  launcher_ = make(options(kSleeper));
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("once", 3)).isOk());
  const auto first = waitForPids(*launcher_, "once", 3);
  ASSERT_EQ(first.size(), 3u);
  ASSERT_TRUE(launcher_->ensureWorkers(job("once", 3)).isOk());
  std::this_thread::sleep_for(100ms);
  auto again = launcher_->livePids("once");
  std::sort(again.begin(), again.end());
  EXPECT_EQ(again, first);
  EXPECT_EQ(launcher_->ensureWorkers(job("once", 0)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(launcher_->ensureWorkers(job("once", launcher_->maxWorkersPerJob() + 1)).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(launcher_->ensureWorkers(job("../x", 1)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE(launcher_->forgetJob("once").isOk());
  for (auto pid : first) EXPECT_FALSE(alive(pid));
  EXPECT_TRUE(exits_.exits().empty());  // a forgotten job's workers are not reported
  launcher_.reset();
  EXPECT_EQ(openFds(), fdsBefore);  // pidfds, eventfd, logs: all closed
}

TEST_F(LocalLauncherTest, ExitIsReportedOnceWithStatusAndLastLinesAndNotRefilled) {
  launcher_ = make(options("for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22; do echo \"line $i\"; "
                           "done; echo bye >&2; exit 3"));
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("exits", 1)).isOk());
  track(launcher_->livePids("exits"));
  ASSERT_TRUE(exits_.waitForCount(1, 3s));
  const WorkerExit e = exits_.exits()[0];
  EXPECT_EQ(e.jobName, "exits");
  EXPECT_EQ(e.workerId, "exits-w0");
  EXPECT_EQ(e.slot, 0);
  EXPECT_GT(e.pid, 0);
  EXPECT_TRUE(e.statusKnown);
  EXPECT_FALSE(e.signaled);
  EXPECT_EQ(e.code, 3);
  EXPECT_FALSE(e.killedByLauncher);
  EXPECT_EQ(e.describe(), "worker exits-w0 (pid " + std::to_string(e.pid) + ") exited with status 3");
  ASSERT_EQ(e.lastLines.size(), 20u);
  EXPECT_EQ(e.lastLines.front(), "line 4");
  EXPECT_EQ(e.lastLines.back(), "bye");
  EXPECT_FALSE(runtime::pathExists(stateDir_ + "/jobs/exits/workers/exits-w0.pid"));
  // Not refilled by ensureWorkers; reported once.
  ASSERT_TRUE(launcher_->ensureWorkers(job("exits", 1)).isOk());
  std::this_thread::sleep_for(300ms);
  EXPECT_TRUE(launcher_->livePids("exits").empty());
  EXPECT_EQ(exits_.exits().size(), 1u);
  EXPECT_EQ(launcher_->killWorker("exits", "exits-w0", SIGTERM).code(), StatusCode::kNotFound);
}

TEST_F(LocalLauncherTest, KillAndReplaceKeepTheSlotAndItsLog) {
  launcher_ = make(options(kSleeper));
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("kr", 2)).isOk());
  ASSERT_EQ(waitForPids(*launcher_, "kr", 2).size(), 2u);
  ASSERT_TRUE(waitForLog(*launcher_, "kr", "kr-w0", "start "));
  const std::string before = readAll(*launcher_, "kr", "kr-w0");
  const int64_t oldPid = std::stoll(before.substr(before.find("start ") + 6));

  ASSERT_TRUE(launcher_->replaceWorker("kr", "kr-w0").isOk());
  ASSERT_TRUE(exits_.waitForCount(1, 3s));
  WorkerExit e = exits_.exits()[0];
  EXPECT_EQ(e.workerId, "kr-w0");
  EXPECT_EQ(e.pid, oldPid);
  EXPECT_TRUE(e.signaled);
  EXPECT_EQ(e.code, SIGKILL);
  EXPECT_TRUE(e.killedByLauncher);
  // A fresh process in the same slot; its output continues the same log.
  ASSERT_TRUE(waitForLog(*launcher_, "kr", "kr-w0", "start ", 3s));
  const Deadline d = Deadline::after(3s);
  std::string log;
  while (!d.expired()) {
    log = readAll(*launcher_, "kr", "kr-w0");
    if (log.find("start ", log.find("start ") + 1) != std::string::npos) break;
    std::this_thread::sleep_for(20ms);
  }
  const auto second = log.find("start ", log.find("start ") + 1);
  ASSERT_NE(second, std::string::npos) << log;
  const int64_t newPid = std::stoll(log.substr(second + 6));
  EXPECT_NE(newPid, oldPid);
  const auto pids = waitForPids(*launcher_, "kr", 2);
  EXPECT_TRUE(std::find(pids.begin(), pids.end(), newPid) != pids.end());

  // killWorker: the signal arrives, the exit is reported, the slot stays empty.
  ASSERT_TRUE(launcher_->killWorker("kr", "kr-w1", SIGTERM).isOk());
  ASSERT_TRUE(exits_.waitForCount(2, 3s));
  e = exits_.exits()[1];
  EXPECT_EQ(e.workerId, "kr-w1");
  EXPECT_TRUE(e.signaled);
  EXPECT_EQ(e.code, SIGTERM);
  EXPECT_TRUE(e.killedByLauncher);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(launcher_->livePids("kr"), std::vector<int64_t>{newPid});
  EXPECT_EQ(launcher_->killWorker("kr", "kr-w1", SIGTERM).code(), StatusCode::kNotFound);
  EXPECT_EQ(launcher_->killWorker("kr", "kr-w7", SIGTERM).code(), StatusCode::kNotFound);
  EXPECT_EQ(launcher_->killWorker("nojob", "nojob-w0", SIGTERM).code(), StatusCode::kNotFound);
  // A slot whose exit was reported is refilled by replaceWorker at once.
  ASSERT_TRUE(launcher_->replaceWorker("kr", "kr-w1").isOk());
  EXPECT_EQ(waitForPids(*launcher_, "kr", 2).size(), 2u);
  ASSERT_TRUE(launcher_->forgetJob("kr").isOk());
}

TEST_F(LocalLauncherTest, HeldReplacementsWaitUntilReleased) {
  launcher_ = make(options(kSleeper));
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("held", 2)).isOk());
  ASSERT_EQ(waitForPids(*launcher_, "held", 2).size(), 2u);
  launcher_->holdReplacements("held", true);
  ASSERT_TRUE(launcher_->replaceWorker("held", "held-w1").isOk());
  ASSERT_TRUE(exits_.waitForCount(1, 3s));
  EXPECT_EQ(exits_.exits()[0].workerId, "held-w1");
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(launcher_->livePids("held").size(), 1u);  // held back
  launcher_->holdReplacements("held", false);
  EXPECT_EQ(waitForPids(*launcher_, "held", 2).size(), 2u);
  EXPECT_EQ(exits_.exits().size(), 1u);
  ASSERT_TRUE(launcher_->forgetJob("held").isOk());
}

TEST_F(LocalLauncherTest, StopJobEscalatesToSigkillAfterTheGrace) {
  // w0 ignores SIGTERM (the ignore survives exec); w1 does not.
  launcher_ = make(options("if [ \"$DDP_WORKER_ID\" = stop-w0 ]; then trap '' TERM; fi; echo ready; exec sleep 30"));
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("stop", 2)).isOk());
  ASSERT_EQ(waitForPids(*launcher_, "stop", 2).size(), 2u);
  ASSERT_TRUE(waitForLog(*launcher_, "stop", "stop-w0", "ready"));
  ASSERT_TRUE(waitForLog(*launcher_, "stop", "stop-w1", "ready"));
  auto follow = launcher_->openLog("stop", "", {.tailLines = -1, .follow = true});
  ASSERT_TRUE(follow.isOk());

  const Duration grace = 500ms;
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(launcher_->stopJob("stop", grace).isOk());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 200ms);  // returns at once
  ASSERT_TRUE(exits_.waitForCount(2, grace + 2s));
  const auto elapsed = std::chrono::steady_clock::now() - t0;
  auto all = exits_.exits();
  const WorkerExit* w0 = exits_.find(all, "stop-w0");
  const WorkerExit* w1 = exits_.find(all, "stop-w1");
  ASSERT_TRUE(w0 && w1);
  EXPECT_TRUE(w1->signaled);
  EXPECT_EQ(w1->code, SIGTERM);
  EXPECT_TRUE(w0->signaled);
  EXPECT_EQ(w0->code, SIGKILL);
  EXPECT_TRUE(w0->killedByLauncher && w1->killedByLauncher);
  EXPECT_GE(elapsed, grace);
  EXPECT_LE(elapsed, grace + 1s);
  EXPECT_TRUE(launcher_->livePids("stop").empty());
  // The merged follow stream ends: stopped, and every worker gone.
  std::string text;
  const Deadline d = Deadline::after(3s);
  while (!(*follow)->done() && !d.expired()) {
    auto r = (*follow)->read(Deadline::after(200ms));
    if (r.isOk()) text += *r;
  }
  EXPECT_TRUE((*follow)->done());
  EXPECT_NE(text.find("[w0] ready\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[w1] ready\n"), std::string::npos) << text;
  // A stopped job refuses replacements; ensureWorkers starts it afresh.
  EXPECT_EQ(launcher_->replaceWorker("stop", "stop-w0").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(launcher_->ensureWorkers(job("stop", 2)).isOk());
  EXPECT_EQ(waitForPids(*launcher_, "stop", 2).size(), 2u);
  ASSERT_TRUE(launcher_->forgetJob("stop").isOk());
  EXPECT_EQ(launcher_->stopJob("stop", 1s).code(), StatusCode::kNotFound);
}

TEST_F(LocalLauncherTest, AReplacementThatCannotStartIsReported) {
  const std::string binary = stateDir_ + "/worker.sh";
  ASSERT_TRUE(runtime::writeFileAtomic(binary, "#!/bin/sh\necho started\nexec sleep 30\n").isOk());
  ASSERT_EQ(::chmod(binary.c_str(), 0755), 0);
  auto o = options("");
  o.workerBinary = binary;
  o.args = {};
  launcher_ = make(o);
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->ensureWorkers(job("gone", 2)).isOk());
  ASSERT_EQ(waitForPids(*launcher_, "gone", 2).size(), 2u);
  // Both shells have read the script (a shell not yet started would fail on the unlinked file).
  ASSERT_TRUE(waitForLog(*launcher_, "gone", "gone-w0", "started", 10s));
  ASSERT_TRUE(waitForLog(*launcher_, "gone", "gone-w1", "started", 10s));
  ASSERT_EQ(::unlink(binary.c_str()), 0);
  EXPECT_EQ(launcher_->ready().code(), StatusCode::kUnavailable);
  // Asynchronous: the old worker's exit, then the failed start, both reported.
  ASSERT_TRUE(launcher_->replaceWorker("gone", "gone-w0").isOk());
  ASSERT_TRUE(exits_.waitForCount(2, 3s));
  auto all = exits_.exits();
  EXPECT_GT(all[0].pid, 0);
  EXPECT_EQ(all[0].code, SIGKILL);
  EXPECT_TRUE(all[0].startError.empty());
  EXPECT_EQ(all[1].workerId, "gone-w0");
  EXPECT_EQ(all[1].pid, 0);
  EXPECT_NE(all[1].startError.find("No such file"), std::string::npos) << all[1].startError;
  EXPECT_FALSE(all[1].ok());
  // Synchronous: the slot is empty, so replaceWorker starts it itself and returns the error.
  const Status again = launcher_->replaceWorker("gone", "gone-w0");
  EXPECT_EQ(again.code(), StatusCode::kUnavailable);
  EXPECT_NE(again.message().find("gone-w0"), std::string::npos) << again;
  EXPECT_EQ(launcher_->livePids("gone").size(), 1u);
  ASSERT_TRUE(launcher_->forgetJob("gone").isOk());
}

}  // namespace
}  // namespace ddp::controller
