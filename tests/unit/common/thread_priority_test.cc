// Comm thread priority (Note [Comm thread priority]): parsing, the three modes on real threads
// (policies read back from the kernel), the scope that lets library threads inherit it, and
// the GlooBackend's own threads. Whether SCHED_FIFO is permitted depends on the machine (root
// or CAP_SYS_NICE); each test probes it first and asserts the matching outcome.
#include "common/thread_priority.h"

#include <dirent.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/gloo_harness.h"

namespace ddp {
namespace {

// Whether this process may use SCHED_FIFO: tried on a scratch thread.
bool fifoPermitted() {
  bool ok = false;
  std::thread([&] {
    sched_param sp{};
    sp.sched_priority = 1;
    ok = pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
  }).join();
  return ok;
}

// The kernel's view: glibc caches what pthread_setschedparam set.
int policyOfThisThread() { return sched_getscheduler(0); }

// Runs fn on a fresh thread (normal policy) and returns its result.
template <typename F>
auto onFreshThread(F fn) {
  decltype(fn()) out{};
  std::thread([&] { out = fn(); }).join();
  return out;
}

// name -> policies of this process's threads with that name (/proc/self/task/*/comm, and
// sched_getscheduler on each thread id).
std::multimap<std::string, int> threadPolicies() {
  std::multimap<std::string, int> out;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    std::getline(comm, name);
    out.emplace(name, sched_getscheduler(std::stoi(e->d_name)));
  }
  closedir(dir);
  return out;
}

class CommThreadPriorityTest : public ::testing::Test {
 protected:
  void TearDown() override { setCommThreadPriority(CommThreadPriority::kAuto); }
};

TEST_F(CommThreadPriorityTest, ParsesTheThreeModesAndNamesABadOne) {
  for (auto p : {CommThreadPriority::kAuto, CommThreadPriority::kRealtime, CommThreadPriority::kNormal}) {
    auto parsed = parseCommThreadPriority(commThreadPriorityName(p));
    ASSERT_TRUE(parsed.isOk()) << parsed.status();
    EXPECT_EQ(*parsed, p);
  }
  auto bad = parseCommThreadPriority("fifo");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'fifo'"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("auto, realtime, normal"), std::string::npos) << bad.status();
}

TEST_F(CommThreadPriorityTest, EnvironmentSelectsTheModeAndABadValueFallsBackToAuto) {
  setenv("DDP_COMM_THREAD_PRIORITY", "normal", 1);
  EXPECT_EQ(commThreadPriorityFromEnvironment(), CommThreadPriority::kNormal);
  setenv("DDP_COMM_THREAD_PRIORITY", "realtime", 1);
  EXPECT_EQ(commThreadPriorityFromEnvironment(), CommThreadPriority::kRealtime);
  setenv("DDP_COMM_THREAD_PRIORITY", "urgent", 1);
  EXPECT_EQ(commThreadPriorityFromEnvironment(), CommThreadPriority::kAuto);
  unsetenv("DDP_COMM_THREAD_PRIORITY");
  EXPECT_EQ(commThreadPriorityFromEnvironment(), CommThreadPriority::kAuto);
}

TEST_F(CommThreadPriorityTest, NormalModeLeavesTheThreadAlone) {
  setCommThreadPriority(CommThreadPriority::kNormal);
  const int policy = onFreshThread([] {
    AppliedPriority a = applyCommThreadPriority();
    EXPECT_FALSE(a.realtime);
    EXPECT_TRUE(a.detail.empty()) << a.detail;
    return policyOfThisThread();
  });
  EXPECT_EQ(policy, SCHED_OTHER);
}

TEST_F(CommThreadPriorityTest, AutoModeUsesRealTimeExactlyWhenPermitted) {
  const bool permitted = fifoPermitted();
  setCommThreadPriority(CommThreadPriority::kAuto);
  AppliedPriority applied;
  const int policy = onFreshThread([&] {
    applied = applyCommThreadPriority();
    return policyOfThisThread();
  });
  EXPECT_EQ(applied.realtime, permitted);
  EXPECT_EQ(policy, permitted ? SCHED_FIFO : SCHED_OTHER);
  if (!permitted) EXPECT_NE(applied.detail.find("CAP_SYS_NICE"), std::string::npos) << applied.detail;
}

TEST_F(CommThreadPriorityTest, ScopeLendsThePolicyToThreadsCreatedInsideAndRestoresIt) {
  const bool permitted = fifoPermitted();
  setCommThreadPriority(CommThreadPriority::kRealtime);
  struct Seen {
    int inside = -1, child = -1, after = -1;
  };
  Seen seen = onFreshThread([] {
    Seen s;
    {
      CommPriorityScope scope;
      s.inside = policyOfThisThread();
      std::thread([&] { s.child = policyOfThisThread(); }).join();  // a library's thread
    }
    s.after = policyOfThisThread();
    return s;
  });
  EXPECT_EQ(seen.inside, permitted ? SCHED_FIFO : SCHED_OTHER);
  EXPECT_EQ(seen.child, permitted ? SCHED_FIFO : SCHED_OTHER);
  EXPECT_EQ(seen.after, SCHED_OTHER);
}

// One run of two GlooBackend ranks in this process under `mode`: the backend's executor, header
// lane and p2p threads and Gloo's own threads (which inherit from the thread that creates the
// backend) run at comm priority, and the creating thread gets its policy back. Returns true,
// checking nothing, when the starvation guard demoted the threads meanwhile.
bool checkBackendThreads(CommThreadPriority mode, bool permitted) {
  setCommThreadPriority(mode);
  const int demotionsAtStart = commPriorityDemotions();
  const bool wantFifo = permitted && mode == CommThreadPriority::kAuto;
  const size_t fifoBefore = [] {
    size_t n = 0;
    for (const auto& [name, policy] : threadPolicies()) n += policy == SCHED_FIFO;
    return n;
  }();
  std::vector<int> creatorPolicy(2, -1);
  std::multimap<std::string, int> during;
  std::mutex mu;
  Status st = test::runRanks(2, [&](int rank, comm::Backend& backend) {
    creatorPolicy[rank] = policyOfThisThread();
    EXPECT_TRUE(backend.barrier()->wait().isOk());
    if (rank == 0) {
      std::lock_guard<std::mutex> lock(mu);
      during = threadPolicies();
    }
    EXPECT_TRUE(backend.barrier()->wait().isOk());
  });
  EXPECT_TRUE(st.isOk()) << st;
  if (commPriorityDemotions() != demotionsAtStart) return true;
  for (int p : creatorPolicy) EXPECT_EQ(p, SCHED_OTHER) << commThreadPriorityName(mode);
  for (const char* name : {"ddp-gloo-exec", "ddp-gloo-hdr", "ddp-gloo-send", "ddp-gloo-recv"}) {
    auto [lo, hi] = during.equal_range(name);
    EXPECT_EQ(std::distance(lo, hi), 2) << name;  // one per rank
    for (auto it = lo; it != hi; ++it) EXPECT_EQ(it->second, wantFifo ? SCHED_FIFO : SCHED_OTHER) << name;
  }
  // Gloo's own threads (I/O loop and helpers, unnamed) inherit from the creating thread.
  size_t fifoDuring = 0;
  std::string fifoNames;
  for (const auto& [name, policy] : during) {
    if (policy != SCHED_FIFO) continue;
    ++fifoDuring;
    fifoNames += " " + name;
  }
  const size_t extra = fifoDuring - fifoBefore;
  if (wantFifo) {
    EXPECT_GE(extra, 8u + 2u) << fifoNames;  // 4 named per rank + at least Gloo's loop per rank
  } else {
    EXPECT_EQ(extra, 0u) << commThreadPriorityName(mode) << ":" << fifoNames;
  }
  return false;
}

// Two ranks in one process put a dozen real-time threads on the cores; should they livelock
// (Note [Comm thread priority]) the guard demotes them within half a second. Such a run is retried
// once; the guard firing twice fails the test.
TEST_F(CommThreadPriorityTest, GlooBackendThreadsRunAtCommPriority) {
  const bool permitted = fifoPermitted();
  for (auto mode : {CommThreadPriority::kAuto, CommThreadPriority::kNormal}) {
    if (checkBackendThreads(mode, permitted)) {
      std::printf("the starvation guard demoted the comm threads during the run; retrying once\n");
      EXPECT_FALSE(checkBackendThreads(mode, permitted)) << "the starvation guard fired twice";
    }
  }
}

// The livelock the starvation guard exists for, made on purpose: one real-time thread per core
// spins (as Gloo's I/O loop does on a pair another thread has locked) until a normal-priority
// thread sets a flag, which no normal thread gets a core to do. The guard (real-time priority
// 2) must see its normal-priority witness starve and demote the spinners within about half a
// second (the kernel's real-time throttling lets the witness run now and then, but late).
TEST_F(CommThreadPriorityTest, StarvationGuardDemotesSpinnersThatStarveNormalThreads) {
  if (!fifoPermitted()) GTEST_SKIP() << "SCHED_FIFO not permitted here";
  setCommThreadPriority(CommThreadPriority::kRealtime);
  const int demotionsBefore = commPriorityDemotions();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<bool> release{false};
  std::atomic<int> raised{0};
  std::vector<int> policyAtRelease(cores, -1);
  std::vector<std::thread> spinners;
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < cores; ++i) {
    spinners.emplace_back([&, i] {
      if (applyCommThreadPriority().realtime) raised.fetch_add(1);
      while (!release.load(std::memory_order_acquire)) {
      }
      policyAtRelease[i] = policyOfThisThread();
    });
  }
  // This thread is normal priority: it runs only when the spinners let it.
  const auto deadline = t0 + std::chrono::seconds(20);
  while (commPriorityDemotions() == demotionsBefore && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  release.store(true, std::memory_order_release);
  for (auto& t : spinners) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(raised.load(), static_cast<int>(cores));
  EXPECT_GT(commPriorityDemotions(), demotionsBefore) << "no demotion after " << secs << " s";
  for (int p : policyAtRelease) EXPECT_EQ(p, SCHED_OTHER);
  EXPECT_EQ(commThreadPriority(), CommThreadPriority::kNormal);  // no new promotions
  EXPECT_LT(secs, 5.0);
}

}  // namespace
}  // namespace ddp
