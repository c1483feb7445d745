// GlooBackend across separate processes: this test runs an HttpStoreServer on loopback and
// spawns one gloo_rank_proc per rank (real processes, real HTTP store, real Gloo TCP). Each
// scenario's checks run inside the rank processes (see gloo_rank_proc.cc); a rank exits 0 only
// if all of them passed. Also checks that no rank crashed (signal) or hung (test deadline).
#include <gtest/gtest.h>

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gloo_harness.h"
#include "common/store/http_store_server.h"

extern char** environ;

namespace ddp::comm {
namespace {

struct Exit {
  bool exited = false;
  int code = -1;
  int signal = 0;
};

// Spawns `world` ranks of gloo_rank_proc and waits for all of them (or only for rank
// `onlyRank` when >= 0) up to `timeout`, then kills the rest (SIGKILL also ends a stopped
// process) and reports them as not exited.
std::vector<Exit> runProcs(int world, const std::string& scenario, std::chrono::seconds timeout, int onlyRank = -1) {
  HttpStoreServer server;
  Status st = server.start();
  EXPECT_TRUE(st.isOk()) << st;
  const std::string bin = std::string(DDP_TEST_BIN_DIR) + "/tests/gloo_rank_proc";
  const std::string prefix = test::uniqueGlooPrefix("mp-" + scenario);
  std::vector<pid_t> pids(world, -1);
  for (int r = 0; r < world; ++r) {
    std::vector<std::string> args{bin, "--store", server.address(), "--rank", std::to_string(r), "--size",
                                  std::to_string(world), "--prefix", prefix, "--scenario", scenario};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    EXPECT_EQ(posix_spawn(&pids[r], bin.c_str(), nullptr, nullptr, argv.data(), environ), 0) << bin;
  }
  std::vector<Exit> exits(world);
  const auto end = std::chrono::steady_clock::now() + timeout;
  int remaining = world;
  auto waited = [&] { return onlyRank >= 0 ? (exits[onlyRank].exited || exits[onlyRank].signal != 0) : remaining == 0; };
  while (!waited() && std::chrono::steady_clock::now() < end) {
    for (int r = 0; r < world; ++r) {
      if (pids[r] <= 0 || exits[r].exited || exits[r].signal) continue;
      int status = 0;
      if (waitpid(pids[r], &status, WNOHANG) == pids[r]) {
        if (WIFEXITED(status)) exits[r].exited = true, exits[r].code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) exits[r].signal = WTERMSIG(status);
        --remaining;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (int r = 0; r < world; ++r) {
    if (pids[r] > 0 && !exits[r].exited && !exits[r].signal) {
      kill(pids[r], SIGKILL);
      int status;
      waitpid(pids[r], &status, 0);
    }
  }
  return exits;
}

class GlooMultiprocessTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooMultiprocessTest, CollectivesAcrossProcesses) {
  const auto exits = runProcs(GetParam(), "collectives", std::chrono::seconds(60));
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_TRUE(exits[r].exited) << "rank " << r << " did not exit (signal " << exits[r].signal << ")";
    EXPECT_EQ(exits[r].code, 0) << "rank " << r;
  }
}

TEST_P(GlooMultiprocessTest, SizeMismatchIsAFailedWorkNotACrash) {
  const auto exits = runProcs(GetParam(), "mismatch", std::chrono::seconds(60));
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_TRUE(exits[r].exited) << "rank " << r << " did not exit (signal " << exits[r].signal << ")";
    EXPECT_EQ(exits[r].code, 0) << "rank " << r;
  }
}

// Note [Same-host allreduce]: processes of one host read each other's buffers.
TEST_P(GlooMultiprocessTest, LargeAllreducesReadPeersMemory) {
  const auto exits = runProcs(GetParam(), "same_host", std::chrono::seconds(60));
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_TRUE(exits[r].exited) << "rank " << r << " did not exit (signal " << exits[r].signal << ")";
    EXPECT_EQ(exits[r].code, 0) << "rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooMultiprocessTest, ::testing::Values(2, 3));

TEST(GlooMultiprocessFaultTest, TimeoutAbortsAndThePeerFailsFast) {
  const auto exits = runProcs(2, "timeout", std::chrono::seconds(60));
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_TRUE(exits[r].exited) << "rank " << r << " did not exit (signal " << exits[r].signal << ")";
    EXPECT_EQ(exits[r].code, 0) << "rank " << r;
  }
}

TEST(GlooMultiprocessFaultTest, PeerExitFailsTheOthersWithoutCrashOrHang) {
  const auto exits = runProcs(3, "peer_exit", std::chrono::seconds(60));
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_TRUE(exits[r].exited) << "rank " << r << " did not exit (signal " << exits[r].signal << ")";
    EXPECT_EQ(exits[r].code, 0) << "rank " << r;
  }
}

TEST(GlooMultiprocessFaultTest, PeerExitDuringASameHostAllreduceFailsTheOthers) {
  const auto exits = runProcs(3, "same_host_exit", std::chrono::seconds(60));
  for (size_t r = 0; r < exits.size(); ++r) {
    EXPECT_TRUE(exits[r].exited) << "rank " << r << " did not exit (signal " << exits[r].signal << ")";
    EXPECT_EQ(exits[r].code, 0) << "rank " << r;
  }
}

// Note [Abortable waits]: a rank aborted while its send is being written to a peer that stopped
// reading (a SIGSTOPped process) is released at once, not at its op timeout.
TEST(GlooMultiprocessFaultTest, AbortReleasesASendToAPeerThatStoppedReading) {
  const auto exits = runProcs(2, "stuck_send", std::chrono::seconds(60), /*onlyRank=*/0);
  EXPECT_TRUE(exits[0].exited) << "rank 0 did not exit (signal " << exits[0].signal << ")";
  EXPECT_EQ(exits[0].code, 0) << "rank 0";
  EXPECT_FALSE(exits[1].exited) << "rank 1 stops itself and is killed by the test";
}

}  // namespace
}  // namespace ddp::comm
