// SharedWords (Note [Shared-memory phases]): real memfd pages opened through /proc, real futexes:
// exchanges of one and of several words per rank by ranks that spin before they sleep and by
// ranks that only sleep, timeouts, this rank's and a peer's abort, a
// closed page, an ended peer, bad arguments. The ranks are threads of this process (the page is
// opened through /proc/self/fd as a peer opens rank 0's), except the ended peer, a real child
// process left a zombie and then reaped. Also SharedHeaderExchange over such a page, and the
// wiring in GlooCollectives: a same-host allreduce below kCrossMemoryMinBytes waits in the page,
// and aborting the communicator's wait set releases it.
#include "worker/comm/shared_words.h"

#include <gloo/common/error.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/usable_cores.h"
#include "tests/support/gloo_harness.h"
#include "worker/comm/cross_memory.h"
#include "worker/comm/gloo_collectives.h"
#include "worker/comm/gloo_wait_set.h"
#include "worker/comm/shared_header_exchange.h"

namespace ddp::comm {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using test::glooIoErrorOf;
using test::sharedPageOf;

// `world` threads exchange 300 times, each sleeping now and then (everyone waits on someone).
void gatherAtDifferentPaces(int world) {
  constexpr int kExchanges = 300;
  const auto kWorld = static_cast<size_t>(world);
  auto ranks = sharedPageOf(world);
  ASSERT_EQ(ranks.size(), kWorld);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      for (int e = 0; e < kExchanges; ++e) {
        if (e % 50 == r) std::this_thread::sleep_for(2ms);        // everyone waits on someone sometimes
        const size_t per = e % 2 == 0 ? 1 : kSharedWordsPerRank;  // addresses, then a header
        auto value = [&](size_t q, size_t k) { return uint64_t(e) * 1000 + q * 10 + k; };
        std::vector<uint64_t> words(kWorld * per, ~0ull);
        for (size_t k = 0; k < per; ++k) words[static_cast<size_t>(r) * per + k] = value(static_cast<size_t>(r), k);
        ranks[static_cast<size_t>(r)]->allgather(words, Deadline::after(30s), nullptr);
        for (size_t q = 0; q < kWorld; ++q) {
          for (size_t k = 0; k < per; ++k) wrong += words[q * per + k] != value(q, k);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

// Ranks that fit this process's cores spin before they sleep; more ranks than cores only sleep
// (a spinning rank would hold the core that the rank it waits for needs). Both gather alike.
TEST(SharedWordsTest, RanksAtDifferentPacesGatherEveryWordOfEveryExchange) {
  const int over = std::min(usableCores() + 1, kSharedWordsMaxRanks);  // more ranks than cores
  EXPECT_EQ(sharedPageOf(2)[0]->spins(), usableCores() >= 2);
  EXPECT_EQ(sharedPageOf(over)[0]->spins(), over <= usableCores());
  gatherAtDifferentPaces(2);
  gatherAtDifferentPaces(over);
}

TEST(SharedWordsTest, ALoneRankTimesOutNamingHowManyDidNotArrive) {
  auto ranks = sharedPageOf(3);
  ASSERT_EQ(ranks.size(), 3u);
  std::vector<uint64_t> words(3, 0);
  const auto t0 = SteadyClock::now();
  const std::string err = glooIoErrorOf([&] { ranks[1]->allgather(words, Deadline::after(150ms), nullptr); });
  const auto took = SteadyClock::now() - t0;
  EXPECT_TRUE(contains(err, "timed out: 2 rank(s) did not arrive")) << err;
  EXPECT_GE(took, 150ms);
  EXPECT_LT(took, 5s);
}

TEST(SharedWordsTest, AbortingTheWaitSetReleasesAWaitingRank) {
  auto ranks = sharedPageOf(2);
  ASSERT_EQ(ranks.size(), 2u);
  GlooWaitSet waits;
  SharedWords* rank0 = ranks[0].get();
  waits.onAbort([rank0] { rank0->abort(); });
  std::string err;
  std::thread waiter([&] {
    std::vector<uint64_t> words(2, 0);
    err = glooIoErrorOf([&] { rank0->allgather(words, Deadline::after(60s), [&] { return waits.aborted(); }); });
  });
  std::this_thread::sleep_for(100ms);
  const auto t0 = SteadyClock::now();
  waits.abort();
  waiter.join();
  EXPECT_LT(SteadyClock::now() - t0, 5s) << "released by the abort, not by the 60 s deadline";
  EXPECT_TRUE(contains(err, "abandoned: the communicator was aborted")) << err;

  // A wake registered after the abort runs at once.
  bool woken = false;
  waits.onAbort([&] { woken = true; });
  EXPECT_TRUE(woken);
}

TEST(SharedWordsTest, APeersAbortFailsTheOthersWaitsNamingIt) {
  auto ranks = sharedPageOf(3);
  ASSERT_EQ(ranks.size(), 3u);
  std::vector<std::string> errs(2);
  std::vector<std::thread> waiters;
  for (int r = 0; r < 2; ++r) {
    waiters.emplace_back([&, r] {
      std::vector<uint64_t> words(3, 0);
      errs[static_cast<size_t>(r)] =
          glooIoErrorOf([&] { ranks[static_cast<size_t>(r)]->allgather(words, Deadline::after(60s), nullptr); });
    });
  }
  std::this_thread::sleep_for(100ms);
  const auto t0 = SteadyClock::now();
  ranks[2]->abort();  // rank 2 never arrives: its communicator was aborted
  for (auto& t : waiters) t.join();
  EXPECT_LT(SteadyClock::now() - t0, 5s);
  for (const std::string& err : errs) EXPECT_TRUE(contains(err, "rank 2 aborted or closed the communicator")) << err;
  // The counts no longer agree: a later exchange on the page fails at once.
  std::vector<uint64_t> words(3, 0);
  EXPECT_TRUE(contains(glooIoErrorOf([&] { ranks[1]->allgather(words, Deadline::after(60s), nullptr); }),
                       "an earlier exchange on this page failed"));

  // An exchange that starts after a peer's abort fails at once, even were every rank to arrive.
  auto pair = sharedPageOf(2);
  ASSERT_EQ(pair.size(), 2u);
  pair[1]->abort();
  std::vector<uint64_t> two(2, 0);
  EXPECT_TRUE(contains(glooIoErrorOf([&] { pair[0]->allgather(two, Deadline::after(60s), nullptr); }),
                       "rank 1 aborted or closed the communicator"));
}

TEST(SharedWordsTest, APeerThatClosesItsPageFailsTheOthersWaits) {
  auto ranks = sharedPageOf(2);
  ASSERT_EQ(ranks.size(), 2u);
  std::string err;
  std::thread waiter([&] {
    std::vector<uint64_t> words(2, 0);
    err = glooIoErrorOf([&] { ranks[0]->allgather(words, Deadline::after(60s), nullptr); });
  });
  std::this_thread::sleep_for(100ms);
  const auto t0 = SteadyClock::now();
  ranks[1].reset();  // rank 1's communicator is destroyed; its process lives on
  waiter.join();
  EXPECT_LT(SteadyClock::now() - t0, 5s);
  EXPECT_TRUE(contains(err, "rank 1 aborted or closed the communicator")) << err;
}

TEST(SharedWordsTest, APeerWhoseProcessEndedFailsTheWaitNamingIt) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Not reaped yet: a zombie, which counts as ended.
  const std::vector<int64_t> pids = {::getpid(), child};
  auto page = SharedWords::create(0, 2);
  ASSERT_TRUE(page.isOk()) << page.status();
  ASSERT_TRUE((*page)->watch(pids).isOk());
  std::vector<uint64_t> words(2, 0);
  const auto t0 = SteadyClock::now();
  const std::string err = glooIoErrorOf([&] { (*page)->allgather(words, Deadline::after(60s), nullptr); });
  EXPECT_LT(SteadyClock::now() - t0, 5s);
  EXPECT_TRUE(contains(err, "rank 1 (pid " + std::to_string(child) + ") has exited")) << err;

  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const Status gone = (*page)->watch(pids);  // the pid names no process now
  EXPECT_EQ(gone.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(gone.message(), "pidfd_open of rank 1 (pid " + std::to_string(child) + ")")) << gone;
}

TEST(SharedWordsTest, BadArgumentsAndAMissingPageAreNamed) {
  EXPECT_EQ(SharedWords::create(0, 0).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SharedWords::create(1, 1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SharedWords::create(0, kSharedWordsMaxRanks + 1).status().code(), StatusCode::kInvalidArgument);
  auto page = SharedWords::create(0, 2);
  ASSERT_TRUE(page.isOk()) << page.status();
  EXPECT_EQ((*page)->watch({::getpid()}).code(), StatusCode::kInvalidArgument);  // one pid for two ranks
  std::vector<uint64_t> five(5, 0);                                              // not a whole number of words per rank
  EXPECT_THROW((*page)->allgather(five, Deadline::after(1s), nullptr), std::invalid_argument);
  std::vector<uint64_t> ten(10, 0);  // 5 per rank: more than a page slot holds
  EXPECT_THROW((*page)->allgather(ten, Deadline::after(1s), nullptr), std::invalid_argument);
  auto missing = SharedWords::open(::getpid(), 99999, 1, 2);
  EXPECT_EQ(missing.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(contains(missing.status().message(), "/proc/" + std::to_string(::getpid()) + "/fd/99999"))
      << missing.status();
}

// Note [Shared header exchange]: headers that agree, that do not (every rank's named), one never
// posted, and an exchange after stop().
TEST(SharedHeaderExchangeTest, AgreeingDisagreeingMissingAndStopped) {
  auto page = sharedPageOf(2);
  ASSERT_EQ(page.size(), 2u);
  std::vector<std::unique_ptr<SharedHeaderExchange>> ex;
  for (int r = 0; r < 2; ++r) {
    ex.push_back(std::make_unique<SharedHeaderExchange>(
        std::shared_ptr<SharedWords>(std::move(page[static_cast<size_t>(r)])), r, 2));
    ex[static_cast<size_t>(r)]->post(test::opHeader(1, 10), "op 1", 10000ms);
    ex[static_cast<size_t>(r)]->post(test::opHeader(2, r == 0 ? 10 : 11), "op 2", 10000ms);
  }
  std::vector<Status> one(2), two(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      one[static_cast<size_t>(r)] = ex[static_cast<size_t>(r)]->await(1, Deadline::after(10s), nullptr);
      two[static_cast<size_t>(r)] = ex[static_cast<size_t>(r)]->await(2, Deadline::after(10s), nullptr);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_TRUE(one[static_cast<size_t>(r)].isOk()) << one[static_cast<size_t>(r)];
    const Status& st = two[static_cast<size_t>(r)];
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st;
    EXPECT_TRUE(contains(st.message(), "op 2: ranks disagree")) << st;
    EXPECT_TRUE(contains(st.message(), "rank 0 has ") && contains(st.message(), "rank 1 has ")) << st;
  }
  EXPECT_EQ(ex[0]->await(3, Deadline::after(1s), nullptr).code(), StatusCode::kInternal);
  ex[0]->post(test::opHeader(3, 1), "op 3", 10000ms);
  ex[0]->stop();
  EXPECT_EQ(ex[0]->await(3, Deadline::after(1s), nullptr).code(), StatusCode::kAborted);
}

// GlooCollectives with the same-host path: a 1 MiB allreduce (below kCrossMemoryMinBytes, at or
// above kSharedWordsMinBytes) synchronises in the shared page; rank 1 never comes, and aborting
// the wait set releases rank 0 at once.
TEST(SharedWordsTest, ASameHostAllreduceWaitsInThePageAndAbortReleasesIt) {
  static_assert(kSharedWordsMinBytes <= (size_t{1} << 20) && (size_t{1} << 20) < kCrossMemoryMinBytes);
  auto contexts = test::connectGlooPair();
  auto self = thisProcess();
  ASSERT_TRUE(self.isOk()) << self.status();
  auto memory = std::make_shared<const CrossMemory>(std::vector<HostIdentity>{*self, *self});
  auto words = SharedWords::create(0, 2);
  ASSERT_TRUE(words.isOk()) << words.status();
  ASSERT_TRUE((*words)->watch(memory->pids()).isOk());
  auto waits = std::make_shared<GlooWaitSet>();
  GlooCollectives coll(contexts[0], waits, memory, std::shared_ptr<SharedWords>(std::move(*words)));
  std::vector<float> x((size_t{1} << 20) / sizeof(float), 1.f);
  std::string err;
  std::thread rank0(
      [&] { err = glooIoErrorOf([&] { coll.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum, 1, 60000ms); }); });
  std::this_thread::sleep_for(100ms);
  const auto t0 = SteadyClock::now();
  waits->abort();
  rank0.join();
  EXPECT_LT(SteadyClock::now() - t0, 5s);
  EXPECT_TRUE(contains(err, "shared-memory exchange abandoned")) << err;
}

}  // namespace
}  // namespace ddp::comm
