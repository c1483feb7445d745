// What one side writes the other reads: the worker's checkpoint reports against the
// controller's decoders (common/protocol/controller_codec.h; the heartbeat, one codec for both
// sides: heartbeat_codec_test.cc). The oracle is the message the sender started from.
#include "common/protocol/controller_codec.h"

#include <gtest/gtest.h>

#include <string>

#include "common/protocol/worker_codec.h"

namespace ddp::protocol {
namespace {

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(ControllerCodecTest, ShardReportsRoundTrip) {
  for (const ShardOutcome& o : {ShardOutcome{2, true, {123456789012, 0xffffffff}, 0.5, 2.25, ""},
                                ShardOutcome{0, false, {}, 0.1, 0, "no space left on device"}}) {
    auto r = decodeShardReport(encodeShardOutcome(o));
    ASSERT_TRUE(r.isOk()) << r.status();
    EXPECT_EQ(r->rank, o.rank);
    EXPECT_EQ(r->ok, o.ok);
    EXPECT_EQ(r->bytes, o.entry.bytes);
    EXPECT_EQ(r->crc, o.entry.crc);
    EXPECT_DOUBLE_EQ(r->snapshotSeconds, o.snapshotSeconds);
    EXPECT_DOUBLE_EQ(r->writeSeconds, o.writeSeconds);
    EXPECT_EQ(r->error, o.error);
  }
  EXPECT_TRUE(mentions(decodeShardReport(R"({"rank": 0, "ok": true, "crc": 1})").status(), "shard report.bytes: missing"));
  EXPECT_TRUE(mentions(decodeShardReport(R"({"ok": false})").status(), "shard report.rank: missing"));
  EXPECT_TRUE(mentions(decodeShardReport(R"({"rank": 0, "ok": true, "bytes": 1, "crc": 4294967296})").status(),
                       "shard report.crc: not a CRC-32"));
  EXPECT_TRUE(decodeShardReport(R"({"rank": 0, "ok": false})").isOk()) << "size and CRC only when ok";
}

TEST(ControllerCodecTest, CommitReportsRoundTrip) {
  CommitOutcome o;
  o.ok = true;
  o.bytes = 99999;
  o.path = "/ckpt/job/step-00000300";
  o.seconds = 0.75;
  o.onDisk = std::vector<int64_t>{200, 300};
  o.onDiskDetail = {{200, 99000, 2, 1700000000000, "/ckpt/job/step-00000200"}, {300, 99999, 4, 1700000001000, o.path}};
  auto back = decodeCommitOutcome(encodeCommitOutcome(o));
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_TRUE(back->ok);
  EXPECT_EQ(back->bytes, o.bytes);
  EXPECT_EQ(back->path, o.path);
  EXPECT_DOUBLE_EQ(back->seconds, o.seconds);
  EXPECT_EQ(back->onDisk, o.onDisk);
  EXPECT_EQ(back->onDiskDetail, o.onDiskDetail);

  CommitOutcome failed;
  failed.error = "MANIFEST: read-only file system";
  auto backFailed = decodeCommitOutcome(encodeCommitOutcome(failed));
  ASSERT_TRUE(backFailed.isOk()) << backFailed.status();
  EXPECT_FALSE(backFailed->ok);
  EXPECT_EQ(backFailed->error, failed.error);
  EXPECT_FALSE(backFailed->onDisk.has_value()) << "not listed: the catalog is kept";
  EXPECT_TRUE(mentions(decodeCommitOutcome(R"({"ok": true, "bytes": 1})").status(), "commit report.path: missing"));
  EXPECT_TRUE(mentions(decodeCommitOutcome(R"({"ok": false, "onDisk": [1, "2"]})").status(), "commit report.onDisk"));
  EXPECT_TRUE(mentions(decodeCommitOutcome(R"({"ok": false, "onDiskDetail": [{"bytes": 1}]})").status(),
                       "commit report.onDiskDetail[0].step: missing"));
}

TEST(ControllerCodecTest, VerdictsRoundTrip) {
  CommitVerdictWire commit{CommitDecisionKind::kCommit, "", {{10, 1}, {20, 0xffffffff}, {0, 0}}};
  CommitVerdictWire abandon{CommitDecisionKind::kAbandon, "rank 1 could not write its shard", {}};
  CommitVerdictWire pending{};
  for (const CommitVerdictWire& v : {commit, abandon, pending}) {
    auto back = decodeCommitVerdict(encodeCommitVerdict(v));
    ASSERT_TRUE(back.isOk()) << back.status();
    EXPECT_EQ(back->decision, v.decision);
    EXPECT_EQ(back->reason, v.reason);
    ASSERT_EQ(back->shards.size(), v.shards.size());
    for (size_t i = 0; i < v.shards.size(); ++i) {
      EXPECT_EQ(back->shards[i].bytes, v.shards[i].bytes);
      EXPECT_EQ(back->shards[i].crc, v.shards[i].crc);
    }
  }
}

}  // namespace
}  // namespace ddp::protocol
