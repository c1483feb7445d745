// Smoke test of GlooBackend through the test harness: f32 ops across world sizes.
#include <gtest/gtest.h>

#include <vector>

#include "tests/support/gloo_harness.h"
#include "worker/comm/gloo_backend.h"

namespace ddp::comm {
namespace {

TEST(GlooBackendSmokeTest, AllreduceBroadcastAllgatherF32) {
  for (int world : {1, 2, 3}) {
    Status st = test::runRanks(world, [world](int rank, Backend& b) {
      std::vector<float> x(7);
      for (size_t i = 0; i < x.size(); ++i) x[i] = float(rank + 1) * float(i);
      ASSERT_TRUE(b.allreduce(viewOf(x.data(), x.size()), ReduceOp::kSum)->wait().isOk());
      const float ranksum = float(world * (world + 1) / 2);
      for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], ranksum * float(i));
      std::vector<float> y(5, float(rank));
      ASSERT_TRUE(b.broadcast(viewOf(y.data(), y.size()), world - 1)->wait().isOk());
      for (float v : y) EXPECT_EQ(v, float(world - 1));
      std::vector<float> in(3, float(rank)), out(3 * world, -1.f);
      ASSERT_TRUE(b.allgather(viewOf(in.data(), in.size()), viewOf(out.data(), out.size()))->wait().isOk());
      for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i], float(i / 3));
      ASSERT_TRUE(b.barrier()->wait().isOk());
    });
    EXPECT_TRUE(st.isOk()) << st;
  }
}

}  // namespace
}  // namespace ddp::comm
