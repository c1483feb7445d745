// Reducer lifetime: several Reducers built, used and destroyed in a row over one model. With
// gradientAsBucketView the destroyed Reducer must hand each parameter the model's own gradient
// storage back, holding the gradient it had, so neither the model nor the next Reducer reads
// freed buckets (PyTorch: a new DDP over the same model replaces the old one's hooks). Gradients
// are never zeroed, so each Reducer also reduces what the previous ones left, and the result
// is checked against the closed-form oracle of all steps so far. Ranks are threads over
// LocalBackend.
#include "worker/ddp/reducer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "tests/unit/ddp/ddp_test_util.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/powersgd_hook.h"

namespace ddp::testing {
namespace {

constexpr int kRounds = 3;
constexpr int kStepsPerReducer = 2;  // the second step runs on the rebuilt buckets

ReducerOptions lifetimeOptions(bool view) {
  // Tiny caps: several buckets, and a rebuild that changes them after the first step.
  return ReducerOptions{.bucketCapBytes = 16, .firstBucketCapBytes = 8, .gradientAsBucketView = view};
}

std::vector<void*> gradPointers(LinearStack& model) {
  std::vector<void*> out;
  for (const Parameter* p : model.parameters()) out.push_back(p->grad);
  return out;
}

std::vector<std::vector<double>> gradCopy(LinearStack& model) {
  std::vector<std::vector<double>> out;
  for (size_t i = 0; i < model.parameters().size(); ++i) out.push_back(model.grad(i));
  return out;
}

struct Range {
  const char* begin;
  const char* end;
};

std::vector<Range> bucketRanges(const Reducer& reducer) {
  std::vector<Range> out;
  for (size_t b = 0; b < reducer.plan().numBuckets(); ++b) {
    const comm::BufferView buf = reducer.bucketBuffer(b);
    const char* begin = static_cast<const char*>(buf.data);
    out.push_back({begin, begin + buf.count * dtypeSize(buf.dtype)});
  }
  return out;
}

bool pointsInto(const void* ptr, const std::vector<Range>& ranges) {
  const char* c = static_cast<const char*>(ptr);
  for (const Range& r : ranges) {
    if (c >= r.begin && c < r.end) return true;
  }
  return false;
}

std::vector<uint64_t> stepsThrough(int lastStep) {
  std::vector<uint64_t> steps;
  for (int s = 0; s <= lastStep; ++s) steps.push_back(static_cast<uint64_t>(s));
  return steps;
}

// After a Reducer is gone: values unchanged, storage the model's own, never a freed bucket.
void expectHandedBack(LinearStack& model, const std::vector<std::vector<double>>& before,
                      const std::vector<void*>& modelStorage, const std::vector<Range>& freedBuckets,
                      const std::string& what) {
  const auto params = model.parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(params[i]->grad, modelStorage[i]) << what << ": param " << i << " not back on the model's storage";
    EXPECT_FALSE(pointsInto(params[i]->grad, freedBuckets)) << what << ": param " << i << " points into a freed bucket";
    EXPECT_EQ(params[i]->ownGrad, nullptr) << what << ": param " << i;
    ASSERT_EQ(model.grad(i), before[i]) << what << ": param " << i << " changed by the destruction";
  }
}

class ReducerLifetime : public ::testing::TestWithParam<std::tuple<int, bool, std::string>> {};

TEST_P(ReducerLifetime, SuccessiveReducersKeepGradients) {
  const auto [world, view, hook] = GetParam();
  comm::runLocalRanks(
      world,
      [&, world = world, view = view, hook = hook](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), /*initSeed=*/rank + 1);
        const std::vector<void*> modelStorage = gradPointers(model);
        int step = 0;
        for (int round = 0; round < kRounds; ++round) {
          const std::string what = "world " + std::to_string(world) + (view ? " view" : " copy") + " hook " + hook +
                                   " round " + std::to_string(round) + " rank " + std::to_string(rank);
          auto created = makeReducer(backend, model, lifetimeOptions(view), hook);
          ASSERT_TRUE(created.isOk()) << what << ": " << created.status();
          std::unique_ptr<Reducer> reducer = std::move(created).value();
          for (int k = 0; k < kStepsPerReducer; ++k, ++step) {
            rankBackward(model, rank, static_cast<uint64_t>(step), reducer->gradReadyFn());
            Status st = reducer->finalize(stepDeadline());
            ASSERT_TRUE(st.isOk()) << what << ": " << st;
            // Never zeroed: every step so far, carried across the earlier Reducers, is in grad.
            expectGradsNear(model, globalOracleGrads(world, stepsThrough(step)), toleranceFor(hook),
                            what + " step " + std::to_string(step));
          }
          EXPECT_TRUE(reducer->bucketsRebuilt()) << what;
          const auto ranges = bucketRanges(*reducer);
          if (view) {
            for (const Parameter* p : model.parameters()) {
              ASSERT_TRUE(pointsInto(p->grad, ranges)) << what << ": '" << p->name << "' is not a bucket view";
            }
          }
          const auto before = gradCopy(model);
          reducer.reset();
          expectHandedBack(model, before, modelStorage, ranges, what);
          // The model may zero and accumulate between Reducers: that must touch only its own storage.
          model.zeroGrad();
          for (size_t i = 0; i < before.size(); ++i) {
            for (size_t j = 0; j < before[i].size(); ++j) {
              LinearStack::set(*model.parameters()[i], model.parameters()[i]->grad, j, before[i][j]);
            }
          }
        }
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(WorldsViewsHooks, ReducerLifetime,
                         ::testing::Combine(::testing::Values(1, 2), ::testing::Bool(),
                                            ::testing::Values(std::string("none"), std::string("allreduce"))),
                         [](const auto& info) {
                           return "world" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_view_" : "_copy_") + std::get<2>(info.param);
                         });

// Every other option over the same lifetime: findUnusedParameters (a layer rank 1 never uses),
// broadcastAtStart=false, reduceDtype f16 / bf16, and the PowerSGD hooks (plain and batched;
// compressing from each Reducer's third step, at a rank that reconstructs every matrix
// exactly, so the single-process oracle holds up to rounding). Each step starts from zeroed
// gradients and is checked against its oracle; after each Reducer is destroyed the gradients
// are back on the model's storage and still read as that step's values.
struct LifetimeCase {
  std::string name;
  ReducerOptions options;
  std::string hook = "none";  // hookByName, or "powerSGD" / "batchedPowerSGD"
  std::vector<int> skipOnRank1;
  bool sameInit = false;  // broadcastAtStart=false: every rank starts from the oracle's parameters
  double tolerance = 1e-5;
  int steps = kStepsPerReducer;  // per Reducer
};

void PrintTo(const LifetimeCase& c, std::ostream* os) { *os << c.name; }

const std::vector<LayerSpec>& f32Layers() {  // PowerSGD compresses f32 buckets only
  static const std::vector<LayerSpec> layers = {
      {8, 16, DType::kF32}, {5, 3, DType::kF32}, {8, 4, DType::kF32}, {3, 1, DType::kF32}};
  return layers;
}

std::unique_ptr<CommHook> lifetimeHook(const std::string& name, comm::Backend& backend) {
  PowerSgdOptions psgd;
  psgd.matrixApproximationRank = 16;  // >= every matrix's smaller side: exact reconstruction
  psgd.startPowerSgdIter = 2;  // the earliest allowed (after the bucket rebuild): a Reducer's third step
  psgd.minCompressionRate = 1e-6;  // compress every matrix, even where it saves nothing
  if (name == "powerSGD") return std::make_unique<PowerSgdHook>(backend, psgd);
  if (name == "batchedPowerSGD") return std::make_unique<BatchedPowerSgdHook>(backend, psgd);
  return hookByName(name, backend);
}

class ReducerLifetimeOptions : public ::testing::TestWithParam<LifetimeCase> {};

TEST_P(ReducerLifetimeOptions, SuccessiveReducersKeepGradients) {
  const LifetimeCase c = GetParam();
  const bool psgd = c.hook.find("owerSGD") != std::string::npos;
  const std::vector<LayerSpec>& layers = psgd ? f32Layers() : mixedLayers();
  const int world = 2;
  auto skipOf = [&](int rank) { return rank == 1 ? c.skipOnRank1 : std::vector<int>{}; };
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(layers, /*initSeed=*/c.sameInit ? 1 : rank + 1);
        const std::vector<void*> modelStorage = gradPointers(model);
        int step = 0;
        for (int round = 0; round < kRounds; ++round) {
          const std::string what = c.name + " round " + std::to_string(round) + " rank " + std::to_string(rank);
          auto created = Reducer::create(backend, model.parameters(), c.options);
          ASSERT_TRUE(created.isOk()) << what << ": " << created.status();
          std::unique_ptr<Reducer> reducer = std::move(created).value();
          const PowerSgdHookBase* compressing = nullptr;
          if (auto h = lifetimeHook(c.hook, backend)) {
            compressing = dynamic_cast<const PowerSgdHookBase*>(h.get());
            Status registered = reducer->registerCommHook(std::move(h));
            ASSERT_TRUE(registered.isOk()) << what << ": " << registered;
          }
          std::vector<std::vector<double>> want;
          for (int k = 0; k < c.steps; ++k, ++step) {
            model.zeroGrad();
            rankBackward(model, rank, static_cast<uint64_t>(step), reducer->gradReadyFn(), skipOf(rank));
            Status st = reducer->finalize(stepDeadline());
            ASSERT_TRUE(st.isOk()) << what << ": " << st;
            want = averagedLocalGrads(layers, world, [&](int rk) {
              return std::vector<MicroStep>{{static_cast<uint64_t>(step), skipOf(rk)}};
            });
            expectGradsNear(model, want, c.tolerance, what + " step " + std::to_string(step));
          }
          if (psgd) {
            ASSERT_NE(compressing, nullptr);
            EXPECT_GT(compressing->compressionStats().numelAfterCompression, 0u) << what << ": never compressed";
          }
          const auto ranges = bucketRanges(*reducer);
          const auto before = gradCopy(model);
          reducer.reset();
          expectHandedBack(model, before, modelStorage, ranges, what);
          expectGradsNear(model, want, c.tolerance, what + " after the Reducer is gone");
        }
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(
    EveryOption, ReducerLifetimeOptions,
    ::testing::Values(
        LifetimeCase{"unused_copy", {.bucketCapBytes = 16, .firstBucketCapBytes = 8, .findUnusedParameters = true},
                     "none", {1}},
        LifetimeCase{"unused_view",
                     {.bucketCapBytes = 16, .firstBucketCapBytes = 8, .findUnusedParameters = true,
                      .gradientAsBucketView = true},
                     "allreduce", {1, 3}},
        LifetimeCase{"no_broadcast_view",
                     {.bucketCapBytes = 16, .firstBucketCapBytes = 8, .gradientAsBucketView = true,
                      .broadcastAtStart = false},
                     "none", {}, /*sameInit=*/true},
        LifetimeCase{"reduce_f16", {.bucketCapBytes = 200, .firstBucketCapBytes = 100, .reduceDtype = DType::kF16},
                     "none", {}, false, 2e-3},
        LifetimeCase{"reduce_bf16", {.bucketCapBytes = 200, .firstBucketCapBytes = 100, .reduceDtype = DType::kBF16},
                     "allreduce", {}, false, 2e-2},
        LifetimeCase{"powersgd_copy", {.bucketCapBytes = 256, .firstBucketCapBytes = 128}, "powerSGD", {}, false, 1e-3, 3},
        LifetimeCase{"powersgd_view",
                     {.bucketCapBytes = 256, .firstBucketCapBytes = 128, .gradientAsBucketView = true},
                     "powerSGD", {}, false, 1e-3, 3},
        LifetimeCase{"batched_powersgd_view",
                     {.bucketCapBytes = 256, .firstBucketCapBytes = 128, .gradientAsBucketView = true},
                     "batchedPowerSGD", {}, false, 1e-3, 3}),
    [](const auto& info) { return info.param.name; });

class ReducerTakeover : public ::testing::TestWithParam<int> {};

// A new Reducer built while the old one lives takes the parameters over; destroying the old
// one then leaves them alone, and destroying the new one gives the model its storage back.
TEST_P(ReducerTakeover, OlderReducerDestroyedFirst) {
  const int world = GetParam();
  comm::runLocalRanks(
      world,
      [&](int rank, comm::Backend& backend) {
        LinearStack model(mixedLayers(), /*initSeed=*/rank + 1);
        const std::vector<void*> modelStorage = gradPointers(model);
        auto first = makeReducer(backend, model, lifetimeOptions(true), "allreduce");
        ASSERT_TRUE(first.isOk()) << first.status();
        rankBackward(model, rank, 0, (*first)->gradReadyFn());
        ASSERT_TRUE((*first)->finalize(stepDeadline()).isOk());
        const auto firstRanges = bucketRanges(**first);

        auto second = makeReducer(backend, model, lifetimeOptions(true), "none");
        ASSERT_TRUE(second.isOk()) << second.status();
        const auto secondViews = gradPointers(model);
        for (size_t i = 0; i < model.parameters().size(); ++i) {
          EXPECT_EQ(model.parameters()[i]->ownGrad, modelStorage[i]) << "param " << i;
        }
        first->reset();
        EXPECT_EQ(gradPointers(model), secondViews) << "the older Reducer took back parameters it no longer has";

        rankBackward(model, rank, 1, (*second)->gradReadyFn());
        Status st = (*second)->finalize(stepDeadline());
        ASSERT_TRUE(st.isOk()) << st;
        expectGradsNear(model, globalOracleGrads(world, {0, 1}), 1e-5, "second reducer, world " + std::to_string(world));

        const auto secondRanges = bucketRanges(**second);
        const auto before = gradCopy(model);
        second->reset();
        expectHandedBack(model, before, modelStorage, firstRanges, "after both");
        expectHandedBack(model, before, modelStorage, secondRanges, "after both");
      },
      fastGroup());
}

INSTANTIATE_TEST_SUITE_P(Worlds, ReducerTakeover, ::testing::Values(1, 2));

// A parameter registered with no gradient storage (allowed with gradientAsBucketView) gets
// none back: grad ends null rather than pointing into the freed bucket.
TEST(ReducerLifetimeTest, NullGradComesBackNull) {
  comm::runLocalRanks(
      1,
      [&](int, comm::Backend& backend) {
        std::vector<float> data(6, 1.0f);
        Parameter p;
        p.name = "w";
        p.shape = {2, 3};
        p.data = data.data();
        ReducerOptions opts = lifetimeOptions(true);
        for (int round = 0; round < 2; ++round) {
          auto created = Reducer::create(backend, {&p}, opts);
          ASSERT_TRUE(created.isOk()) << created.status();
          ASSERT_NE(p.grad, nullptr);
          ASSERT_TRUE((*created)->markGradReady(0).isOk());
          ASSERT_TRUE((*created)->finalize(stepDeadline()).isOk());
          created->reset();
          EXPECT_EQ(p.grad, nullptr) << "round " << round;
          EXPECT_EQ(p.ownGrad, nullptr) << "round " << round;
        }
      },
      fastGroup());
}

}  // namespace
}  // namespace ddp::testing
