// PowerSGD hooks over real Gloo (TCP loopback, ranks as threads): with several buckets in flight
// (each hook's P and Q allreduces following other buckets' collectives; PyTorch 1.13 aborts on
// Gloo in exactly this case) every rank ends with the same bits, and the result matches the
// same run over LocalBackend (reduction order differs, so within float tolerance).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/support/gloo_harness.h"
#include "tests/support/local_backend.h"
#include "tests/unit/ddp/powersgd_test_util.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/powersgd_hook.h"

namespace ddp {
namespace {

using testing_util::randomVector;
using testing_util::runStep;
using testing_util::TestBucket;

// Runs 6 steps of 3 overlapping buckets; returns every bucket's final contents.
std::vector<float> runRank(bool batched, int rank, comm::Backend& backend) {
  PowerSgdOptions o;
  o.matrixApproximationRank = 2;
  o.startPowerSgdIter = 2;
  std::unique_ptr<CommHook> hook;
  if (batched) hook = std::make_unique<BatchedPowerSgdHook>(backend, o);
  else hook = std::make_unique<PowerSgdHook>(backend, o);
  TestBucket b0(0, false, {{"l3.w", {20, 30}}, {"l3.b", {20}}});
  TestBucket b1(1, false, {{"l2.w", {30, 30}}, {"l2.b", {30}}});
  TestBucket b2(2, true, {{"l1.w", {30, 10}}, {"l1.b", {30}}});
  for (int step = 0; step < 6; ++step) {
    uint32_t seed = 9000 + 100 * step + rank;
    for (auto* b : {&b0, &b1, &b2}) b->buffer() = randomVector(b->buffer().size(), seed += 10);
    Status st = runStep(*hook, {&b0, &b1, &b2});
    EXPECT_TRUE(st.isOk()) << st;
    if (!st.isOk()) return {};
  }
  std::vector<float> all;
  for (auto* b : {&b0, &b1, &b2}) all.insert(all.end(), b->buffer().begin(), b->buffer().end());
  return all;
}

class PowerSgdGlooTest : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(PowerSgdGlooTest, RanksAgreeWithBucketsInFlightAndMatchLocalBackend) {
  const auto [world, batched] = GetParam();
  std::vector<std::vector<float>> gloo(world), local(world);
  Status st = test::runRanks(world, [&](int rank, comm::Backend& backend) { gloo[rank] = runRank(batched, rank, backend); });
  ASSERT_TRUE(st.isOk()) << st;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) { local[rank] = runRank(batched, rank, backend); });
  ASSERT_FALSE(gloo[0].empty());
  for (int r = 1; r < world; ++r) EXPECT_EQ(gloo[r], gloo[0]) << "rank " << r << " disagrees with rank 0";
  // Float sums in another order: the compressed results agree to a few ulps of the scale. Error
  // feedback carries the differences forward, so allow a loose but meaningful tolerance.
  ASSERT_EQ(gloo[0].size(), local[0].size());
  double scale = testing_util::norm(local[0].data(), local[0].size()) / std::sqrt(local[0].size());
  EXPECT_LT(testing_util::maxAbsDiff(gloo[0].data(), local[0].data(), local[0].size()), 1e-3 * scale + 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Worlds, PowerSgdGlooTest,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Bool()),
                         [](const auto& info) {
                           return "world" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_batched" : "_powersgd");
                         });

}  // namespace
}  // namespace ddp
