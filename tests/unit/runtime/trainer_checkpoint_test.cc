// The trainer's checkpoint start checks over LocalBackend (ranks as threads) and real files: a
// job resumes only its own checkpoints (name + trajectory hash), holds its directory's lock for
// its lifetime, fails the start on a directory it cannot write, and a resized run resumes the
// old world size's checkpoint and keeps (and resumes) the checkpoints it writes.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>

#include "common/checkpoint/atomic_file.h"
#include "common/checkpoint/checkpoint_store.h"
#include "tests/support/local_backend.h"
#include "tests/support/temp_dir.h"
#include "tests/support/trainer_runs.h"
#include "worker/training/trainer.h"
#include "worker/training/training_faults.h"

namespace ddp::runtime {
namespace {

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("trainer_ckpt_test") {}
};

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TrainerConfig smallConfig(const std::string& dir) {
  TrainerConfig c = test::smallTrainerConfig("job-a", 32, 16, 256);
  c.checkpointDir = dir;
  return c;
}

std::vector<Result<TrainResult>> train(int world, const TrainerConfig& config, int64_t stopAfterStep = -1) {
  return test::trainOnThreads(world, config, stopAfterStep);
}

// Problem 2: a job refuses another job's checkpoint (another name; the same name with another
// trajectory) at start, and `ddpctl run` of the same spec still resumes its own.
TEST(TrainerCheckpointTest, JobRefusesAnotherJobsCheckpointAndResumesItsOwn) {
  TempDir dir;
  const TrainerConfig a = smallConfig(dir.path());
  auto first = train(2, a, 5);
  ASSERT_TRUE(first[0].isOk()) << first[0].status();
  ASSERT_TRUE(first[0]->stopped);

  TrainerConfig b = a;
  b.job = "job-b";
  for (const auto& r : train(2, b)) {
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
    EXPECT_TRUE(contains(r.status().message(), dir.path())) << r.status();
  }
  const Status refused = train(2, b)[0].status();
  EXPECT_TRUE(contains(refused.message(), "belongs to job 'job-a', not to this job 'job-b'")) << refused;

  TrainerConfig changed = a;
  changed.optimizer.lr = 0.1f;
  const Status otherSpec = train(2, changed)[0].status();
  EXPECT_EQ(otherSpec.code(), StatusCode::kPermissionDenied) << otherSpec;
  EXPECT_TRUE(contains(otherSpec.message(), "checkpoint directory " + dir.path())) << otherSpec;
  EXPECT_TRUE(contains(otherSpec.message(), "written by job 'job-a' with a different spec")) << otherSpec;
  EXPECT_TRUE(contains(otherSpec.message(), "use a fresh checkpoint directory")) << otherSpec;

  // Settings outside the trajectory may change between runs of the same job.
  TrainerConfig same = a;
  same.keepCheckpoints = 5;
  same.checkpointEverySteps = 3;
  same.logEverySteps = 7;
  same.evalBatchSize = 32;
  same.collectiveTimeout = std::chrono::minutes(1);
  auto resumed = train(2, same);
  ASSERT_TRUE(resumed[0].isOk()) << resumed[0].status();
  EXPECT_TRUE(resumed[0]->resumed);
  EXPECT_EQ(resumed[0]->startStep, 5);
}

TEST(TrainerCheckpointTest, TrajectoryHashCoversWhatChangesTrainingAndNothingElse) {
  const TrainerConfig base = smallConfig("/ckpt");
  const uint64_t h = trajectoryHash(base);
  EXPECT_EQ(h, trajectoryHash(base)) << "deterministic";
  const std::vector<std::pair<const char*, std::function<void(TrainerConfig&)>>> changes = {
      {"seed", [](TrainerConfig& c) { c.seed = 8; }},
      {"model", [](TrainerConfig& c) { c.mlp.hidden = {16, 16}; }},
      {"activation", [](TrainerConfig& c) { c.mlp.activation = kernels::Activation::kTanh; }},
      {"data set", [](TrainerConfig& c) { c.synthetic.noise = 2.0f; }},
      {"train limit", [](TrainerConfig& c) { c.trainLimit = 100; }},
      {"shuffle", [](TrainerConfig& c) { c.shuffle = false; }},
      {"batch size", [](TrainerConfig& c) { c.batchSize = 8; }},
      {"accumulation", [](TrainerConfig& c) { c.gradAccumulation = 2; }},
      {"optimizer", [](TrainerConfig& c) { c.optimizer = optim::OptimizerConfig::adam(0.05f); }},
      {"lr", [](TrainerConfig& c) { c.optimizer.lr = 0.01f; }},
      {"momentum", [](TrainerConfig& c) { c.optimizer.momentum = 0.5f; }},
      {"schedule", [](TrainerConfig& c) { c.lr.kind = LrScheduleKind::kCosine; }},
      {"warmup", [](TrainerConfig& c) { c.lr.warmupSteps = 3; }},
      {"clipping", [](TrainerConfig& c) { c.maxGradNorm = 1.0; }},
      {"hook", [](TrainerConfig& c) { c.hook = CommHookType::kFp16; }},
      {"powersgd rank", [](TrainerConfig& c) {
         c.hook = CommHookType::kPowerSgd;
         c.powerSgd.matrixApproximationRank = 3;
       }},
      {"mixed precision", [](TrainerConfig& c) { c.mixedPrecision = MixedPrecision::kBf16; }},
      {"zero", [](TrainerConfig& c) { c.sharding = ZeroMode::kZero1; }},
      {"epochs", [](TrainerConfig& c) { c.epochs = 2; }},
      {"max steps", [](TrainerConfig& c) { c.maxSteps = 10; }},
  };
  for (const auto& [what, apply] : changes) {
    TrainerConfig c = base;
    apply(c);
    EXPECT_NE(trajectoryHash(c), h) << what;
  }
  const std::vector<std::pair<const char*, std::function<void(TrainerConfig&)>>> same = {
      {"job name (recorded beside the hash)", [](TrainerConfig& c) { c.job = "other"; }},
      {"checkpoint dir", [](TrainerConfig& c) { c.checkpointDir = "/elsewhere"; }},
      {"checkpoint settings", [](TrainerConfig& c) {
         c.keepCheckpoints = 9;
         c.checkpointEverySteps = 5;
         c.checkpointEachEpoch = true;
         c.resume = false;
       }},
      {"logging", [](TrainerConfig& c) { c.logEverySteps = 1; }},
      {"timeouts", [](TrainerConfig& c) {
         c.collectiveTimeout = std::chrono::seconds(1);
         c.stopCheckEverySteps = 4;
       }},
      {"evaluation", [](TrainerConfig& c) {
         c.evalBatchSize = 10;
         c.evalEachEpoch = false;
         c.testLimit = 5;
         c.syntheticTestSamples = 10;
       }},
      {"data dir", [](TrainerConfig& c) { c.dataDir = "/data"; }},
      {"device", [](TrainerConfig& c) { c.device = Device::cuda(0); }},
      {"buckets and threads", [](TrainerConfig& c) {
         c.bucketCapMb = 1;
         c.cpuThreads = 4;
       }},
      {"cnn fields of an mlp job", [](TrainerConfig& c) { c.cnn.kernel = 5; }},
      {"powersgd options without powersgd", [](TrainerConfig& c) { c.powerSgd.matrixApproximationRank = 3; }},
      {"lr filled in by the trainer", [](TrainerConfig& c) {
         c.lr.baseLr = 0.5;
         c.lr.totalSteps = 99;
       }},
  };
  for (const auto& [what, apply] : same) {
    TrainerConfig c = base;
    apply(c);
    EXPECT_EQ(trajectoryHash(c), h) << what;
  }
}

// Problem 3: the directory is locked for the trainer's lifetime; another job is refused naming
// the holder; destroying the trainer (in-process recovery) frees it for the next one.
TEST(TrainerCheckpointTest, DirectoryIsLockedForTheTrainersLifetime) {
  TempDir dir;
  TrainerConfig a = smallConfig(dir.path());
  a.collectiveTimeout = std::chrono::seconds(1);  // bounds the same-job wait below (half of it)
  TrainerIo io;
  io.progress = nullptr;
  comm::runLocalRanks(1, [&](int, comm::Backend& backend) {
    auto holder = Trainer::create(a, backend, io);
    ASSERT_TRUE(holder.isOk()) << holder.status();

    TrainerConfig b = a;
    b.job = "job-b";
    auto refused = train(2, b);
    for (const auto& r : refused) EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
    EXPECT_TRUE(contains(refused[0].status().message(), "checkpoint directory " + dir.path() + " is in use by job 'job-a'"))
        << refused[0].status();
    EXPECT_TRUE(contains(refused[1].status().message(), "rank 0: checkpoint directory " + dir.path() + " is in use by job 'job-a'"))
        << refused[1].status();

    // The same job while the first still holds it: waits, then says so.
    const Status twice = train(1, a)[0].status();
    EXPECT_EQ(twice.code(), StatusCode::kFailedPrecondition) << twice;
    EXPECT_TRUE(contains(twice.message(), "still locked by another run of job 'job-a'")) << twice;

    holder->reset();  // in-process recovery: destroyed, then created again
    auto again = Trainer::create(a, backend, io);
    ASSERT_TRUE(again.isOk()) << again.status();
    auto r = (*again)->run();
    ASSERT_TRUE(r.isOk()) << r.status();
  });
}

// Problem 4: a directory that cannot be written fails the start on every rank, naming it.
TEST(TrainerCheckpointTest, UnwritableCheckpointDirectoryFailsTheStart) {
  TempDir dir;
  ASSERT_TRUE(writeFileAtomic(dir.path() + "/file", "x").isOk());
  const std::string bad = dir.path() + "/file/ckpt";  // under a regular file: fails for root too
  for (const auto& r : train(2, smallConfig(bad))) {
    ASSERT_FALSE(r.isOk());
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << r.status();
    EXPECT_TRUE(contains(r.status().message(), "checkpoint directory " + bad)) << r.status();
    EXPECT_TRUE(contains(r.status().message(), "Not a directory")) << r.status();
  }
}

// A run resized from 2 workers to 1 resumes the 2-worker checkpoint (Note [Checkpoints at any
// world size] in checkpoint_coordinator.h), and retention keeps the checkpoints it writes, so
// its next start resumes them.
TEST(TrainerCheckpointTest, ResizedRunResumesTheCheckpointItWrote) {
  TempDir dir;
  TrainerConfig c = smallConfig(dir.path());
  c.checkpointEverySteps = 2;
  c.keepCheckpoints = 2;
  c.epochs = 2;
  auto two = train(2, c, 6);  // checkpoints 2, 4, 6 (the stop) -> keeps 4, 6
  ASSERT_TRUE(two[0].isOk()) << two[0].status();
  EXPECT_EQ(*CheckpointStore(dir.path()).listSteps(), (std::vector<int64_t>{4, 6}));

  auto one = train(1, c, 8);  // resumes step 6, checkpoints 8 (the stop)
  ASSERT_TRUE(one[0].isOk()) << one[0].status();
  EXPECT_TRUE(one[0]->resumed);
  EXPECT_EQ(one[0]->startStep, 6);
  EXPECT_TRUE(one[0]->stopped);
  EXPECT_EQ(*CheckpointStore(dir.path()).listSteps(), (std::vector<int64_t>{6, 8}));

  auto resumed = train(1, c, 9);
  ASSERT_TRUE(resumed[0].isOk()) << resumed[0].status();
  EXPECT_TRUE(resumed[0]->resumed);
  EXPECT_EQ(resumed[0]->startStep, 8);
}

// A periodic checkpoint due at an epoch's last step is written (after the epoch ends), not
// skipped: 256 samples over 2 ranks x 16 are 8 steps an epoch, so everySteps 4 falls on the
// epoch ends 8 and 16 as well as on 4 and 12. The one at step 8 resumes into epoch 2.
TEST(TrainerCheckpointTest, APeriodicCheckpointDueAtAnEpochEndIsWritten) {
  TempDir dir;
  TrainerConfig c = smallConfig(dir.path());
  c.checkpointEverySteps = 4;
  c.keepCheckpoints = 10;
  c.epochs = 2;
  auto full = train(2, c);
  ASSERT_TRUE(full[0].isOk()) << full[0].status();
  EXPECT_EQ(full[0]->steps, 16);
  EXPECT_EQ(*CheckpointStore(dir.path()).listSteps(), (std::vector<int64_t>{4, 8, 12, 16}));

  TempDir again;
  TrainerConfig d = smallConfig(again.path());
  d.checkpointEverySteps = 4;
  d.epochs = 2;
  auto stopped = train(2, d, 9);  // checkpoints 4, 8 (the epoch end), 9 (the stop)
  ASSERT_TRUE(stopped[0].isOk()) << stopped[0].status();
  ASSERT_TRUE(std::filesystem::remove_all(again.path() + "/step-000000000009") > 0);
  auto resumed = train(2, d);
  ASSERT_TRUE(resumed[0].isOk()) << resumed[0].status();
  EXPECT_EQ(resumed[0]->startStep, 8);
  EXPECT_EQ(resumed[0]->steps, 16);
  EXPECT_EQ(resumed[0]->epochsCompleted, 2);
  EXPECT_EQ(resumed[0]->testAccuracy, full[0]->testAccuracy) << "the resumed run follows the uninterrupted one";
}

}  // namespace
}  // namespace ddp::runtime
