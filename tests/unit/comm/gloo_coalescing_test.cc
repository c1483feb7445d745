// Coalescing scopes on GlooBackend: a batch gives results identical to issuing the same ops
// one by one (compared byte for byte), in both the async (end() -> Work) and sync (scope
// destructor waits) styles; batched send/recv; misuse of scopes; ranks disagreeing on a batch.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "common/dtype.h"
#include "tests/support/gloo_harness.h"
#include "worker/comm/gloo_backend.h"

namespace ddp::comm {
namespace {

// The buffers of one round of mixed ops; filled identically for the coalesced and plain runs.
struct Round {
  std::vector<float> a0, a1, a37, avg;
  std::vector<uint16_t> bf;
  std::vector<int64_t> mx;
  std::vector<double> bc;
  std::vector<int32_t> agIn, agOut;
  std::vector<uint16_t> rsIn, rsOut;

  Round(int rank, int world) {
    a0 = {};
    a1 = {float(rank + 1)};
    a37.resize(37);
    avg.resize(37);
    for (int i = 0; i < 37; ++i) a37[i] = float(rank * 37 + i), avg[i] = float(rank + i % 4);
    bf.resize(300);
    for (int i = 0; i < 300; ++i) bf[i] = floatToBf16(float(1 + (rank + i) % 3));
    mx.resize(11);
    for (int i = 0; i < 11; ++i) mx[i] = int64_t((rank * 13 + i * 7) % 17) - 8;
    bc.assign(9, double(rank) + 0.5);
    agIn.assign(5, rank * 100);
    agOut.assign(5 * world, -1);
    rsIn.resize(6 * world);
    for (int i = 0; i < 6 * world; ++i) rsIn[i] = floatToHalf(float((rank + i) % 5));
    rsOut.assign(6, 0);
  }

  std::vector<WorkPtr> issue(Backend& b) {
    std::vector<WorkPtr> w;
    w.push_back(b.allreduce(viewOf(a0.data(), a0.size()), ReduceOp::kSum));
    w.push_back(b.allreduce(viewOf(a37.data(), a37.size()), ReduceOp::kSum));
    w.push_back(b.allreduce(viewOf(bf.data(), bf.size(), DType::kBF16), ReduceOp::kSum));
    w.push_back(b.broadcast(viewOf(bc.data(), bc.size()), b.size() - 1));
    w.push_back(b.allreduce(viewOf(a1.data(), a1.size()), ReduceOp::kSum));
    w.push_back(b.allreduce(viewOf(mx.data(), mx.size()), ReduceOp::kMax));
    w.push_back(b.allgather(viewOf(agIn.data(), agIn.size()), viewOf(agOut.data(), agOut.size())));
    w.push_back(b.allreduce(viewOf(avg.data(), avg.size()), ReduceOp::kAvg));
    w.push_back(b.reduceScatter(viewOf(rsIn.data(), rsIn.size(), DType::kF16), viewOf(rsOut.data(), rsOut.size(), DType::kF16),
                                ReduceOp::kSum));
    w.push_back(b.barrier());
    return w;
  }

  bool operator==(const Round& o) const {
    return a0 == o.a0 && a1 == o.a1 && a37 == o.a37 && avg == o.avg && bf == o.bf && mx == o.mx && bc == o.bc &&
           agOut == o.agOut && rsOut == o.rsOut;
  }
};

class GlooCoalescingTest : public ::testing::TestWithParam<int> {};

TEST_P(GlooCoalescingTest, AsyncBatchEqualsOneByOne) {
  const int world = GetParam();
  Status st = test::runRanks(world, [world](int rank, Backend& b) {
    Round plain(rank, world), batched(rank, world);
    for (auto& w : plain.issue(b)) ASSERT_TRUE(w->wait(Deadline::after(10s)).isOk());

    ASSERT_TRUE(b.startCoalescing().isOk());
    auto members = batched.issue(b);
    for (auto& w : members) EXPECT_FALSE(w->isCompleted());  // held until the scope ends
    WorkPtr batch = b.endCoalescing();
    EXPECT_EQ(batch->opType(), OpType::kCoalesced);
    Status bs = batch->wait(Deadline::after(10s));
    ASSERT_TRUE(bs.isOk()) << bs;
    for (auto& w : members) EXPECT_TRUE(w->isCompleted() && w->status().isOk()) << w->status();
    EXPECT_TRUE(plain == batched);
    // Sanity of the shared oracle: the first fused allreduce really reduced.
    EXPECT_EQ(batched.a1[0], float(world * (world + 1) / 2));
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooCoalescingTest, SyncScopeWaitsAtDestruction) {
  const int world = GetParam();
  Status st = test::runRanks(world, [world](int rank, Backend& b) {
    Round plain(rank, world), batched(rank, world);
    for (auto& w : plain.issue(b)) ASSERT_TRUE(w->wait(Deadline::after(10s)).isOk());
    std::vector<WorkPtr> members;
    {
      CoalescingScope scope(b);
      ASSERT_TRUE(scope.startStatus().isOk());
      members = batched.issue(b);
    }
    for (auto& w : members) EXPECT_TRUE(w->isCompleted());
    EXPECT_TRUE(plain == batched);
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooCoalescingTest, BatchedSendRecvRing) {
  const int world = GetParam();
  if (world == 1) GTEST_SKIP() << "no peer";
  Status st = test::runRanks(world, [world](int rank, Backend& b) {
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    std::vector<int64_t> toNext(1001), toPrev(17), fromPrev(1001, -1), fromNext(17, -1);
    for (int i = 0; i < 1001; ++i) toNext[i] = rank * 100000 + i;
    for (int i = 0; i < 17; ++i) toPrev[i] = -(rank * 1000 + i);
    CoalescingScope scope(b);
    // Receives first on every rank: only batching (post all, then wait) makes this work.
    b.recv(viewOf(fromPrev.data(), fromPrev.size()), prev, 1);
    b.recv(viewOf(fromNext.data(), fromNext.size()), next, 2);
    b.send(viewOf(toNext.data(), toNext.size()), next, 1);
    b.send(viewOf(toPrev.data(), toPrev.size()), prev, 2);
    Status bs = scope.end()->wait(Deadline::after(10s));
    ASSERT_TRUE(bs.isOk()) << bs;
    for (int i = 0; i < 1001; ++i) ASSERT_EQ(fromPrev[i], prev * 100000 + i);
    for (int i = 0; i < 17; ++i) ASSERT_EQ(fromNext[i], -(next * 1000 + i));
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooCoalescingTest, RanksDisagreeingOnABatchFailCleanly) {
  const int world = GetParam();
  if (world == 1) GTEST_SKIP() << "no peer";
  Status st = test::runRanks(world, [](int rank, Backend& b) {
    std::vector<float> x(8, 1.f), y(8, 1.f);
    ASSERT_TRUE(b.startCoalescing().isOk());
    auto w1 = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum);
    if (rank == 0) b.allreduce(viewOf(y.data(), y.size()), ReduceOp::kSum);
    Status bs = b.endCoalescing()->wait(Deadline::after(10s));
    EXPECT_EQ(bs.code(), StatusCode::kInvalidArgument) << bs;
    EXPECT_NE(bs.message().find("ranks disagree"), std::string::npos) << bs;
    EXPECT_EQ(w1->status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(b.barrier()->wait(Deadline::after(10s)).isOk());
  });
  EXPECT_TRUE(st.isOk()) << st;
}

TEST_P(GlooCoalescingTest, P2pMembersCompleteWhenACollectiveMemberFails) {
  const int world = GetParam();
  if (world == 1) GTEST_SKIP() << "no peer";
  Status st = test::runRanks(world, [world](int rank, Backend& b) {
    const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
    std::vector<int32_t> out(64, rank), in(64, -1);
    std::vector<float> x(rank == 0 ? 3 : 4, 1.f);
    CoalescingScope scope(b);
    auto r = b.recv(viewOf(in.data(), in.size()), prev, 5);
    auto s = b.send(viewOf(out.data(), out.size()), next, 5);
    auto a = b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum);
    Status bs = scope.end()->wait(Deadline::after(10s));
    EXPECT_EQ(bs.code(), StatusCode::kInvalidArgument) << bs;
    EXPECT_EQ(a->status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(r->wait(Deadline::after(10s)).isOk()) << r->status();
    EXPECT_TRUE(s->wait(Deadline::after(10s)).isOk()) << s->status();
    for (int32_t v : in) ASSERT_EQ(v, prev);
  });
  EXPECT_TRUE(st.isOk()) << st;
}

INSTANTIATE_TEST_SUITE_P(Worlds, GlooCoalescingTest, ::testing::Values(1, 2, 3, 4));

TEST(GlooCoalescingMisuseTest, NestedAndUnmatchedScopes) {
  Status st = test::runRanks(1, [](int, Backend& b) {
    EXPECT_EQ(b.endCoalescing()->status().code(), StatusCode::kFailedPrecondition);
    ASSERT_TRUE(b.startCoalescing().isOk());
    EXPECT_EQ(b.startCoalescing().code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(b.endCoalescing()->wait(Deadline::after(5s)).isOk());  // empty batch
  });
  EXPECT_TRUE(st.isOk()) << st;
}

}  // namespace
}  // namespace ddp::comm
