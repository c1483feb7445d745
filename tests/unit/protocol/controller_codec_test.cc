// What one side writes the other reads: the worker's encoders against the controller's decoders
// (common/protocol/controller_codec.h) and the controller's answers against the worker's
// decoders. The oracle is the message the sender started from.
#include "common/protocol/controller_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "common/protocol/worker_codec.h"
#include "tests/support/sample_messages.h"

namespace ddp::protocol {
namespace {

using testing::sampleReport;

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }

TEST(ControllerCodecTest, TheControllerReadsEveryFieldTheWorkerSends) {
  HeartbeatReport r = sampleReport();
  r.testAccuracy = 0.875;
  r.valLoss = 2.5;
  r.tokensPerSecond = 4096;
  r.mfu = 0.41;
  r.flightRecord = {{"gloo", 812, "allreduce", 4752, "running", 6.1, 6.0, -1}};
  r.lastShard = LastShardReport{3, 100, ShardOutcome{1, true, {2345, 0xfeedbeef}, 0.25, 1.5, ""}};
  auto h = decodeHeartbeat(encodeHeartbeatReport(r));
  ASSERT_TRUE(h.isOk()) << h.status();
  EXPECT_EQ(h->workerId, r.workerId);
  EXPECT_EQ(h->rank, r.rank);
  EXPECT_EQ(h->state, "Running");
  EXPECT_FALSE(h->final());
  EXPECT_EQ(h->step, r.step);
  EXPECT_EQ(h->totalSteps, r.totalSteps);
  EXPECT_EQ(h->epoch, r.epoch);
  EXPECT_EQ(h->epochs, r.epochs);
  EXPECT_DOUBLE_EQ(h->loss, r.loss);
  EXPECT_DOUBLE_EQ(h->samplesPerSecond, r.samplesPerSecond);
  EXPECT_EQ(h->testAccuracy, r.testAccuracy);
  EXPECT_EQ(h->valLoss, r.valLoss);
  EXPECT_EQ(h->tokensPerSecond, r.tokensPerSecond);
  EXPECT_EQ(h->mfu, r.mfu);
  EXPECT_EQ(h->message, r.message);
  EXPECT_EQ(h->counters.at("samples"), r.counters.samples);
  EXPECT_EQ(h->counters.at("steps"), r.counters.steps);
  EXPECT_DOUBLE_EQ(h->counters.at("stepSeconds"), r.counters.stepSeconds);
  EXPECT_EQ(h->counters.at("commBytes"), r.counters.commBytes);
  EXPECT_DOUBLE_EQ(h->counters.at("commExposedSeconds"), r.counters.commExposedSeconds);
  EXPECT_EQ(h->counters.at("compressionUncompressedBytes"), r.counters.compressionUncompressedBytes);
  EXPECT_EQ(h->counters.at("compressionSentBytes"), r.counters.compressionSentBytes);
  // The parts both sides hold as the same types (heartbeat_parts.h) read back whole, the
  // collective's bytes included.
  ASSERT_EQ(h->collectives.size(), 1u);
  EXPECT_EQ(h->collectives, r.collectives);
  EXPECT_EQ(h->checkpoint, r.checkpoint);
  ASSERT_EQ(h->flightRecord.size(), 1u);
  EXPECT_EQ(h->flightRecord, r.flightRecord);
  EXPECT_TRUE(h->flightRecord[0].unfinished());
  ASSERT_TRUE(h->lastShard.has_value());
  EXPECT_EQ(h->lastShard->generation, 3);
  EXPECT_EQ(h->lastShard->step, 100);
  EXPECT_EQ(h->lastShard->report.rank, 1);
  EXPECT_TRUE(h->lastShard->report.ok);
  EXPECT_EQ(h->lastShard->report.bytes, 2345u);
  EXPECT_EQ(h->lastShard->report.crc, 0xfeedbeefu);
  EXPECT_EQ(h->ext, r.ext);
  EXPECT_EQ(h->extJson, R"({"gpuUtil":0.75})");
}

TEST(ControllerCodecTest, FinalStatesFailedShardsAndDivergedLossRead) {
  HeartbeatReport r = sampleReport();
  r.state = WorkerState::kFailed;
  r.loss = std::nan("");
  r.checkpoint.reset();
  r.lastShard = LastShardReport{2, 40, ShardOutcome{0, false, {}, 0, 0, "disk full"}};
  auto h = decodeHeartbeat(encodeHeartbeatReport(r));
  ASSERT_TRUE(h.isOk()) << h.status();
  EXPECT_EQ(h->state, "Failed");
  EXPECT_TRUE(h->final());
  EXPECT_EQ(h->loss, 0) << "a null loss leaves the controller's value as it is";
  EXPECT_FALSE(h->checkpoint.has_value());
  ASSERT_TRUE(h->lastShard.has_value());
  EXPECT_FALSE(h->lastShard->report.ok);
  EXPECT_EQ(h->lastShard->report.error, "disk full");
  for (WorkerState s : {WorkerState::kRunning, WorkerState::kSucceeded, WorkerState::kStopped}) {
    r.state = s;
    auto again = decodeHeartbeat(encodeHeartbeatReport(r));
    ASSERT_TRUE(again.isOk()) << again.status();
    EXPECT_EQ(again->state, workerStateName(s));
  }
}

// An older worker sends fewer fields; the controller reads what is there and names what is wrong.
TEST(ControllerCodecTest, HeartbeatsAreReadTolerantlyButBadFieldsAreNamed) {
  auto minimal = decodeHeartbeat(R"({"workerId": "w0", "step": 7.0, "loss": null, "counters": {"samples": 3, "note": "x"}})");
  ASSERT_TRUE(minimal.isOk()) << minimal.status();
  EXPECT_EQ(minimal->rank, -1);
  EXPECT_EQ(minimal->state, "Running");
  EXPECT_EQ(minimal->step, 7);
  EXPECT_EQ(minimal->counters, (std::map<std::string, double>{{"samples", 3}}));
  EXPECT_EQ(minimal->extJson, "{}");

  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"rank": 0})").status(), "'workerId' is required"));
  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"workerId": "w", "state": "Sleeping"})").status(), "got 'Sleeping'"));
  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"workerId": "w", "rank": "0"})").status(), "heartbeat.rank: expected an integer"));
  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"workerId": "w", "checkpoint": {"step": "x"}})").status(),
                       "heartbeat.checkpoint.step"));
  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"workerId": "w", "lastShard": {"ok": 1}})").status(), "heartbeat.lastShard.ok"));
  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"workerId": "w0", "flightRecord": [3]})").status(),
                       "heartbeat.flightRecord[0]: expected an object"));
  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"workerId": "w0", "collectives": [{}, "x"]})").status(),
                       "heartbeat.collectives[1]: expected an object"));
  EXPECT_TRUE(mentions(decodeHeartbeat("[1]").status(), "not a JSON object"));
  EXPECT_TRUE(mentions(decodeHeartbeat("{").status(), "not a JSON object"));
}

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
