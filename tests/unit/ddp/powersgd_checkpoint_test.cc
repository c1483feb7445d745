// PowerSGD hook state: save mid-training, load into a fresh hook, and the continued trajectory is
// bitwise identical to the uninterrupted one (also when the first step after the reload uses
// another bucket layout, and for the RNG without warm start); corrupt state is DataLoss; another
// world size follows the documented policy. Ranks run over LocalBackend.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>

#include "tests/support/local_backend.h"
#include "tests/unit/ddp/powersgd_test_util.h"
#include "worker/ddp/batched_powersgd_hook.h"
#include "worker/ddp/powersgd_hook.h"

namespace ddp {
namespace {

using testing_util::randomVector;
using testing_util::runStep;
using testing_util::TensorSpec;
using testing_util::TestBucket;

// A three-layer model's parameters and the two bucket layouts the reducer uses: registration
// order in one bucket before the rebuild, reverse order in three buckets after it.
const std::vector<TensorSpec> kLayer1 = {{"l1.w", {24, 16}}, {"l1.b", {24}}};
const std::vector<TensorSpec> kLayer2 = {{"l2.w", {20, 24}}, {"l2.b", {20}}};
const std::vector<TensorSpec> kLayer3 = {{"l3.w", {6, 20}}, {"l3.b", {6}}};

struct Layout {
  std::vector<std::unique_ptr<TestBucket>> buckets;

  static Layout rebuilt() {
    Layout l;
    l.buckets.push_back(std::make_unique<TestBucket>(0, false, kLayer3));
    l.buckets.push_back(std::make_unique<TestBucket>(1, false, kLayer2));
    l.buckets.push_back(std::make_unique<TestBucket>(2, true, kLayer1));
    return l;
  }
  static Layout initial() {
    std::vector<TensorSpec> all;
    for (const auto* layer : {&kLayer1, &kLayer2, &kLayer3}) all.insert(all.end(), layer->begin(), layer->end());
    Layout l;
    l.buckets.push_back(std::make_unique<TestBucket>(0, true, all));
    return l;
  }
  std::vector<TestBucket*> raw() {
    std::vector<TestBucket*> out;
    for (auto& b : buckets) out.push_back(b.get());
    return out;
  }
  // Fills every gradient with values that depend only on (step, rank, parameter name).
  void fill(int step, int rank) {
    for (auto& b : buckets)
      for (size_t i = 0; i < b->params().size(); ++i) {
        const auto& p = b->params()[i];
        auto g = randomVector(p.numel(), static_cast<uint32_t>(stableHash(p.name) + 1000 * step + rank));
        std::copy(g.begin(), g.end(), b->buffer().begin() + b->offset(i));
      }
  }
  // Parameter name -> reduced gradient.
  std::map<std::string, std::vector<float>> result() const {
    std::map<std::string, std::vector<float>> out;
    for (auto& b : buckets)
      for (size_t i = 0; i < b->params().size(); ++i) {
        auto begin = b->buffer().begin() + b->offset(i);
        out[b->params()[i].name] = std::vector<float>(begin, begin + b->params()[i].numel());
      }
    return out;
  }
};

using Trajectory = std::vector<std::map<std::string, std::vector<float>>>;
using HookFactory = std::function<std::unique_ptr<PowerSgdHookBase>(comm::Backend&, PowerSgdOptions)>;

std::unique_ptr<PowerSgdHookBase> makePowerSgd(comm::Backend& b, PowerSgdOptions o) {
  return std::make_unique<PowerSgdHook>(b, o);
}
std::unique_ptr<PowerSgdHookBase> makeBatched(comm::Backend& b, PowerSgdOptions o) {
  return std::make_unique<BatchedPowerSgdHook>(b, o);
}

PowerSgdOptions testOptions() {
  PowerSgdOptions o;
  o.matrixApproximationRank = 2;
  o.startPowerSgdIter = 2;
  return o;
}

// Runs steps [from, to) with the rebuilt layout (or `firstLayout` for the first of them).
Status train(PowerSgdHookBase& hook, int rank, int from, int to, Trajectory* out, bool initialLayoutFirst = false) {
  for (int step = from; step < to; ++step) {
    Layout layout = (step == 0 || (initialLayoutFirst && step == from)) ? Layout::initial() : Layout::rebuilt();
    layout.fill(step, rank);
    DDP_RETURN_IF_ERROR(runStep(hook, layout.raw()));
    if (out) out->push_back(layout.result());
  }
  return Status::ok();
}

struct ResumeCase {
  const char* name;
  HookFactory factory;
  bool initialLayoutAfterReload;
  bool warmStart;
};
void PrintTo(const ResumeCase& c, std::ostream* os) { *os << c.name; }

class PowerSgdResumeTest : public ::testing::TestWithParam<ResumeCase> {};

TEST_P(PowerSgdResumeTest, ReloadedStateContinuesTheIdenticalTrajectory) {
  const ResumeCase c = GetParam();
  const int world = 2, saveAt = 5, total = 10;
  std::vector<Trajectory> uninterrupted(world), resumed(world);
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    PowerSgdOptions o = testOptions();
    o.warmStart = c.warmStart;
    auto hook = c.factory(backend, o);
    ASSERT_TRUE(train(*hook, rank, 0, saveAt, nullptr).isOk());
    auto saved = hook->saveState();
    ASSERT_TRUE(saved.isOk());
    ASSERT_TRUE(train(*hook, rank, saveAt, total, &uninterrupted[rank]).isOk());

    // A fresh process: another seed in its options (the saved RNG state wins), and maybe the
    // pre-rebuild bucket layout for its first step.
    PowerSgdOptions fresh = o;
    fresh.randomSeed = 99;
    auto restored = c.factory(backend, fresh);
    ASSERT_TRUE(restored->loadState(*saved).isOk());
    EXPECT_EQ(restored->iteration(), static_cast<uint64_t>(saveAt));
    ASSERT_TRUE(train(*restored, rank, saveAt, total, &resumed[rank], c.initialLayoutAfterReload).isOk());
    EXPECT_EQ(restored->compressionStats().numelAfterCompression, hook->compressionStats().numelAfterCompression);
  });
  for (int r = 0; r < world; ++r) {
    ASSERT_EQ(resumed[r].size(), uninterrupted[r].size());
    for (size_t s = 0; s < resumed[r].size(); ++s) {
      EXPECT_EQ(resumed[r][s], uninterrupted[r][s]) << c.name << ": rank " << r << " step " << (saveAt + s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PowerSgdResumeTest,
    ::testing::Values(ResumeCase{"powersgd", makePowerSgd, false, true},
                      ResumeCase{"powersgd_other_layout_first", makePowerSgd, true, true},
                      ResumeCase{"powersgd_no_warm_start", makePowerSgd, true, false},
                      ResumeCase{"batched", makeBatched, false, true},
                      ResumeCase{"batched_no_warm_start", makeBatched, false, false}),
    [](const auto& info) { return std::string(info.param.name); });

// The reason for per-tensor keys: the same layout change applied to state keyed by bucket index
// would feed layer 1's error into layer 3. This checks the state is really per parameter.
TEST(PowerSgdCheckpointTest, StateIsKeyedByParameterName) {
  comm::runLocalRanks(1, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, testOptions());
    ASSERT_TRUE(train(hook, rank, 0, 3, nullptr).isOk());
    const PowerSgdState s = hook.stateSnapshot();
    ASSERT_EQ(s.tensors.size(), 3u);  // the three weights; biases are never compressed
    EXPECT_EQ(s.tensors.at("l1.w").error.size(), 24u * 16u);
    EXPECT_EQ(s.tensors.at("l1.w").q.size(), 16u * 2u);
    EXPECT_EQ(s.tensors.at("l3.w").q.size(), 20u * 2u);
  });
}

TEST(PowerSgdCheckpointTest, CorruptTruncatedOrForeignStateIsRejected) {
  comm::runLocalRanks(1, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, testOptions());
    ASSERT_TRUE(train(hook, rank, 0, 4, nullptr).isOk());
    const std::string saved = *hook.saveState();

    PowerSgdHook fresh(backend, testOptions());
    std::string flipped = saved;
    flipped[saved.size() / 2] ^= 0x40;
    Status st = fresh.loadState(flipped);
    EXPECT_EQ(st.code(), StatusCode::kDataLoss);
    EXPECT_NE(st.message().find("checksum"), std::string::npos) << st;
    EXPECT_EQ(fresh.loadState(saved.substr(0, saved.size() - 3)).code(), StatusCode::kDataLoss);
    EXPECT_EQ(fresh.loadState("not a state at all").code(), StatusCode::kDataLoss);
    EXPECT_EQ(fresh.iteration(), 0u) << "a failed load leaves the state untouched";

    BatchedPowerSgdHook batched(backend, testOptions());
    Status foreign = batched.loadState(saved);
    EXPECT_EQ(foreign.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(foreign.message().find("'powersgd'"), std::string::npos) << foreign;
  });
}

TEST(PowerSgdCheckpointTest, AnotherWorldSizeResetsErrorFeedbackOrFailsByPolicy) {
  std::string savedAtTwo;
  PowerSgdState before;
  comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, testOptions());
    ASSERT_TRUE(train(hook, rank, 0, 4, nullptr).isOk());
    if (rank == 0) {
      savedAtTwo = *hook.saveState();
      before = hook.stateSnapshot();
    }
  });
  comm::runLocalRanks(3, [&](int rank, comm::Backend& backend) {
    PowerSgdHook hook(backend, testOptions());
    ASSERT_TRUE(hook.loadState(savedAtTwo).isOk());
    const PowerSgdState after = hook.stateSnapshot();
    EXPECT_EQ(after.iteration, before.iteration);
    EXPECT_EQ(after.randomSeed, before.randomSeed);
    for (const auto& [key, t] : after.tensors) {
      EXPECT_TRUE(t.error.empty()) << key << ": error feedback must be reset";
      EXPECT_EQ(t.q, before.tensors.at(key).q) << key << ": Q memories are kept";
    }
    EXPECT_TRUE(train(hook, rank, 4, 6, nullptr).isOk()) << "training continues at the new size";

    PowerSgdOptions strict = testOptions();
    strict.worldSizeChangePolicy = WorldSizeChangePolicy::kFail;
    PowerSgdHook strictHook(backend, strict);
    Status st = strictHook.loadState(savedAtTwo);
    EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(st.message().find("world size 2"), std::string::npos) << st;
  });
}

TEST(PowerSgdStateTest, SerializationRoundTripsEveryField) {
  PowerSgdState s;
  s.hookName = "powersgd";
  s.worldSize = 4;
  s.rank = 3;
  s.iteration = 1234;
  s.randomSeed = 0xdeadbeefcafeull;
  s.stats = {10, 4, 40, 16};
  s.nextStatsReport = 11234;
  s.tensors["a"] = PowerSgdTensorState{2, 3, {1, 2, 3, 4, 5, 6}, 1, {7, 8, 9}};
  s.tensors["b"] = PowerSgdTensorState{5, 1, {}, 0, {}};
  s.buckets[77] = PowerSgdBucketState{3, 2, {1, 2, 3, 4, 5, 6}};
  auto back = PowerSgdState::deserialize(s.serialize());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->hookName, s.hookName);
  EXPECT_EQ(back->worldSize, 4);
  EXPECT_EQ(back->rank, 3);
  EXPECT_EQ(back->iteration, 1234u);
  EXPECT_EQ(back->randomSeed, s.randomSeed);
  EXPECT_EQ(back->stats.bytesAfterCompression, 16u);
  EXPECT_EQ(back->nextStatsReport, 11234u);
  EXPECT_EQ(back->tensors.at("a").error, s.tensors.at("a").error);
  EXPECT_EQ(back->tensors.at("a").q, s.tensors.at("a").q);
  EXPECT_EQ(back->tensors.at("b").rows, 5u);
  EXPECT_EQ(back->buckets.at(77).q, s.buckets.at(77).q);

  // A buffer whose length contradicts its shape is caught even under a valid checksum.
  s.tensors["a"].q.push_back(1);
  EXPECT_EQ(PowerSgdState::deserialize(s.serialize()).status().code(), StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ddp
