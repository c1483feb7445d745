// listCommitted (Note [Catalog follows the disk]): the step directories with a MANIFEST that
// names the job, with their sizes, world size and commit time; partials and other jobs' are left
// out, and a missing directory holds none. Real files in a temporary directory.
#include "common/checkpoint/checkpoint_catalog.h"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

namespace ddp::runtime {
namespace {

CheckpointShard shardOf(int64_t step, int rank, int world) {
  CheckpointShard s;
  s.step = step;
  s.rank = rank;
  s.worldSize = world;
  s.sections["model"] = std::string(100 + rank, 'x');
  return s;
}

void write(CheckpointStore& store, int64_t step, int world, const JobIdentity& job, int64_t createdMs) {
  for (int r = 0; r < world; ++r) ASSERT_TRUE(store.writeShard(shardOf(step, r, world)).isOk());
  ASSERT_TRUE(store.commit(step, world, job, createdMs).isOk());
}

TEST(CheckpointCatalogTest, ListsTheJobsCommittedCheckpointsOnly) {
  test::TempDir dir;
  CheckpointStore store(dir.path() + "/ckpt");
  write(store, 20, 2, JobIdentity{"a", 1}, 1000);
  write(store, 40, 2, JobIdentity{"a", 1}, 2000);
  write(store, 60, 1, JobIdentity{"b", 1}, 3000);             // another job's
  ASSERT_TRUE(store.writeShard(shardOf(80, 0, 2)).isOk());     // a partial: no MANIFEST
  auto listed = listCommitted(store, "a");
  ASSERT_TRUE(listed.isOk()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].step, 20);
  EXPECT_EQ((*listed)[1].step, 40);
  EXPECT_EQ((*listed)[1].worldSize, 2);
  EXPECT_EQ((*listed)[1].createdUnixMs, 2000);
  EXPECT_EQ((*listed)[1].path, store.stepDir(40));
  auto m = store.readManifest(40);
  ASSERT_TRUE(m.isOk());
  EXPECT_EQ((*listed)[1].bytes, static_cast<int64_t>(m->shards[0].bytes + m->shards[1].bytes));
}

TEST(CheckpointCatalogTest, AMissingDirectoryHoldsNone) {
  test::TempDir dir;
  auto listed = listCommitted(CheckpointStore(dir.path() + "/never"), "a");
  ASSERT_TRUE(listed.isOk()) << listed.status();
  EXPECT_TRUE(listed->empty());
}

}  // namespace
}  // namespace ddp::runtime
