// Optimizer state written at world size 4 resumes at 2 and at 3 (Note [Checkpoints at any world
// size] in worker/checkpointing/checkpoint_coordinator.h), for every optimizer, through the trainer's
// OptimizerRunner::loadState (plain SGD / Adam / AdamW, ZeRO-1) or DistributedFusedAdam's
// loadStateDict. Oracles: the state saved again after the load equals the saved one bitwise
// (consolidated for ZeRO, the gathered stream for DFA), and the next step equals a plain,
// non-sharded optimizer's (bitwise for plain and ZeRO, which run the same kernel on the same
// inputs; within float rounding for DFA, whose reduce-scatter sums in another order).
#include <gtest/gtest.h>

#include <cmath>
#include <mutex>

#include "tests/support/float_params.h"
#include "tests/support/local_backend.h"
#include "worker/optim/distributed_fused_adam.h"
#include "worker/optim/optimizer.h"
#include "worker/training/training_setup.h"

namespace ddp::optim {
namespace {

using runtime::OptimizerRunner;
using runtime::TrainerConfig;


Deadline soon() { return Deadline::after(std::chrono::seconds(30)); }

struct Model : test::FloatParams {
  explicit Model(const std::vector<size_t>& sizes)
      : FloatParams(sizes, [](size_t i, size_t k) { return std::sin(0.37f * (i + 1) + 0.11f * k); }) {}
  // Gradients as DDP would leave them: identical on every rank.
  void averagedGrads(int step) {
    for (size_t i = 0; i < data.size(); ++i)
      for (size_t k = 0; k < data[i].size(); ++k) grad[i][k] = std::cos(3.f * data[i][k] + 0.5f * step) + 0.01f * k;
  }
  // Rank r's own gradient (DFA reduces it itself).
  float localGrad(size_t i, size_t k, int step, int rank) const {
    return std::cos(3.f * data[i][k] + 0.5f * step + rank) * (1.f + 0.25f * rank);
  }
  void localGrads(int step, int rank) {
    for (size_t i = 0; i < data.size(); ++i)
      for (size_t k = 0; k < data[i].size(); ++k) grad[i][k] = localGrad(i, k, step, rank);
  }
  void summedGrads(int step, int world) {
    for (size_t i = 0; i < data.size(); ++i)
      for (size_t k = 0; k < data[i].size(); ++k) {
        float s = 0.f;
        for (int r = 0; r < world; ++r) s += localGrad(i, k, step, r);
        grad[i][k] = s;
      }
  }
};

const std::vector<size_t> kSizes{31, 7, 0, 64, 13, 5, 40, 1, 300};
constexpr int kSavedWorld = 4;
constexpr int kStepsBefore = 3;

std::vector<OptimizerConfig> replicatedConfigs() {
  return {OptimizerConfig::sgd(0.05f, 0.9f, 0.1f, 0.01f), OptimizerConfig::adam(0.01f, 0.9f, 0.99f, 1e-6f, 0.02f),
          OptimizerConfig::adamw(0.01f)};
}

TrainerConfig runnerConfig(const OptimizerConfig& o, ZeroMode sharding) {
  TrainerConfig c;
  c.optimizer = o;
  c.sharding = sharding;
  return c;
}

// Saved at world 4 after kStepsBefore steps on averaged gradients: every rank's state and the
// parameters; `consolidated` (ZeRO) the full state.
struct Saved {
  std::vector<std::string> states;
  std::vector<std::vector<float>> params;
  std::string consolidated;
};

Saved saveAtWorldFour(const TrainerConfig& c) {
  Saved out;
  out.states.resize(kSavedWorld);
  std::mutex mu;
  comm::runLocalRanks(kSavedWorld, [&](int rank, comm::Backend& pg) {
    Model m(kSizes);
    auto runner = OptimizerRunner::create(c, m.ptrs(), pg);
    ASSERT_TRUE(runner.isOk()) << runner.status();
    for (int s = 0; s < kStepsBefore; ++s) {
      m.averagedGrads(s);
      ASSERT_TRUE((*runner)->step(soon()).isOk());
    }
    auto st = (*runner)->saveState(soon());
    ASSERT_TRUE(st.isOk()) << st.status();
    std::string full;
    if ((*runner)->zero() != nullptr) {
      auto f = (*runner)->zero()->consolidateStateDict(0, soon());
      ASSERT_TRUE(f.isOk()) << f.status();
      full = *f;
    }
    std::lock_guard<std::mutex> lock(mu);
    out.states[static_cast<size_t>(rank)] = *st;
    if (rank == 0) {
      out.params = m.data;
      out.consolidated = full;
    }
  });
  return out;
}

// Plain SGD/Adam/AdamW and ZeRO-1: 4 -> 2 and 4 -> 3.
TEST(ElasticOptimizerTest, ReplicatedAndZeroStateWrittenAtFourResumesAtTwoAndThree) {
  for (ZeroMode sharding : {ZeroMode::kNone, ZeroMode::kZero1}) {
    for (const OptimizerConfig& cfg : replicatedConfigs()) {
      SCOPED_TRACE(std::string(optimizerKindName(cfg.kind)) + (sharding == ZeroMode::kZero1 ? " zero1" : " plain"));
      const TrainerConfig c = runnerConfig(cfg, sharding);
      // Oracle: one process, the same steps on the same gradients.
      Model ref(kSizes);
      auto plain = makeOptimizer(cfg, ref.ptrs());
      ASSERT_TRUE(plain.isOk());
      for (int s = 0; s <= kStepsBefore; ++s) {
        ref.averagedGrads(s);
        ASSERT_TRUE((*plain)->step().isOk());
      }
      const Saved saved = saveAtWorldFour(c);
      if (sharding == ZeroMode::kNone) {
        for (const std::string& s : saved.states) EXPECT_EQ(s, saved.states[0]) << "replicated state";
      }
      for (int world : {2, 3}) {
        SCOPED_TRACE("world " + std::to_string(world));
        comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
          Model m(kSizes);
          m.data = saved.params;
          auto runner = OptimizerRunner::create(c, m.ptrs(), pg);
          ASSERT_TRUE(runner.isOk());
          ASSERT_TRUE((*runner)->loadState(saved.states, rank).isOk());
          if (sharding == ZeroMode::kNone) {
            auto again = (*runner)->saveState(soon());
            ASSERT_TRUE(again.isOk());
            EXPECT_EQ(*again, saved.states[0]) << "rank " << rank;
          } else {
            auto full = (*runner)->zero()->consolidateStateDict(0, soon());
            ASSERT_TRUE(full.isOk()) << full.status();
            if (rank == 0) EXPECT_EQ(*full, saved.consolidated) << "the consolidated state, bitwise";
          }
          m.averagedGrads(kStepsBefore);
          ASSERT_TRUE((*runner)->step(soon()).isOk());
          for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(m.data[i], ref.data[i]) << "rank " << rank << " param " << i;
        });
      }
    }
  }
}

// A grown job: ranks that did not exist in the saved world load too (plain: rank 0's state;
// ZeRO: the shards resharded), 2 -> 5.
TEST(ElasticOptimizerTest, GrownRanksLoadReplicatedAndZeroState) {
  for (ZeroMode sharding : {ZeroMode::kNone, ZeroMode::kZero1}) {
    const OptimizerConfig cfg = OptimizerConfig::adam(0.01f);
    const TrainerConfig c = runnerConfig(cfg, sharding);
    Model ref(kSizes);
    auto plain = makeOptimizer(cfg, ref.ptrs());
    for (int s = 0; s < 2; ++s) {
      ref.averagedGrads(s);
      ASSERT_TRUE((*plain)->step().isOk());
    }
    std::vector<std::string> states(2);
    comm::runLocalRanks(2, [&](int rank, comm::Backend& pg) {
      Model m(kSizes);
      auto runner = OptimizerRunner::create(c, m.ptrs(), pg);
      for (int s = 0; s < 2; ++s) {
        m.averagedGrads(s);
        ASSERT_TRUE((*runner)->step(soon()).isOk());
      }
      states[static_cast<size_t>(rank)] = *(*runner)->saveState(soon());
    });
    ref.averagedGrads(2);
    ASSERT_TRUE((*plain)->step().isOk());
    Model start(kSizes);
    auto replay = makeOptimizer(cfg, start.ptrs());
    for (int s = 0; s < 2; ++s) {
      start.averagedGrads(s);
      ASSERT_TRUE((*replay)->step().isOk());
    }
    comm::runLocalRanks(5, [&](int rank, comm::Backend& pg) {
      Model m(kSizes);
      m.data = start.data;
      auto runner = OptimizerRunner::create(c, m.ptrs(), pg);
      ASSERT_TRUE((*runner)->loadState(states, rank).isOk()) << "rank " << rank;
      m.averagedGrads(2);
      ASSERT_TRUE((*runner)->step(soon()).isOk());
      for (size_t i = 0; i < kSizes.size(); ++i) EXPECT_EQ(m.data[i], ref.data[i]) << "rank " << rank << " param " << i;
    });
  }
}

// DistributedFusedAdam: the stream gathered at world 4 (bucket cap 100 floats: several buckets,
// parameters split across shards) loads at 2 and 3 with another cap; gathered again it is the
// same bytes, and the next step follows plain Adam on the averaged gradients.
TEST(ElasticOptimizerTest, DistributedFusedAdamWrittenAtFourResumesAtTwoAndThree) {
  for (const OptimizerConfig& cfg : {OptimizerConfig::adam(0.01f, 0.9f, 0.99f, 1e-6f, 0.01f), OptimizerConfig::adamw(0.02f)}) {
    SCOPED_TRACE(optimizerKindName(cfg.kind));
    std::string stream;
    std::vector<std::vector<float>> params;
    comm::runLocalRanks(kSavedWorld, [&](int rank, comm::Backend& pg) {
      Model m(kSizes);
      DistributedFusedAdamOptions o;
      o.config = cfg;
      o.bucketCapBytes = 100 * sizeof(float);
      auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
      ASSERT_TRUE(dfa.isOk()) << dfa.status();
      for (int s = 0; s < kStepsBefore; ++s) {
        m.localGrads(s, rank);
        ASSERT_TRUE((*dfa)->step(soon()).isOk());
      }
      auto st = (*dfa)->stateDict(0, soon());
      ASSERT_TRUE(st.isOk()) << st.status();
      if (rank == 0) {
        stream = *st;
        params = m.data;
      }
    });
    for (int world : {2, 3}) {
      SCOPED_TRACE("world " + std::to_string(world));
      Model ref(kSizes);
      auto plain = makeOptimizer(cfg, ref.ptrs());
      for (int s = 0; s <= kStepsBefore; ++s) {
        const int w = s < kStepsBefore ? kSavedWorld : world;
        ref.summedGrads(s, w);
        ASSERT_TRUE((*plain)->step(1.f / static_cast<float>(w)).isOk());
      }
      comm::runLocalRanks(world, [&](int rank, comm::Backend& pg) {
        Model m(kSizes);
        m.data = params;
        DistributedFusedAdamOptions o;
        o.config = cfg;
        o.config.lr = 0.5f;  // replaced by the saved hyperparameters
        o.bucketCapBytes = 250 * sizeof(float);
        auto dfa = DistributedFusedAdam::create(m.ptrs(), pg, o);
        ASSERT_TRUE(dfa.isOk());
        ASSERT_TRUE((*dfa)->loadStateDict(stream).isOk());
        EXPECT_EQ((*dfa)->stepCount(), kStepsBefore);
        auto again = (*dfa)->stateDict(0, soon());
        ASSERT_TRUE(again.isOk()) << again.status();
        if (rank == 0) EXPECT_EQ(*again, stream) << "the gathered state, bitwise";
        m.localGrads(kStepsBefore, rank);
        ASSERT_TRUE((*dfa)->step(soon()).isOk());
        test::expectAllNear(m.data, ref.data, 2e-6f, "rank " + std::to_string(rank));
      });
    }
  }
}

}  // namespace
}  // namespace ddp::optim
