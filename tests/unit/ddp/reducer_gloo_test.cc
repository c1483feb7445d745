// The reducer over the real GlooBackend (TCP loopback, ranks as threads via gloo_harness):
// gradients equal the single-process oracle with the default path, the allreduce and fp16/bf16
// hooks (f16/bf16 collectives on the wire), mixed-precision buckets and no_sync accumulation.
#include <gtest/gtest.h>

#include "tests/support/gloo_harness.h"
#include "tests/unit/ddp/ddp_test_util.h"
#include "worker/ddp/reducer.h"

namespace ddp::testing {
namespace {

struct GlooCase {
  int world;
  std::string hook;
  std::optional<DType> reduceDtype;
  bool view;
};

class ReducerOverGloo : public ::testing::TestWithParam<GlooCase> {};

TEST_P(ReducerOverGloo, MatchesSingleProcessAcrossNoSyncAndRebuild) {
  const GlooCase c = GetParam();
  Status st = test::runRanks(
      c.world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), rank + 1);
        const ReducerOptions opts{.bucketCapBytes = 200,
                                  .firstBucketCapBytes = 100,
                                  .gradientAsBucketView = c.view,
                                  .reduceDtype = c.reduceDtype};
        auto r = makeReducer(backend, model, opts, c.hook);
        ASSERT_TRUE(r.isOk()) << r.status();
        double tol = toleranceFor(c.hook);
        if (c.reduceDtype) tol = std::max(tol, *c.reduceDtype == DType::kBF16 ? 2e-2 : 2e-3);
        // Step 0 synced (rebuild after it), then one no_sync micro-step and a synced one.
        for (uint64_t step = 0; step < 3; ++step) {
          if (step != 2) model.zeroGrad();
          ASSERT_TRUE((*r)->setNoSync(step == 1).isOk());
          rankBackward(model, rank, step, (*r)->gradReadyFn());
          Status fin = (*r)->finalize(stepDeadline());
          ASSERT_TRUE(fin.isOk()) << fin;
          if (step == 1) continue;
          std::vector<uint64_t> steps = step == 0 ? std::vector<uint64_t>{0} : std::vector<uint64_t>{1, 2};
          expectGradsNear(model, globalOracleGrads(c.world, steps), tol,
                          "gloo hook " + c.hook + " step " + std::to_string(step));
        }
      },
      std::chrono::seconds(60));
  EXPECT_TRUE(st.isOk()) << st;
}

INSTANTIATE_TEST_SUITE_P(Cases, ReducerOverGloo,
                         ::testing::Values(GlooCase{2, "none", std::nullopt, false},
                                           GlooCase{3, "allreduce", std::nullopt, true},
                                           GlooCase{2, "fp16", std::nullopt, false},
                                           GlooCase{3, "bf16_wrapper", std::nullopt, false},
                                           GlooCase{2, "none", DType::kBF16, false},
                                           GlooCase{3, "allreduce", DType::kF16, false}));

}  // namespace
}  // namespace ddp::testing
