// DDP reducer correctness: with the default path and every averaging hook, the gradients after
// finalize() equal the single-process gradients on the concatenated batch (the oracle), for
// world 1-4, several bucket caps (including a parameter larger than the cap), mixed f32/f64
// parameters, bucket-as-view, across the one-time bucket rebuild. Ranks are threads over
// LocalBackend.
#include "worker/ddp/reducer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "tests/support/recording_backend.h"
#include "tests/unit/ddp/ddp_test_util.h"
#include "worker/ddp/function_hook.h"

namespace ddp::testing {
namespace {

struct CapCase {
  const char* name;
  size_t cap;
  size_t firstCap;
};
const CapCase kCaps[] = {
    {"default", kDefaultBucketCapBytes, kDefaultFirstBucketCapBytes},
    {"tiny", 16, 8},          // about one parameter per bucket
    {"below_largest", 200, 100},  // layer0.weight (512 bytes) is larger than the cap
};

void runAndCompare(int world, const CapCase& caps, const std::string& hook, bool view, int steps = 3) {
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), /*initSeed=*/rank + 1);  // differs per rank until the broadcast
        const ReducerOptions opts{
            .bucketCapBytes = caps.cap, .firstBucketCapBytes = caps.firstCap, .gradientAsBucketView = view};
        auto created = makeReducer(backend, model, opts, hook);
        ASSERT_TRUE(created.isOk()) << created.status();
        Reducer& reducer = **created;
        for (int step = 0; step < steps; ++step) {
          model.zeroGrad();
          rankBackward(model, rank, step, reducer.gradReadyFn());
          Status st = reducer.finalize(stepDeadline());
          ASSERT_TRUE(st.isOk()) << st;
          auto want = globalOracleGrads(world, {static_cast<uint64_t>(step)});
          expectGradsNear(model, want, toleranceFor(hook),
                          "world " + std::to_string(world) + " caps " + caps.name + " hook " + hook + " step " +
                              std::to_string(step) + " rank " + std::to_string(rank));
        }
        EXPECT_TRUE(reducer.bucketsRebuilt());
        EXPECT_EQ(reducer.stats().syncedSteps, static_cast<uint64_t>(steps));
      },
      fastGroup());
}

class ReducerMatchesSingleProcess : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(ReducerMatchesSingleProcess, DefaultPath) {
  const auto [world, capIndex, view] = GetParam();
  runAndCompare(world, kCaps[capIndex], "none", view);
}

TEST_P(ReducerMatchesSingleProcess, AllreduceHook) {
  const auto [world, capIndex, view] = GetParam();
  runAndCompare(world, kCaps[capIndex], "allreduce", view);
}

INSTANTIATE_TEST_SUITE_P(WorldsCapsViews, ReducerMatchesSingleProcess,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4), ::testing::Values(0, 1, 2),
                                            ::testing::Bool()));

class ReducerHooks : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(ReducerHooks, MatchSingleProcessWithinTolerance) {
  const auto [hook, world] = GetParam();
  runAndCompare(world, kCaps[2], hook, /*view=*/false, /*steps=*/2);
}

INSTANTIATE_TEST_SUITE_P(HalfHooks, ReducerHooks,
                         ::testing::Combine(::testing::Values("fp16", "bf16", "fp16_wrapper", "bf16_wrapper"),
                                            ::testing::Values(2, 3)));

TEST(ReducerTest, NoopHookLeavesLocalGradients) {
  // Debugging hook: nothing is reduced, so each rank keeps its own local-batch gradient.
  const int world = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {}, "noop");
        ASSERT_TRUE(r.isOk()) << r.status();
        rankBackward(model, rank, 0, (*r)->gradReadyFn());
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        expectGradsNear(model, oracleGrads(mixedLayers(), {0}, rank * kRowsPerRank, kRowsPerRank), 1e-6, "noop");
      },
      fastGroup());
}

TEST(ReducerTest, FunctionHookWithUserState) {
  struct State {
    comm::Backend* backend;
    int runs = 0;
    int finishes = 0;
  };
  const int world = 3;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {.bucketCapBytes = 64, .firstBucketCapBytes = 64});
        ASSERT_TRUE(r.isOk()) << r.status();
        auto hook = makeFunctionHook("sum_then_divide", State{&backend},
                                     [](State& s, GradBucket& b) -> Result<HookResult> {
                                       ++s.runs;
                                       HookResult out;
                                       out.work = s.backend->allreduce(b.buffer(), comm::ReduceOp::kSum);
                                       out.finish = [&s, b]() -> Status {  // divide after the sum
                                         ++s.finishes;
                                         auto v = b.buffer();
                                         for (size_t i = 0; i < v.count; ++i) {
                                           if (v.dtype == DType::kF64) v.as<double>()[i] /= s.backend->size();
                                           else v.as<float>()[i] /= static_cast<float>(s.backend->size());
                                         }
                                         return Status::ok();
                                       };
                                       return out;
                                     });
        auto* raw = hook.get();
        ASSERT_TRUE((*r)->registerCommHook(std::move(hook)).isOk());
        const size_t buckets = (*r)->plan().numBuckets();
        rankBackward(model, rank, 0, (*r)->gradReadyFn());
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        EXPECT_EQ(raw->state().runs, static_cast<int>(buckets));
        EXPECT_EQ(raw->state().finishes, static_cast<int>(buckets));
        expectGradsNear(model, globalOracleGrads(world, {0}), 1e-5, "function hook");
      },
      fastGroup());
}

TEST(ReducerTest, FirstBucketIsReducedWhileBackwardGoesOn) {
  // Overlap is real: backward pauses after the last layer (bucket 0 holds its bias only) until
  // the bucket-reduced callback reports bucket 0 final. A reducer that communicated only in
  // finalize() would never fire it there and the wait would time out.
  const int world = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        // Bucket 0 closes after its first parameter.
        auto r = makeReducer(backend, model, {.firstBucketCapBytes = 1});
        ASSERT_TRUE(r.isOk()) << r.status();
        std::mutex mu;
        std::vector<size_t> order;
        std::atomic<bool> bucket0Done{false};
        ASSERT_TRUE((*r)->setBucketReducedCallback([&](GradBucket& b) {
                      std::lock_guard<std::mutex> lock(mu);
                      order.push_back(b.index());
                      if (b.index() == 0) bucket0Done = true;
                    }).isOk());
        bool sawOverlap = false;
        const int lastLayer = static_cast<int>(mixedLayers().size()) - 1;
        model.backward(0, rank * kRowsPerRank, kRowsPerRank, (*r)->gradReadyFn(), {}, [&](int k) {
          if (k != lastLayer) return;
          const Deadline d = Deadline::after(std::chrono::seconds(10));
          while (!bucket0Done && !d.expired()) std::this_thread::sleep_for(std::chrono::microseconds(200));
          sawOverlap = bucket0Done;
        });
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        EXPECT_TRUE(sawOverlap) << "bucket 0 was not reduced before backward finished";
        std::vector<size_t> want((*r)->plan().numBuckets());
        for (size_t b = 0; b < want.size(); ++b) want[b] = b;
        EXPECT_EQ(order, want) << "bucket callbacks must come in bucket order";
        expectGradsNear(model, globalOracleGrads(world, {0}), 1e-5, "overlap");
      },
      fastGroup());
}

TEST(ReducerTest, RecordingBackendSeesFirstBucketIssuedBeforeBackwardEnds) {
  // Instrumented backend (RecordingBackend logs issue times; no faults injected): the first
  // bucket's allreduce is issued while backward still has layers to go. Backward is slowed by
  // 40 ms per layer so the margin is not a scheduling accident.
  const int world = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& inner) {
        comm::RecordingBackend backend(inner);
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {.firstBucketCapBytes = 1});
        ASSERT_TRUE(r.isOk()) << r.status();
        backend.clear();  // forget the construction collectives
        model.backward(0, rank * kRowsPerRank, kRowsPerRank, (*r)->gradReadyFn(), {},
                       [](int) { std::this_thread::sleep_for(std::chrono::milliseconds(40)); });
        const TimePoint backwardEnd = std::chrono::steady_clock::now();
        const size_t buckets = (*r)->plan().numBuckets();
        const size_t bucket0Bytes = (*r)->bucketBuffer(0).bytes();
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        auto ops = backend.ops();
        ASSERT_EQ(ops.size(), buckets + 1);  // one allreduce per bucket, then the rebuild's broadcast
        for (size_t b = 0; b < buckets; ++b) EXPECT_EQ(ops[b].type, comm::OpType::kAllreduce);
        EXPECT_EQ(ops[buckets].type, comm::OpType::kBroadcast);
        EXPECT_LT(ops[0].issued + std::chrono::milliseconds(40), backwardEnd)
            << "bucket 0 was issued only at the end of backward";
        EXPECT_EQ(ops[0].bytes, bucket0Bytes);
      },
      fastGroup());
}

TEST(ReducerTest, BucketReadyEarlyWaitsForItsPredecessors) {
  // Gradients marked in registration order make the LAST bucket ready first; its hook must still
  // run after buckets 0..n-2 (every rank issues collectives in bucket order). The recorded
  // allreduce sizes must follow the bucket order.
  const int world = 2;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& inner) {
        comm::RecordingBackend backend(inner);
        LinearStack model(mixedLayers(), 1);
        auto r =
            makeReducer(backend, model, {.bucketCapBytes = 100, .firstBucketCapBytes = 50, .rebuildBuckets = false});
        ASSERT_TRUE(r.isOk()) << r.status();
        std::vector<size_t> hookOrder;
        auto hook = makeFunctionHook("recording_allreduce", static_cast<comm::Backend*>(&backend),
                                     [&hookOrder](comm::Backend*& b, GradBucket& bucket) {
                                       hookOrder.push_back(bucket.index());
                                       return AllreduceHook(*b).run(bucket);
                                     });
        ASSERT_TRUE((*r)->registerCommHook(std::move(hook)).isOk());
        backend.clear();
        rankBackward(model, rank, 0, {});
        for (size_t i = 0; i < model.parameters().size(); ++i) ASSERT_TRUE((*r)->markGradReady(i).isOk());
        ASSERT_TRUE((*r)->finalize(stepDeadline()).isOk());
        const size_t n = (*r)->plan().numBuckets();
        ASSERT_GT(n, 2u);
        std::vector<size_t> inOrder(n);
        for (size_t b = 0; b < n; ++b) inOrder[b] = b;
        EXPECT_EQ(hookOrder, inOrder);
        auto ops = backend.ops();
        ASSERT_EQ(ops.size(), n);
        for (size_t b = 0; b < n; ++b) EXPECT_EQ(ops[b].bytes, (*r)->bucketBuffer(b).bytes()) << "bucket " << b;
        expectGradsNear(model, globalOracleGrads(world, {0}), 1e-5, "early bucket");
      },
      fastGroup());
}

TEST(ReducerTest, RebuildFollowsRankZerosReadyOrderOnEveryRank) {
  // Ranks mark gradients in different orders; after the first step every rank holds the plan
  // computed from rank 0's order, and later steps stay correct.
  const int world = 3;
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), 1);
        auto r = makeReducer(backend, model, {.bucketCapBytes = 100, .firstBucketCapBytes = 50});
        ASSERT_TRUE(r.isOk()) << r.status();
        Reducer& reducer = **r;
        const size_t n = model.parameters().size();
        auto orderFor = [n](int rk) {
          std::vector<size_t> o(n);
          const size_t mult[] = {1, 3, 7};  // coprime with n = 10: permutations
          for (size_t i = 0; i < n; ++i) o[i] = (i * mult[rk] + static_cast<size_t>(rk)) % n;
          return o;
        };
        std::vector<ParamLayout> layouts;
        for (Parameter* p : model.parameters()) layouts.push_back({p->numel(), p->dtype, p->device});
        auto before = BucketPlan::compute(layouts, BucketPlan::reverseOrder(n), {100, 50});
        ASSERT_TRUE(before.isOk());
        EXPECT_EQ(reducer.plan(), *before);
        for (int step = 0; step < 3; ++step) {
          model.zeroGrad();
          rankBackward(model, rank, step, {});
          auto order = step == 0 ? orderFor(rank) : reducer.plan().flatOrder();
          for (size_t i : order) ASSERT_TRUE(reducer.markGradReady(i).isOk());
          ASSERT_TRUE(reducer.finalize(stepDeadline()).isOk());
          if (step == 0) {
            auto want = BucketPlan::compute(layouts, orderFor(0), {100, 50});
            ASSERT_TRUE(want.isOk());
            EXPECT_EQ(reducer.plan(), *want) << "rank " << rank << ": " << reducer.plan().describe();
          }
          expectGradsNear(model, globalOracleGrads(world, {static_cast<uint64_t>(step)}), 1e-5,
                          "rebuild step " + std::to_string(step));
        }
      },
      fastGroup());
}

}  // namespace
}  // namespace ddp::testing
