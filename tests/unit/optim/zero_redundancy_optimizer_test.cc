// ZeroRedundancyOptimizer over LocalBackend (ranks as threads) against a plain, non-sharded
// Optimizer fed the same gradients: the updates are the same kernel on the same inputs, so the
// trajectories agree bitwise. Gradients are a deterministic function of the parameters and the
// step, identical on every rank (as if DDP had already averaged them).
#include "worker/optim/zero_redundancy_optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/support/float_params.h"
#include "tests/support/local_backend.h"
#include "tests/support/recording_backend.h"
#include "worker/join/join.h"
#include "worker/optim/zero_partition.h"

namespace ddp::optim {
namespace {

Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

// A model's parameters: sizes chosen so no world size divides the total evenly.
struct Model : test::FloatParams {
  explicit Model(const std::vector<size_t>& sizes)
      : FloatParams(sizes, [](size_t i, size_t k) { return std::sin(0.37f * (i + 1) + 0.11f * k); }) {}
  void computeGrads(int step) {
    for (size_t i = 0; i < data.size(); ++i) {
      for (size_t k = 0; k < data[i].size(); ++k) grad[i][k] = std::cos(3.f * data[i][k] + 0.5f * step) + 0.01f * k;
    }
  }
};

const std::vector<size_t> kSizes{31, 7, 0, 64, 13, 5, 40, 1};

std::vector<OptimizerConfig> configs() {
  return {OptimizerConfig::sgd(0.05f, 0.9f, 0.1f, 0.01f), OptimizerConfig::sgd(0.05f, 0.9f, 0.f, 0.f, true),
          OptimizerConfig::adam(0.01f, 0.9f, 0.99f, 1e-6f, 0.02f), OptimizerConfig::adamw(0.01f)};
}

// Plain optimizer trajectory for steps [from, to).
void runPlain(Model& m, Optimizer& opt, int from, int to) {
  for (int s = from; s < to; ++s) {
    m.computeGrads(s);
    ASSERT_TRUE(opt.step().isOk());
  }
}

TEST(ZeroRedundancyOptimizerTest, EqualsNonShardedOptimizerWorld1To4) {
  for (const auto& cfg : configs()) {
    Model ref(kSizes);
    auto plain = makeOptimizer(cfg, ref.ptrs());
    runPlain(ref, **plain, 0, 6);
    for (int world = 1; world <= 4; ++world) {
      std::mutex mu;
      size_t totalState = 0, maxState = 0;
      comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
        Model m(kSizes);
        auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, cfg);
        ASSERT_TRUE(zero.isOk()) << zero.status();
        for (int s = 0; s < 6; ++s) {
          m.computeGrads(s);
          ASSERT_TRUE((*zero)->step(soon()).isOk());
        }
        for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(m.data[i], ref.data[i]) << "rank " << rank << " param " << i;
        std::lock_guard<std::mutex> lock(mu);
        totalState += (*zero)->stateBytes();
        maxState = std::max(maxState, (*zero)->stateBytes());
      });
      // Optimizer state per rank = total / world, up to one parameter's state.
      const size_t perElem = cfg.slotsPerElement() * sizeof(float);
      EXPECT_EQ(totalState, (*plain)->stateBytes()) << world;
      EXPECT_LE(maxState, (*plain)->stateBytes() / world + 64 * perElem) << world;
    }
  }
}

TEST(ZeroRedundancyOptimizerTest, OneBroadcastPerNonEmptyOwnerShard) {
  comm::runLocalRanks(3, [&](int, comm::Backend& inner) {
    comm::RecordingBackend pg(inner);
    Model m(kSizes);
    auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, OptimizerConfig::adam());
    ASSERT_TRUE(zero.isOk());
    m.computeGrads(0);
    ASSERT_TRUE((*zero)->step(soon()).isOk());
    size_t broadcasts = 0;
    for (const auto& op : pg.ops()) broadcasts += op.type == comm::OpType::kBroadcast;
    EXPECT_EQ(broadcasts, 3u);  // 8 parameters, 3 owners
    EXPECT_EQ(pg.ops().size(), 3u);
  });
}

// 4 -> 2 -> 3: a consolidated checkpoint loads at another world size and the run continues on
// the plain optimizer's trajectory.
TEST(ZeroRedundancyOptimizerTest, ReshardingFourToTwoToThreeContinuesTheTrajectory) {
  for (const auto& cfg : configs()) {
    Model ref(kSizes);
    auto plain = makeOptimizer(cfg, ref.ptrs());
    runPlain(ref, **plain, 0, 9);

    std::vector<std::vector<float>> params;  // carried between "jobs" with the checkpoint
    std::string checkpoint;
    std::vector<std::string> shards;
    const std::vector<int> worlds{4, 2, 3};
    for (size_t phase = 0; phase < worlds.size(); ++phase) {
      const int world = worlds[phase];
      std::mutex mu;
      std::vector<std::string> newShards(world);
      comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
        Model m(kSizes);
        if (phase > 0) {  // the parameters saved with the checkpoint
          for (size_t i = 0; i < kSizes.size(); ++i) m.data[i] = params[i];
        }
        auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, cfg);
        ASSERT_TRUE(zero.isOk());
        if (phase == 1) ASSERT_TRUE((*zero)->loadStateDict(checkpoint).isOk());
        if (phase == 2) ASSERT_TRUE((*zero)->loadShardStateDicts(shards).isOk());  // merged from world 2 shards
        for (int s = 3 * phase; s < 3 * phase + 3; ++s) {
          m.computeGrads(s);
          ASSERT_TRUE((*zero)->step(soon()).isOk());
        }
        auto full = (*zero)->consolidateStateDict(0, soon());
        ASSERT_TRUE(full.isOk()) << full.status();
        std::lock_guard<std::mutex> lock(mu);
        newShards[rank] = (*zero)->localStateDict();
        if (rank == 0) {
          checkpoint = *full;
          params = m.data;
        } else {
          EXPECT_TRUE(full->empty());
        }
      });
      shards = newShards;
    }
    for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(params[i], ref.data[i]) << optimizerKindName(cfg.kind) << " " << i;
    // The consolidated checkpoint is the plain optimizer's state, and loads into one.
    Model other(kSizes);
    auto plain2 = makeOptimizer(cfg, other.ptrs());
    ASSERT_TRUE((*plain2)->loadStateDict(checkpoint).isOk());
    for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ((*plain2)->state(i), (*plain)->state(i)) << i;
  }
}

// ZeRO as the only (hence first) joinable: its step() issues the Join notify, and a joined
// rank's main hook steps its own shard with the gradients it last had (no DDP here to reduce
// fresh ones) while taking part in every owner's broadcast. Oracle: parameter i is updated at
// every iteration t with the gradient of iteration min(t, batches[owner(i)] - 1).
TEST(ZeroRedundancyOptimizerTest, JoinableAloneWithUnevenStepsMatchesOwnerOracle) {
  const std::vector<int> batches{3, 6, 4};
  const auto cfg = OptimizerConfig::adam(0.05f);
  auto gradAt = [](size_t i, size_t k, int t) { return std::sin(0.3f * t + 0.1f * k + i); };
  std::vector<size_t> numels(kSizes.begin(), kSizes.end());
  const std::vector<int> owner = partitionParameters(numels, 3);
  Model ref(kSizes);
  auto plain = makeOptimizer(cfg, ref.ptrs());
  for (int t = 0; t < 6; ++t) {
    for (size_t i = 0; i < kSizes.size(); ++i)
      for (size_t k = 0; k < kSizes[i]; ++k) ref.grad[i][k] = gradAt(i, k, std::min(t, batches[owner[i]] - 1));
    ASSERT_TRUE((*plain)->step().isOk());
  }
  comm::runLocalRanks(3, [&](int rank, comm::Backend& pg) {
    Model m(kSizes);
    auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, cfg);
    ASSERT_TRUE(zero.isOk());
    auto join = join::Join::create({zero->get()});
    ASSERT_TRUE(join.isOk());
    for (int t = 0; t < batches[rank]; ++t) {
      for (size_t i = 0; i < kSizes.size(); ++i)
        for (size_t k = 0; k < kSizes[i]; ++k) m.grad[i][k] = gradAt(i, k, t);
      ASSERT_TRUE((*zero)->step(soon()).isOk());
    }
    ASSERT_TRUE((*join)->finish(soon()).isOk());
    EXPECT_EQ((*join)->rounds(), 6 - batches[rank]);
    for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(m.data[i], ref.data[i]) << "rank " << rank << " param " << i;
  });
}

TEST(ZeroRedundancyOptimizerTest, LoadRejectsMismatchedModel) {
  comm::runLocalRanks(2, [&](int, comm::Backend& pg) {
    Model m(kSizes), small({3, 4});
    auto zero = ZeroRedundancyOptimizer::create(m.ptrs(), pg, OptimizerConfig::adam());
    auto plainSmall = makeOptimizer(OptimizerConfig::adam(), small.ptrs());
    EXPECT_EQ((*zero)->loadStateDict((*plainSmall)->stateDict()).code(), StatusCode::kInvalidArgument);
    auto sgd = makeOptimizer(OptimizerConfig::sgd(0.1f, 0.9f), m.ptrs());
    EXPECT_EQ((*zero)->loadStateDict((*sgd)->stateDict()).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ((*zero)->consolidateStateDict(5, soon()).status().code(), StatusCode::kInvalidArgument);
  });
}

}  // namespace
}  // namespace ddp::optim
