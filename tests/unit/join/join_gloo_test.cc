// DDP + ZeroRedundancyOptimizer under Join with uneven inputs (world 3: 4, 7 and 5 batches) over
// the real Gloo backend (threads of this process, TCP on loopback), against the single-process
// oracle that averages the active ranks' gradients (divided by the initial world size). The
// LocalBackend tests (ddp_join_test) cover the modes; this one covers the transport.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/support/float_params.h"
#include "tests/support/gloo_harness.h"
#include "worker/ddp/ddp_joinable.h"
#include "worker/optim/optimizer.h"
#include "worker/optim/zero_redundancy_optimizer.h"

namespace ddp {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

const std::vector<size_t> kSizes{50, 3, 20, 8};
const std::vector<int> kBatches{4, 7, 5};

struct Model : test::FloatParams {
  Model() : FloatParams(kSizes, [](size_t i, size_t k) { return std::sin(0.3f * (i + 1) + 0.17f * k); }) {}
  float localGrad(size_t i, size_t k, int iter, int rank) const {
    return std::cos(2.f * data[i][k] + 0.3f * iter + rank);
  }
};

TEST(JoinGlooTest, DdpAndZeroWithUnevenInputsMatchOracle) {
  const auto cfg = optim::OptimizerConfig::adam(0.01f);
  const int world = 3;
  Model ref;
  auto opt = optim::makeOptimizer(cfg, ref.ptrs());
  for (int it = 0; it < 7; ++it) {
    for (size_t i = 0; i < kSizes.size(); ++i)
      for (size_t k = 0; k < kSizes[i]; ++k) {
        float sum = 0.f;
        for (int r = 0; r < world; ++r) sum += it < kBatches[r] ? ref.localGrad(i, k, it, r) / world : 0.f;
        ref.grad[i][k] = sum;
      }
    ASSERT_TRUE((*opt)->step().isOk());
  }
  std::mutex mu;
  std::vector<std::vector<std::vector<float>>> finals(world);
  Status st = test::runRanks(world, [&](int rank, comm::Backend& pg) {
    Model m;
    ReducerOptions ro;
    ro.bucketCapBytes = 128;
    ro.firstBucketCapBytes = 64;
    auto reducer = Reducer::create(pg, m.ptrs(), ro);
    ASSERT_TRUE(reducer.isOk()) << reducer.status();
    DdpJoinable ddpJoin(**reducer);
    auto zero = optim::ZeroRedundancyOptimizer::create(m.ptrs(), pg, cfg);
    ASSERT_TRUE(zero.isOk());
    auto join = join::Join::create({&ddpJoin, zero->get()});
    ASSERT_TRUE(join.isOk());
    for (int it = 0; it < kBatches[rank]; ++it) {
      ASSERT_TRUE(ddpJoin.beginIteration(soon()).isOk());
      for (size_t i = kSizes.size(); i-- > 0;) {
        for (size_t k = 0; k < kSizes[i]; ++k) m.grad[i][k] = m.localGrad(i, k, it, rank);
        ASSERT_TRUE((*reducer)->markGradReady(i).isOk());
      }
      ASSERT_TRUE(ddpJoin.finalize(soon()).isOk());
      ASSERT_TRUE((*zero)->step(soon()).isOk());
    }
    Status fin = (*join)->finish(soon());
    ASSERT_TRUE(fin.isOk()) << fin;
    std::lock_guard<std::mutex> lock(mu);
    finals[rank] = m.data;
  });
  ASSERT_TRUE(st.isOk()) << st;
  for (int r = 0; r < world; ++r)
    ASSERT_NO_FATAL_FAILURE(test::expectAllNear(finals[r], ref.data, 1e-5f, "rank " + std::to_string(r)));
}

}  // namespace
}  // namespace ddp
