// The heartbeat's shared parts (common/protocol/heartbeat_parts.h): what their encoders write
// both readings read back equal; a strict reader requires what the worker always writes and a
// tolerant one (the controller's) requires nothing; errors name the field's place.
#include "common/protocol/heartbeat_parts.h"

#include <gtest/gtest.h>

#include <string>

namespace ddp::protocol {
namespace {

Json heartbeatWith(const std::vector<CollectiveView>& c, const std::vector<FlightOp>& ops,
                   const std::optional<HeartbeatCheckpoint>& cp) {
  return Json{{"collectives", collectivesJson(c)}, {"flightRecord", flightRecordJson(ops)},
              {"checkpoint", checkpointJson(cp)}};
}

TEST(HeartbeatPartsTest, BothReadingsReadBackWhatIsWritten) {
  const std::vector<CollectiveView> views = {{"gloo", 41, 40, "allreduce", 0.25, 4096}, {"nccl", -1, -1, "", 0, 0}};
  const std::vector<FlightOp> ops = {{"gloo", 40, "allreduce", 4096, "running", 0.5, 0.4, -1},
                                     {"gloo", 39, "broadcast", 8, "completed", 0.9, 0.8, 0.7}};
  const HeartbeatCheckpoint cp{100, 2345, "/ckpt/step-100"};
  const Json j = heartbeatWith(views, ops, cp);
  for (Reading reading : {Reading::kStrict, Reading::kTolerant}) {
    JsonFields f(j, "heartbeat", reading);
    std::vector<CollectiveView> v;
    std::vector<FlightOp> o;
    std::optional<HeartbeatCheckpoint> c;
    ASSERT_TRUE(decodeCollectives(f, &v).isOk());
    ASSERT_TRUE(decodeFlightRecord(f, &o).isOk());
    ASSERT_TRUE(decodeCheckpoint(f, &c).isOk());
    EXPECT_EQ(v, views);
    EXPECT_EQ(o, ops);
    EXPECT_EQ(c, cp);
  }
  std::optional<HeartbeatCheckpoint> none;
  EXPECT_TRUE(decodeCheckpoint(JsonFields(heartbeatWith({}, {}, std::nullopt), "heartbeat"), &none).isOk());
  EXPECT_FALSE(none.has_value()) << "a null checkpoint is none";
}

TEST(HeartbeatPartsTest, OnlyTheStrictReadingRequiresFields) {
  const Json sparse = Json::parse(R"({"collectives": [{"backend": "gloo"}], "flightRecord": [{"seq": 3}],
                                      "checkpoint": {"path": "/p"}})");
  JsonFields strict(sparse, "heartbeat");
  std::vector<CollectiveView> v;
  std::vector<FlightOp> o;
  std::optional<HeartbeatCheckpoint> c;
  EXPECT_EQ(decodeCollectives(strict, &v).message(), "heartbeat.collectives[0].seq: missing");
  EXPECT_EQ(decodeFlightRecord(strict, &o).message(), "heartbeat.flightRecord[0].op: missing");
  EXPECT_EQ(decodeCheckpoint(strict, &c).message(), "heartbeat.checkpoint.step: missing");
  JsonFields tolerant(sparse, "heartbeat", Reading::kTolerant);
  v.clear();
  o.clear();
  ASSERT_TRUE(decodeCollectives(tolerant, &v).isOk());
  ASSERT_TRUE(decodeFlightRecord(tolerant, &o).isOk());
  ASSERT_TRUE(decodeCheckpoint(tolerant, &c).isOk());
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].seq, -1) << "absent: the default";
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(o[0].seq, 3);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->path, "/p");
  const Json bad = Json::parse(R"({"collectives": [{"backend": "gloo", "seq": "x"}]})");
  EXPECT_EQ(decodeCollectives(JsonFields(bad, "heartbeat", Reading::kTolerant), &v).message(),
            "heartbeat.collectives[0].seq: expected an integer")
      << "a present field of another type is wrong in both readings";
}

}  // namespace
}  // namespace ddp::protocol
