// The worker's codecs (common/protocol/worker_codec.h; the heartbeat's: heartbeat_codec_test.cc):
// every message survives its encoder and decoder, the documented examples decode, and a bad field is named.
#include "common/protocol/worker_codec.h"

#include <gtest/gtest.h>

#include "tests/support/sample_messages.h"

namespace ddp::protocol {
namespace {

using testing::sampleAssignment;

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
