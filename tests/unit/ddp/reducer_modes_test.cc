// Reducer modes against single-process oracles: no_sync gradient accumulation (default path and
// every hook, bucket views on and off), findUnusedParameters (locally and globally unused
// layers, also combined with no_sync), mixed-precision reduction, and Join's shadow step.
#include <gtest/gtest.h>

#include "tests/unit/ddp/ddp_test_util.h"
#include "worker/ddp/reducer.h"

namespace ddp::testing {
namespace {

class NoSyncAccumulation : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(NoSyncAccumulation, KStepsThenSyncEqualsOneLargeBatchStep) {
  // K = 2 no_sync micro-steps, then a synced one: the reduced gradient is the sum of the three
  // micro-batches' global gradients. Done twice (across the bucket rebuild) to check state resets.
  // This is the combination that silently skipped reduction elsewhere (no_sync + hooks).
  const auto [hook, view] = GetParam();
  const int world = 3, k = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model,
                             {.bucketCapBytes = 200, .firstBucketCapBytes = 100, .gradientAsBucketView = view}, hook);
        ASSERT_TRUE(r.isOk()) << r.status();
        Reducer& reducer = **r;
        uint64_t step = 0;
        for (int window = 0; window < 2; ++window) {
          model.zeroGrad();
          std::vector<uint64_t> steps;
          for (int micro = 0; micro <= k; ++micro, ++step) {
            ASSERT_TRUE(reducer.setNoSync(micro < k).isOk());
            rankBackward(model, rank, step, reducer.gradReadyFn());
            ASSERT_TRUE(reducer.finalize(stepDeadline()).isOk());
            steps.push_back(step);
          }
          expectGradsNear(model, globalOracleGrads(world, steps), toleranceFor(hook),
                          "no_sync hook " + hook + " window " + std::to_string(window));
        }
        EXPECT_EQ(reducer.stats().noSyncSteps, 4u);
        EXPECT_EQ(reducer.stats().syncedSteps, 2u);
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(Hooks, NoSyncAccumulation,
                         ::testing::Values(std::make_tuple("none", false), std::make_tuple("none", true),
                                           std::make_tuple("allreduce", false), std::make_tuple("allreduce", true),
                                           std::make_tuple("fp16", false), std::make_tuple("bf16", false),
                                           std::make_tuple("fp16_wrapper", false),
                                           std::make_tuple("bf16_wrapper", false)));

class UnusedParameters : public ::testing::TestWithParam<bool> {};

TEST_P(UnusedParameters, LocallyUnusedAverageWithZeroGloballyUnusedAreZero) {
  // Layer 1 is unused on rank 1 only; layer 3 on every rank.
  const bool view = GetParam();
  const int world = 3;
  auto skipOf = [](int rank) { return rank == 1 ? std::vector<int>{1, 3} : std::vector<int>{3}; };
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model,
                             {.bucketCapBytes = 100,
                              .firstBucketCapBytes = 50,
                              .findUnusedParameters = true,
                              .gradientAsBucketView = view});
        ASSERT_TRUE(r.isOk()) << r.status();
        for (uint64_t step = 0; step < 3; ++step) {
          model.zeroGrad();
          rankBackward(model, rank, step, (*r)->gradReadyFn(), skipOf(rank));
          ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
          auto want = averagedLocalGrads(mixedLayers(), world, [&](int rk) {
            return std::vector<MicroStep>{{step, skipOf(rk)}};
          });
          expectGradsNear(model, want, 1e-5, "unused step " + std::to_string(step));
          for (double g : model.grad(6)) ASSERT_EQ(g, 0.0);  // layer3.weight: globally unused
        }
      },
      fastGroup());
}

TEST_P(UnusedParameters, NoSyncAccumulationOfALayerUnusedInTheSyncedStepIsKept) {
  const bool view = GetParam();
  const int world = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {.findUnusedParameters = true, .gradientAsBucketView = view});
        ASSERT_TRUE(r.isOk()) << r.status();
        ASSERT_TRUE((*r)->setNoSync(true).isOk());
        rankBackward(model, rank, 0, (*r)->gradReadyFn());
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        ASSERT_TRUE((*r)->setNoSync(false).isOk());
        const std::vector<int> skip = rank == 1 ? std::vector<int>{1} : std::vector<int>{};
        rankBackward(model, rank, 1, (*r)->gradReadyFn(), skip);
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        auto want = averagedLocalGrads(mixedLayers(), world, [](int rk) {
          return std::vector<MicroStep>{{0, {}}, {1, rk == 1 ? std::vector<int>{1} : std::vector<int>{}}};
        });
        expectGradsNear(model, want, 1e-5, "unused + no_sync");
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(Views, UnusedParameters, ::testing::Bool());

class MixedPrecision : public ::testing::TestWithParam<std::tuple<DType, std::string>> {};

TEST_P(MixedPrecision, ReducesInHalfKeepsFullPrecisionGradients) {
  const auto [dtype, hook] = GetParam();
  const int world = 3;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {.bucketCapBytes = 200, .firstBucketCapBytes = 100, .reduceDtype = dtype},
                             hook);
        ASSERT_TRUE(r.isOk()) << r.status();
        for (size_t b = 0; b < (*r)->plan().numBuckets(); ++b) EXPECT_EQ((*r)->bucketBuffer(b).dtype, dtype);
        for (uint64_t step = 0; step < 2; ++step) {
          model.zeroGrad();
          rankBackward(model, rank, step, (*r)->gradReadyFn());
          ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
          const double tol = dtype == DType::kBF16 ? 2e-2 : 2e-3;
          expectGradsNear(model, globalOracleGrads(world, {step}), tol,
                          std::string("reduce in ") + dtypeName(dtype));
        }
        for (Parameter* p : model.parameters()) EXPECT_TRUE(p->dtype == DType::kF32 || p->dtype == DType::kF64);
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(HalfTypes, MixedPrecision,
                         ::testing::Combine(::testing::Values(DType::kF16, DType::kBF16),
                                            ::testing::Values("none", "allreduce")));

class ShadowStep : public ::testing::TestWithParam<std::string> {};

TEST_P(ShadowStep, JoinedRankShadowsTheReductionWithZeros) {
  // Rank 1 has run out of data: it runs shadow steps (zero buckets, same collectives) while
  // rank 0 trains; rank 0's gradient is its own divided by the world (rank 1 contributes zero).
  // Both go through the one-time rebuild at the same point, then train normally together.
  const std::string hook = GetParam();
  const int world = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {.bucketCapBytes = 100, .firstBucketCapBytes = 50}, hook);
        ASSERT_TRUE(r.isOk()) << r.status();
        int callbacks = 0;
        ASSERT_TRUE((*r)->setBucketReducedCallback([&](GradBucket&) { ++callbacks; }).isOk());
        for (uint64_t step = 0; step < 2; ++step) {
          model.zeroGrad();
          if (rank == 1) {
            ASSERT_TRUE((*r)->runShadowStep(stepDeadline()).isOk());
            for (size_t i = 0; i < model.parameters().size(); ++i) {
              for (double g : model.grad(i)) ASSERT_EQ(g, 0.0);  // nothing written back
            }
          } else {
            model.backward(step, 0, kRowsPerRank, (*r)->gradReadyFn());
            ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
            auto want = averagedLocalGrads(mixedLayers(), world, [step](int rk) {
              return rk == 0 ? std::vector<MicroStep>{{step, {}}} : std::vector<MicroStep>{};
            });
            expectGradsNear(model, want, toleranceFor(hook), "shadowed step");
          }
        }
        EXPECT_TRUE((*r)->bucketsRebuilt());
        EXPECT_EQ(callbacks, rank == 1 ? 0 : static_cast<int>(2 * (*r)->plan().numBuckets()));
        model.zeroGrad();  // both ranks train again
        rankBackward(model, rank, 7, (*r)->gradReadyFn());
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        expectGradsNear(model, globalOracleGrads(world, {7}), toleranceFor(hook), "after join");
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(Hooks, ShadowStep, ::testing::Values("none", "allreduce", "fp16"));

}  // namespace
}  // namespace ddp::testing
