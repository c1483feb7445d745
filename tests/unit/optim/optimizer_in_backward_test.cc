// Optimizer in backward (per-bucket updates from the reducer's callback) against the separate
// finalize() + step() path, over LocalBackend with 2 ranks: bitwise equal on the CPU, with a
// no_sync accumulation step in the middle.
#include "worker/optim/optimizer_in_backward.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/float_params.h"
#include "tests/support/local_backend.h"

namespace ddp::optim {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

const std::vector<size_t> kSizes{40, 3, 17, 64, 1, 9};

struct Model : test::FloatParams {
  Model() : FloatParams(kSizes, [](size_t i, size_t k) { return std::cos(0.21f * (i + 1) + 0.13f * k); }) {}
  // Backward: accumulates into grad (as models do) and marks ready last parameter first.
  void backward(Reducer& reducer, int step, int rank) {
    for (size_t i = kSizes.size(); i-- > 0;) {
      for (size_t k = 0; k < kSizes[i]; ++k) grad[i][k] += std::sin(3.f * data[i][k] + step + 0.7f * rank);
      ASSERT_TRUE(reducer.markGradReady(i).isOk());
    }
  }
  void zeroGrad() {
    for (auto& g : grad) std::fill(g.begin(), g.end(), 0.f);
  }
};

ReducerOptions smallBuckets() {
  ReducerOptions o;
  o.bucketCapBytes = 64;
  o.firstBucketCapBytes = 32;
  return o;
}

constexpr int kSteps = 6;
constexpr int kNoSyncStep = 2;  // accumulated into step 3

std::vector<std::vector<float>> runSeparate(int rank, comm::Backend& pg, const OptimizerConfig& cfg) {
  Model m;
  auto reducer = Reducer::create(pg, m.ptrs(), smallBuckets());
  auto opt = makeOptimizer(cfg, m.ptrs());
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_TRUE((*reducer)->setNoSync(s == kNoSyncStep).isOk());
    m.backward(**reducer, s, rank);
    EXPECT_TRUE((*reducer)->finalize(soon()).isOk());
    if (s == kNoSyncStep) continue;
    EXPECT_TRUE((*opt)->step().isOk());
    m.zeroGrad();
  }
  return m.data;
}

std::vector<std::vector<float>> runInBackward(int rank, comm::Backend& pg, const OptimizerConfig& cfg,
                                              bool zeroGradAfterStep) {
  Model m;
  auto reducer = Reducer::create(pg, m.ptrs(), smallBuckets());
  EXPECT_GE((*reducer)->plan().numBuckets(), 3u);
  auto oib = OptimizerInBackward::create(**reducer, cfg, zeroGradAfterStep);
  EXPECT_TRUE(oib.isOk()) << oib.status();
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_TRUE((*reducer)->setNoSync(s == kNoSyncStep).isOk());
    m.backward(**reducer, s, rank);
    EXPECT_TRUE((*reducer)->finalize(soon()).isOk());
    EXPECT_TRUE((*oib)->takeError().isOk());
    if (s == kNoSyncStep) {
      EXPECT_EQ((*oib)->optimizer().state(0).step, s);  // nothing stepped on the no_sync step
      continue;
    }
    if (zeroGradAfterStep) {
      for (const auto& g : m.grad) EXPECT_EQ(g, std::vector<float>(g.size(), 0.f));
    } else {
      m.zeroGrad();
    }
  }
  EXPECT_EQ((*oib)->optimizer().state(0).step, kSteps - 1);
  return m.data;
}

TEST(OptimizerInBackwardTest, EqualsSeparateStepBitwiseForEachOptimizer) {
  for (const auto& cfg : {OptimizerConfig::sgd(0.05f, 0.9f, 0.f, 1e-3f, true), OptimizerConfig::adam(0.01f),
                          OptimizerConfig::adamw(0.01f)}) {
    for (bool zeroAfter : {false, true}) {
      std::vector<std::vector<std::vector<float>>> sep(2), oib(2);
      comm::runLocalRanks(2, [&](int rank, comm::Backend& pg) { sep[rank] = runSeparate(rank, pg, cfg); });
      comm::runLocalRanks(2, [&](int rank, comm::Backend& pg) { oib[rank] = runInBackward(rank, pg, cfg, zeroAfter); });
      for (int r = 0; r < 2; ++r) EXPECT_EQ(oib[r], sep[r]) << optimizerKindName(cfg.kind) << " rank " << r;
      EXPECT_EQ(sep[0], sep[1]);
      EXPECT_NE(sep[0], Model().data);  // training moved the parameters
    }
  }
}

}  // namespace
}  // namespace ddp::optim
