// Misuse and failures give clear errors, never hangs or silent wrong numbers: double marks,
// early finalize, a second hook, late hook, no_sync flips mid-step, bad indices and options,
// replicas that registered different parameters (the error names parameter and ranks), failed
// and hung collectives. Also the rank-0 broadcast at construction.
// Faked here: the failed / never-completing Works come from user hooks (FunctionHook) that
// return them; everything else runs on LocalBackend.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/unit/ddp/ddp_test_util.h"
#include "worker/ddp/function_hook.h"
#include "worker/ddp/reducer.h"

namespace ddp::testing {
namespace {

bool contains(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

// Runs fn on one rank (world 1) with a fresh model and reducer.
void withReducer(const ReducerOptions& opts, const std::function<void(LinearStack&, Reducer&, comm::Backend&)>& fn) {
  comm::runLocalRanks(
      1,
      [&](int, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = Reducer::create(backend, model.parameters(), opts);
        ASSERT_TRUE(r.isOk()) << r.status();
        fn(model, **r, backend);
      },
      fastGroup());
}

TEST(ReducerMisuseTest, MarkingAGradientTwiceIsAnError) {
  withReducer({}, [](LinearStack&, Reducer& reducer, comm::Backend&) {
    ASSERT_TRUE(reducer.markGradReady(9).isOk());
    Status st = reducer.markGradReady(9);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(contains(st, "twice")) << st;
    EXPECT_TRUE(contains(st, "layer4.bias")) << st;
    Status fin = reducer.finalize(stepDeadline());
    EXPECT_EQ(fin.code(), StatusCode::kFailedPrecondition) << fin;
    EXPECT_TRUE(contains(reducer.markGradReady(0), "unusable"));  // sticky
  });
}

TEST(ReducerMisuseTest, FinalizeBeforeAllBucketsAreReadyNamesTheMissingGradients) {
  withReducer({}, [](LinearStack& model, Reducer& reducer, comm::Backend&) {
    model.backward(0, 0, kRowsPerRank, reducer.gradReadyFn(), {2});  // layer 2 never marked
    Status st = reducer.finalize(stepDeadline());
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_TRUE(contains(st, "2 of 10 gradients not marked ready")) << st;
    EXPECT_TRUE(contains(st, "layer2.weight")) << st;
    EXPECT_TRUE(contains(st, "findUnusedParameters")) << st;
  });
}

TEST(ReducerMisuseTest, HookRegistrationRules) {
  withReducer({}, [](LinearStack& model, Reducer& reducer, comm::Backend& backend) {
    EXPECT_EQ(reducer.registerCommHook(nullptr).code(), StatusCode::kInvalidArgument);
    ASSERT_TRUE(reducer.registerCommHook(makeAllreduceHook(backend)).isOk());
    Status twice = reducer.registerCommHook(makeFp16CompressHook(backend));
    EXPECT_EQ(twice.code(), StatusCode::kAlreadyExists);
    EXPECT_TRUE(contains(twice, "'allreduce'") && contains(twice, "fp16_compress")) << twice;
    EXPECT_EQ(reducer.commHook()->name(), "allreduce");
  });
  withReducer({}, [](LinearStack& model, Reducer& reducer, comm::Backend& backend) {
    model.backward(0, 0, kRowsPerRank, reducer.gradReadyFn());
    ASSERT_TRUE(reducer.finalize(stepDeadline()).isOk());
    EXPECT_EQ(reducer.registerCommHook(makeAllreduceHook(backend)).code(), StatusCode::kFailedPrecondition);
  });
}

TEST(ReducerMisuseTest, StepStateChangesOnlyBetweenSteps) {
  withReducer({}, [](LinearStack&, Reducer& reducer, comm::Backend&) {
    EXPECT_EQ(reducer.markGradReady(10).code(), StatusCode::kInvalidArgument);
  });
  withReducer({}, [](LinearStack& model, Reducer& reducer, comm::Backend&) {
    ASSERT_TRUE(reducer.markGradReady(9).isOk());
    EXPECT_EQ(reducer.setNoSync(true).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(reducer.runShadowStep(stepDeadline()).code(), StatusCode::kFailedPrecondition);
    EXPECT_EQ(reducer.setBucketReducedCallback({}).code(), StatusCode::kFailedPrecondition);
  });
}

TEST(ReducerMisuseTest, BadParametersAndOptions) {
  comm::runLocalRanks(
      1,
      [](int, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        ReducerOptions bad;
        bad.reduceDtype = DType::kF16;
        bad.gradientAsBucketView = true;
        EXPECT_EQ(Reducer::create(backend, model.parameters(), bad).status().code(), StatusCode::kInvalidArgument);
        bad = {};
        bad.reduceDtype = DType::kI32;
        EXPECT_EQ(Reducer::create(backend, model.parameters(), bad).status().code(), StatusCode::kInvalidArgument);
        auto params = model.parameters();
        params.push_back(params[0]);
        Status dup = Reducer::create(backend, params).status();
        EXPECT_TRUE(contains(dup, "registered twice")) << dup;
        std::vector<int32_t> ints(4);
        Parameter p{"counts", {4}, DType::kI32, Device::cpu(), ints.data(), ints.data()};
        Status i32 = Reducer::create(backend, {&p}).status();
        EXPECT_EQ(i32.code(), StatusCode::kInvalidArgument);
        EXPECT_TRUE(contains(i32, "'counts'")) << i32;
      },
      fastGroup());
}

TEST(ReducerMisuseTest, MismatchedReplicasNameTheParameterAndRanks) {
  const int world = 3;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        auto layers = mixedLayers();
        if (rank == 2) layers[1].in = 6;  // layer1.weight is [3, 6] f64 on rank 2, [3, 5] elsewhere
        LinearStack model(layers, 1);
        Status st = Reducer::create(backend, model.parameters()).status();
        EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
        EXPECT_TRUE(contains(st, "parameter 2 ('layer1.weight'")) << st;
        EXPECT_TRUE(contains(st, "rank 0 has [3, 5] f64, rank 2 has [3, 6] f64")) << st;
      },
      fastGroup());
  comm::runLocalRanks(
      2,
      [&](int rank, comm::Backend& backend) {
        auto layers = mixedLayers();
        if (rank == 1) layers.push_back({2, 2, DType::kF32});  // one more layer on rank 1
        LinearStack model(layers, 1);
        Status st = Reducer::create(backend, model.parameters()).status();
        EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
        EXPECT_TRUE(contains(st, "parameter 10")) << st;
        EXPECT_TRUE(contains(st, "rank 0 has no such parameter, rank 1 has [2, 2] f32")) << st;
      },
      fastGroup());
}

TEST(ReducerMisuseTest, ConstructionBroadcastsRankZerosParametersAndBuffers) {
  const int world = 3;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), /*initSeed=*/100 + rank);
        LinearStack rank0(mixedLayers(), 100);
        std::vector<float> runningMean(7, static_cast<float>(rank));
        auto r = Reducer::create(backend, model.parameters(), {}, {comm::viewOf(runningMean.data(), 7)});
        ASSERT_TRUE(r.isOk()) << r.status();
        for (size_t i = 0; i < model.parameters().size(); ++i) {
          const Parameter& got = *model.parameters()[i];
          const Parameter& want = *rank0.parameters()[i];
          for (size_t j = 0; j < got.numel(); ++j) {
            ASSERT_EQ(LinearStack::get(got, got.data, j), LinearStack::get(want, want.data, j));
          }
        }
        EXPECT_EQ(runningMean, std::vector<float>(7, 0.0f));
      },
      fastGroup());
}

TEST(ReducerMisuseTest, FailedCollectiveIsReportedAndSticky) {
  withReducer({}, [](LinearStack& model, Reducer& reducer, comm::Backend&) {
    ASSERT_TRUE(reducer
                    .registerCommHook(makeFunctionHook("failing", 0, [](int&, GradBucket&) -> Result<HookResult> {
                      return HookResult{comm::completedWork(unavailable("peer 3 closed the connection")), {}};
                    }))
                    .isOk());
    model.backward(0, 0, kRowsPerRank, reducer.gradReadyFn());
    Status st = reducer.finalize(stepDeadline());
    EXPECT_EQ(st.code(), StatusCode::kUnavailable);
    EXPECT_TRUE(contains(st, "DDP bucket 0 (hook 'failing')") && contains(st, "peer 3")) << st;
    EXPECT_TRUE(contains(reducer.finalize(stepDeadline()), "unusable"));
  });
}

TEST(ReducerMisuseTest, ThrowingHookBecomesAnErrorNotACrash) {
  withReducer({}, [](LinearStack& model, Reducer& reducer, comm::Backend&) {
    ASSERT_TRUE(reducer
                    .registerCommHook(makeFunctionHook("throwing", 0, [](int&, GradBucket&) -> Result<HookResult> {
                      throw std::runtime_error("user hook bug");
                    }))
                    .isOk());
    model.backward(0, 0, kRowsPerRank, reducer.gradReadyFn());
    Status st = reducer.finalize(stepDeadline());
    EXPECT_EQ(st.code(), StatusCode::kInternal);
    EXPECT_TRUE(contains(st, "exception in run: user hook bug")) << st;
  });
}

TEST(ReducerMisuseTest, HungCollectiveTimesOutAtTheDeadline) {
  ReducerOptions opts;
  opts.timeout = std::chrono::milliseconds(300);  // bounds the drain at destruction
  withReducer(opts, [](LinearStack& model, Reducer& reducer, comm::Backend&) {
    auto never = std::make_shared<comm::CompletionWork>(1, comm::OpType::kAllreduce, 0, std::chrono::hours(1));
    ASSERT_TRUE(reducer
                    .registerCommHook(makeFunctionHook("hung", never, [](auto& w, GradBucket&) -> Result<HookResult> {
                      return HookResult{w, {}};
                    }))
                    .isOk());
    model.backward(0, 0, kRowsPerRank, reducer.gradReadyFn());
    Status st = reducer.finalize(Deadline::after(std::chrono::milliseconds(100)));
    EXPECT_EQ(st.code(), StatusCode::kTimeout);
    EXPECT_TRUE(contains(st, "still being reduced")) << st;
  });
}

}  // namespace
}  // namespace ddp::testing
