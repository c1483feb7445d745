// The worker's codecs (common/protocol/worker_codec.h): every message survives its encoder and
// decoder, the documented examples decode, and a bad field is named.
#include "common/protocol/worker_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "tests/support/sample_messages.h"

namespace ddp::protocol {
namespace {

using testing::sampleAssignment;
using testing::sampleReport;

TEST(WorkerCodecTest, AssignmentRoundTrips) {
  auto back = decodeAssignment(encodeAssignment(sampleAssignment()));
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(*back, sampleAssignment());
  // The documented example, field by field.
  auto doc = decodeAssignment(R"({"rank": 0, "worldSize": 1, "generation": 1, "spec": "x: 1", "peers": []})");
  ASSERT_TRUE(doc.isOk()) << doc.status();
  EXPECT_EQ(doc->rank, 0);
  EXPECT_EQ(doc->specYaml, "x: 1");
  EXPECT_EQ(doc->specSchema, 1) << "a controller from before specSchema was sent speaks schema 1";
  EXPECT_NE(decodeAssignment(R"({"rank": 0, "worldSize": 1, "generation": 1, "spec": "", "specSchema": "2"})")
                .status().message().find("assignment.specSchema"),
            std::string::npos);
  EXPECT_NE(decodeAssignment(R"({"rank": 0, "worldSize": 1, "generation": 1})").status().message().find("assignment.spec"),
            std::string::npos);
  EXPECT_NE(decodeAssignment(R"({"rank": "0", "worldSize": 1, "generation": 1, "spec": ""})").status().message().find("assignment.rank"),
            std::string::npos);
  EXPECT_NE(decodeAssignment(R"({"rank": 2, "worldSize": 2, "generation": 1, "spec": ""})").status().message().find("not in [0, 2)"),
            std::string::npos);
  EXPECT_FALSE(decodeAssignment("not json").isOk());
  EXPECT_FALSE(decodeAssignment("[1]").isOk());
}

TEST(WorkerCodecTest, HeartbeatReportRoundTrips) {
  const HeartbeatReport r = sampleReport();
  auto back = decodeHeartbeatReport(encodeHeartbeatReport(r));
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
  EXPECT_EQ(nlohmann::json::parse(encodeHeartbeatReport(r)).count("flightRecord"), 0u) << "sent only when asked";
  HeartbeatReport withRecord = r;
  withRecord.flightRecord = {{"gloo", 811, "allreduce", 4752, "completed", 0.5, 0.49, 0.4},
                             {"gloo", 812, "allreduce", 4752, "running", 6.1, 6.0, -1}};
  auto back3 = decodeHeartbeatReport(encodeHeartbeatReport(withRecord));
  ASSERT_TRUE(back3.isOk()) << back3.status();
  EXPECT_EQ(back3->flightRecord, withRecord.flightRecord);

  // The wire names of docs/API.md; a finished worker with a diverged loss and an accuracy.
  HeartbeatReport done;
  done.workerId = "w";
  done.rank = 0;
  done.state = WorkerState::kFailed;
  done.loss = std::nan("");
  done.testAccuracy = 0.9;
  const auto j = nlohmann::json::parse(encodeHeartbeatReport(done));
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
  auto back2 = decodeHeartbeatReport(j.dump());
  ASSERT_TRUE(back2.isOk()) << back2.status();
  EXPECT_TRUE(std::isnan(back2->loss));
  EXPECT_EQ(back2->testAccuracy, 0.9);
  EXPECT_EQ(back2->state, WorkerState::kFailed);
  EXPECT_NE(decodeHeartbeatReport(R"({"workerId": "w", "rank": 0, "state": "Sleeping"})").status().message().find("Sleeping"),
            std::string::npos);
}

// Language-model figures (docs/API.md, "Heartbeats"): sent only when known, so a report
// without them reads as one from an older worker, and an older worker's report decodes.
TEST(WorkerCodecTest, HeartbeatLanguageModelFiguresRoundTripWhenPresent) {
  HeartbeatReport lm = sampleReport();
  lm.valLoss = 2.75;
  lm.tokensPerSecond = 123456.5;
  lm.mfu = 0.41;
  const auto j = nlohmann::json::parse(encodeHeartbeatReport(lm));
  EXPECT_EQ(j["valLoss"], 2.75);
  EXPECT_EQ(j["tokensPerSecond"], 123456.5);
  EXPECT_EQ(j["mfu"], 0.41);
  EXPECT_FALSE(j.contains("perplexity")) << "the controller computes it from valLoss";
  auto back = decodeHeartbeatReport(j.dump());
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(back->valLoss, 2.75);
  EXPECT_EQ(back->tokensPerSecond, 123456.5);
  EXPECT_EQ(back->mfu, 0.41);

  // Without them (an MLP or CNN job): no key on the wire, nothing after decoding.
  const HeartbeatReport plain = sampleReport();
  const auto jp = nlohmann::json::parse(encodeHeartbeatReport(plain));
  for (const char* k : {"valLoss", "tokensPerSecond", "mfu"}) EXPECT_FALSE(jp.contains(k)) << k;
  auto backPlain = decodeHeartbeatReport(jp.dump());
  ASSERT_TRUE(backPlain.isOk()) << backPlain.status();
  EXPECT_FALSE(backPlain->valLoss.has_value());
  EXPECT_FALSE(backPlain->tokensPerSecond.has_value());
  EXPECT_FALSE(backPlain->mfu.has_value());

  // A diverged validation loss goes out as null and reads back as unknown.
  HeartbeatReport diverged = lm;
  diverged.valLoss = std::numeric_limits<double>::infinity();
  auto backDiverged = decodeHeartbeatReport(encodeHeartbeatReport(diverged));
  ASSERT_TRUE(backDiverged.isOk()) << backDiverged.status();
  EXPECT_FALSE(backDiverged->valLoss.has_value());
  EXPECT_EQ(backDiverged->mfu, 0.41);

  // An older worker's heartbeat, as it was sent before these fields existed.
  auto old = decodeHeartbeatReport(
      R"({"workerId": "w0", "rank": 0, "state": "Running", "step": 3, "totalSteps": 10, "epoch": 0, "epochs": 1,)"
      R"( "loss": 0.5, "samplesPerSecond": 100.0, "testAccuracy": null, "counters": {}, "collectives": [],)"
      R"( "checkpoint": null, "message": "", "ext": {}})");
  ASSERT_TRUE(old.isOk()) << old.status();
  EXPECT_EQ(old->step, 3);
  EXPECT_FALSE(old->valLoss.has_value());
  EXPECT_FALSE(old->tokensPerSecond.has_value());
  EXPECT_FALSE(old->mfu.has_value());

  // A present field of the wrong type is an error naming it.
  EXPECT_NE(decodeHeartbeatReport(R"({"workerId": "w", "rank": 0, "state": "Running", "mfu": "high"})")
                .status().message().find("heartbeat.mfu"),
            std::string::npos);
}

TEST(WorkerCodecTest, HeartbeatAnswerRoundTrips) {
  for (HeartbeatAnswer a : {HeartbeatAnswer{{CommandType::kNone, -1}, 1}, HeartbeatAnswer{{CommandType::kCheckpoint, 300}, 2},
                            HeartbeatAnswer{{CommandType::kStop, -1}, 3}, HeartbeatAnswer{{CommandType::kAbort, -1}, 4},
                            HeartbeatAnswer{{CommandType::kFlightRecord, -1}, 5}}) {
    auto back = decodeHeartbeatAnswer(encodeHeartbeatAnswer(a));
    ASSERT_TRUE(back.isOk()) << back.status();
    EXPECT_EQ(*back, a);
  }
  auto doc = decodeHeartbeatAnswer(R"({"command": {"type": "none"}, "generation": 1})");
  ASSERT_TRUE(doc.isOk()) << doc.status();
  EXPECT_EQ(doc->command.type, CommandType::kNone);
  EXPECT_NE(decodeHeartbeatAnswer(R"({"command": {"type": "reboot"}})").status().message().find("unknown command 'reboot'"),
            std::string::npos);
  EXPECT_NE(decodeHeartbeatAnswer(R"({"command": {"type": "checkpoint"}})").status().message().find("command.step"),
            std::string::npos);
  EXPECT_FALSE(decodeHeartbeatAnswer(R"({"generation": 1})").isOk());
}

}  // namespace
}  // namespace ddp::protocol
