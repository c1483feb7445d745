// Elastic training in the trainer (Note [Elastic batch] in worker/training/trainer.cc, Note
// [Healing from live peers] in worker/training/peer_state.h) over LocalBackend (ranks as threads)
// on synthetic data. Oracle: one process on the concatenated global batch. Every step of an
// elastic run reads the same block of the epoch's permutation whatever the world size (Note
// [Elastic sampler]), and each rank's gradient is weighted by its share of it, so a run that
// changes its world size follows the single-process run (to float rounding), and a healed
// newcomer holds exactly what its source holds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

#include "tests/support/local_backend.h"
#include "worker/training/peer_state.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {
namespace {

TrainerConfig elasticConfig(int nominal) {
  TrainerConfig c;
  c.job = "elastic";
  c.seed = 5;
  c.model = ModelType::kMlp;
  c.mlp.inputs = 32;
  c.mlp.hidden = {16};
  c.mlp.classes = 4;
  c.data = DatasetKind::kSynthetic;
  c.synthetic.samples = 640;
  c.synthetic.sampleShape = {32};
  c.synthetic.classes = 4;
  c.synthetic.separation = 4.0f;
  c.synthetic.seed = 9;
  c.syntheticTestSamples = 128;
  c.batchSize = 16;  // per worker at `nominal` workers
  c.nominalWorldSize = nominal;
  c.epochs = 2;
  c.optimizer = optim::OptimizerConfig::sgd(0.05f, 0.9f);
  c.logEverySteps = 1000;
  c.evalBatchSize = 128;
  return c;
}

using Params = std::vector<std::vector<float>>;

Params copyParams(model::TrainableModel& m) {
  Params out;
  for (Parameter* p : m.parameters()) {
    const float* d = static_cast<const float*>(p->data);
    out.emplace_back(d, d + p->numel());
  }
  return out;
}

float maxAbsDiff(const Params& a, const Params& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  }
  return m;
}

bool bitwiseEqual(const Params& a, const Params& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) return false;
  }
  return true;
}

struct RankRun {
  Params params;
  TrainResult result;
  std::optional<PeerState> peer;  // taken after the run
};

// `world` thread-ranks; rank r starts with peers[r] (if any) and exchanges peer states when
// `heal`; stops after `stopAfterStep` steps (-1: the whole run).
std::vector<RankRun> run(int world, const TrainerConfig& config, bool heal = false,
                         const std::vector<std::optional<PeerState>>& peers = {}, int64_t stopAfterStep = -1) {
  std::vector<RankRun> out(static_cast<size_t>(world));
  TrainingFaults faults;
  if (stopAfterStep >= 0) faults.stopDuring(stopAfterStep);
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    TrainerIo io;
    io.progress = nullptr;
    io.faults = &faults;
    io.exchangePeerState = heal;
    if (static_cast<size_t>(rank) < peers.size() && peers[static_cast<size_t>(rank)]) {
      io.peerState = &*peers[static_cast<size_t>(rank)];
    }
    auto trainer = Trainer::create(config, backend, io);
    ASSERT_TRUE(trainer.isOk()) << trainer.status();
    auto r = (*trainer)->run();
    ASSERT_TRUE(r.isOk()) << r.status();
    RankRun& mine = out[static_cast<size_t>(rank)];
    mine.params = copyParams((*trainer)->model());
    mine.result = *r;
    mine.peer = (*trainer)->peerState();
  });
  return out;
}

// The oracle: one process reading the global batch (16 x 4 = 64) per step.
Params singleProcess(const TrainerConfig& elastic, int globalBatch, float lr) {
  TrainerConfig c = elastic;
  c.batchSize = globalBatch;
  c.globalBatch = 0;
  c.nominalWorldSize = 1;
  c.optimizer = optim::OptimizerConfig::sgd(lr, 0.9f);
  return run(1, c)[0].params;
}

TEST(ElasticTrainerTest, KeptGlobalBatchAtThreeWorkersFollowsTheSingleProcessRun) {
  // Nominal 4 x 16 = 64 samples a step; at 3 workers 22, 21, 21 (block layout, weighted).
  const TrainerConfig c = elasticConfig(4);
  auto three = run(3, c);
  EXPECT_EQ(three[0].result.steps, 2 * 640 / 64);
  const Params oracle = singleProcess(c, 64, 0.05f);
  EXPECT_TRUE(bitwiseEqual(three[0].params, three[1].params));
  EXPECT_TRUE(bitwiseEqual(three[0].params, three[2].params));
  EXPECT_LT(maxAbsDiff(three[0].params, oracle), 2e-5f);
  EXPECT_GT(three[0].result.testAccuracy, 0.8);
}

TEST(ElasticTrainerTest, AGlobalBatchPinnedByAScaleIsKept) {
  // Submitted with 4 x 16, scaled to 3: the controller pinned spec.data.globalBatchSize = 64 and
  // workers.count is 3. Three workers still read 64 samples a step (22, 21, 21).
  TrainerConfig c = elasticConfig(3);
  c.globalBatch = 64;
  auto three = run(3, c);
  EXPECT_EQ(three[0].result.steps, 2 * 640 / 64);
  EXPECT_LT(maxAbsDiff(three[0].params, singleProcess(c, 64, 0.05f)), 2e-5f);
}

TEST(ElasticTrainerTest, KeptPerWorkerBatchScalesTheLearningRateLinearly) {
  // keepGlobalBatch false: 2 workers of nominal 4 keep 16 each (global 32) at lr x 2/4.
  TrainerConfig c = elasticConfig(4);
  c.keepGlobalBatch = false;
  auto two = run(2, c);
  EXPECT_EQ(two[0].result.steps, 2 * 640 / 32);
  EXPECT_LT(maxAbsDiff(two[0].params, singleProcess(c, 32, 0.025f)), 2e-5f);
}

TEST(ElasticTrainerTest, TheScheduleFollowsTheSamplesSeen) {
  // keepGlobalBatch false at 2 of nominal 4 workers: each step is half a nominal step, so step
  // decay every 3 nominal steps happens every 6 steps here, as for one process reading the same
  // 32 samples a step with stepSize 6 (and half the learning rate: the linear rule).
  TrainerConfig c = elasticConfig(4);
  c.keepGlobalBatch = false;
  c.lr.kind = LrScheduleKind::kStep;
  c.lr.stepSize = 3;
  c.lr.gamma = 0.5;
  auto two = run(2, c);
  TrainerConfig one = c;
  one.lr.stepSize = 6;
  EXPECT_LT(maxAbsDiff(two[0].params, singleProcess(one, 32, 0.025f)), 2e-5f);
  // Without the conversion (stepSize 3 in this run's own steps) the oracle is another run.
  one.lr.stepSize = 3;
  EXPECT_GT(maxAbsDiff(two[0].params, singleProcess(one, 32, 0.025f)), 1e-3f);
}

TEST(ElasticTrainerTest, FourToThreeToFourWithHealingFollowsTheSingleProcessRun) {
  // 4 workers for 7 steps; 3 (one lost: only ranks 0-2 carry state) for 6; 4 again (a newcomer)
  // to the end. Both changes are mid-epoch (10 steps an epoch); every step reads the same 64
  // samples as the oracle's.
  const TrainerConfig c = elasticConfig(4);
  auto first = run(4, c, true, {}, 7);
  ASSERT_TRUE(first[0].peer.has_value());
  EXPECT_EQ(first[0].peer->step, 7);
  std::vector<std::optional<PeerState>> survivors = {first[0].peer, first[1].peer, first[2].peer};
  auto second = run(3, c, true, survivors, 13);
  EXPECT_TRUE(second[0].result.healed);
  EXPECT_EQ(second[0].result.startStep, 7);
  ASSERT_TRUE(second[2].peer.has_value());
  std::vector<std::optional<PeerState>> grown = {second[0].peer, second[1].peer, second[2].peer, std::nullopt};
  auto third = run(4, c, true, grown);
  EXPECT_TRUE(third[3].result.healed);
  EXPECT_EQ(third[3].result.startStep, 13);
  EXPECT_EQ(third[0].result.steps, 2 * 640 / 64);
  for (int r = 1; r < 4; ++r) EXPECT_TRUE(bitwiseEqual(third[0].params, third[static_cast<size_t>(r)].params)) << r;
  EXPECT_LT(maxAbsDiff(third[0].params, singleProcess(c, 64, 0.05f)), 2e-5f);
}

TEST(ElasticTrainerTest, HealedNewcomerEqualsItsSourceBitwiseAfterTheFirstStep) {
  const TrainerConfig c = elasticConfig(2);
  auto before = run(2, c, true, {}, 5);
  ASSERT_TRUE(before[1].peer.has_value());
  // Rank 1 survives (it becomes the source); two newcomers join.
  auto after = run(3, c, true, {std::nullopt, before[1].peer, std::nullopt}, 6);
  for (int r = 0; r < 3; ++r) {
    const RankRun& x = after[static_cast<size_t>(r)];
    EXPECT_TRUE(x.result.healed) << r;
    EXPECT_EQ(x.result.startStep, 5) << r;
    EXPECT_EQ(x.result.steps, 6) << r;
    ASSERT_TRUE(x.peer.has_value()) << r;
    EXPECT_TRUE(bitwiseEqual(x.params, after[1].params)) << "rank " << r << " parameters";
    EXPECT_EQ(x.peer->sections.at("optimizer"), after[1].peer->sections.at("optimizer")) << "rank " << r << " optimizer";
    EXPECT_EQ(x.peer->sections.at("trainer"), after[1].peer->sections.at("trainer")) << r;
  }
}

TEST(ElasticTrainerTest, NoPeerStateMeansNoHealingAndShardedOptimizersHaveNone) {
  TrainerConfig c = elasticConfig(2);
  auto fresh = run(2, c, true, {}, 2);
  EXPECT_FALSE(fresh[0].result.healed);
  EXPECT_EQ(fresh[0].result.startStep, 0);
  c.sharding = ZeroMode::kZero1;
  auto zero = run(2, c, true, {}, 2);
  EXPECT_FALSE(zero[0].peer.has_value()) << "ZeRO-1 state is not whole on one rank: the checkpoint is the fallback";
}

TEST(PeerStateTest, EncodesAndDecodes) {
  PeerState p;
  p.step = 42;
  p.worldSize = 3;
  p.generation = 7;
  p.sections = {{"model", std::string("\0\1\2", 3)}, {"trainer", "t"}};
  auto back = PeerState::decode(p.encode());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->step, 42);
  EXPECT_EQ(back->worldSize, 3);
  EXPECT_EQ(back->generation, 7);
  EXPECT_EQ(back->sections, p.sections);
  std::string bad = p.encode();
  bad[bad.size() - 1] ^= 1;
  EXPECT_FALSE(PeerState::decode(bad).isOk());
}

}  // namespace
}  // namespace ddp::runtime

namespace ddp::runtime {
namespace {

TEST(ElasticTrainerTest, ShardedOptimizersWithAKeptGlobalBatchFollowTheSingleProcessRun) {
  for (ZeroMode mode : {ZeroMode::kZero1, ZeroMode::kDfa}) {
    TrainerConfig c = elasticConfig(4);
    c.sharding = mode;
    c.optimizer = mode == ZeroMode::kDfa ? optim::OptimizerConfig::adam(0.003f) : optim::OptimizerConfig::sgd(0.05f, 0.9f);
    auto three = run(3, c);
    TrainerConfig one = c;
    one.batchSize = 64;
    one.nominalWorldSize = 1;
    const Params oracle = run(1, one)[0].params;
    EXPECT_LT(maxAbsDiff(three[0].params, oracle), 2e-5f) << zeroModeName(mode);
  }
}

}  // namespace
}  // namespace ddp::runtime
