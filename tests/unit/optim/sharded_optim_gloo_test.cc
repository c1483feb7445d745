// ZeroRedundancyOptimizer, DistributedFusedAdam and Join over the real Gloo backend (threads of
// this process, TCP on loopback; tests/support/gloo_harness.h), against single-process oracles:
// the LocalBackend tests cover the logic, these cover the transport (reduce-scatter, all-gather,
// broadcast, send/recv with tags, gather) the same code uses in production.
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/support/float_params.h"
#include "tests/support/gloo_harness.h"
#include "worker/ddp/ddp_joinable.h"
#include "worker/optim/distributed_fused_adam.h"
#include "worker/optim/optimizer.h"
#include "worker/optim/zero_redundancy_optimizer.h"

namespace ddp::optim {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

const std::vector<size_t> kSizes{300, 7, 129, 1, 64};

struct Model : test::FloatParams {
  Model() : FloatParams(kSizes, [](size_t i, size_t k) { return std::sin(0.41f * (i + 1) + 0.07f * k); }) {}
  float localGrad(size_t i, size_t k, int step, int rank) const {
    return std::cos(2.f * data[i][k] + 0.4f * step + rank) * (1.f + 0.3f * rank);
  }
};

void expectNear(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want) {
  test::expectAllNear(got, want, 1e-5f);
}

// Plain Adam on the average over worlds[s] ranks' gradients at step s.
Model oracle(const std::vector<int>& worlds, const OptimizerConfig& cfg, std::unique_ptr<Optimizer>* keep = nullptr) {
  Model m;
  auto opt = makeOptimizer(cfg, m.ptrs());
  for (int s = 0; s < static_cast<int>(worlds.size()); ++s) {
    const int world = worlds[s];
    for (size_t i = 0; i < kSizes.size(); ++i)
      for (size_t k = 0; k < kSizes[i]; ++k) {
        float sum = 0.f;
        for (int r = 0; r < world; ++r) sum += m.localGrad(i, k, s, r);
        m.grad[i][k] = sum / world;
      }
    EXPECT_TRUE((*opt)->step().isOk());
  }
  if (keep) *keep = std::move(*opt);
  return m;
}

TEST(ShardedOptimGlooTest, ZeroAndDfaMatchPlainAdamAndConsolidateOverGloo) {
  const int world = 3, steps = 4;
  const auto cfg = OptimizerConfig::adamw(0.01f);
  std::unique_ptr<Optimizer> refOpt;
  Model ref = oracle(std::vector<int>(steps, world), cfg, &refOpt);
  std::vector<int> worlds(steps, world);
  worlds.push_back(2);
  Model ref5 = oracle(worlds, cfg);  // one more step at world 2
  std::mutex mu;
  std::string zeroState, dfaState;
  Status st = test::runRanks(world, [&](int rank, comm::Backend& pg) {
    Model mz, md;
    auto zero = ZeroRedundancyOptimizer::create(mz.ptrs(), pg, cfg);
    DistributedFusedAdamOptions o;
    o.config = cfg;
    o.bucketCapBytes = 200 * sizeof(float);
    o.stateChunkBytes = 256;
    auto dfa = DistributedFusedAdam::create(md.ptrs(), pg, o);
    ASSERT_TRUE(zero.isOk() && dfa.isOk());
    for (int s = 0; s < steps; ++s) {
      // ZeRO expects reduced gradients: average them with an allreduce, as DDP would.
      for (size_t i = 0; i < kSizes.size(); ++i) {
        for (size_t k = 0; k < kSizes[i]; ++k) mz.grad[i][k] = mz.localGrad(i, k, s, rank);
        ASSERT_TRUE(pg.allreduce(comm::viewOf(mz.grad[i].data(), kSizes[i]), comm::ReduceOp::kAvg)->wait(soon()).isOk());
      }
      ASSERT_TRUE((*zero)->step(soon()).isOk());
      for (size_t i = kSizes.size(); i-- > 0;) {
        for (size_t k = 0; k < kSizes[i]; ++k) md.grad[i][k] = md.localGrad(i, k, s, rank);
        (*dfa)->markGradReady(i);
      }
      ASSERT_TRUE((*dfa)->step(soon()).isOk());
    }
    expectNear(mz.data, ref.data);
    expectNear(md.data, ref.data);
    auto zs = (*zero)->consolidateStateDict(1, soon());
    auto ds = (*dfa)->stateDict(2, soon());
    ASSERT_TRUE(zs.isOk() && ds.isOk()) << zs.status() << " " << ds.status();
    std::lock_guard<std::mutex> lock(mu);
    if (rank == 1) zeroState = *zs;
    if (rank == 2) dfaState = *ds;
  });
  ASSERT_TRUE(st.isOk()) << st;
  // The consolidated ZeRO state is the plain optimizer's state.
  Model m1;
  auto plain = makeOptimizer(cfg, m1.ptrs());
  ASSERT_TRUE((*plain)->loadStateDict(zeroState).isOk());
  for (size_t i = 0; i < kSizes.size(); ++i) {
    EXPECT_EQ((*plain)->state(i).step, steps);
    for (int slot = 0; slot < 2; ++slot)
      for (size_t k = 0; k < kSizes[i]; ++k)
        ASSERT_NEAR((*plain)->state(i).slots[slot][k], refOpt->state(i).slots[slot][k], 1e-6f);
  }
  // The DFA state reshards to world 2 and continues the trajectory.
  st = test::runRanks(2, [&](int rank, comm::Backend& pg) {
    Model m;
    for (size_t i = 0; i < kSizes.size(); ++i) m.data[i] = ref.data[i];
    DistributedFusedAdamOptions o;
    o.config = cfg;
    auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
    ASSERT_TRUE((*dfa)->loadStateDict(dfaState).isOk());
    for (size_t i = kSizes.size(); i-- > 0;) {
      for (size_t k = 0; k < kSizes[i]; ++k) m.grad[i][k] = m.localGrad(i, k, steps, rank);
      (*dfa)->markGradReady(i);
    }
    ASSERT_TRUE((*dfa)->step(soon()).isOk());
    expectNear(m.data, ref5.data);
  });
  ASSERT_TRUE(st.isOk()) << st;
}

}  // namespace
}  // namespace ddp::optim
