// DDP (Reducer + DdpJoinable) and ZeroRedundancyOptimizer under Join with uneven inputs, over
// LocalBackend (ranks as threads). The oracle is a single-process loop that, at iteration i,
// averages the gradients of the ranks that still have data (divided by the initial world or
// by the active count) and steps a plain optimizer. Gradients are a deterministic function of
// (parameters, iteration, rank), written the way a model's backward would.
#include "worker/ddp/ddp_joinable.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <mutex>

#include "tests/support/float_params.h"
#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"
#include "worker/optim/optimizer.h"
#include "worker/optim/zero_redundancy_optimizer.h"

namespace ddp {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(60)); }

const std::vector<size_t> kSizes{23, 4, 16, 9, 1};
const std::vector<int> kBatches{20, 30, 25};

struct Model : test::FloatParams {
  Model() : FloatParams(kSizes, [](size_t i, size_t k) { return std::sin(0.3f * (i + 1) + 0.17f * k); }) {}
  float localGrad(size_t i, size_t k, int iter, int rank) const {
    return std::cos(2.f * data[i][k] + 0.3f * iter + rank) * (1.f + 0.5f * rank);
  }
};

// Single-process oracle: per-iteration averaged gradients and the final parameters.
struct Oracle {
  std::vector<std::vector<std::vector<float>>> grads;  // [iter][param][k]
  Model model;
};

Oracle runOracle(const optim::OptimizerConfig& cfg, bool divideByInitial) {
  Oracle o;
  auto opt = optim::makeOptimizer(cfg, o.model.ptrs());
  const int world = 3;
  for (int it = 0; it < 30; ++it) {
    int active = 0;
    for (int r = 0; r < world; ++r) active += it < kBatches[r];
    for (size_t i = 0; i < kSizes.size(); ++i) {
      for (size_t k = 0; k < kSizes[i]; ++k) {
        float sum = 0.f;  // the reducer packs g / world and allreduces the sum in rank order
        for (int r = 0; r < world; ++r) sum += it < kBatches[r] ? o.model.localGrad(i, k, it, r) * (1.f / world) : 0.f;
        if (!divideByInitial && active != world) sum *= static_cast<float>(world) / static_cast<float>(active);
        o.model.grad[i][k] = sum;
      }
    }
    o.grads.push_back(o.model.grad);
    EXPECT_TRUE((*opt)->step().isOk());
  }
  return o;
}

void expectNear(const std::vector<std::vector<float>>& got, const std::vector<std::vector<float>>& want,
                const std::string& what) {
  test::expectAllNear(got, want, 2e-6f, what);
}

ReducerOptions smallBuckets() {
  ReducerOptions o;
  o.bucketCapBytes = 64;
  o.firstBucketCapBytes = 32;
  return o;
}

// One rank's uneven run: DDP + a plain optimizer, or DDP + ZeRO joined after it.
void runRank(int rank, comm::Backend& pg, const optim::OptimizerConfig& cfg, const join::JoinOptions& opts,
             bool withZero, const Oracle& oracle, std::vector<std::vector<std::vector<float>>>* finals) {
  Model m;
  auto reducer = Reducer::create(pg, m.ptrs(), smallBuckets());
  ASSERT_TRUE(reducer.isOk()) << reducer.status();
  ASSERT_GE((*reducer)->plan().numBuckets(), 3u);
  DdpJoinable ddpJoin(**reducer);
  std::unique_ptr<optim::Optimizer> plain;
  std::unique_ptr<optim::ZeroRedundancyOptimizer> zero;
  std::vector<join::Joinable*> joinables{&ddpJoin};
  if (withZero) {
    zero = std::move(optim::ZeroRedundancyOptimizer::create(m.ptrs(), pg, cfg).value());
    joinables.push_back(zero.get());
  } else {
    plain = std::move(optim::makeOptimizer(cfg, m.ptrs()).value());
  }
  auto join = join::Join::create(joinables, opts);
  ASSERT_TRUE(join.isOk()) << join.status();
  for (int it = 0; it < kBatches[rank]; ++it) {
    ASSERT_TRUE(ddpJoin.beginIteration(soon()).isOk());
    for (size_t i = kSizes.size(); i-- > 0;) {  // backward: last parameter first
      for (size_t k = 0; k < kSizes[i]; ++k) m.grad[i][k] = m.localGrad(i, k, it, rank);
      ASSERT_TRUE((*reducer)->markGradReady(i).isOk());
    }
    ASSERT_TRUE(ddpJoin.finalize(soon()).isOk());
    expectNear(m.grad, oracle.grads[it], "rank " + std::to_string(rank) + " iteration " + std::to_string(it) + " grad");
    ASSERT_TRUE(withZero ? zero->step(soon()).isOk() : plain->step().isOk());
  }
  Status st = (*join)->finish(soon());
  ASSERT_TRUE(st.isOk()) << st;
  (*finals)[rank] = m.data;
}

TEST(DdpJoinTest, UnevenInputsMatchOracleForBothDivideModes) {
  const auto cfg = optim::OptimizerConfig::sgd(0.1f, 0.9f);
  for (bool divideByInitial : {true, false}) {
    Oracle oracle = runOracle(cfg, divideByInitial);
    std::vector<std::vector<std::vector<float>>> finals(3);
    join::JoinOptions opts;
    opts.hookOptions.divideByInitialWorldSize = divideByInitial;
    comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) { runRank(rank, pg, cfg, opts, false, oracle, &finals); });
    for (int r = 0; r < 3; ++r) {
      // Ranks 0 and 2 stopped stepping early; the post hook broadcast the last joiner's model.
      expectNear(finals[r], oracle.model.data, "divide=" + std::to_string(divideByInitial) + " rank " + std::to_string(r));
    }
  }
}

TEST(DdpJoinTest, DdpAndZeroJoinedTogetherMatchOracle) {
  const auto cfg = optim::OptimizerConfig::adam(0.01f);
  for (bool divideByInitial : {true, false}) {
    Oracle oracle = runOracle(cfg, divideByInitial);
    std::vector<std::vector<std::vector<float>>> finals(3);
    join::JoinOptions opts;
    opts.hookOptions.divideByInitialWorldSize = divideByInitial;
    comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) { runRank(rank, pg, cfg, opts, true, oracle, &finals); });
    for (int r = 0; r < 3; ++r) expectNear(finals[r], oracle.model.data, "zero rank " + std::to_string(r));
  }
}

TEST(DdpJoinTest, ThrowModeStopsEveryRankAtTheFirstExhaustedIteration) {
  std::vector<int> stoppedAt(3, -1);
  comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) {
    Model m;
    auto reducer = Reducer::create(pg, m.ptrs(), smallBuckets());
    ASSERT_TRUE(reducer.isOk());
    DdpJoinable ddpJoin(**reducer);
    join::JoinOptions opts;
    opts.throwOnEarlyTermination = true;
    auto join = join::Join::create({&ddpJoin}, opts);
    for (int it = 0; it < kBatches[rank]; ++it) {
      Status st = ddpJoin.beginIteration(soon());
      if (!st.isOk()) {
        EXPECT_EQ(st.code(), StatusCode::kAborted);
        stoppedAt[rank] = it;
        return;
      }
      for (size_t i = kSizes.size(); i-- > 0;) ASSERT_TRUE((*reducer)->markGradReady(i).isOk());
      ASSERT_TRUE(ddpJoin.finalize(soon()).isOk());
    }
    EXPECT_EQ((*join)->finish(soon()).code(), StatusCode::kAborted);
    stoppedAt[rank] = kBatches[rank];
  });
  EXPECT_EQ(stoppedAt, (std::vector<int>{20, 20, 20}));
}

// enable = false: the same training as without any Join, and no join counters on the wire
// (compared with enable = true on even inputs).
TEST(DdpJoinTest, DisabledJoinIsPlainDdp) {
  const auto cfg = optim::OptimizerConfig::sgd(0.1f);
  std::map<bool, std::vector<size_t>> allreduces;
  std::map<bool, std::vector<std::vector<float>>> params;
  for (bool enable : {false, true}) {
    allreduces[enable].resize(2);
    comm::runLocalRanks(2, [&](int rank, comm::Backend& inner) {
      comm::RecordingBackend pg(inner);
      Model m;
      auto reducer = Reducer::create(pg, m.ptrs(), smallBuckets());
      ASSERT_TRUE(reducer.isOk());
      DdpJoinable ddpJoin(**reducer);
      join::JoinOptions opts;
      opts.enable = enable;
      auto join = join::Join::create({&ddpJoin}, opts);
      auto opt = optim::makeOptimizer(cfg, m.ptrs());
      for (int it = 0; it < 3; ++it) {
        ASSERT_TRUE(ddpJoin.beginIteration(soon()).isOk());
        for (size_t i = kSizes.size(); i-- > 0;) {
          for (size_t k = 0; k < kSizes[i]; ++k) m.grad[i][k] = m.localGrad(i, k, it, rank);
          ASSERT_TRUE((*reducer)->markGradReady(i).isOk());
        }
        ASSERT_TRUE(ddpJoin.finalize(soon()).isOk());
        ASSERT_TRUE((*opt)->step().isOk());
      }
      ASSERT_TRUE((*join)->finish(soon()).isOk());
      size_t n = 0;
      for (const auto& op : pg.ops()) n += op.type == comm::OpType::kAllreduce;
      allreduces[enable][rank] = n;
      if (rank == 0) params[enable] = m.data;
    });
  }
  EXPECT_EQ(params[false], params[true]);
  EXPECT_EQ(allreduces[false][0], allreduces[false][1]);
  // enable = true adds 3 notifies, the final count and the post hook's last-joiner agreement.
  EXPECT_EQ(allreduces[false][0] + 3 + 1 + 1, allreduces[true][0]);
}

TEST(DdpJoinTest, MismatchedProcessGroupsAreRejected) {
  auto g1 = comm::makeLocalGroup(1), g2 = comm::makeLocalGroup(1);
  comm::LocalBackend b1(g1, 0), b2(g2, 0);
  Model m1, m2;
  auto r1 = Reducer::create(b1, m1.ptrs());
  auto zero = optim::ZeroRedundancyOptimizer::create(m2.ptrs(), b2, optim::OptimizerConfig::adam());
  ASSERT_TRUE(r1.isOk() && zero.isOk());
  DdpJoinable ddpJoin(**r1);
  auto join = join::Join::create({&ddpJoin, zero->get()});
  EXPECT_EQ(join.status().code(), StatusCode::kInvalidArgument) << join.status();
}

}  // namespace
}  // namespace ddp
