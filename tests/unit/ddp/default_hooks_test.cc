// The built-in allreduce hook leaves the average over ranks in the bucket: f32 through the
// backend's avg, f16 divided before the sum so that a sum beyond f16's range cannot overflow
// (oracle: the closed form; ranks are threads over LocalBackend).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "common/dtype.h"
#include "tests/support/local_backend.h"
#include "worker/ddp/default_hooks.h"

namespace ddp {
namespace {

using namespace std::chrono_literals;

// Runs the hook on a one-gradient bucket over `buf` and waits for its Work.
void runHook(comm::Backend& backend, comm::BufferView buf) {
  GradBucket bucket(0, true, buf, {buf}, {}, 0);
  AllreduceHook hook(backend);
  auto result = hook.run(bucket);
  ASSERT_TRUE(result.isOk()) << result.status();
  ASSERT_TRUE(result->work->wait(Deadline::after(10s)).isOk());
  if (result->finish) ASSERT_TRUE(result->finish().isOk());
}

TEST(AllreduceHookTest, F32BucketHoldsTheAverage) {
  comm::runLocalRanks(3, [](int rank, comm::Backend& backend) {
    std::vector<float> g(1000);
    for (size_t i = 0; i < g.size(); ++i) g[i] = float(i % 7) + float(rank);
    runHook(backend, comm::BufferView{g.data(), g.size(), DType::kF32});
    for (size_t i = 0; i < g.size(); ++i) {
      const float sum = float(i % 7) * 3 + 0 + 1 + 2;
      ASSERT_EQ(g[i], sum / 3.0f) << "element " << i << ", rank " << rank;
    }
  });
}

TEST(AllreduceHookTest, F16BucketIsDividedBeforeItsSumCouldOverflow) {
  // 40000 on each of 2 ranks: the sum (80000) is beyond f16's largest finite value (65504), the
  // average is not.
  comm::runLocalRanks(2, [](int rank, comm::Backend& backend) {
    std::vector<uint16_t> g(64, floatToHalf(40000.0f));
    runHook(backend, comm::BufferView{g.data(), g.size(), DType::kF16});
    for (size_t i = 0; i < g.size(); ++i) ASSERT_EQ(halfToFloat(g[i]), 40000.0f) << "element " << i << ", rank " << rank;
  });
}

}  // namespace
}  // namespace ddp
