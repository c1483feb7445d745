// CheckpointCoordinator over LocalBackend (ranks as threads) and real files. The fault is real
// too: rank 1's shard path is occupied by a directory, so its atomic rename fails.
#include "worker/runtime/checkpoint_coordinator.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "tests/support/local_backend.h"

namespace ddp::runtime {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "coord_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

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
    CheckpointCoordinator c(dir.path(), b, "job", 2);
    auto none = c.loadLatest(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(none.isOk()) << none.status();
    EXPECT_FALSE(none->has_value());
    for (int64_t step : {10, 20, 30}) {
      auto path = c.save(shardFor(step, rank, 3), Deadline::after(std::chrono::seconds(10)));
      ASSERT_TRUE(path.isOk()) << path.status();
    }
    auto loaded = c.loadLatest(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(loaded.isOk()) << loaded.status();
    ASSERT_TRUE(loaded->has_value());
    EXPECT_EQ((*loaded)->shard.step, 30);
    EXPECT_EQ((*loaded)->shard.sections, shardFor(30, rank, 3).sections);
    EXPECT_EQ((*loaded)->optimizerShards, (std::vector<std::string>{"opt 0", "opt 1", "opt 2"}));
  });
  auto steps = CheckpointStore(dir.path()).listSteps();
  ASSERT_TRUE(steps.isOk());
  EXPECT_EQ(*steps, (std::vector<int64_t>{20, 30}));  // retention keeps 2
}

TEST(CheckpointCoordinatorTest, OneRankFailingToWriteFailsTheSaveEverywhere) {
  TempDir dir;
  CheckpointStore store(dir.path());
  std::filesystem::create_directories(store.shardPath(40, 1));  // rename onto a directory fails
  std::vector<Status> results(2);
  comm::runLocalRanks(2, [&](int rank, comm::Backend& b) {
    CheckpointCoordinator c(dir.path(), b, "job", 3);
    ASSERT_TRUE(c.save(shardFor(20, rank, 2), Deadline::after(std::chrono::seconds(10))).isOk());
    results[static_cast<size_t>(rank)] = c.save(shardFor(40, rank, 2), Deadline::after(std::chrono::seconds(10))).status();
    // Resume falls back to step 20 on every rank.
    auto loaded = c.loadLatest(Deadline::after(std::chrono::seconds(10)));
    ASSERT_TRUE(loaded.isOk()) << loaded.status();
    ASSERT_TRUE(loaded->has_value());
    EXPECT_EQ((*loaded)->shard.step, 20);
  });
  EXPECT_FALSE(results[0].isOk());
  EXPECT_NE(results[0].message().find("another rank failed to write"), std::string::npos) << results[0];
  EXPECT_FALSE(results[1].isOk());
  EXPECT_NE(results[1].message().find("rank-00001.ckpt"), std::string::npos) << results[1];
  EXPECT_FALSE(std::filesystem::exists(store.manifestPath(40)));
}

}  // namespace
}  // namespace ddp::runtime
