// Checkpoint file layer against real files in a fresh temporary directory.
#include "common/checkpoint/checkpoint_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/binary_io.h"
#include "common/checkpoint/atomic_file.h"
#include "tests/support/temp_dir.h"

namespace ddp::runtime {
namespace {

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("ckpt_test") {}
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

const JobIdentity kJob{"job", 0x1234};

void writeCheckpoint(CheckpointStore& store, int64_t step, int world, const JobIdentity& job = kJob,
                     int64_t createdUnixMs = 1234) {
  for (int r = 0; r < world; ++r) ASSERT_TRUE(store.writeShard(makeShard(step, r, world)).isOk());
  ASSERT_TRUE(store.commit(step, world, job, createdUnixMs).isOk());
}

// The manifest of `step` rewritten in format version 1 (before job identity): what a checkpoint
// written by an older build looks like.
void downgradeManifestToVersion1(CheckpointStore& store, int64_t step) {
  auto m = store.readManifest(step);
  ASSERT_TRUE(m.isOk()) << m.status();
  BinaryWriter w;
  w.put<int64_t>(m->step);
  w.put<int32_t>(m->worldSize);
  w.putString(m->job);
  w.put<int64_t>(m->createdUnixMs);
  w.put<uint32_t>(static_cast<uint32_t>(m->shards.size()));
  for (const auto& e : m->shards) {
    w.put<uint64_t>(e.bytes);
    w.put<uint32_t>(e.crc);
  }
  ASSERT_TRUE(writeFileAtomic(store.manifestPath(step), writeFramed(kManifestMagic, 1, w.data())).isOk());
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

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

  CheckpointManifest m{7, 2, "fmnist", 99, {{10, 0xdead}, {20, 0xbeef}}, 0xfeedface12345678ull};
  auto mb = decodeManifest(encodeManifest(m), "manifest");
  ASSERT_TRUE(mb.isOk());
  EXPECT_EQ(mb->job, "fmnist");
  EXPECT_EQ(mb->specHash, std::optional<uint64_t>(0xfeedface12345678ull));
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
  auto commit = store.commit(20, 2, kJob, 0);
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

// Any checkpoint loads at any world size (Note [Checkpoints at any world size]): the newest of
// the job's checkpoints is chosen whatever world size wrote it, and the checks that remain
// (completeness, checksums, the job) still fall back newest first.
TEST(CheckpointStoreTest, OtherWorldSizeIsNotSkipped) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 2, kJob);
  writeCheckpoint(store, 20, 4, kJob);
  writeCheckpoint(store, 30, 3, kJob);
  flipByte(store.shardPath(30, 2), 5);
  for (int world : {0, 2, 3, 4}) {
    auto latest = store.findLatestComplete(world, kJob);
    ASSERT_TRUE(latest.isOk());
    ASSERT_TRUE(latest->manifest.has_value());
    EXPECT_EQ(latest->manifest->step, 20) << world;
    EXPECT_EQ(latest->manifest->worldSize, 4);
    ASSERT_EQ(latest->skipped.size(), 1u);
    EXPECT_NE(latest->skipped[0].find("step 30"), std::string::npos) << latest->skipped[0];
  }
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
  ASSERT_TRUE(store.applyRetention(2, kJob).isOk());
  auto steps = store.listSteps();
  ASSERT_TRUE(steps.isOk());
  EXPECT_EQ(*steps, (std::vector<int64_t>{30, 40, 50}));
  ASSERT_TRUE(store.applyRetention(0, kJob).isOk());  // 0 keeps everything
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{30, 40, 50}));
}

TEST(CheckpointFormatTest, Version1ManifestReadsWithoutSpecHashAndMatchesByName) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 2);
  downgradeManifestToVersion1(store, 10);
  auto m = store.verify(10);  // still complete: the shards' sizes and CRCs are unchanged
  ASSERT_TRUE(m.isOk()) << m.status();
  EXPECT_EQ(m->job, "job");
  EXPECT_FALSE(m->specHash.has_value());
  EXPECT_EQ(matchJob(*m, kJob), JobMatch::kLegacySameName);
  EXPECT_EQ(matchJob(*m, JobIdentity{"other", kJob.specHash}), JobMatch::kOtherJob);
  m->specHash = kJob.specHash;
  EXPECT_EQ(matchJob(*m, kJob), JobMatch::kSame);
  EXPECT_EQ(matchJob(*m, JobIdentity{"job", 7}), JobMatch::kOtherSpec);
}

// Problem: a resized run (another world size) restarts from step 0; its new checkpoints have
// lower step numbers than the old world size's, and retention by step number deleted the one
// it had just written. Another job's checkpoints (another name, or this name with another
// spec) must never be touched or counted.
TEST(CheckpointStoreTest, RetentionCountsOnlyThisJobsCheckpointsAndNeverDeletesTheNewest) {
  TempDir dir;
  CheckpointStore store(dir.path());
  const JobIdentity otherJob{"other", 0x1234};
  const JobIdentity otherSpec{"job", 0x9999};
  writeCheckpoint(store, 50, 1, otherSpec, 500);
  writeCheckpoint(store, 600, 2, kJob, 1000);  // this job, 2 workers
  writeCheckpoint(store, 700, 2, kJob, 1100);
  writeCheckpoint(store, 800, 2, kJob, 1200);
  writeCheckpoint(store, 900, 3, otherJob, 1300);
  writeCheckpoint(store, 950, 3, otherJob, 1400);
  // The job comes back with 4 workers, starts over and commits step 100.
  writeCheckpoint(store, 100, 4, kJob, 2000);
  ASSERT_TRUE(store.applyRetention(2, kJob, 100).isOk());
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{50, 100, 800, 900, 950}));
  writeCheckpoint(store, 200, 4, kJob, 2100);
  ASSERT_TRUE(store.applyRetention(2, kJob, 200).isOk());
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{50, 100, 200, 900, 950}));
  // keep 1, and rank 0's clock went backwards: the step just committed is still the one kept.
  writeCheckpoint(store, 300, 4, kJob, 400);
  ASSERT_TRUE(store.applyRetention(1, kJob, 300).isOk());
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{50, 300, 900, 950}));
  auto latest = store.findLatestComplete(4, kJob);
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 300);
  // Without the step just committed, the newest by commit time is kept all the same.
  ASSERT_TRUE(store.applyRetention(1, otherJob).isOk());
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{50, 300, 950}));
}

TEST(CheckpointStoreTest, RetentionRemovesThisJobsDeadPartialsButNotAnotherJobsCheckpoints) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 1, JobIdentity{"other", 1}, 100);
  ASSERT_TRUE(store.writeShard(makeShard(15, 0, 2)).isOk());  // dead partial
  writeCheckpoint(store, 20, 1, kJob, 200);
  writeCheckpoint(store, 30, 1, kJob, 300);
  flipByte(store.shardPath(20, 0), 3);  // this job's, damaged: not counted, removed
  ASSERT_TRUE(store.applyRetention(3, kJob, 30).isOk());
  EXPECT_EQ(*store.listSteps(), (std::vector<int64_t>{10, 30}));
}

TEST(CheckpointStoreTest, FindLatestForAJobSkipsOtherJobsCheckpointsWithTheReason) {
  TempDir dir;
  CheckpointStore store(dir.path());
  writeCheckpoint(store, 10, 2, kJob);
  writeCheckpoint(store, 20, 2, JobIdentity{"job", 0x77});
  writeCheckpoint(store, 30, 2, JobIdentity{"other", kJob.specHash});
  auto latest = store.findLatestComplete(2, kJob);
  ASSERT_TRUE(latest.isOk());
  ASSERT_TRUE(latest->manifest.has_value());
  EXPECT_EQ(latest->manifest->step, 10);
  ASSERT_EQ(latest->skipped.size(), 2u);
  EXPECT_TRUE(contains(latest->skipped[0], "step 30: written by job 'other'")) << latest->skipped[0];
  EXPECT_TRUE(contains(latest->skipped[1], "step 20: written by job 'job' with a different spec")) << latest->skipped[1];
  // Without a job: any job's (the tools' view of a directory).
  EXPECT_EQ(store.findLatestComplete(2)->manifest->step, 30);
}

TEST(CheckpointStoreTest, OwnershipRefusesAnotherJobsOrAnotherSpecsCheckpoint) {
  TempDir dir;
  CheckpointStore store(dir.path() + "/ckpt");
  EXPECT_TRUE(store.checkOwnership(kJob).isOk()) << "no directory yet";
  writeCheckpoint(store, 10, 2, kJob);
  EXPECT_TRUE(store.checkOwnership(kJob).isOk());

  writeCheckpoint(store, 20, 2, JobIdentity{"mnist-b", kJob.specHash});
  Status st = store.checkOwnership(kJob);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
  EXPECT_TRUE(contains(st.message(), store.root())) << st;
  EXPECT_TRUE(contains(st.message(), "job 'mnist-b'")) << st;
  EXPECT_TRUE(contains(st.message(), "this job 'job'")) << st;
  EXPECT_TRUE(contains(st.message(), "use a fresh checkpoint directory")) << st;
  ASSERT_TRUE(removeAll(store.stepDir(20)).isOk());

  writeCheckpoint(store, 30, 2, JobIdentity{"job", 0xabc});
  st = store.checkOwnership(kJob);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
  EXPECT_TRUE(contains(st.message(), store.root())) << st;
  EXPECT_TRUE(contains(st.message(), "step 30")) << st;
  EXPECT_TRUE(contains(st.message(), "written by job 'job' with a different spec")) << st;
  EXPECT_TRUE(contains(st.message(), "use a fresh checkpoint directory")) << st;
  ASSERT_TRUE(removeAll(store.stepDir(30)).isOk());

  // Version-1 manifests (no spec hash): this job's when the name matches, another's otherwise.
  downgradeManifestToVersion1(store, 10);
  EXPECT_TRUE(store.checkOwnership(kJob).isOk());
  st = store.checkOwnership(JobIdentity{"other", kJob.specHash});
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
  EXPECT_TRUE(contains(st.message(), "version-1")) << st;
  // A partial or damaged checkpoint says nothing about whose it is.
  ASSERT_TRUE(store.writeShard(makeShard(40, 0, 2)).isOk());
  EXPECT_TRUE(store.checkOwnership(kJob).isOk());
}

TEST(CheckpointStoreTest, CheckWritableCreatesTheDirectoryAndLeavesNoProbe) {
  TempDir dir;
  CheckpointStore store(dir.path() + "/a/b/ckpt");
  ASSERT_TRUE(store.checkWritable("rank-0").isOk());
  auto names = listDir(store.root());
  ASSERT_TRUE(names.isOk());
  EXPECT_TRUE(names->empty()) << (*names)[0];
}

// Fails even for root, which ignores permission bits.
TEST(CheckpointStoreTest, CheckWritableFailsUnderARegularFileNamingTheDirectory) {
  TempDir dir;
  ASSERT_TRUE(writeFileAtomic(dir.path() + "/file", "x").isOk());
  CheckpointStore store(dir.path() + "/file/ckpt");
  Status st = store.checkWritable("rank-0");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
  EXPECT_TRUE(contains(st.message(), "checkpoint directory " + store.root())) << st;
  EXPECT_TRUE(contains(st.message(), "Not a directory")) << st;
}

TEST(CheckpointStoreTest, CheckWritableFailsOnAReadOnlyDirectoryNamingIt) {
  if (::geteuid() == 0) {
    std::printf("skipped: running as root, which ignores directory modes (the regular-file case covers root)\n");
    GTEST_SKIP() << "running as root: chmod 0500 does not stop root from writing";
  }
  TempDir dir;
  const std::string ro = dir.path() + "/ro";
  ASSERT_TRUE(makeDirs(ro).isOk());
  ASSERT_EQ(::chmod(ro.c_str(), 0500), 0);
  CheckpointStore store(ro);
  Status st = store.checkWritable("rank-0");
  ::chmod(ro.c_str(), 0700);
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied) << st;
  EXPECT_TRUE(contains(st.message(), "checkpoint directory " + ro + " is not writable")) << st;
  EXPECT_TRUE(contains(st.message(), "Permission denied")) << st;
}

}  // namespace
}  // namespace ddp::runtime
