// SharedSmallOps (Note [Small ops through the page]): real memfd pages, real futexes, ranks as
// threads of this process (tests/support/gloo_harness.h: sharedPageOf). Allreduce of every
// dtype x op against closed forms on 2 to 4 ranks, the fold in rank order (an f32 sum whose
// value depends on the order, the same bits on every rank), broadcast from every root,
// allgather, and the wiring in GlooCollectives: with a page, an op of at most kSharedSmallBytes
// per rank waits in the page (a lone rank is released by the communicator's abort with the
// page's message), a larger one takes the TCP ring. The per-dtype arithmetic (f16 and bf16 sums,
// averages, integer division) is GlooBackend's, checked in gloo_backend_test.cc through the same
// kernels at counts 1 and 4, which now take this path.
#include "worker/comm/shared_small_ops.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "tests/support/gloo_harness.h"
#include "worker/comm/cross_memory.h"
#include "worker/comm/gloo_collectives.h"
#include "worker/comm/gloo_wait_set.h"

namespace ddp::comm {
namespace {

using namespace std::chrono_literals;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Runs fn(rank, ops) on `world` threads over one page.
void onRanks(int world, const std::function<void(int, SharedSmallOps&)>& fn) {
  auto page = test::sharedPageOf(world);
  ASSERT_EQ(page.size(), static_cast<size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      SharedSmallOps ops(std::shared_ptr<SharedWords>(std::move(page[static_cast<size_t>(r)])), r, world, nullptr);
      fn(r, ops);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(SharedSmallOpsTest, FitsUpToTheWordsARankHasOnThePage) {
  EXPECT_EQ(kSharedSmallBytes, 32u);
  EXPECT_FALSE(SharedSmallOps::fits(0));
  EXPECT_TRUE(SharedSmallOps::fits(1));
  EXPECT_TRUE(SharedSmallOps::fits(32));
  EXPECT_FALSE(SharedSmallOps::fits(33));
}

TEST(SharedSmallOpsTest, AllreduceOfEveryOpMatchesTheClosedForm) {
  for (int world : {2, 3, 4}) {
    onRanks(world, [world](int r, SharedSmallOps& ops) {
      const Deadline d = Deadline::after(30s);
      int64_t ints[4] = {r, -r, 10 + r, 7};  // 32 bytes: the whole of a rank's words
      ops.allreduce(viewOf(ints, 4), ReduceOp::kSum, d);
      const int64_t tri = world * (world - 1) / 2;
      EXPECT_EQ(ints[0], tri);
      EXPECT_EQ(ints[1], -tri);
      EXPECT_EQ(ints[2], 10 * world + tri);
      EXPECT_EQ(ints[3], 7 * world);
      int32_t mx[3] = {r, -r, 5};
      ops.allreduce(viewOf(mx, 3), ReduceOp::kMax, d);
      EXPECT_EQ(mx[0], world - 1);
      EXPECT_EQ(mx[1], 0);
      EXPECT_EQ(mx[2], 5);
      int32_t mn = r + 3;
      ops.allreduce(viewOf(&mn, 1), ReduceOp::kMin, d);
      EXPECT_EQ(mn, 3);
      double prod[2] = {double(r + 1), 0.5};
      ops.allreduce(viewOf(prod, 2), ReduceOp::kProduct, d);
      double fact = 1;
      for (int q = 1; q <= world; ++q) fact *= q;
      EXPECT_EQ(prod[0], fact);
      EXPECT_EQ(prod[1], std::pow(0.5, world));
      float avg[2] = {float(r), 1.0f};
      ops.allreduce(viewOf(avg, 2), ReduceOp::kAvg, d);  // the sum, divided once
      EXPECT_EQ(avg[0], float(world * (world - 1) / 2) / float(world));
      EXPECT_EQ(avg[1], 1.0f);
    });
  }
}

// 1e8f + 1 rounds back to 1e8f: folded in rank order ((1e8 + 1) + -1e8) + 1 is exactly 1 in f32;
// (1e8 + -1e8) + 1 + 1 would be 2. Every rank gets the same bits.
TEST(SharedSmallOpsTest, AllreduceFoldsInRankOrderSoEveryRankGetsTheSameBits) {
  const float in[4] = {1e8f, 1.0f, -1e8f, 1.0f};
  onRanks(4, [&](int r, SharedSmallOps& ops) {
    float x = in[r];
    ops.allreduce(viewOf(&x, 1), ReduceOp::kSum, Deadline::after(30s));
    EXPECT_EQ(x, 1.0f) << "rank " << r;
  });
}

TEST(SharedSmallOpsTest, BroadcastFromEveryRootAndAllgather) {
  onRanks(3, [](int r, SharedSmallOps& ops) {
    const Deadline d = Deadline::after(30s);
    for (int root = 0; root < 3; ++root) {
      int16_t x[5] = {int16_t(r), int16_t(r * 2), 3, int16_t(-r), int16_t(root)};  // 10 bytes: a partial word
      ops.broadcast(BufferView{x, 5, DType::kBF16, Device::cpu()}, root, d);
      const int16_t want[5] = {int16_t(root), int16_t(root * 2), 3, int16_t(-root), int16_t(root)};
      EXPECT_EQ(std::memcmp(x, want, sizeof(x)), 0) << "root " << root << " rank " << r;
    }
    char out[3 * 12];
    std::memset(out, '?', sizeof(out));
    std::snprintf(out + r * 12, 12, "rank %d ok", r);
    ops.allgather(out, 12, d);
    for (int q = 0; q < 3; ++q) EXPECT_EQ(std::string(out + q * 12), "rank " + std::to_string(q) + " ok");
  });
}

// GlooCollectives with a page: rank 1 never comes. An op of at most kSharedSmallBytes per rank
// waits in the page (the abort releases it with the page's message); 36 bytes take the TCP ring
// (released as a Gloo receive).
TEST(SharedSmallOpsTest, GlooCollectivesSendSmallOpsThroughThePage) {
  struct Case {
    std::string what;
    std::function<void(GlooCollectives&)> op;
    std::string released;
  };
  std::vector<int32_t> big(9, 1), small(8, 1);
  const std::vector<Case> cases = {
      {"8-byte allreduce",
       [&](GlooCollectives& c) { c.allreduce(viewOf(small.data(), 2), ReduceOp::kMax, 1, 60000ms); },
       "shared-memory exchange abandoned"},
      {"32-byte broadcast",
       [&](GlooCollectives& c) { c.broadcast(viewOf(small.data(), 8), 0, 1, 60000ms); },
       "shared-memory exchange abandoned"},
      {"barrier", [&](GlooCollectives& c) { c.barrier(1, 60000ms); }, "shared-memory exchange abandoned"},
      {"36-byte allreduce",
       [&](GlooCollectives& c) { c.allreduce(viewOf(big.data(), 9), ReduceOp::kMax, 1, 60000ms); },
       "aborted"},
  };
  for (const Case& k : cases) {
    auto contexts = test::connectGlooPair();
    auto words = SharedWords::create(0, 2);
    ASSERT_TRUE(words.isOk()) << words.status();
    ASSERT_TRUE((*words)->watch({::getpid(), ::getpid()}).isOk());
    auto waits = std::make_shared<GlooWaitSet>();
    GlooCollectives coll(contexts[0], waits, nullptr, std::shared_ptr<SharedWords>(std::move(*words)));
    std::string err;
    std::thread rank0([&] { err = test::glooIoErrorOf([&] { k.op(coll); }); });
    std::this_thread::sleep_for(100ms);
    waits->abort();
    rank0.join();
    EXPECT_TRUE(contains(err, k.released)) << k.what << ": " << err;
    if (k.released == "aborted") EXPECT_FALSE(contains(err, "shared-memory")) << k.what << ": " << err;
  }
}

}  // namespace
}  // namespace ddp::comm
