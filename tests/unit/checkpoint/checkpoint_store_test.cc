// Checkpoint file layer against real files in a fresh temporary directory.
#include "common/checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "common/checkpoint/atomic_file.h"

namespace ddp::runtime {
namespace {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ckpt_test_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

CheckpointShard makeShard(int64_t step, int rank, int world) {
  CheckpointShard s;
  s.step = step;
  s.rank = rank;
  s.worldSize = world;
  s.sections["model"] = std::string(1000 + rank, static_cast<char>('a' + rank));
  s.sections["trainer"] = "step=" + std::to_string(step);
  s.sections["empty"] = "";
  return s;
}

void writeCheckpoint(CheckpointStore& store, int64_t step, int world) {
  for (int r = 0; r < world; ++r) ASSERT_TRUE(store.writeShard(makeShard(step, r, world)).isOk());
  ASSERT_TRUE(store.commit(step, world, "job", 1234).isOk());
}

void flipByte(const std::string& path, size_t offsetFromEnd) {
  auto data = readFile(path);
  ASSERT_TRUE(data.isOk());
  std::string d = *data;
  d[d.size() - 1 - offsetFromEnd] ^= 0x40;
  ASSERT_TRUE(writeFileAtomic(path, d).isOk());
}

TEST(AtomicFileTest, WritesWholeFileReplacesOldAndLeavesNoTemp) {
  TempDir dir;
  const std::string p = dir.path() + "/f";
  ASSERT_TRUE(writeFileAtomic(p, "old contents").isOk());
  ASSERT_TRUE(writeFileAtomic(p, std::string("new\0bytes", 9)).isOk());
  auto got = readFile(p);
  ASSERT_TRUE(got.isOk());
  EXPECT_EQ(*got, std::string("new\0bytes", 9));
  auto names = listDir(dir.path());
  ASSERT_TRUE(names.isOk());
  EXPECT_EQ(*names, std::vector<std::string>{"f"});
  EXPECT_EQ(readFile(dir.path() + "/missing").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(writeFileAtomic(dir.path() + "/no/such/dir/f", "x").isOk());
}

TEST(CheckpointFormatTest, ShardAndManifestRoundTrip) {
  CheckpointShard s = makeShard(42, 1, 3);
  auto back = decodeShard(encodeShard(s), "shard");
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->step, 42);
  EXPECT_EQ(back->rank, 1);
  EXPECT_EQ(back->worldSize, 3);
  EXPECT_EQ(back->sections, s.sections);
  EXPECT_EQ(back->section("nope").status().code(), StatusCode::kNotFound);

  CheckpointManifest m{7, 2, "fmnist", 99, {{10, 0xdead}, {20, 0xbeef}}};
  auto mb = decodeManifest(encodeManifest(m), "manifest");
  ASSERT_TRUE(mb.isOk());
  EXPECT_EQ(mb->job, "fmnist");
  EXPECT_EQ(mb->shards[1].bytes, 20u);
  EXPECT_EQ(mb->shards[1].crc, 0xbeefu);

  int64_t step = 0;
  EXPECT_TRUE(parseStepDirName(stepDirName(1234567), &step));
  EXPECT_EQ(step, 1234567);
  EXPECT_FALSE(parseStepDirName("step-12.tmp.5", &step));
  EXPECT_FALSE(parseStepDirName("MANIFEST", &step));
}

TEST(CheckpointStoreTest, CommittedCheckpointIsFoundAndReadBack) {
  TempDir dir;
  CheckpointStore store(dir.path() + "/ckpts");
  auto none = store.findLatestComplete();
  ASSERT_TRUE(none.isOk());
  EXPECT_FALSE(none->manifest.has_value());

  writeCheckpoint(store, 10, 2);
  writeCheckpoint(store, 20, 2);
  auto latest = store.findLatestComplete(2);
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 20);
  EXPECT_TRUE(latest->skipped.empty());
  for (int r = 0; r < 2; ++r) {
    auto shard = store.readShard(*latest->manifest, r);
    ASSERT_TRUE(shard.isOk()) << shard.status();
    EXPECT_EQ(shard->sections, makeShard(20, r, 2).sections);
  }
}

TEST(CheckpointStoreTest, PartialCheckpointWithoutManifestIsSkipped) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 2);
  // Step 20: rank 0 wrote its shard, rank 1 died before writing; no manifest.
  ASSERT_TRUE(store.writeShard(makeShard(20, 0, 2)).isOk());
  auto commit = store.commit(20, 2, "job", 0);
  EXPECT_EQ(commit.status().code(), StatusCode::kNotFound);  // rank 1's shard is missing
  EXPECT_FALSE(pathExists(store.manifestPath(20)));

  auto latest = store.findLatestComplete();
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 10);
  ASSERT_EQ(latest->skipped.size(), 1u);
  EXPECT_NE(latest->skipped[0].find("step 20"), std::string::npos);
  EXPECT_NE(latest->skipped[0].find("MANIFEST"), std::string::npos);
}

TEST(CheckpointStoreTest, CorruptedShardOrManifestFallsBackToPrevious) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 2);
  writeCheckpoint(store, 20, 2);
  writeCheckpoint(store, 30, 2);
  flipByte(store.shardPath(30, 1), 5);          // bit rot in rank 1's model bytes
  flipByte(store.manifestPath(20), 0);          // damaged manifest
  auto latest = store.findLatestComplete();
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 10);
  ASSERT_EQ(latest->skipped.size(), 2u);
  EXPECT_NE(latest->skipped[0].find("checksum"), std::string::npos) << latest->skipped[0];
  EXPECT_NE(latest->skipped[0].find("rank-00001"), std::string::npos) << latest->skipped[0];
  EXPECT_NE(latest->skipped[1].find("step 20"), std::string::npos) << latest->skipped[1];

  // A shard truncated after commit is caught by size.
  auto data = readFile(store.shardPath(10, 0));
  ASSERT_TRUE(data.isOk());
  ASSERT_TRUE(writeFileAtomic(store.shardPath(10, 0), data->substr(0, data->size() / 2)).isOk());
  latest = store.findLatestComplete();
  ASSERT_TRUE(latest.isOk());
  EXPECT_FALSE(latest->manifest.has_value());
  EXPECT_EQ(latest->skipped.size(), 3u);
}

TEST(CheckpointStoreTest, ReadShardRejectsShardThatDisagreesWithManifest) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 5, 2);
  auto m = store.verify(5);
  ASSERT_TRUE(m.isOk());
  // Rank 0's file is rewritten (valid frame, new content) after the manifest was committed.
  CheckpointShard other = makeShard(5, 0, 2);
  other.sections["model"] = "different";
  ASSERT_TRUE(store.writeShard(other).isOk());
  EXPECT_EQ(store.readShard(*m, 0).status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(store.readShard(*m, 1).isOk());
  EXPECT_EQ(store.readShard(*m, 2).status().code(), StatusCode::kInvalidArgument);
}

TEST(CheckpointStoreTest, OtherWorldSizeIsSkippedWithReason) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 2);
  writeCheckpoint(store, 20, 4);
  auto latest = store.findLatestComplete(2);
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 10);
  ASSERT_EQ(latest->skipped.size(), 1u);
  EXPECT_NE(latest->skipped[0].find("4 workers"), std::string::npos);
}

TEST(CheckpointStoreTest, RetentionKeepsNewestCompleteAndDropsOldPartials) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 1);
  ASSERT_TRUE(store.writeShard(makeShard(15, 0, 2)).isOk());  // old partial
  writeCheckpoint(store, 20, 1);
  writeCheckpoint(store, 30, 1);
  writeCheckpoint(store, 40, 1);
  ASSERT_TRUE(store.writeShard(makeShard(50, 0, 2)).isOk());  // newer partial (maybe in progress)
  ASSERT_TRUE(store.applyRetention(2).isOk());
  auto steps = store.listSteps();
  ASSERT_TRUE(steps.isOk());
  EXPECT_EQ(*steps, (std::vector<int64_t>{30, 40, 50}));
  ASSERT_TRUE(store.applyRetention(0).isOk());  // 0 keeps everything
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{30, 40, 50}));
}

}  // namespace
}  // namespace ddp::runtime
