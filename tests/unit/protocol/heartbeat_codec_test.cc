// The heartbeat's one codec (common/protocol/heartbeat_codec.h; Note [One heartbeat]): what the
// worker encodes the controller reads, every field; the controller reads older workers'
// heartbeats tolerantly and the test controllers read strictly; and the wire format is the one
// the worker sent before the two sides shared one struct (heartbeats captured from that encoder).
// The oracle is the message the sender started from, or the captured text.
#include "common/protocol/heartbeat_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/sample_messages.h"

namespace ddp::protocol {
namespace {

using testing::sampleReport;

bool mentions(const Status& st, const std::string& text) { return st.message().find(text) != std::string::npos; }
Result<Heartbeat> strict(std::string_view json) { return decodeHeartbeat(json, Reading::kStrict); }

// Captured from the worker's encoder of the commit before the one struct (encodeHeartbeatReport):
// sampleReport() with every optional part set, and a failed worker's last heartbeat.
constexpr const char* kCapturedFull =
    R"({"checkpoint":{"bytes":2345678,"path":"/ckpt/fmnist/step-100","step":100},"collectives":)"
    R"([{"backend":"gloo","bytes":1048576,"issued":415,"op":"allreduce","seconds":0.01,"seq":41)"
    R"(2}],"counters":{"commBytes":123456,"commExposedSeconds":0.12,"compressionSentBytes":400,)"
    R"("compressionUncompressedBytes":4000,"samples":7680,"stepSeconds":1.9,"steps":120},"epoch)"
    R"(":0,"epochs":3,"ext":{"gpuUtil":0.75},"flightRecord":[{"backend":"gloo","bytes":4752,"en)"
    R"(dedSecondsAgo":-1.0,"issuedSecondsAgo":6.1,"op":"allreduce","seq":812,"startedSecondsAgo)"
    R"(":6.0,"state":"running"}],"lastShard":{"bytes":2345,"crc":4276993775,"generation":3,"ok")"
    R"(:true,"rank":1,"snapshotSeconds":0.25,"step":100,"writeSeconds":1.5},"loss":0.52,"messag)"
    R"(e":"all \"fine\"\n","mfu":0.41,"rank":1,"samplesPerSecond":9000.0,"state":"Running","ste)"
    R"(p":120,"testAccuracy":0.875,"tokensPerSecond":4096.0,"totalSteps":2814,"valLoss":2.5,"wo)"
    R"(rkerId":"fmnist-w1"})";
constexpr const char* kCapturedFailed =
    R"({"checkpoint":null,"collectives":[{"backend":"gloo","bytes":1048576,"issued":415,"op":"a)"
    R"(llreduce","seconds":0.01,"seq":412}],"counters":{"commBytes":123456,"commExposedSeconds")"
    R"(:0.12,"compressionSentBytes":400,"compressionUncompressedBytes":4000,"samples":7680,"ste)"
    R"(pSeconds":1.9,"steps":120},"epoch":0,"epochs":3,"ext":{"gpuUtil":0.75},"lastShard":{"err)"
    R"(or":"disk full","generation":2,"ok":false,"rank":0,"snapshotSeconds":0.0,"step":40,"writ)"
    R"(eSeconds":0.0},"loss":null,"message":"all \"fine\"\n","rank":1,"samplesPerSecond":9000.0)"
    R"(,"state":"Failed","step":120,"testAccuracy":null,"totalSteps":2814,"workerId":"fmnist-w1)"
    R"("})";

Heartbeat capturedFull() {
  Heartbeat r = sampleReport();
  r.testAccuracy = 0.875;
  r.valLoss = 2.5;
  r.tokensPerSecond = 4096;
  r.mfu = 0.41;
  r.flightRecord = {{"gloo", 812, "allreduce", 4752, "running", 6.1, 6.0, -1}};
  r.lastShard = LastShardReport{3, 100, ShardOutcome{1, true, {2345, 0xfeedbeef}, 0.25, 1.5, ""}};
  return r;
}

Heartbeat capturedFailed() {
  Heartbeat r = sampleReport();
  r.state = WorkerState::kFailed;
  r.loss = std::nan("");
  r.checkpoint.reset();
  r.lastShard = LastShardReport{2, 40, ShardOutcome{0, false, {}, 0, 0, "disk full"}};
  return r;
}

TEST(HeartbeatCodecTest, TheWireFormatIsTheOneCaptured) {
  EXPECT_EQ(encodeHeartbeat(capturedFull()), kCapturedFull);
  EXPECT_EQ(encodeHeartbeat(capturedFailed()), kCapturedFailed);
  // Read back strictly (as the test controllers do), each encodes to the same text again.
  for (const char* captured : {kCapturedFull, kCapturedFailed}) {
    auto h = strict(captured);
    ASSERT_TRUE(h.isOk()) << h.status();
    EXPECT_EQ(encodeHeartbeat(*h), captured);
  }
}

// The controller reads a captured heartbeat as its own decoder did before the one struct: every
// field the worker sent (the old decoder's readings, written out), a null loss left alone.
TEST(HeartbeatCodecTest, TheControllerReadsCapturedHeartbeatsAsBefore) {
  auto full = decodeHeartbeat(kCapturedFull);
  ASSERT_TRUE(full.isOk()) << full.status();
  EXPECT_EQ(encodeHeartbeat(*full), kCapturedFull) << "nothing the worker sent is lost";
  EXPECT_EQ(full->workerId, "fmnist-w1");
  EXPECT_TRUE(full->incarnation.empty()) << "not on the wire: the API server sets it from the header";
  EXPECT_EQ(full->counters.steps, 120);
  EXPECT_DOUBLE_EQ(full->counters.stepSeconds, 1.9);
  EXPECT_EQ(full->lastShard->outcome.entry.crc, 0xfeedbeefu);
  EXPECT_EQ(full->ext.at("gpuUtil"), 0.75);
  auto failed = decodeHeartbeat(kCapturedFailed);
  ASSERT_TRUE(failed.isOk()) << failed.status();
  EXPECT_TRUE(failed->final());
  EXPECT_EQ(failed->loss, 0) << "null leaves the value as it is";
  EXPECT_FALSE(failed->testAccuracy.has_value());
  EXPECT_FALSE(failed->checkpoint.has_value());
  EXPECT_EQ(failed->lastShard->outcome.error, "disk full");
  EXPECT_EQ(failed->lastShard->outcome.entry.bytes, 0u) << "size and CRC count only when ok";
}

TEST(HeartbeatCodecTest, RoundTripsReadStrictly) {
  const Heartbeat r = sampleReport();
  auto back = strict(encodeHeartbeat(r));
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->workerId, r.workerId);
  EXPECT_EQ(back->rank, r.rank);
  EXPECT_EQ(back->state, r.state);
  EXPECT_EQ(back->step, r.step);
  EXPECT_EQ(back->totalSteps, r.totalSteps);
  EXPECT_EQ(back->epoch, r.epoch);
  EXPECT_EQ(back->epochs, r.epochs);
  EXPECT_DOUBLE_EQ(back->loss, r.loss);
  EXPECT_DOUBLE_EQ(back->samplesPerSecond, r.samplesPerSecond);
  EXPECT_FALSE(back->testAccuracy.has_value());
  EXPECT_EQ(back->counters, r.counters);
  EXPECT_EQ(back->collectives, r.collectives);
  EXPECT_EQ(back->checkpoint, r.checkpoint);
  EXPECT_EQ(back->message, r.message);
  EXPECT_EQ(back->ext, r.ext);
  EXPECT_TRUE(back->flightRecord.empty());
  EXPECT_EQ(nlohmann::json::parse(encodeHeartbeat(r)).count("flightRecord"), 0u) << "sent only when asked";
  Heartbeat withRecord = r;
  withRecord.flightRecord = {{"gloo", 811, "allreduce", 4752, "completed", 0.5, 0.49, 0.4},
                             {"gloo", 812, "allreduce", 4752, "running", 6.1, 6.0, -1}};
  auto back3 = strict(encodeHeartbeat(withRecord));
  ASSERT_TRUE(back3.isOk()) << back3.status();
  EXPECT_EQ(back3->flightRecord, withRecord.flightRecord);

  // The wire names of docs/API.md; a finished worker with a diverged loss and an accuracy.
  Heartbeat done;
  done.workerId = "w";
  done.rank = 0;
  done.state = WorkerState::kFailed;
  done.loss = std::nan("");
  done.testAccuracy = 0.9;
  const auto j = nlohmann::json::parse(encodeHeartbeat(done));
  EXPECT_EQ(j["state"], "Failed");
  EXPECT_TRUE(j["loss"].is_null());
  EXPECT_EQ(j["testAccuracy"], 0.9);
  EXPECT_TRUE(j["checkpoint"].is_null());
  EXPECT_TRUE(j["collectives"].is_array());
  EXPECT_TRUE(j["ext"].is_object());
  for (const char* k : {"samples", "steps", "stepSeconds", "commBytes", "commExposedSeconds",
                        "compressionUncompressedBytes", "compressionSentBytes"}) {
    EXPECT_TRUE(j["counters"].contains(k)) << k;
  }
  auto back2 = strict(j.dump());
  ASSERT_TRUE(back2.isOk()) << back2.status();
  EXPECT_TRUE(std::isnan(back2->loss));
  EXPECT_EQ(back2->testAccuracy, 0.9);
  EXPECT_EQ(back2->state, WorkerState::kFailed);
  EXPECT_NE(strict(R"({"workerId": "w", "rank": 0, "state": "Sleeping"})").status().message().find("Sleeping"),
            std::string::npos);
}

TEST(HeartbeatCodecTest, LanguageModelFiguresRoundTripWhenPresent) {
  Heartbeat lm = sampleReport();
  lm.valLoss = 2.75;
  lm.tokensPerSecond = 123456.5;
  lm.mfu = 0.41;
  const auto j = nlohmann::json::parse(encodeHeartbeat(lm));
  EXPECT_EQ(j["valLoss"], 2.75);
  EXPECT_EQ(j["tokensPerSecond"], 123456.5);
  EXPECT_EQ(j["mfu"], 0.41);
  EXPECT_FALSE(j.contains("perplexity")) << "the controller computes it from valLoss";
  auto back = strict(j.dump());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->valLoss, 2.75);
  EXPECT_EQ(back->tokensPerSecond, 123456.5);
  EXPECT_EQ(back->mfu, 0.41);

  // Without them (an MLP or CNN job): no key on the wire, nothing after decoding.
  const Heartbeat plain = sampleReport();
  const auto jp = nlohmann::json::parse(encodeHeartbeat(plain));
  for (const char* k : {"valLoss", "tokensPerSecond", "mfu"}) EXPECT_FALSE(jp.contains(k)) << k;
  auto backPlain = strict(jp.dump());
  ASSERT_TRUE(backPlain.isOk()) << backPlain.status();
  EXPECT_FALSE(backPlain->valLoss.has_value());
  EXPECT_FALSE(backPlain->tokensPerSecond.has_value());
  EXPECT_FALSE(backPlain->mfu.has_value());

  // A diverged validation loss goes out as null and reads back as unknown.
  Heartbeat diverged = lm;
  diverged.valLoss = std::numeric_limits<double>::infinity();
  auto backDiverged = strict(encodeHeartbeat(diverged));
  ASSERT_TRUE(backDiverged.isOk()) << backDiverged.status();
  EXPECT_FALSE(backDiverged->valLoss.has_value());
  EXPECT_EQ(backDiverged->mfu, 0.41);

  // An older worker's heartbeat, as it was sent before these fields existed.
  auto old = strict(
      R"({"workerId": "w0", "rank": 0, "state": "Running", "step": 3, "totalSteps": 10, "epoch": 0, "epochs": 1,)"
      R"( "loss": 0.5, "samplesPerSecond": 100.0, "testAccuracy": null, "counters": {}, "collectives": [],)"
      R"( "checkpoint": null, "message": "", "ext": {}})");
  ASSERT_TRUE(old.isOk()) << old.status();
  EXPECT_EQ(old->step, 3);
  EXPECT_FALSE(old->valLoss.has_value());
  EXPECT_FALSE(old->tokensPerSecond.has_value());
  EXPECT_FALSE(old->mfu.has_value());

  // A present field of the wrong type is an error naming it.
  EXPECT_NE(strict(R"({"workerId": "w", "rank": 0, "state": "Running", "mfu": "high"})")
                .status().message().find("heartbeat.mfu"),
            std::string::npos);
}

TEST(HeartbeatCodecTest, TheControllerReadsEveryFieldTheWorkerSends) {
  Heartbeat r = sampleReport();
  r.testAccuracy = 0.875;
  r.valLoss = 2.5;
  r.tokensPerSecond = 4096;
  r.mfu = 0.41;
  r.flightRecord = {{"gloo", 812, "allreduce", 4752, "running", 6.1, 6.0, -1}};
  r.lastShard = LastShardReport{3, 100, ShardOutcome{1, true, {2345, 0xfeedbeef}, 0.25, 1.5, ""}};
  auto h = decodeHeartbeat(encodeHeartbeat(r));
  ASSERT_TRUE(h.isOk()) << h.status();
  EXPECT_EQ(h->workerId, r.workerId);
  EXPECT_EQ(h->rank, r.rank);
  EXPECT_EQ(h->state, WorkerState::kRunning);
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
  EXPECT_EQ(h->counters, r.counters);
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
  EXPECT_EQ(h->lastShard->outcome.rank, 1);
  EXPECT_TRUE(h->lastShard->outcome.ok);
  EXPECT_EQ(h->lastShard->outcome.entry.bytes, 2345u);
  EXPECT_EQ(h->lastShard->outcome.entry.crc, 0xfeedbeefu);
  EXPECT_EQ(h->ext, r.ext);
}

TEST(HeartbeatCodecTest, FinalStatesFailedShardsAndDivergedLossRead) {
  Heartbeat r = sampleReport();
  r.state = WorkerState::kFailed;
  r.loss = std::nan("");
  r.checkpoint.reset();
  r.lastShard = LastShardReport{2, 40, ShardOutcome{0, false, {}, 0, 0, "disk full"}};
  auto h = decodeHeartbeat(encodeHeartbeat(r));
  ASSERT_TRUE(h.isOk()) << h.status();
  EXPECT_EQ(h->state, WorkerState::kFailed);
  EXPECT_TRUE(h->final());
  EXPECT_EQ(h->loss, 0) << "a null loss leaves the controller's value as it is";
  EXPECT_FALSE(h->checkpoint.has_value());
  ASSERT_TRUE(h->lastShard.has_value());
  EXPECT_FALSE(h->lastShard->outcome.ok);
  EXPECT_EQ(h->lastShard->outcome.error, "disk full");
  for (WorkerState s : {WorkerState::kRunning, WorkerState::kSucceeded, WorkerState::kStopped}) {
    r.state = s;
    auto again = decodeHeartbeat(encodeHeartbeat(r));
    ASSERT_TRUE(again.isOk()) << again.status();
    EXPECT_EQ(again->state, s);
  }
}

// An older worker sends fewer fields; the controller reads what is there and names what is wrong.
TEST(HeartbeatCodecTest, HeartbeatsAreReadTolerantlyButBadFieldsAreNamed) {
  auto minimal = decodeHeartbeat(R"({"workerId": "w0", "step": 7.0, "loss": null, "counters": {"samples": 3, "note": "x"}})");
  ASSERT_TRUE(minimal.isOk()) << minimal.status();
  EXPECT_EQ(minimal->rank, -1);
  EXPECT_EQ(minimal->state, WorkerState::kRunning);
  EXPECT_EQ(minimal->step, 7);
  HeartbeatCounters three;
  three.samples = 3;
  EXPECT_EQ(minimal->counters, three) << "numbers only: another kind of value is passed over";
  EXPECT_TRUE(minimal->ext.empty());

  EXPECT_TRUE(mentions(decodeHeartbeat(R"({"rank": 0})").status(), "heartbeat.workerId: missing"));
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
  EXPECT_TRUE(mentions(decodeHeartbeat("{").status(), "not valid JSON"));
}

}  // namespace
}  // namespace ddp::protocol
