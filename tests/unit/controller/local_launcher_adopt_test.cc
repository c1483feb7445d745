// LocalLauncher across controller lifetimes: re-adoption by a second launcher on the same state
// directory (after a clean destruction and after a SIGKILLed controller process), stale pid
// files, and tieToParent (workers die with a SIGKILLed launcher process).
// Forked "controller" processes report through a pipe and never return into the test framework.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>

#include "tests/unit/controller/launcher_test_util.h"

namespace ddp::controller {
namespace {

using namespace std::chrono_literals;
using testing::LauncherTest;

constexpr const char* kSleeper = "echo \"start $$\"; exec sleep 30";

class LocalLauncherAdoptTest : public LauncherTest {
 protected:
  // In a forked child: starts `workers` workers of `jobName`, writes "<pid> <w0> <w1>..." to
  // `fd`, then waits to be killed. Never returns.
  [[noreturn]] void runController(int fd, const std::string& jobName, int workers, bool tie) {
    auto o = options(kSleeper);
    o.onExit = nullptr;
    o.tieToParent = tie;
    auto l = LocalLauncher::create(o);
    if (!l.isOk() || !(*l)->ensureWorkers(job(jobName, workers)).isOk()) ::_exit(2);
    std::vector<int64_t> pids;
    for (int i = 0; i < 300 && pids.size() != static_cast<size_t>(workers); ++i) {
      pids = (*l)->livePids(jobName);
      ::usleep(10000);
    }
    std::string line = std::to_string(::getpid());
    for (auto p : pids) line += " " + std::to_string(p);
    line += "\n";
    if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) ::_exit(3);
    for (;;) ::pause();
  }

  // Reads the controller's report: its pid first, then its workers' pids.
  static std::vector<int64_t> readReport(int fd, Deadline deadline) {
    std::string text;
    while (text.find('\n') == std::string::npos && !deadline.expired()) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[256];
      const ssize_t n = ::read(fd, buf, sizeof(buf));
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
    }
    std::istringstream in(text);
    std::vector<int64_t> out;
    int64_t v;
    while (in >> v) out.push_back(v);
    return out;
  }

  // Waits (bounded) for our child `pid` to end; returns its wait status or -1.
  static int waitChild(pid_t pid, Duration timeout) {
    const Deadline d = Deadline::after(timeout);
    int status = 0;
    while (!d.expired()) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return status;
      std::this_thread::sleep_for(5ms);
    }
    return -1;
  }
};

// A restarted controller's running job (JobManager::start): adoptJob starts nothing, not even
// in a slot whose worker ended while no launcher watched it, yet replaceWorker afterwards
// starts a fresh process in the slot it names.
TEST_F(LocalLauncherAdoptTest, AdoptJobStartsNothingButEnablesReplacements) {
  auto o = options(kSleeper);
  std::vector<int64_t> pids;
  {
    auto first = make(o);
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->ensureWorkers(job("adoptjob", 2)).isOk());
    pids = waitForPids(*first, "adoptjob", 2);
    ASSERT_EQ(pids.size(), 2u);
  }
  auto w1 = readPidFile(stateDir_ + "/jobs/adoptjob/workers/adoptjob-w1.pid");
  ASSERT_TRUE(w1.isOk());
  ASSERT_EQ(::kill(static_cast<pid_t>(w1->pid), SIGKILL), 0);  // ends while no launcher watches
  for (int i = 0; i < 300 && alive(w1->pid); ++i) std::this_thread::sleep_for(10ms);

  launcher_ = make(o);
  ASSERT_NE(launcher_, nullptr);
  ASSERT_TRUE(launcher_->adoptJob(job("adoptjob", 2)).isOk());
  std::this_thread::sleep_for(100ms);
  auto live = launcher_->livePids("adoptjob");
  ASSERT_EQ(live.size(), 1u) << "adoptJob refilled no slot";
  const int64_t w0 = live[0];
  ASSERT_TRUE(launcher_->replaceWorker("adoptjob", "adoptjob-w1").isOk());
  live = waitForPids(*launcher_, "adoptjob", 2);
  ASSERT_EQ(live.size(), 2u) << "the replacement started";
  EXPECT_NE(std::find(live.begin(), live.end(), w0), live.end()) << "the other worker kept its process";
  EXPECT_EQ(std::find(live.begin(), live.end(), w1->pid), live.end());
  ASSERT_TRUE(launcher_->stopJob("adoptjob", 1s).isOk());
  ASSERT_TRUE(exits_.waitForCount(2, 5s));
}

TEST_F(LocalLauncherAdoptTest, ASecondLauncherAdoptsTheWorkersOfADestroyedOne) {
  auto o = options(kSleeper);
  std::vector<int64_t> pids;
  {
    auto first = make(o);
    ASSERT_NE(first, nullptr);
    ASSERT_TRUE(first->ensureWorkers(job("adopt", 2)).isOk());
    pids = waitForPids(*first, "adopt", 2);
    ASSERT_EQ(pids.size(), 2u);
    EXPECT_TRUE(first->adoptedJobs().empty());
  }
  for (auto pid : pids) EXPECT_TRUE(alive(pid)) << pid;  // not killed by the destructor
  EXPECT_TRUE(exits_.exits().empty());

  launcher_ = make(o);
  ASSERT_NE(launcher_, nullptr);
  EXPECT_EQ(launcher_->adoptedJobs(), std::vector<std::string>{"adopt"});
  auto adopted = launcher_->livePids("adopt");
  std::sort(adopted.begin(), adopted.end());
  EXPECT_EQ(adopted, pids);
  // Replacing needs the job's launch description first; ensureWorkers starts no duplicate.
  EXPECT_EQ(launcher_->replaceWorker("adopt", "adopt-w0").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(launcher_->ensureWorkers(job("adopt", 2)).isOk());
  std::this_thread::sleep_for(100ms);
  adopted = launcher_->livePids("adopt");
  std::sort(adopted.begin(), adopted.end());
  EXPECT_EQ(adopted, pids);

  auto w0 = readPidFile(stateDir_ + "/jobs/adopt/workers/adopt-w0.pid");
  ASSERT_TRUE(w0.isOk());
  ASSERT_TRUE(launcher_->killWorker("adopt", "adopt-w0", SIGKILL).isOk());
  ASSERT_TRUE(exits_.waitForCount(1, 3s));
  const WorkerExit e = exits_.exits()[0];
  EXPECT_EQ(e.workerId, "adopt-w0");
  EXPECT_EQ(e.pid, w0->pid);
  EXPECT_TRUE(e.killedByLauncher);
  // Still our child (same process), so its status is known.
  EXPECT_TRUE(e.statusKnown);
  EXPECT_TRUE(e.signaled);
  EXPECT_EQ(e.code, SIGKILL);
  ASSERT_TRUE(launcher_->stopJob("adopt", 1s).isOk());
  ASSERT_TRUE(exits_.waitForCount(2, 3s));
  EXPECT_EQ(exits_.exits()[1].workerId, "adopt-w1");
  EXPECT_TRUE(launcher_->livePids("adopt").empty());
  for (auto pid : pids) EXPECT_FALSE(alive(pid));
}

TEST_F(LocalLauncherAdoptTest, AdoptsTheWorkersOfAKilledControllerProcess) {
  // T (this test) forks S, a child subreaper standing in for init; S forks C, the controller.
  // C is SIGKILLed; its workers survive, re-parented to S, and are not our children.
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const pid_t s = ::fork();
  ASSERT_GE(s, 0);
  if (s == 0) {
    ::prctl(PR_SET_CHILD_SUBREAPER, 1);
    const pid_t c = ::fork();
    if (c == 0) runController(fds[1], "crash", 2, /*tie=*/false);
    ::close(fds[1]);
    while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  const auto report = readReport(fds[0], Deadline::after(10s));
  ::close(fds[0]);
  ASSERT_EQ(report.size(), 3u);
  const std::vector<int64_t> workers{report[1], report[2]};
  track(workers);
  ::kill(static_cast<pid_t>(report[0]), SIGKILL);  // the controller "crashes"
  const Deadline gone = Deadline::after(3s);
  while (alive(report[0]) && !gone.expired()) std::this_thread::sleep_for(5ms);
  std::this_thread::sleep_for(100ms);
  for (auto pid : workers) EXPECT_TRUE(alive(pid));

  launcher_ = make(options(kSleeper));
  ASSERT_NE(launcher_, nullptr);
  EXPECT_EQ(launcher_->adoptedJobs(), std::vector<std::string>{"crash"});
  auto adopted = launcher_->livePids("crash");
  std::sort(adopted.begin(), adopted.end());
  auto expected = workers;
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(adopted, expected);
  EXPECT_TRUE(exits_.exits().empty());
  ASSERT_TRUE(launcher_->stopJob("crash", 1s).isOk());
  ASSERT_TRUE(exits_.waitForCount(2, 3s));
  for (const auto& e : exits_.exits()) {
    EXPECT_FALSE(e.statusKnown) << e.describe();
    EXPECT_TRUE(e.killedByLauncher);
    EXPECT_NE(e.describe().find("exit status unknown"), std::string::npos);
    EXPECT_EQ(e.lastLines, std::vector<std::string>{"start " + std::to_string(e.pid)});
  }
  for (auto pid : workers) EXPECT_FALSE(alive(pid));
  EXPECT_GE(waitChild(s, 3s), 0);  // S ends once it has reaped the workers
  if (alive(s)) {
    ::kill(s, SIGKILL);
    waitChild(s, 1s);
  }
}

TEST_F(LocalLauncherAdoptTest, StalePidFilesAreReportedAsExitsAndRemoved) {
  const std::string dir = stateDir_ + "/jobs/stale/workers/";
  ASSERT_TRUE(runtime::makeDirs(dir).isOk());
  const pid_t dead = ::fork();
  if (dead == 0) ::_exit(0);
  ASSERT_EQ(waitChild(dead, 3s), 0);
  auto self = readProcStat(::getpid());
  ASSERT_TRUE(self.isOk());
  ASSERT_TRUE(writePidFile(dir + "stale-w0.pid", {dead, 12345}).isOk());                       // dead
  ASSERT_TRUE(writePidFile(dir + "stale-w1.pid", {::getpid(), self->startTime + 1}).isOk());  // reused
  ASSERT_TRUE(runtime::writeFileAtomic(dir + "stale-w2.pid", "garbage").isOk());              // corrupt
  ASSERT_TRUE(runtime::writeFileAtomic(dir + "stale-w3.pid.tmp.99", "pid=1\n").isOk());       // torn write

  launcher_ = make(options(kSleeper));
  ASSERT_NE(launcher_, nullptr);
  EXPECT_TRUE(launcher_->adoptedJobs().empty());
  EXPECT_TRUE(launcher_->livePids("stale").empty());
  ASSERT_TRUE(exits_.waitForCount(3, 3s));
  auto all = exits_.exits();
  ASSERT_EQ(all.size(), 3u);
  for (const auto& e : all) {
    EXPECT_EQ(e.jobName, "stale");
    EXPECT_FALSE(e.statusKnown);
  }
  EXPECT_EQ(exits_.find(all, "stale-w0")->pid, dead);
  EXPECT_EQ(exits_.find(all, "stale-w1")->pid, ::getpid());
  EXPECT_EQ(exits_.find(all, "stale-w2")->pid, 0);
  EXPECT_TRUE(runtime::listDir(dir).valueOr({"x"}).empty());
  // Reported slots are not refilled by ensureWorkers, only by replaceWorker.
  ASSERT_TRUE(launcher_->ensureWorkers(job("stale", 3)).isOk());
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(launcher_->livePids("stale").empty());
  ASSERT_TRUE(launcher_->replaceWorker("stale", "stale-w2").isOk());
  EXPECT_EQ(waitForPids(*launcher_, "stale", 1).size(), 1u);
  ASSERT_TRUE(launcher_->forgetJob("stale").isOk());
}

TEST_F(LocalLauncherAdoptTest, TiedWorkersDieWithASigkilledLauncherProcess) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);  // orphans come to us: we reap them
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  const pid_t c = ::fork();
  ASSERT_GE(c, 0);
  if (c == 0) runController(fds[1], "tied", 2, /*tie=*/true);
  ::close(fds[1]);
  const auto report = readReport(fds[0], Deadline::after(10s));
  ::close(fds[0]);
  ASSERT_EQ(report.size(), 3u);
  track({report[1], report[2]});
  for (int k = 1; k <= 2; ++k) EXPECT_TRUE(alive(report[k]));
  ::kill(c, SIGKILL);
  EXPECT_NE(waitChild(c, 3s), -1);
  for (int k = 1; k <= 2; ++k) {
    const int status = waitChild(static_cast<pid_t>(report[k]), 3s);
    ASSERT_NE(status, -1) << "worker " << report[k] << " outlived its launcher";
    EXPECT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), SIGKILL);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

}  // namespace
}  // namespace ddp::controller
