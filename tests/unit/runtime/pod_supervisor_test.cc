// The pod supervisor (worker/control/pod_supervisor.h, Note [Several ranks per pod]) with real
// processes: /bin/sh stands in for the rank program and behaves by its DDP_LOCAL_RANK. Each case
// runs superviseRanks in a forked child (it blocks signals and forks), so the test process's
// signal mask stays as it was.
#include "worker/control/pod_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "tests/support/temp_dir.h"

namespace ddp::runtime {
namespace {

using Steady = std::chrono::steady_clock;
// A rank's wait; the sleep writes nowhere, so an orphaned one holds no test output open.
const std::string kSleep = "sleep 10 </dev/null >/dev/null 2>&1 & wait";

// Rank program (sh): runs `setup` (traps), writes its id and then its pid to DIR/rank<l>.id and
// .pid, then runs `body`.
PodSupervisorOptions shellRanks(const std::string& dir, const std::string& setup, const std::string& body,
                                int ranks) {
  PodSupervisorOptions o;
  o.program = "/bin/sh";
  o.args = {"sh", "-c", setup + "; echo $DDP_WORKER_ID > " + dir + "/rank$DDP_LOCAL_RANK.id; echo $$ > " + dir +
                            "/rank$DDP_LOCAL_RANK.pid; " + body};
  o.environment = {"PATH=/usr/bin:/bin", "DDP_POD_WORKER_IDS=a,b", "DDP_JOB_NAME=j"};
  for (int l = 0; l < ranks; ++l) o.workerIds.push_back("j-w" + std::to_string(10 + l));
  o.stopGrace = std::chrono::milliseconds(500);
  return o;
}

// superviseRanks in a child process: its exit status.
pid_t startSupervisor(const PodSupervisorOptions& o) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(superviseRanks(o));
  return pid;
}
int waitStatus(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

pid_t waitForPid(const std::string& path) {
  for (int i = 0; i < 500; ++i) {
    const std::string s = readFile(path);
    if (!s.empty()) return static_cast<pid_t>(std::stol(s));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return 0;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(PodSupervisorTest, RankEnvironmentNamesTheRankAndDropsThePodList) {
  const std::vector<std::string> base = {"A=1", "DDP_POD_WORKER_IDS=x,y", "DDP_WORKER_ID=old", "DDP_LOCAL_RANK=7",
                                         "DDP_WORKER_IDX=keep"};
  EXPECT_EQ(rankEnvironment(base, {"x", "y"}, 1),
            (std::vector<std::string>{"A=1", "DDP_WORKER_IDX=keep", "DDP_WORKER_ID=y", "DDP_LOCAL_RANK=1"}));
}

TEST(PodSupervisorTest, EveryRankExitingZeroIsZeroAndEachGotItsId) {
  test::TempDir dir;
  EXPECT_EQ(waitStatus(startSupervisor(shellRanks(dir.path(), ":", "exit 0", 3))), 0);
  EXPECT_EQ(readFile(dir.path() + "/rank0.id"), "j-w10");
  EXPECT_EQ(readFile(dir.path() + "/rank2.id"), "j-w12");
}

// One rank killed by PID: its sibling is SIGKILLed at once (a stop request would make it report
// a failure of its own: Note [Several ranks per pod]), and the supervisor exits 128 + 9.
TEST(PodSupervisorTest, ARankKilledByPidKillsItsSiblingAndFailsThePod) {
  test::TempDir dir;
  const std::string trap = "trap 'echo term > " + dir.path() + "/rank$DDP_LOCAL_RANK.term; exit 0' TERM";
  const Steady::time_point start = Steady::now();
  const pid_t sup = startSupervisor(shellRanks(dir.path(), trap, kSleep, 2));
  const pid_t rank0 = waitForPid(dir.path() + "/rank0.pid");
  const pid_t rank1 = waitForPid(dir.path() + "/rank1.pid");
  ASSERT_NE(rank0, 0);
  ASSERT_NE(rank1, 0);
  ASSERT_EQ(::kill(rank1, SIGKILL), 0);
  EXPECT_EQ(waitStatus(sup), 128 + SIGKILL);
  EXPECT_LT(Steady::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(readFile(dir.path() + "/rank0.term"), "");  // killed, not asked to stop
  EXPECT_FALSE(alive(rank0));
}

// A rank that exits non-zero on its own: its status is the pod's.
TEST(PodSupervisorTest, ARankFailingEndsThePodWithItsStatus) {
  test::TempDir dir;
  const std::string body = "if [ $DDP_LOCAL_RANK = 0 ]; then sleep 0.2; exit 3; fi; " + kSleep;
  const pid_t sup = startSupervisor(shellRanks(dir.path(), "trap '' TERM", body, 2));
  const pid_t rank1 = waitForPid(dir.path() + "/rank1.pid");
  EXPECT_EQ(waitStatus(sup), 3);
  EXPECT_FALSE(alive(rank1));
}

// SIGTERM to the supervisor (the pod deleted) reaches every rank; ranks that stop cleanly: 0.
TEST(PodSupervisorTest, SigtermToTheSupervisorStopsEveryRank) {
  test::TempDir dir;
  const pid_t sup = startSupervisor(shellRanks(dir.path(), "trap 'exit 0' TERM", kSleep, 2));
  ASSERT_NE(waitForPid(dir.path() + "/rank0.pid"), 0);
  ASSERT_NE(waitForPid(dir.path() + "/rank1.pid"), 0);
  ASSERT_EQ(::kill(sup, SIGTERM), 0);
  EXPECT_EQ(waitStatus(sup), 0);
}

// A rank that ignores SIGTERM is SIGKILLed after the stop grace; the pod then fails.
TEST(PodSupervisorTest, ARankIgnoringSigtermIsKilledAfterTheStopGrace) {
  test::TempDir dir;
  const Steady::time_point start = Steady::now();
  const pid_t sup = startSupervisor(shellRanks(dir.path(), "trap '' TERM", kSleep, 2));
  ASSERT_NE(waitForPid(dir.path() + "/rank0.pid"), 0);
  ASSERT_NE(waitForPid(dir.path() + "/rank1.pid"), 0);
  ASSERT_EQ(::kill(sup, SIGTERM), 0);
  EXPECT_EQ(waitStatus(sup), 128 + SIGKILL);
  const auto took = Steady::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(500));  // the grace
  EXPECT_LT(took, std::chrono::seconds(5));
}

// A rank that cannot be started (no such program) fails the pod.
TEST(PodSupervisorTest, ARankThatCannotStartFailsThePod) {
  test::TempDir dir;
  PodSupervisorOptions o = shellRanks(dir.path(), ":", "exit 0", 2);
  o.program = dir.path() + "/missing";
  EXPECT_EQ(waitStatus(startSupervisor(o)), 127);
}

}  // namespace
}  // namespace ddp::runtime
