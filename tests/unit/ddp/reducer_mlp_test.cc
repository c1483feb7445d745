// End to end with the built-in MLP (worker/model): DDP over LocalBackend ranks, each on its
// slice of the batch, gives the gradients of one process on the concatenated batch, for the
// default path and the allreduce hook, with and without bucket views, across several steps
// (SGD updates in between keep the replicas identical).
#include <gtest/gtest.h>

#include <random>

#include "tests/support/local_backend.h"
#include "worker/ddp/default_hooks.h"
#include "worker/ddp/reducer.h"
#include "worker/model/mlp.h"

namespace ddp {
namespace {

constexpr int kInputs = 12, kClasses = 5, kPerRank = 4;

std::unique_ptr<model::Sequential> buildModel(uint64_t seed) {
  model::MlpConfig cfg;
  cfg.inputs = kInputs;
  cfg.hidden = {16, 8};
  cfg.classes = kClasses;
  model::ModelOptions mo;
  mo.seed = seed;
  auto m = model::buildMlp(cfg, mo);
  EXPECT_TRUE(m.isOk()) << m.status();
  return std::move(m).value();
}

void batchFor(int step, int rows, std::vector<float>& x, std::vector<int32_t>& y) {
  std::mt19937 rng(static_cast<uint32_t>(1000 + step));
  std::normal_distribution<float> n;
  x.resize(static_cast<size_t>(rows) * kInputs);
  y.resize(rows);
  for (auto& v : x) v = n(rng);
  for (int i = 0; i < rows; ++i) y[i] = static_cast<int32_t>(rng() % kClasses);
}

void sgd(model::Module& m) {
  for (Parameter* p : m.parameters()) {
    for (size_t i = 0; i < p->numel(); ++i) static_cast<float*>(p->data)[i] -= 0.1f * static_cast<float*>(p->grad)[i];
  }
}

class ReducerWithMlp : public ::testing::TestWithParam<std::tuple<int, bool, bool>> {};

TEST_P(ReducerWithMlp, MatchesSingleProcessOnConcatenatedBatch) {
  const auto [world, hook, view] = GetParam();
  const int steps = 3;
  // The oracle: one process, the whole batch, same updates.
  std::vector<std::vector<std::vector<float>>> want(steps);
  {
    auto ref = buildModel(5);
    std::vector<float> x;
    std::vector<int32_t> y;
    for (int s = 0; s < steps; ++s) {
      batchFor(s, world * kPerRank, x, y);
      ref->zeroGrad();
      ASSERT_TRUE(ref->forwardBackward(x.data(), y.data(), world * kPerRank).isOk());
      for (Parameter* p : ref->parameters()) {
        const float* g = static_cast<const float*>(p->grad);
        want[s].emplace_back(g, g + p->numel());
      }
      sgd(*ref);
    }
  }
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    auto m = buildModel(5 + rank);  // rank 0's initialisation wins through the broadcast
    ReducerOptions opts;
    opts.gradientAsBucketView = view;
    opts.firstBucketCapBytes = 64;
    opts.bucketCapBytes = 512;
    auto r = Reducer::create(backend, m->parameters(), opts);
    ASSERT_TRUE(r.isOk()) << r.status();
    if (hook) {
      ASSERT_TRUE((*r)->registerCommHook(makeAllreduceHook(backend)).isOk());
    }
    std::vector<float> x;
    std::vector<int32_t> y;
    for (int s = 0; s < steps; ++s) {
      batchFor(s, world * kPerRank, x, y);
      m->zeroGrad();
      ASSERT_TRUE(m->forwardBackward(x.data() + static_cast<size_t>(rank) * kPerRank * kInputs,
                                     y.data() + rank * kPerRank, kPerRank, (*r)->gradReadyFn())
                      .isOk());
      Status st = (*r)->finalize(Deadline::after(std::chrono::seconds(20)));
      ASSERT_TRUE(st.isOk()) << st;
      const auto params = m->parameters();
      for (size_t i = 0; i < params.size(); ++i) {
        const float* g = static_cast<const float*>(params[i]->grad);
        for (size_t j = 0; j < params[i]->numel(); ++j) {
          ASSERT_NEAR(g[j], want[s][i][j], 1e-5f * (1.0f + std::fabs(want[s][i][j])))
              << params[i]->name << "[" << j << "] step " << s << " rank " << rank;
        }
      }
      sgd(*m);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(WorldsHooksViews, ReducerWithMlp,
                         ::testing::Combine(::testing::Values(1, 2, 3), ::testing::Bool(), ::testing::Bool()));

}  // namespace
}  // namespace ddp
