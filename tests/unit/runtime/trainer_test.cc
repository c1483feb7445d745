// Trainer over LocalBackend (ranks as threads) on synthetic data. Oracles: single-process
// training on the concatenated batch, and an uninterrupted run for resume.
#include "worker/training/trainer.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>
#include <mutex>

#include "tests/support/local_backend.h"
#include "worker/data/batch_iterator.h"
#include "common/checkpoint/checkpoint_store.h"
#include "worker/training/training_faults.h"
#include "worker/training/training_setup.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trainer_runs.h"

namespace ddp::runtime {
namespace {

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("trainer_test") {}
};

TrainerConfig smallConfig() {
  TrainerConfig c = test::smallTrainerConfig("unit", 64, 32, 512);
  c.synthetic.separation = 4.0f;
  c.syntheticTestSamples = 256;
  c.epochs = 2;
  c.stopCheckEverySteps = 1;  // the tests stop at exact steps
  c.evalBatchSize = 128;
  return c;
}

struct RankOutput {
  std::vector<std::vector<float>> params;
  TrainResult result;
};

std::vector<std::vector<float>> copyParams(model::TrainableModel& m) {
  std::vector<std::vector<float>> out;
  for (Parameter* p : m.parameters()) {
    const float* d = static_cast<const float*>(p->data);
    out.emplace_back(d, d + p->numel());
  }
  return out;
}

// Runs the trainer on `world` thread-ranks; returns every rank's output.
std::vector<RankOutput> train(int world, const TrainerConfig& config, TrainerIo io = {}) {
  std::vector<RankOutput> out(static_cast<size_t>(world));
  io.progress = nullptr;
  comm::runLocalRanks(world, [&](int rank, comm::Backend& backend) {
    auto trainer = Trainer::create(config, backend, io);
    ASSERT_TRUE(trainer.isOk()) << trainer.status();
    auto r = (*trainer)->run();
    ASSERT_TRUE(r.isOk()) << r.status();
    out[static_cast<size_t>(rank)] = {copyParams((*trainer)->model()), *r};
  });
  return out;
}

bool bitwiseEqual(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) return false;
  }
  return true;
}

float maxAbsDiff(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  float m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = 0; j < a[i].size(); ++j) m = std::max(m, std::abs(a[i][j] - b[i][j]));
  }
  return m;
}

TEST(TrainerTest, LearnsAndReplicasStayIdentical) {
  auto out = train(2, smallConfig());
  EXPECT_EQ(out[0].result.steps, 2 * 512 / (2 * 16));
  EXPECT_EQ(out[0].result.epochsCompleted, 2);
  EXPECT_EQ(out[0].result.evalAccuracies.size(), 2u);
  EXPECT_GT(out[0].result.testAccuracy, 0.85);
  EXPECT_EQ(out[0].result.testAccuracy, out[1].result.testAccuracy);  // allreduced evaluation
  EXPECT_TRUE(bitwiseEqual(out[0].params, out[1].params));
}

// The figures the heartbeats carry (Note [Trainer progress observer]) against closed forms: the
// MLP 64 -> 32 -> 4 has 64*32+32 + 32*4+4 = 2212 float parameters, so every synced step hands
// 8848 gradient bytes to the reduction; 16 samples a rank a step; no compression.
TEST(TrainerTest, ProgressCountsSamplesCommBytesAndExposedCommunication) {
  TrainerConfig c = smallConfig();
  c.epochs = 1;
  std::mutex mu;
  std::map<std::thread::id, TrainingProgress> last;  // each rank's training thread: its latest
  TrainerIo io;
  io.onProgress = [&](const TrainingProgress& p) {
    std::lock_guard<std::mutex> lock(mu);
    last[std::this_thread::get_id()] = p;
  };
  auto out = train(2, c, io);
  const int64_t steps = out[0].result.steps;
  ASSERT_EQ(steps, 512 / (2 * 16));
  ASSERT_EQ(last.size(), 2u);
  for (const auto& [thread, p] : last) {
    EXPECT_EQ(p.steps, steps);
    EXPECT_EQ(p.samples, steps * 16);
    EXPECT_EQ(p.commBytes, steps * 2212 * 4);
    EXPECT_EQ(p.compressionUncompressedBytes, 0);
    EXPECT_EQ(p.compressionSentBytes, 0);
    EXPECT_GE(p.commExposedSeconds, 0);
    EXPECT_LE(p.commExposedSeconds, p.stepSeconds);
    EXPECT_GT(p.stepSeconds, 0);
  }
}

TEST(TrainerTest, TwoRanksMatchOneRankOnTheConcatenatedBatch) {
  TrainerConfig c = smallConfig();
  c.shuffle = false;
  c.epochs = 1;
  auto two = train(2, c);
  TrainerConfig one = c;
  one.batchSize = 2 * c.batchSize;
  auto single = train(1, one);
  EXPECT_EQ(two[0].result.steps, single[0].result.steps);
  // Same samples per step, mean of two half-batch means == mean over the whole batch.
  EXPECT_LT(maxAbsDiff(two[0].params, single[0].params), 2e-5f);
}

TEST(TrainerTest, GradientAccumulationMatchesTheLargerBatch) {
  TrainerConfig c = smallConfig();
  c.shuffle = false;
  c.epochs = 1;
  c.batchSize = 8;
  c.gradAccumulation = 4;
  auto acc = train(1, c);
  TrainerConfig big = c;
  big.batchSize = 32;
  big.gradAccumulation = 1;
  auto ref = train(1, big);
  EXPECT_EQ(acc[0].result.steps, ref[0].result.steps);
  EXPECT_LT(maxAbsDiff(acc[0].params, ref[0].params), 2e-5f);
}

TEST(TrainerTest, ResumeAfterStopIsBitwiseEqualToUninterruptedRun) {
  for (int world : {2, 3}) {
    SCOPED_TRACE("world " + std::to_string(world));
    TrainerConfig c = smallConfig();
    c.optimizer = optim::OptimizerConfig::adam(0.01f);
    c.lr.kind = LrScheduleKind::kCosine;
    c.lr.warmupSteps = 3;
    auto reference = train(world, c);

    TempDir dir;
    c.checkpointDir = dir.path();
    c.checkpointEverySteps = 4;
    const TrainingFaults stop = TrainingFaults().stopDuring(7);  // mid-epoch, between two periodic checkpoints
    TrainerIo io;
    io.faults = &stop;
    auto first = train(world, c, io);
    ASSERT_TRUE(first[0].result.stopped);
    ASSERT_EQ(first[0].result.steps, 7);
    auto second = train(world, c);
    ASSERT_TRUE(second[0].result.resumed);
    EXPECT_EQ(second[0].result.startStep, 7);
    EXPECT_EQ(second[0].result.steps, reference[0].result.steps);
    for (int r = 0; r < world; ++r) {
      EXPECT_TRUE(bitwiseEqual(second[r].params, reference[r].params)) << "rank " << r;
    }
    // The losses of the resumed steps are the uninterrupted run's, exactly.
    const auto& ref = reference[0].result.stepLosses;
    const auto& res = second[0].result.stepLosses;
    ASSERT_EQ(res.size(), ref.size() - 7);
    EXPECT_TRUE(std::equal(res.begin(), res.end(), ref.begin() + 7));
    EXPECT_EQ(second[0].result.testAccuracy, reference[0].result.testAccuracy);
  }
}

// Every optimizer / hook whose state lives in the checkpoint resumes to the same bits.
TEST(TrainerTest, ResumeIsBitwiseForZeroFusedAdamAndPowerSgd) {
  struct Variant {
    const char* name;
    std::function<void(TrainerConfig&)> apply;
  };
  const Variant variants[] = {
      {"zero", [](TrainerConfig& c) { c.sharding = ZeroMode::kZero1; }},
      {"dfa", [](TrainerConfig& c) { c.sharding = ZeroMode::kDfa; }},
      // Clipping and decay groups add no state: the sharded states resume as they are.
      {"zero-clipped-decay-groups", [](TrainerConfig& c) {
         c.sharding = ZeroMode::kZero1;
         c.maxGradNorm = 0.5;
         c.optimizer = optim::OptimizerConfig::adamw(0.01f, 0.9f, 0.999f, 1e-8f, 0.1f);
         c.weightDecayOn = WeightDecayOn::kLinearWeights;
       }},
      {"dfa-clipped-decay-groups", [](TrainerConfig& c) {
         c.sharding = ZeroMode::kDfa;
         c.maxGradNorm = 0.5;
         c.optimizer = optim::OptimizerConfig::adamw(0.01f, 0.9f, 0.999f, 1e-8f, 0.1f);
         c.weightDecayOn = WeightDecayOn::kLinearWeights;
       }},
      {"powersgd", [](TrainerConfig& c) {
         c.hook = CommHookType::kPowerSgd;
         c.powerSgd.matrixApproximationRank = 2;
         c.powerSgd.startPowerSgdIter = 3;
       }},
      {"accumulation", [](TrainerConfig& c) { c.gradAccumulation = 2; }},
      {"fp16-mixed-precision", [](TrainerConfig& c) { c.mixedPrecision = MixedPrecision::kFp16; }},
      {"bf16-mixed-precision-powersgd", [](TrainerConfig& c) {
         c.mixedPrecision = MixedPrecision::kBf16;
         c.hook = CommHookType::kPowerSgd;
         c.powerSgd.matrixApproximationRank = 2;
         c.powerSgd.startPowerSgdIter = 3;
       }},
  };
  for (const auto& v : variants) {
    SCOPED_TRACE(v.name);
    TrainerConfig c = smallConfig();
    c.optimizer = optim::OptimizerConfig::adam(0.01f);
    v.apply(c);
    auto reference = train(2, c);
    EXPECT_GT(reference[0].result.testAccuracy, 0.8);
    TempDir dir;
    c.checkpointDir = dir.path();
    const TrainingFaults stop = TrainingFaults().stopDuring(5);
    TrainerIo io;
    io.faults = &stop;
    auto first = train(2, c, io);
    ASSERT_TRUE(first[0].result.stopped);
    auto second = train(2, c);
    ASSERT_TRUE(second[0].result.resumed);
    EXPECT_EQ(second[0].result.startStep, 5);
    for (int r = 0; r < 2; ++r) EXPECT_TRUE(bitwiseEqual(second[r].params, reference[r].params)) << "rank " << r;
  }
}

// Mixed precision: the gradients are reduced in fp16 / bf16, so one SGD step moves the parameters
// by lr times a half-precision-rounded average. Oracle: the same step reduced in f32. The
// gradient each run applied is recovered as (p0 - p1) / lr (momentum has no effect on step 1).
TEST(TrainerTest, MixedPrecisionStepMatchesTheF32StepWithinHalfPrecision) {
  TrainerConfig c = smallConfig();
  c.epochs = 0;
  c.maxSteps = 1;
  const float lr = c.optimizer.lr;
  auto initial = buildModel(c);
  ASSERT_TRUE(initial.isOk()) << initial.status();
  const auto p0 = copyParams(**initial);
  const auto f32 = train(2, c);
  auto appliedGrads = [&](const std::vector<std::vector<float>>& p1) {
    auto g = p0;
    for (size_t i = 0; i < g.size(); ++i) {
      for (size_t j = 0; j < g[i].size(); ++j) g[i][j] = (p0[i][j] - p1[i][j]) / lr;
    }
    return g;
  };
  const auto gRef = appliedGrads(f32[0].params);
  // Unit roundoff of the reduce dtype; a few roundings per element (cast, 1/world scale, sum,
  // cast back), each relative to the largest contribution in the tensor.
  const std::pair<MixedPrecision, double> kinds[] = {{MixedPrecision::kFp16, std::ldexp(1.0, -11)},
                                                         {MixedPrecision::kBf16, std::ldexp(1.0, -8)}};
  for (const auto& [kind, unit] : kinds) {
    SCOPED_TRACE(mixedPrecisionName(kind));
    TrainerConfig m = c;
    m.mixedPrecision = kind;
    auto half = train(2, m);
    EXPECT_TRUE(bitwiseEqual(half[0].params, half[1].params));
    EXPECT_FALSE(bitwiseEqual(half[0].params, f32[0].params)) << "no rounding: the reduction was not in half precision";
    const auto g = appliedGrads(half[0].params);
    size_t differing = 0, total = 0;
    for (size_t i = 0; i < g.size(); ++i) {
      float maxRef = 0;
      for (float v : gRef[i]) maxRef = std::max(maxRef, std::abs(v));
      ASSERT_GT(maxRef, 0.f);
      const double tol = 6 * unit * maxRef + 1e-5;  // + f32 error of (p0 - p1) / lr
      for (size_t j = 0; j < g[i].size(); ++j) {
        EXPECT_NEAR(g[i][j], gRef[i][j], tol) << "param " << i << " element " << j;
        differing += g[i][j] != gRef[i][j];
        ++total;
      }
    }
    EXPECT_GT(differing, total / 10) << "too few elements rounded differently";
  }
}

TEST(TrainerTest, MixedPrecisionTrainsLikeF32) {
  TrainerConfig c = smallConfig();
  const auto f32 = train(2, c);
  for (MixedPrecision kind : {MixedPrecision::kFp16, MixedPrecision::kBf16}) {
    SCOPED_TRACE(mixedPrecisionName(kind));
    TrainerConfig m = c;
    m.mixedPrecision = kind;
    auto half = train(2, m);
    EXPECT_TRUE(bitwiseEqual(half[0].params, half[1].params));
    EXPECT_GT(half[0].result.testAccuracy, 0.85);
    EXPECT_NEAR(half[0].result.testAccuracy, f32[0].result.testAccuracy, 0.03);
    EXPECT_NEAR(half[0].result.stepLosses.back(), f32[0].result.stepLosses.back(), 0.1);
  }
}

TEST(TrainerTest, MixedPrecisionRefusesDistributedFusedAdamAndBucketViews) {
  TrainerConfig c = smallConfig();
  c.mixedPrecision = MixedPrecision::kBf16;
  c.optimizer = optim::OptimizerConfig::adam(0.01f);
  c.sharding = ZeroMode::kDfa;
  Status st = c.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("spec.mixedPrecision"), std::string::npos) << st;
  EXPECT_NE(st.message().find("spec.zero: dfa"), std::string::npos) << st;
  c.sharding = ZeroMode::kNone;
  c.gradientAsBucketView = true;
  st = c.validate();
  EXPECT_NE(st.message().find("spec.gradientAsBucketView"), std::string::npos) << st;
  c.gradientAsBucketView = false;
  c.sharding = ZeroMode::kZero1;
  EXPECT_TRUE(c.validate().isOk()) << c.validate();
}

// A TrainerConfig built in code (no JobSpec validator in between) still gets the trainer's
// refusals, the noop hook among them (it leaves gradients unreduced).
TEST(TrainerTest, ValidateRefusesTheNoopHook) {
  TrainerConfig c = smallConfig();
  c.hook = CommHookType::kNoop;
  const Status st = c.validate();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message().rfind("spec.commHook.type: noop", 0), 0u) << st;
}

// Oracle for Join with divideByInitialWorldSize: one process replays every rank's batches; at
// iteration i the gradient is the sum of the active ranks' batch means divided by the world.
std::vector<std::vector<float>> joinOracle(const TrainerConfig& c, int world) {
  auto data = loadTrainingData(c);
  EXPECT_TRUE(data.isOk());
  auto model = buildModel(c);
  EXPECT_TRUE(model.isOk());
  auto opt = optim::makeOptimizer(c.optimizer, (*model)->parameters());
  EXPECT_TRUE(opt.isOk());
  std::vector<std::vector<data::Batch>> perRank(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    data::SamplerConfig sc{data->train.size(), r, world, c.shuffle, c.seed, c.samplerMode, c.unevenCounts};
    auto sampler = data::DistributedSampler::create(sc);
    EXPECT_TRUE(sampler.isOk());
    sampler->setEpoch(0);
    data::BatchIterator it(data->train, *sampler, c.batchSize);
    data::Batch b;
    while (it.next(&b)) perRank[static_cast<size_t>(r)].push_back(b);
  }
  for (size_t i = 0;; ++i) {
    bool any = false;
    for (const auto& batches : perRank) {
      if (i >= batches.size()) continue;
      any = true;
      const auto& b = batches[i];
      model::Batch mb;
      mb.size = b.size;
      mb.features = b.images.data();
      mb.classes = b.labels.data();
      EXPECT_TRUE((*model)->forwardBackward(mb, {}, 1.0f / world).isOk());
    }
    if (!any) break;
    EXPECT_TRUE((*opt)->step().isOk());
    (*model)->zeroGrad();
  }
  return copyParams(**model);
}

TEST(TrainerTest, UnevenInputsWithJoinMatchTheOracle) {
  TrainerConfig c = smallConfig();
  c.epochs = 1;
  c.samplerMode = data::SamplerMode::kUneven;
  c.unevenCounts = {160, 64, 112};  // 10, 4 and 7 batches of 16
  c.join = true;
  auto out = train(3, c);
  EXPECT_EQ(out[0].result.steps, 10);
  EXPECT_EQ(out[1].result.steps, 4);
  EXPECT_EQ(out[2].result.steps, 7);
  for (int r = 1; r < 3; ++r) EXPECT_TRUE(bitwiseEqual(out[r].params, out[0].params)) << "rank " << r;
  EXPECT_LT(maxAbsDiff(out[0].params, joinOracle(c, 3)), 2e-5f);
}

TEST(TrainerTest, JoinThrowModeStopsEveryRankWithAClearError) {
  TrainerConfig c = smallConfig();
  c.epochs = 1;
  c.samplerMode = data::SamplerMode::kUneven;
  c.unevenCounts = {160, 64};
  c.join = true;
  c.joinThrow = true;
  std::vector<Status> errors(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& backend) {
    auto trainer = Trainer::create(c, backend, {nullptr});
    ASSERT_TRUE(trainer.isOk()) << trainer.status();
    auto r = (*trainer)->run();
    errors[static_cast<size_t>(rank)] = r.status();
  });
  for (const auto& e : errors) {
    EXPECT_EQ(e.code(), StatusCode::kAborted) << e;
  }
}

TEST(TrainerTest, StopIsAgreedOnTheNextCheckStep) {
  TrainerConfig c = smallConfig();
  c.stopCheckEverySteps = 4;
  TempDir dir;
  c.checkpointDir = dir.path();
  const TrainingFaults stop = TrainingFaults().stopDuring(5);  // requested during step 5: the ranks agree at step 8
  TrainerIo io;
  io.faults = &stop;
  auto out = train(2, c, io);
  EXPECT_TRUE(out[0].result.stopped);
  EXPECT_EQ(out[0].result.steps, 8);
  EXPECT_EQ(out[1].result.steps, 8);
  auto latest = CheckpointStore(dir.path()).findLatestComplete(2);
  ASSERT_TRUE(latest.isOk() && latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 8);
}

TEST(TrainerTest, CorruptLatestCheckpointFallsBackToThePreviousOne) {
  TrainerConfig c = smallConfig();
  auto reference = train(2, c);
  TempDir dir;
  c.checkpointDir = dir.path();
  c.checkpointEverySteps = 4;
  c.checkpointEachEpoch = false;
  const TrainingFaults stop = TrainingFaults().stopDuring(10);
  TrainerIo io;
  io.faults = &stop;
  train(2, c, io);  // checkpoints at 4, 8 and 10 (the stop)
  CheckpointStore store(dir.path());
  auto steps = store.listSteps();
  ASSERT_TRUE(steps.isOk());
  EXPECT_EQ(*steps, (std::vector<int64_t>{4, 8, 10}));
  // Damage rank 1's shard of step 10: resume must use step 8 and still end identical.
  {
    std::string p = store.shardPath(10, 1);
    FILE* f = std::fopen(p.c_str(), "r+b");
    ASSERT_NE(f, nullptr);
    std::fseek(f, -20, SEEK_END);
    std::fputc(0x5a, f);
    std::fclose(f);
  }
  auto second = train(2, c);
  ASSERT_TRUE(second[0].result.resumed);
  EXPECT_EQ(second[0].result.startStep, 8);
  EXPECT_TRUE(bitwiseEqual(second[0].params, reference[0].params));
}

}  // namespace
}  // namespace ddp::runtime
