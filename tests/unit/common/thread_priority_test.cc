// Comm thread priority (Note [Comm thread priority]): parsing, the three policies on real threads
// (policies read back from the kernel), each call using the policy it is given (there is no
// process-wide mode), the scope that lets library threads inherit it, the GlooBackend's and the
// Reducer's threads under the policy of their options, and the starvation guard. Whether
// SCHED_FIFO is permitted depends on the machine (root or CAP_SYS_NICE); each test probes it
// first and asserts the matching outcome. The guard's demotion is one-way for the process, so
// its test comes last, and ctest runs this executable alone (tests/CMakeLists.txt).
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

#include "tests/support/float_params.h"
#include "tests/support/gloo_harness.h"
#include "worker/ddp/reducer.h"

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

// No state to reset between tests: the policy is an argument. (The guard's demotion latch is
// the process's; only the last test can set it, and the tests before check it is unset.)
class CommThreadPriorityTest : public ::testing::Test {};

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

// The environment is not consulted: only WorkerConfig reads DDP_COMM_THREAD_PRIORITY.
TEST_F(CommThreadPriorityTest, ThePolicyIsTheArgumentNotTheEnvironment) {
  ASSERT_EQ(commPriorityDemotions(), 0);
  const bool permitted = fifoPermitted();
  setenv("DDP_COMM_THREAD_PRIORITY", "normal", 1);
  const int autoPolicy = onFreshThread([] {
    (void)applyCommThreadPriority(CommThreadPriority::kAuto);
    return policyOfThisThread();
  });
  setenv("DDP_COMM_THREAD_PRIORITY", "realtime", 1);
  const int normalPolicy = onFreshThread([] {
    (void)applyCommThreadPriority(CommThreadPriority::kNormal);
    return policyOfThisThread();
  });
  unsetenv("DDP_COMM_THREAD_PRIORITY");
  EXPECT_EQ(autoPolicy, permitted ? SCHED_FIFO : SCHED_OTHER);
  EXPECT_EQ(normalPolicy, SCHED_OTHER);
}

// Two threads at once under different policies: each gets its own (no shared mode to race on).
TEST_F(CommThreadPriorityTest, ConcurrentCallersGetTheirOwnPolicy) {
  ASSERT_EQ(commPriorityDemotions(), 0);
  const bool permitted = fifoPermitted();
  std::atomic<int> arrived{0};
  int normal = -1, realtime = -1;
  auto run = [&](CommThreadPriority p, int* out) {
    arrived.fetch_add(1);
    while (arrived.load() < 2) std::this_thread::yield();
    (void)applyCommThreadPriority(p);
    *out = policyOfThisThread();
  };
  std::thread a(run, CommThreadPriority::kNormal, &normal);
  std::thread b(run, CommThreadPriority::kRealtime, &realtime);
  a.join();
  b.join();
  EXPECT_EQ(normal, SCHED_OTHER);
  EXPECT_EQ(realtime, permitted ? SCHED_FIFO : SCHED_OTHER);
}

TEST_F(CommThreadPriorityTest, NormalModeLeavesTheThreadAlone) {
  const int policy = onFreshThread([] {
    AppliedPriority a = applyCommThreadPriority(CommThreadPriority::kNormal);
    EXPECT_FALSE(a.realtime);
    EXPECT_TRUE(a.detail.empty()) << a.detail;
    return policyOfThisThread();
  });
  EXPECT_EQ(policy, SCHED_OTHER);
}

TEST_F(CommThreadPriorityTest, AutoModeUsesRealTimeExactlyWhenPermitted) {
  ASSERT_EQ(commPriorityDemotions(), 0);
  const bool permitted = fifoPermitted();
  AppliedPriority applied;
  const int policy = onFreshThread([&] {
    applied = applyCommThreadPriority(CommThreadPriority::kAuto);
    return policyOfThisThread();
  });
  EXPECT_EQ(applied.realtime, permitted);
  EXPECT_EQ(policy, permitted ? SCHED_FIFO : SCHED_OTHER);
  if (!permitted) EXPECT_NE(applied.detail.find("CAP_SYS_NICE"), std::string::npos) << applied.detail;
}

TEST_F(CommThreadPriorityTest, ScopeLendsThePolicyToThreadsCreatedInsideAndRestoresIt) {
  ASSERT_EQ(commPriorityDemotions(), 0);
  const bool permitted = fifoPermitted();
  struct Seen {
    int inside = -1, child = -1, after = -1;
  };
  Seen seen = onFreshThread([] {
    Seen s;
    {
      CommPriorityScope scope(CommThreadPriority::kRealtime);
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

// One run of two GlooBackend ranks in this process, each with GlooOptions::commThreadPriority and
// a Reducer with ReducerOptions::commThreadPriority set to `mode`: the backend's executor, header
// lane and p2p threads, Gloo's own threads (which inherit from the thread that creates the
// backend) and the reducer's comm thread run at comm priority, and the creating thread gets its
// policy back. After a demotion (an earlier run's) everything stays normal. Returns true,
// checking nothing, when the starvation guard demoted the threads during this run.
bool checkBackendThreads(CommThreadPriority mode, bool permitted) {
  const int demotionsAtStart = commPriorityDemotions();
  const bool wantFifo = permitted && mode == CommThreadPriority::kAuto && demotionsAtStart == 0;
  const size_t fifoBefore = [] {
    size_t n = 0;
    for (const auto& [name, policy] : threadPolicies()) n += policy == SCHED_FIFO;
    return n;
  }();
  std::vector<int> creatorPolicy(2, -1);
  std::multimap<std::string, int> during;
  std::mutex mu;
  auto configure = [mode](comm::GlooOptions& o) {
    o.commThreadPriority = mode;
    o.sameHostMemory = false;  // ranks over TCP, so that each has its header lane thread (Note [Header lane])
  };
  Status st = test::runRanks(2, configure, [&](int rank, comm::Backend& backend) {
    creatorPolicy[rank] = policyOfThisThread();
    test::FloatParams params({3, 5}, [](size_t i, size_t k) { return float(i + k); });
    ReducerOptions ro;
    ro.commThreadPriority = mode;
    auto reducer = Reducer::create(backend, params.ptrs(), ro);
    EXPECT_TRUE(reducer.isOk()) << reducer.status();
    EXPECT_TRUE(backend.barrier()->wait().isOk());
    if (rank == 0) {
      // The reducers' comm threads name themselves and apply the policy once they run: wait
      // (bounded) for both to have done so.
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
      std::multimap<std::string, int> seen;
      for (;;) {
        seen = threadPolicies();
        auto [lo, hi] = seen.equal_range("ddp-reducer");
        const bool settled = std::distance(lo, hi) == 2 &&
                             std::all_of(lo, hi, [&](const auto& e) { return e.second == (wantFifo ? SCHED_FIFO : SCHED_OTHER); });
        if (settled || std::chrono::steady_clock::now() > until) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::lock_guard<std::mutex> lock(mu);
      during = std::move(seen);
    }
    EXPECT_TRUE(backend.barrier()->wait().isOk());
  });
  EXPECT_TRUE(st.isOk()) << st;
  if (commPriorityDemotions() != demotionsAtStart) return true;
  for (int p : creatorPolicy) EXPECT_EQ(p, SCHED_OTHER) << commThreadPriorityName(mode);
  for (const char* name : {"ddp-gloo-exec", "ddp-gloo-hdr", "ddp-gloo-send", "ddp-gloo-recv", "ddp-reducer"}) {
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
    EXPECT_GE(extra, 10u + 2u) << fifoNames;  // 5 named per rank + at least Gloo's loop per rank
  } else {
    EXPECT_EQ(extra, 0u) << commThreadPriorityName(mode) << ":" << fifoNames;
  }
  return false;
}

// Two ranks in one process put a dozen real-time threads on the cores; should they livelock
// (Note [Comm thread priority]) the guard demotes them within half a second. Such a run is retried
// once, which then checks that nothing is raised again (the demotion is for the rest of the
// process); the guard firing twice fails the test.
TEST_F(CommThreadPriorityTest, BackendAndReducerThreadsRunAtThePolicyOfTheirOptions) {
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
  if (commPriorityDemotions() != 0) GTEST_SKIP() << "the guard already demoted in this process (an earlier test)";
  const int demotionsBefore = commPriorityDemotions();
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<bool> release{false};
  std::atomic<int> raised{0};
  std::vector<int> policyAtRelease(cores, -1);
  std::vector<std::thread> spinners;
  const auto t0 = std::chrono::steady_clock::now();
  for (unsigned i = 0; i < cores; ++i) {
    spinners.emplace_back([&, i] {
      if (applyCommThreadPriority(CommThreadPriority::kRealtime).realtime) raised.fetch_add(1);
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
  EXPECT_LT(secs, 5.0);
  // No new promotions, whatever the policy asked for, and the result says why.
  AppliedPriority after;
  const int policyAfter = onFreshThread([&] {
    after = applyCommThreadPriority(CommThreadPriority::kRealtime);
    return policyOfThisThread();
  });
  EXPECT_FALSE(after.realtime);
  EXPECT_EQ(policyAfter, SCHED_OTHER);
  EXPECT_NE(after.detail.find("starvation guard"), std::string::npos) << after.detail;
}

}  // namespace
}  // namespace ddp
