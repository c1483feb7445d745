// GlooBackend under faults: ranks disagreeing on an op, abort (including a rank blocked on a
// peer that never arrives), watchdog timeouts with FakeClock, a peer dying mid-op, a second
// generation after an abort. Faked here: time (FakeClock) in the timeout tests; peers that
// "never arrive" are real ranks that deliberately skip the op.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "tests/support/gloo_harness.h"
#include "worker/comm/gloo_backend.h"
#include "common/store/in_memory_store.h"

namespace ddp::comm {
namespace {

using Clock = std::chrono::steady_clock;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void spinUntil(const std::atomic<bool>& flag) {
  const auto end = Clock::now() + 10s;
  while (!flag.load() && Clock::now() < end) std::this_thread::sleep_for(1ms);
}

class GlooMismatchTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooMismatchTest, SizeMismatchFailsOnEveryRankAndCommunicatorSurvives) {
  const int world = GetParam();
  Status st = test::runRanks(world, [](int rank, Backend& b) {
    std::vector<float> x(rank == 0 ? 10 : 11, 1.f);
    Status ws = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(10s));
    EXPECT_EQ(ws.code(), StatusCode::kInvalidArgument) << ws;
    EXPECT_TRUE(contains(ws.message(), "ranks disagree")) << ws;
    EXPECT_TRUE(contains(ws.message(), "rank 0 has allreduce #1 10 x f32 sum")) << ws;
    EXPECT_TRUE(contains(ws.message(), "rank 1 has allreduce #1 11 x f32 sum")) << ws;
    // Every rank skipped the same op: the next one works.
    std::vector<float> y(5, float(rank));
    ASSERT_TRUE(b.allreduce(viewOf(y.data(), y.size()), ReduceOp::kMax)->wait(Deadline::after(10s)).isOk());
    for (float v : y) EXPECT_EQ(v, float(b.size() - 1));
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooMismatchTest, DtypeOpAndRootMismatchesFailCleanly) {
  const int world = GetParam();
  Status st = test::runRanks(world, [](int rank, Backend& b) {
    std::vector<float> f(4, 1.f);
    std::vector<int32_t> i(4, 1);
    auto w1 = rank == 0 ? b.allreduce(viewOf(f.data(), 4), ReduceOp::kSum) : b.allreduce(viewOf(i.data(), 4), ReduceOp::kSum);
    EXPECT_EQ(w1->wait(Deadline::after(10s)).code(), StatusCode::kInvalidArgument);
    auto w2 = rank == 0 ? b.broadcast(viewOf(f.data(), 4), 0) : b.allreduce(viewOf(f.data(), 4), ReduceOp::kSum);
    EXPECT_EQ(w2->wait(Deadline::after(10s)).code(), StatusCode::kInvalidArgument);
    auto w3 = b.broadcast(viewOf(f.data(), 4), rank == 0 ? 0 : 1);
    EXPECT_EQ(w3->wait(Deadline::after(10s)).code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(b.barrier()->wait(Deadline::after(10s)).isOk());
  });
  EXPECT_TRUE(st.isOk()) << st;
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooMismatchTest, ::testing::Values(2, 3));

TEST(GlooFaultsTest, P2pSizeMismatchFailsTheRecvAndLinkSurvives) {
  Status st = test::runRanks(2, [](int rank, Backend& b) {
    if (rank == 0) {
      std::vector<float> x(10, 3.f);
      EXPECT_TRUE(b.send(viewOf(x.data(), x.size()), 1, 7)->wait(Deadline::after(10s)).isOk());
      std::vector<float> y(4, 5.f);
      EXPECT_TRUE(b.send(viewOf(y.data(), y.size()), 1, 7)->wait(Deadline::after(10s)).isOk());
    } else {
      std::vector<float> x(12, 0.f);
      Status ws = b.recv(viewOf(x.data(), x.size()), 0, 7)->wait(Deadline::after(10s));
      EXPECT_EQ(ws.code(), StatusCode::kInvalidArgument) << ws;
      EXPECT_TRUE(contains(ws.message(), "sender sent 40 bytes of f32, this recv expects 48 bytes")) << ws;
      std::vector<float> y(4, 0.f);
      EXPECT_TRUE(b.recv(viewOf(y.data(), y.size()), 0, 7)->wait(Deadline::after(10s)).isOk());
      for (float v : y) EXPECT_EQ(v, 5.f);
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooFaultsTest, AbortUnblocksRankWaitingForAPeerThatNeverArrives) {
  std::atomic<bool> rank0Done{false};
  Status st = test::runRanks(2, [&](int rank, Backend& b) {
    std::vector<float> x(1000, 1.f);
    if (rank == 1) {
      spinUntil(rank0Done);  // never joins the allreduce
      // Rank 0's abort closed the connection: this rank's next op fails, it does not hang.
      const auto t0 = Clock::now();
      Status ws = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(10s));
      EXPECT_FALSE(ws.isOk());
      EXPECT_NE(ws.code(), StatusCode::kTimeout) << ws;
      EXPECT_LT(Clock::now() - t0, 5s);
      return;
    }
    auto work = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum);
    auto queued = b.barrier();
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(work->isCompleted());
    Clock::time_point abortAt;
    std::thread aborter([&] {
      abortAt = Clock::now();
      b.abort(abortedError("operator requested abort"));
    });
    Status ws = work->wait(Deadline::after(10s));
    const auto released = Clock::now();
    aborter.join();
    EXPECT_EQ(ws.code(), StatusCode::kAborted) << ws;
    EXPECT_TRUE(contains(ws.message(), "operator requested abort")) << ws;
    EXPECT_LT(released - abortAt, 1s);
    EXPECT_EQ(queued->wait(Deadline::after(1s)).code(), StatusCode::kAborted);
    // Future ops fail fast.
    EXPECT_TRUE(b.isAborted());
    EXPECT_EQ(b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(1s)).code(), StatusCode::kAborted);
    b.abort(abortedError("again"));  // idempotent
    rank0Done = true;
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooFaultsTest, PeerAbortingMidOpFailsTheOpWithTransportError) {
  std::atomic<bool> issued{false};
  Status st = test::runRanks(3, [&](int rank, Backend& b) {
    std::vector<float> x(100, 1.f);
    if (rank == 2) {
      spinUntil(issued);
      std::this_thread::sleep_for(50ms);
      b.abort(abortedError("rank 2 is going away"));
      return;
    }
    issued = true;
    const auto t0 = Clock::now();
    Status ws = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(10s));
    EXPECT_FALSE(ws.isOk());
    EXPECT_NE(ws.code(), StatusCode::kTimeout) << ws;
    EXPECT_LT(Clock::now() - t0, 5s);
    EXPECT_TRUE(b.isAborted());  // transport errors abort the communicator
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooFaultsTest, WatchdogTimeoutNamesTheOpAndAborts) {
  FakeClock clock;
  std::atomic<bool> issued{false};
  std::atomic<bool> checked{false};
  Status st = test::runRanks(
      2, [&](GlooOptions& o) { o.clock = &clock; o.watchdogPoll = 2ms; },
      [&](int rank, Backend& b) {
        if (rank == 1) {
          spinUntil(issued);
          clock.advance(kDefaultOpTimeout + 1s);  // rank 1 never joins; time passes
          spinUntil(checked);                     // and stays connected meanwhile
          return;
        }
        std::vector<float> x(256, 1.f);
        auto work = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum);
        issued = true;
        Status ws = work->wait(Deadline::after(10s));
        EXPECT_EQ(ws.code(), StatusCode::kTimeout) << ws;
        EXPECT_TRUE(contains(ws.message(), "allreduce seq 1 (1024 bytes)")) << ws;
        EXPECT_TRUE(contains(ws.message(), "rank 0/2")) << ws;
        EXPECT_TRUE(b.isAborted());
        auto& gb = static_cast<GlooBackend&>(b);
        auto records = gb.flightRecorder().snapshot();
        ASSERT_FALSE(records.empty());
        EXPECT_EQ(records.back().seq, 1u);
        EXPECT_EQ(records.back().op, "allreduce");
        EXPECT_EQ(records.back().bytes, 1024u);
        EXPECT_EQ(records.back().state, FlightState::kTimedOut);
        EXPECT_TRUE(contains(gb.flightRecorder().dump(gb.groupName()), "seq 1 allreduce 1024 bytes state=timed_out"));
        checked = true;
      });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooFaultsTest, PerOpTimeoutOverridesTheDefault) {
  FakeClock clock;
  std::atomic<bool> issued{false};
  std::atomic<bool> checked{false};
  Status st = test::runRanks(
      2, [&](GlooOptions& o) { o.clock = &clock; o.watchdogPoll = 2ms; },
      [&](int rank, Backend& b) {
        if (rank == 1) {
          spinUntil(issued);
          clock.advance(3s);
          spinUntil(checked);
          return;
        }
        OpOptions opts;
        opts.timeout = 2s;
        auto work = b.barrier(opts);
        issued = true;
        Status ws = work->wait(Deadline::after(10s));
        EXPECT_EQ(ws.code(), StatusCode::kTimeout) << ws;
        EXPECT_TRUE(contains(ws.message(), "barrier seq 1")) << ws;
        checked = true;
      });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST(GlooFaultsTest, SecondGenerationWorksAfterAbort) {
  InMemoryStore store;
  const std::string job = test::uniqueGlooPrefix("job");
  for (int gen = 0; gen < 2; ++gen) {
    std::vector<std::thread> threads;
    std::vector<Status> results(2);
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        GlooOptions o;
        o.rank = r;
        o.size = 2;
        o.prefix = job + "/gen" + std::to_string(gen);
        o.connectTimeout = 10s;
        auto b = GlooBackend::create(o, store);
        if (!b.isOk()) {
          results[r] = b.status();
          return;
        }
        std::vector<int64_t> x(3, r + 1);
        results[r] = (*b)->allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait(Deadline::after(10s));
        if (results[r].isOk() && x[0] != 3) results[r] = internalError("wrong sum");
        (*b)->abort(abortedError("generation " + std::to_string(gen) + " over"));
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& s : results) EXPECT_TRUE(s.isOk()) << "generation " << gen << ": " << s;
  }
}

TEST(GlooFaultsTest, CreateFailsCleanlyWhenAPeerNeverArrives) {
  InMemoryStore store;
  GlooOptions o;
  o.rank = 0;
  o.size = 2;
  o.prefix = test::uniqueGlooPrefix("lonely");
  o.connectTimeout = 300ms;
  const auto t0 = Clock::now();
  auto b = GlooBackend::create(o, store);
  EXPECT_LT(Clock::now() - t0, 5s);
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable) << b.status();
  EXPECT_TRUE(contains(b.status().message(), o.prefix)) << b.status();
}

TEST(GlooFaultsTest, OptionsValidateNamesTheField) {
  GlooOptions o;
  o.size = 2;
  o.rank = 2;
  EXPECT_TRUE(contains(o.validate().message(), "GlooOptions.rank"));
  o.rank = 0;
  o.prefix = "";
  EXPECT_TRUE(contains(o.validate().message(), "GlooOptions.prefix"));
  o.prefix = "p";
  o.timeout = Duration::zero();
  EXPECT_TRUE(contains(o.validate().message(), "GlooOptions.timeout"));
  o.timeout = 1s;
  EXPECT_TRUE(o.validate().isOk());
}

}  // namespace
}  // namespace ddp::comm
