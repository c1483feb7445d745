// CheckpointCoordinator over LocalBackend (ranks as threads) and real files. The faults are real
// too: rank 1's shard path is occupied by a directory, so its atomic rename fails; a directory
// under a regular file cannot be created; corrupt shards are bytes flipped on disk.
#include "worker/checkpointing/checkpoint_coordinator.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/checkpoint/atomic_file.h"
#include "tests/support/local_backend.h"
#include "tests/support/temp_dir.h"

namespace ddp::runtime {
namespace {

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("coord_test") {}
};

const JobIdentity kJob{"job", 0x51};

Deadline tenSeconds() { return Deadline::after(std::chrono::seconds(10)); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

CheckpointShard shardFor(int64_t step, int rank, int world) {
  CheckpointShard s;
  s.step = step;
  s.rank = rank;
  s.worldSize = world;
  s.sections["model"] = "model of rank " + std::to_string(rank) + " at " + std::to_string(step);
  s.sections["optimizer"] = "opt " + std::to_string(rank);
  return s;
}

TEST(CheckpointCoordinatorTest, SaveThenLoadLatestOnEveryRank) {
  TempDir dir;
  comm::runLocalRanks(3, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(dir.path(), b, kJob, 2);
    ASSERT_TRUE(c.prepare(tenSeconds()).isOk());
    EXPECT_EQ(c.holdsLock(), rank == 0);
    auto none = c.loadLatest(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(none.isOk()) << none.status();
    EXPECT_FALSE(none->checkpoint.has_value());
    EXPECT_FALSE(none->startOverWarning.has_value()) << "an empty directory is no reason to warn";
    for (int64_t step : {10, 20, 30}) {
      auto path = c.save(shardFor(step, rank, 3), Deadline::after(std::chrono::seconds(10)));
      ASSERT_TRUE(path.isOk()) << path.status();
    }
    auto loaded = c.loadLatest(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(loaded.isOk()) << loaded.status();
    ASSERT_TRUE(loaded->checkpoint.has_value());
    EXPECT_EQ(loaded->checkpoint->shard.step, 30);
    EXPECT_EQ(loaded->checkpoint->shard.sections, shardFor(30, rank, 3).sections);
    EXPECT_EQ(loaded->checkpoint->optimizerShards, (std::vector<std::string>{"opt 0", "opt 1", "opt 2"}));
  });
  auto steps = CheckpointStore(dir.path()).listSteps();
  ASSERT_TRUE(steps.isOk());
  EXPECT_EQ(*steps, (std::vector<int64_t>{20, 30}));  // retention keeps 2
  auto manifest = CheckpointStore(dir.path()).readManifest(30);
  ASSERT_TRUE(manifest.isOk());
  EXPECT_EQ(manifest->job, "job");
  EXPECT_EQ(manifest->specHash, std::optional<uint64_t>(kJob.specHash));
}

TEST(CheckpointCoordinatorTest, OneRankFailingToWriteFailsTheSaveEverywhere) {
  TempDir dir;
  CheckpointStore store(dir.path());
  std::filesystem::create_directories(store.shardPath(40, 1));  // rename onto a directory fails
  std::vector<Status> results(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(dir.path(), b, kJob, 3);
    ASSERT_TRUE(c.save(shardFor(20, rank, 2), Deadline::after(std::chrono::seconds(10))).isOk());
    results[static_cast<size_t>(rank)] = c.save(shardFor(40, rank, 2), Deadline::after(std::chrono::seconds(10))).status();
    // Resume falls back to step 20 on every rank.
    auto loaded = c.loadLatest(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(loaded.isOk()) << loaded.status();
    ASSERT_TRUE(loaded->checkpoint.has_value());
    EXPECT_EQ(loaded->checkpoint->shard.step, 20);
  });
  EXPECT_FALSE(results[0].isOk());
  EXPECT_NE(results[0].message().find("another rank failed to write"), std::string::npos) << results[0];
  EXPECT_FALSE(results[1].isOk());
  EXPECT_NE(results[1].message().find("rank-00001.ckpt"), std::string::npos) << results[1];
  EXPECT_FALSE(std::filesystem::exists(store.manifestPath(40)));
}

// Writes checkpoints `steps` of `job` with `world` thread-ranks.
void saveSteps(const std::string& dir, const JobIdentity& job, int world, std::initializer_list<int64_t> steps,
               int keep = 0) {
  comm::runLocalRanks(world, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(dir, b, job, keep);
    for (int64_t step : steps) ASSERT_TRUE(c.save(shardFor(step, rank, world), tenSeconds()).isOk());
  });
}

// Note [Checkpoints at any world size]: a job that comes back with another world size resumes
// its newest checkpoint (no start over): each rank that existed gets its own shard, a new rank
// rank 0's, and every rank every saved rank's per-rank sections; retention keeps what it writes.
TEST(CheckpointCoordinatorTest, ResizedJobResumesTheNewestCheckpointOfTheOldWorldSize) {
  for (int world : {1, 3}) {
    SCOPED_TRACE("2 -> " + std::to_string(world));
    TempDir dir;
    saveSteps(dir.path(), kJob, 2, {600, 700, 800}, 2);
    comm::runLocalRanks(world, [&](int rank, comm::Backend& b) {
      CheckpointCoordinator c(dir.path(), b, kJob, 2);
      ASSERT_TRUE(c.prepare(tenSeconds()).isOk());
      auto first = c.loadLatest(tenSeconds());
      ASSERT_TRUE(first.isOk()) << first.status();
      ASSERT_TRUE(first->checkpoint.has_value());
      EXPECT_FALSE(first->startOverWarning.has_value());
      const LoadedCheckpoint& l = *first->checkpoint;
      EXPECT_EQ(l.shard.step, 800);
      EXPECT_EQ(l.savedWorldSize, 2);
      EXPECT_TRUE(l.worldSizeChanged(world));
      EXPECT_EQ(l.newRank, rank >= 2);
      EXPECT_EQ(l.shard.rank, rank >= 2 ? 0 : rank);
      EXPECT_EQ(l.shard.sections, shardFor(800, rank >= 2 ? 0 : rank, 2).sections);
      EXPECT_EQ(l.optimizerShards, (std::vector<std::string>{"opt 0", "opt 1"}));
      EXPECT_EQ(l.commHookStates, (std::vector<std::string>{"", ""}));
      ASSERT_TRUE(c.save(shardFor(900, rank, world), tenSeconds()).isOk());
      auto again = c.loadLatest(tenSeconds());
      ASSERT_TRUE(again.isOk()) << again.status();
      ASSERT_TRUE(again->checkpoint.has_value()) << "retention deleted the checkpoint just written";
      EXPECT_EQ(again->checkpoint->shard.step, 900);
      EXPECT_EQ(again->checkpoint->savedWorldSize, world);
      EXPECT_FALSE(again->checkpoint->newRank);
    });
    EXPECT_EQ(*CheckpointStore(dir.path()).listSteps(), (std::vector<int64_t>{800, 900}));
  }
}

TEST(CheckpointCoordinatorTest, AnotherJobsCheckpointIsRefusedOnEveryRankNamingBothJobs) {
  TempDir dir;
  saveSteps(dir.path(), JobIdentity{"job-a", 1}, 2, {10});
  for (const JobIdentity& me : {JobIdentity{"job-b", 1}, JobIdentity{"job-a", 2}}) {
    SCOPED_TRACE(me.name + " " + specHashString(me.specHash));
    std::vector<Status> prepared(2), loaded(2);
    comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
      CheckpointCoordinator c(dir.path(), b, me, 3);
      prepared[static_cast<size_t>(rank)] = c.prepare(tenSeconds());
      EXPECT_FALSE(c.holdsLock()) << "a refused job lets the directory go";
      loaded[static_cast<size_t>(rank)] = c.loadLatest(tenSeconds()).status();
    });
    for (const auto* results : {&prepared, &loaded}) {
      const Status& r0 = (*results)[0];
      EXPECT_EQ(r0.code(), StatusCode::kPermissionDenied) << r0;
      EXPECT_TRUE(contains(r0.message(), "checkpoint directory " + dir.path())) << r0;
      EXPECT_TRUE(contains(r0.message(), "use a fresh checkpoint directory")) << r0;
      if (me.name == "job-b") {
        EXPECT_TRUE(contains(r0.message(), "belongs to job 'job-a', not to this job 'job-b'")) << r0;
      } else {
        EXPECT_TRUE(contains(r0.message(), "written by job 'job-a' with a different spec")) << r0;
      }
      const Status& r1 = (*results)[1];
      EXPECT_EQ(r1.code(), StatusCode::kPermissionDenied) << r1;
      EXPECT_TRUE(contains(r1.message(), dir.path())) << r1;
    }
  }
  // The owner itself still resumes its checkpoint.
  comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(dir.path(), b, JobIdentity{"job-a", 1}, 3);
    ASSERT_TRUE(c.prepare(tenSeconds()).isOk());
    auto loaded = c.loadLatest(tenSeconds());
    ASSERT_TRUE(loaded.isOk()) << loaded.status();
    ASSERT_TRUE(loaded->checkpoint.has_value());
    EXPECT_EQ(loaded->checkpoint->shard.step, 10);
    EXPECT_EQ(loaded->checkpoint->shard.sections, shardFor(10, rank, 2).sections);
  });
}

TEST(CheckpointCoordinatorTest, SecondJobIsRefusedWhileTheFirstHoldsTheDirectory) {
  TempDir dir;
  comm::runLocalRanks(1, [&](int, comm::Backend& first) {
    auto holder = std::make_unique<CheckpointCoordinator>(dir.path(), first, JobIdentity{"job-a", 1}, 3);
    ASSERT_TRUE(holder->prepare(tenSeconds()).isOk());
    ASSERT_TRUE(holder->holdsLock());
    std::vector<Status> results(2);
    comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
      CheckpointCoordinator c(dir.path(), b, JobIdentity{"job-b", 1}, 3);
      results[static_cast<size_t>(rank)] = c.prepare(tenSeconds());
    });
    EXPECT_EQ(results[0].code(), StatusCode::kPermissionDenied) << results[0];
    EXPECT_TRUE(contains(results[0].message(), "is in use by job 'job-a'")) << results[0];
    EXPECT_TRUE(contains(results[1].message(), "rank 0: checkpoint directory " + dir.path() + " is in use by job 'job-a'"))
        << results[1];
    // The first job ends (trainer destroyed): the directory is free again, in the same process.
    holder.reset();
    comm::runLocalRanks(1, [&](int, comm::Backend& b) {
      CheckpointCoordinator c(dir.path(), b, JobIdentity{"job-a", 1}, 3);
      ASSERT_TRUE(c.prepare(tenSeconds()).isOk());
      EXPECT_TRUE(c.holdsLock());
    });
  });
}

// A worker whose generation failed releases the directory before it tears the rest down: the
// next generation's rank 0 (another coordinator, here in the same process, where flock locks
// exclude each other like processes do) takes it at once instead of waiting for the old one to
// be destroyed.
TEST(CheckpointCoordinatorTest, ReleaseLetsTheNextRankZeroLockAtOnceWhileTheOldOneLives) {
  TempDir dir;
  comm::runLocalRanks(1, [&](int, comm::Backend& first) {
    CheckpointCoordinator old(dir.path(), first, kJob, 3);
    ASSERT_TRUE(old.prepare(tenSeconds()).isOk());
    ASSERT_TRUE(old.holdsLock());
    comm::runLocalRanks(1, [&](int, comm::Backend& b) {
      CheckpointCoordinator next(dir.path(), b, kJob, 3);
      const Status refused = next.prepare(Deadline::after(std::chrono::milliseconds(300)));
      EXPECT_EQ(refused.code(), StatusCode::kFailedPrecondition) << refused;
      EXPECT_TRUE(contains(refused.message(), "still locked by another run of job 'job'")) << refused;
    });
    old.release();
    EXPECT_FALSE(old.holdsLock());
    comm::runLocalRanks(1, [&](int, comm::Backend& b) {
      CheckpointCoordinator next(dir.path(), b, kJob, 3);
      const auto t0 = std::chrono::steady_clock::now();
      ASSERT_TRUE(next.prepare(tenSeconds()).isOk());
      EXPECT_TRUE(next.holdsLock());
      EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
    });
  });
}

TEST(CheckpointCoordinatorTest, UnwritableDirectoryFailsPrepareOnEveryRankNamingIt) {
  TempDir dir;
  ASSERT_TRUE(writeFileAtomic(dir.path() + "/file", "x").isOk());
  const std::string bad = dir.path() + "/file/ckpt";  // fails even for root
  std::vector<Status> results(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(bad, b, kJob, 3);
    results[static_cast<size_t>(rank)] = c.prepare(tenSeconds());
  });
  for (const Status& st : results) {
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
    EXPECT_TRUE(contains(st.message(), "checkpoint directory " + bad)) << st;
    EXPECT_TRUE(contains(st.message(), "Not a directory")) << st;
  }
}

TEST(CheckpointCoordinatorTest, ReadOnlyDirectoryFailsPrepareNamingIt) {
  if (::geteuid() == 0) {
    std::printf("skipped: running as root, which ignores directory modes (the regular-file case covers root)\n");
    GTEST_SKIP() << "running as root: chmod 0500 does not stop root from writing";
  }
  TempDir dir;
  const std::string ro = dir.path() + "/ro";
  ASSERT_TRUE(makeDirs(ro).isOk());
  ASSERT_EQ(::chmod(ro.c_str(), 0500), 0);
  std::vector<Status> results(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(ro, b, kJob, 3);
    results[static_cast<size_t>(rank)] = c.prepare(tenSeconds());
  });
  ::chmod(ro.c_str(), 0700);
  for (const Status& st : results) {
    EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
    EXPECT_TRUE(contains(st.message(), "checkpoint directory " + ro + " is not writable")) << st;
    EXPECT_TRUE(contains(st.message(), "Permission denied")) << st;
  }
}

TEST(CheckpointCoordinatorTest, EveryCheckpointCorruptSaysItStartsOver) {
  TempDir dir;
  saveSteps(dir.path(), kJob, 2, {10, 20});
  CheckpointStore store(dir.path());
  for (int64_t step : {10, 20}) {
    auto data = readFile(store.shardPath(step, 1));
    ASSERT_TRUE(data.isOk());
    std::string d = *data;
    d[d.size() / 2] ^= 0x21;
    ASSERT_TRUE(writeFileAtomic(store.shardPath(step, 1), d).isOk());
  }
  comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(dir.path(), b, kJob, 3);
    ASSERT_TRUE(c.prepare(tenSeconds()).isOk());
    auto loaded = c.loadLatest(tenSeconds());
    ASSERT_TRUE(loaded.isOk()) << loaded.status();
    EXPECT_FALSE(loaded->checkpoint.has_value());
    if (rank != 0) {
      EXPECT_FALSE(loaded->startOverWarning.has_value());
      return;
    }
    ASSERT_TRUE(loaded->startOverWarning.has_value());
    const std::string& w = *loaded->startOverWarning;
    EXPECT_TRUE(contains(w, "no usable checkpoint in " + dir.path() + ": 2 checkpoint(s) skipped (")) << w;
    EXPECT_TRUE(contains(w, "step 20: " + store.shardPath(20, 1))) << w;
    EXPECT_TRUE(contains(w, "step 10: ")) << w;
    EXPECT_TRUE(contains(w, "checksum mismatch")) << w;
    EXPECT_TRUE(contains(w, "); starting from step 0")) << w;
  });
}

}  // namespace
}  // namespace ddp::runtime
