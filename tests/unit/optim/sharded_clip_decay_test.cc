// Clipping by global norm (maxGradNorm) and weight-decay groups (a mask, weightDecayOn:
// linearWeights) under ZeroRedundancyOptimizer and DistributedFusedAdam, over LocalBackend (ranks
// as threads) at 2 and 3 ranks (uneven shards). Oracle: the single-process optimizer with the
// same mask on the world-averaged gradient, clipped as the non-sharded trainer clips
// (globalGradNorm, clipCoefficient, step(coefficient)). Gradient amplitudes change per step so
// that some steps clip and others do not; both kinds are asserted to occur.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "tests/support/float_params.h"
#include "tests/support/local_backend.h"
#include "worker/optim/distributed_fused_adam.h"
#include "worker/optim/grad_norm.h"
#include "worker/optim/optimizer.h"
#include "worker/optim/zero_redundancy_optimizer.h"

namespace ddp::optim {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

const std::vector<size_t> kSizes{130, 7, 64, 257, 1, 33, 90};
const std::vector<bool> kMask{true, false, true, false, false, true, false};  // decay where true
constexpr float kMaxNorm = 1.f;
// Per step: the norm of the averaged gradient is about 10 x amplitude for these sizes.
const std::vector<float> kAmplitude{1.f, 0.5f, 0.02f, 2.f, 0.01f, 0.3f};

struct Model : test::FloatParams {
  Model() : FloatParams(kSizes, [](size_t i, size_t k) { return std::sin(0.37f * (i + 1) + 0.11f * k); }) {}
};

// Rank r's local gradient at `step` (depends on the current parameters).
float localGrad(const Model& m, size_t i, size_t k, int step, int rank) {
  return kAmplitude[static_cast<size_t>(step)] * std::cos(3.f * m.data[i][k] + 0.5f * step + rank) *
         (1.f + 0.25f * rank);
}
void setLocalGrads(Model& m, int step, int rank) {
  for (size_t i = 0; i < kSizes.size(); ++i)
    for (size_t k = 0; k < kSizes[i]; ++k) m.grad[i][k] = localGrad(m, i, k, step, rank);
}
// The world-averaged gradient: summed in rank order, then divided (as DDP's allreduce would).
void setAveragedGrads(Model& m, int step, int world) {
  for (size_t i = 0; i < kSizes.size(); ++i)
    for (size_t k = 0; k < kSizes[i]; ++k) {
      float s = 0.f;
      for (int r = 0; r < world; ++r) s += localGrad(m, i, k, step, r);
      m.grad[i][k] = s / static_cast<float>(world);
    }
}

struct Reference {
  std::vector<std::vector<float>> params;
  std::vector<double> norms;  // of the averaged gradient, per step
};

// The single-process optimizer, with `mask` (empty: decay everything), clipped like the trainer.
Reference singleProcess(const OptimizerConfig& cfg, int world, const std::vector<bool>& mask, float maxNorm) {
  Model m;
  auto opt = makeOptimizer(cfg, m.ptrs());
  EXPECT_TRUE(opt.isOk()) << opt.status();
  (*opt)->setWeightDecayMask(mask);
  Reference out;
  for (int s = 0; s < static_cast<int>(kAmplitude.size()); ++s) {
    setAveragedGrads(m, s, world);
    auto norm = globalGradNorm(m.ptrs());
    EXPECT_TRUE(norm.isOk());
    out.norms.push_back(*norm);
    EXPECT_TRUE((*opt)->step(clipCoefficient(*norm, maxNorm)).isOk());
  }
  out.params = m.data;
  return out;
}

// The oracle is not vacuous: some steps clip and some do not, and the mask changes the result
// of the parameters it exempts from decay.
void expectClippingAndMaskMatter(const OptimizerConfig& cfg, int world, const Reference& ref) {
  int clipped = 0, unclipped = 0;
  for (double n : ref.norms) (n > kMaxNorm ? clipped : unclipped) += 1;
  EXPECT_GE(clipped, 2);
  EXPECT_GE(unclipped, 2);
  const Reference unmasked = singleProcess(cfg, world, {}, kMaxNorm);
  const Reference unclippedRun = singleProcess(cfg, world, kMask, 0.f);
  for (size_t i = 0; i < kSizes.size(); ++i) {
    if (!kMask[i]) EXPECT_NE(unmasked.params[i], ref.params[i]) << "parameter " << i;
    EXPECT_NE(unclippedRun.params[i], ref.params[i]) << "parameter " << i;
  }
}

std::vector<OptimizerConfig> zeroConfigs() {
  return {OptimizerConfig::adamw(0.01f, 0.9f, 0.99f, 1e-8f, 0.1f), OptimizerConfig::adam(0.01f, 0.9f, 0.99f, 1e-6f, 0.05f),
          OptimizerConfig::sgd(0.05f, 0.9f, 0.f, 0.02f)};
}

// ZeRO-1 after DDP: every rank holds the averaged gradient. Each owner's update is the same
// kernel on the same values with the same coefficient (computed from the same full gradient in
// the same order), so the trajectory equals the single-process one bitwise.
TEST(ShardedClipDecayTest, ZeroClippedMaskedStepsEqualSingleProcessBitwise) {
  for (const OptimizerConfig& cfg : zeroConfigs()) {
    for (int world : {2, 3}) {
      SCOPED_TRACE(std::string(optimizerKindName(cfg.kind)) + " world " + std::to_string(world));
      const Reference ref = singleProcess(cfg, world, kMask, kMaxNorm);
      ASSERT_NO_FATAL_FAILURE(expectClippingAndMaskMatter(cfg, world, ref));
      comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
        Model m;
        auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, cfg);
        ASSERT_TRUE(zero.isOk()) << zero.status();
        ASSERT_TRUE((*zero)->setWeightDecayMask(kMask).isOk());
        (*zero)->setMaxGradNorm(kMaxNorm);
        for (int s = 0; s < static_cast<int>(kAmplitude.size()); ++s) {
          setAveragedGrads(m, s, world);
          ASSERT_TRUE((*zero)->step(soon()).isOk());
          EXPECT_EQ((*zero)->lastGradNorm(), ref.norms[static_cast<size_t>(s)]) << "step " << s;
        }
        for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(m.data[i], ref.params[i]) << "rank " << rank << " param " << i;
      });
    }
  }
}

TEST(ShardedClipDecayTest, ZeroRefusesAMaskOfTheWrongLength) {
  comm::runLocalRanks(2, [&](int, comm::Backend& pg) {
    Model m;
    auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, OptimizerConfig::adamw());
    ASSERT_TRUE(zero.isOk());
    const Status st = (*zero)->setWeightDecayMask({true, false});
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(st.message().find("2 entries"), std::string::npos) << st;
    EXPECT_TRUE((*zero)->setWeightDecayMask({}).isOk());
  });
}

// DistributedFusedAdam reduce-scatters the local gradients (a sum), takes the norm from the
// shards and folds 1/world and the coefficient into one gradScale: the same values in another
// order and rounding than the averaged gradient, so the comparison is within float tolerance.
// Small buckets put parameters across shard boundaries, so a parameter's decay flag is applied
// to elements on two ranks.
TEST(ShardedClipDecayTest, DfaClippedMaskedStepsEqualSingleProcess) {
  for (const OptimizerConfig& cfg : {OptimizerConfig::adamw(0.01f, 0.9f, 0.99f, 1e-8f, 0.1f),
                                     OptimizerConfig::adam(0.01f, 0.9f, 0.99f, 1e-6f, 0.05f)}) {
    for (int world : {2, 3}) {
      SCOPED_TRACE(std::string(optimizerKindName(cfg.kind)) + " world " + std::to_string(world));
      const Reference ref = singleProcess(cfg, world, kMask, kMaxNorm);
      ASSERT_NO_FATAL_FAILURE(expectClippingAndMaskMatter(cfg, world, ref));
      comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
        Model m;
        DistributedFusedAdamOptions o;
        o.config = cfg;
        o.bucketCapBytes = 200 * sizeof(float);  // several buckets
        o.maxGradNorm = kMaxNorm;
        o.weightDecayMask = kMask;
        auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
        ASSERT_TRUE(dfa.isOk()) << dfa.status();
        for (int s = 0; s < static_cast<int>(kAmplitude.size()); ++s) {
          setLocalGrads(m, s, rank);
          for (size_t i = kSizes.size(); i-- > 0;) (*dfa)->markGradReady(i);
          ASSERT_TRUE((*dfa)->step(soon()).isOk());
          const double want = ref.norms[static_cast<size_t>(s)];
          EXPECT_NEAR((*dfa)->lastGradNorm(), want, 1e-6 * want) << "step " << s;
        }
        test::expectAllNear(m.data, ref.params, 1e-5f, "rank " + std::to_string(rank));
      });
    }
  }
}

TEST(ShardedClipDecayTest, DfaRefusesAMaskOfTheWrongLength) {
  auto g = comm::makeLocalGroup(1);
  comm::LocalBackend pg(g, 0);
  Model m;
  DistributedFusedAdamOptions o;
  o.weightDecayMask = {true};
  auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
  EXPECT_EQ(dfa.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dfa.status().message().find("1 entries"), std::string::npos) << dfa.status();
}

}  // namespace
}  // namespace ddp::optim
