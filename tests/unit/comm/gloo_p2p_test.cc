// Point-to-point on GlooBackend: every rank sends to every other rank (all sends and recvs
// posted before any wait), sizes 0, 1, odd and large, delivered exactly; tags keep streams
// apart even when received in the other order.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/gloo_harness.h"
#include "worker/comm/gloo_backend.h"

namespace ddp::comm {
namespace {

struct Param {
  int world;
  size_t count;
};

class GlooP2pTest : public ::testing::TestWithParam<Param> {};

double valueOf(int src, int dst, size_t i) { return src * 1e6 + dst * 1e4 + double(i); }

TEST_P(GlooP2pTest, AllPairsDeliverExactly) {
  const auto [world, count] = GetParam();
  Status st = test::runRanks(world, [world = world, count = count](int rank, Backend& b) {
    std::vector<std::vector<double>> out(world), in(world);
    std::vector<WorkPtr> works;
    for (int peer = 0; peer < world; ++peer) {
      if (peer == rank) continue;
      out[peer].resize(count);
      for (size_t i = 0; i < count; ++i) out[peer][i] = valueOf(rank, peer, i);
      works.push_back(b.send(viewOf(out[peer].data(), count), peer, /*tag=*/rank));
    }
    for (int peer = 0; peer < world; ++peer) {
      if (peer == rank) continue;
      in[peer].assign(count, -1.0);
      works.push_back(b.recv(viewOf(in[peer].data(), count), peer, /*tag=*/peer));
    }
    for (auto& w : works) {
      Status ws = w->wait(Deadline::after(20s));
      ASSERT_TRUE(ws.isOk()) << ws;
    }
    for (int peer = 0; peer < world; ++peer) {
      if (peer == rank) continue;
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(in[peer][i], valueOf(peer, rank, i)) << "from " << peer << " at " << i;
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

std::vector<Param> params() {
  std::vector<Param> out;
  for (int w : {2, 3, 4}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{37}, size_t{100000}}) out.push_back({w, n});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(WorldsAndCounts, GlooP2pTest, ::testing::ValuesIn(params()),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return "world" + std::to_string(info.param.world) + "_n" + std::to_string(info.param.count);
                         });

TEST(GlooP2pTagsTest, TagsSeparateStreamsAndKeepOrderWithinATag) {
  Status st = test::runRanks(2, [](int rank, Backend& b) {
    std::vector<int32_t> a{1, 2, 3}, c{7, 8, 9}, bb{4, 5};
    if (rank == 0) {
      auto w1 = b.send(viewOf(a.data(), a.size()), 1, 10);
      auto w2 = b.send(viewOf(bb.data(), bb.size()), 1, 20);
      auto w3 = b.send(viewOf(c.data(), c.size()), 1, 10);
      for (auto* w : {&w1, &w2, &w3}) ASSERT_TRUE((*w)->wait(Deadline::after(10s)).isOk());
    } else {
      std::vector<int32_t> ra(3), rb(2), rc(3);
      auto w2 = b.recv(viewOf(rb.data(), rb.size()), 0, 20);  // the later tag first
      auto w1 = b.recv(viewOf(ra.data(), ra.size()), 0, 10);
      auto w3 = b.recv(viewOf(rc.data(), rc.size()), 0, 10);
      for (auto* w : {&w1, &w2, &w3}) ASSERT_TRUE((*w)->wait(Deadline::after(10s)).isOk());
      EXPECT_EQ(ra, a);
      EXPECT_EQ(rb, bb);
      EXPECT_EQ(rc, c);
    }
  });
  EXPECT_TRUE(st.isOk()) << st;
}

}  // namespace
}  // namespace ddp::comm
