// ControllerClient against a fake controller (tests/support/fake_controller.h: an httplib::Server
// on 127.0.0.1 speaking docs/API.md's worker routes), and its JSON codecs without a server.
#include "worker/control/controller_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "tests/support/fake_controller.h"

namespace ddp::runtime {
namespace {

using namespace std::chrono_literals;
using testing::FakeController;

constexpr const char* kJob = "fmnist";
constexpr const char* kToken = "0123abcd";

std::unique_ptr<ControllerClient> makeClient(const std::string& url, const std::string& token = kToken) {
  ControllerClientOptions o;
  o.url = url;
  o.job = kJob;
  o.token = token;
  o.workerId = "fmnist-w1";
  auto c = ControllerClient::create(o);
  EXPECT_TRUE(c.isOk()) << c.status();
  return c.isOk() ? std::move(*c) : nullptr;
}

Assignment sampleAssignment() {
  Assignment a;
  a.rank = 1;
  a.worldSize = 2;
  a.generation = 3;
  a.specYaml = "apiVersion: ddp/v1\nkind: DDPJob\nmetadata:\n  name: fmnist\n";
  a.specSchema = 7;
  a.peers = {{0, "fmnist-w0", "10.0.0.1"}, {1, "fmnist-w1", "10.0.0.2"}};
  return a;
}

HeartbeatReport sampleReport() {
  HeartbeatReport r;
  r.workerId = "fmnist-w1";
  r.rank = 1;
  r.state = WorkerState::kRunning;
  r.step = 120;
  r.totalSteps = 2814;
  r.epoch = 0;
  r.epochs = 3;
  r.loss = 0.52;
  r.samplesPerSecond = 9000;
  r.counters = {7680, 120, 1.9, 123456, 0.12, 4000, 400};
  r.collectives = {{"gloo", 415, 412, "allreduce", 1048576, 0.01}};
  r.checkpoint = CheckpointReport{100, 2345678, "/ckpt/fmnist/step-100"};
  r.message = "all \"fine\"\n";
  r.ext = {{"gpuUtil", 0.75}};
  return r;
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(ControllerClientTest, RegistersThenGetsTheAssignmentAfterTwoOpenPolls) {
  FakeController fake(kJob, kToken);
  fake.setAssignment(sampleAssignment(), /*openPolls=*/2);
  auto client = makeClient(fake.url());
  auto reg = client->registerWorker("host-a", "10.0.0.2", 4242, Deadline::after(5s));
  ASSERT_TRUE(reg.isOk()) << reg.status();
  EXPECT_EQ(reg->workerId, "fmnist-w1");
  EXPECT_EQ(reg->generation, 3);
  const auto body = nlohmann::json::parse(fake.registrationBodies().at(0));
  EXPECT_EQ(body["workerId"], "fmnist-w1");
  EXPECT_EQ(body["host"], "host-a");
  EXPECT_EQ(body["advertiseAddress"], "10.0.0.2");
  EXPECT_EQ(body["pid"], 4242);

  auto a = client->awaitAssignment(Deadline::after(5s));
  ASSERT_TRUE(a.isOk()) << a.status();
  EXPECT_EQ(*a, sampleAssignment());
  const auto waits = fake.assignmentWaits();
  ASSERT_EQ(waits.size(), 3u);  // 204, 204, 200
  for (int64_t w : waits) {
    EXPECT_GT(w, 0);
    EXPECT_LE(w, 2000);  // wait_ms asks for a long poll the server holds at most 2 s
  }
}

TEST(ControllerClientTest, AssignmentTimesOutWhileTheRoundStaysOpen) {
  FakeController fake(kJob, kToken);  // no assignment: every poll is 204
  auto client = makeClient(fake.url());
  const auto t0 = std::chrono::steady_clock::now();
  auto a = client->awaitAssignment(Deadline::after(300ms));
  EXPECT_EQ(a.status().code(), StatusCode::kTimeout) << a.status();
  EXPECT_NE(a.status().message().find("did not close"), std::string::npos) << a.status();
  EXPECT_LT(secondsSince(t0), 1.0);
}

TEST(ControllerClientTest, FinishedJobIsItsOwnStatus) {
  FakeController fake(kJob, kToken);
  fake.setJobFinished("Cancelled");
  auto a = makeClient(fake.url())->awaitAssignment(Deadline::after(5s));
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfRange) << a.status();
  EXPECT_EQ(jobFinished(a.status()), "Cancelled");
  EXPECT_EQ(jobFinished(a.status().withContext("joining")), "Cancelled");
  EXPECT_FALSE(jobFinished(outOfRange("index 3 out of range")).has_value());
  EXPECT_FALSE(isFenced(a.status()));
}

TEST(ControllerClientTest, HeartbeatCarriesTheReportAndDecodesTheCommand) {
  FakeController fake(kJob, kToken);
  fake.setGeneration(3);
  auto client = makeClient(fake.url());
  fake.setCommand({CommandType::kCheckpoint, 200});
  auto answer = client->heartbeat(3, sampleReport(), Deadline::after(5s));
  ASSERT_TRUE(answer.isOk()) << answer.status();
  EXPECT_EQ(answer->command, (Command{CommandType::kCheckpoint, 200}));
  EXPECT_EQ(answer->generation, 3);
  const auto beats = fake.heartbeats();
  ASSERT_EQ(beats.size(), 1u);
  EXPECT_EQ(beats[0].generation, 3);
  EXPECT_EQ(beats[0].report.counters, sampleReport().counters);
  EXPECT_EQ(beats[0].report.collectives, sampleReport().collectives);
  EXPECT_EQ(beats[0].report.message, sampleReport().message);

  for (CommandType t : {CommandType::kNone, CommandType::kStop, CommandType::kAbort, CommandType::kFlightRecord}) {
    fake.setCommand({t, -1});
    auto a = client->heartbeat(3, sampleReport(), Deadline::after(5s));
    ASSERT_TRUE(a.isOk()) << a.status();
    EXPECT_EQ(a->command.type, t) << commandTypeName(t);
  }
}

TEST(ControllerClientTest, StaleGenerationIsFenced) {
  FakeController fake(kJob, kToken);
  fake.setGeneration(4);
  auto answer = makeClient(fake.url())->heartbeat(3, sampleReport(), Deadline::after(5s));
  ASSERT_FALSE(answer.isOk());
  EXPECT_EQ(answer.status().code(), StatusCode::kAborted);
  EXPECT_EQ(answer.status().message(), "fenced: stale generation, current 4");
  EXPECT_TRUE(isFenced(answer.status()));
  EXPECT_FALSE(isFenced(abortedError("peer aborted")));
}

TEST(ControllerClientTest, RefusedTokenAndUnknownJobAreClearErrors) {
  FakeController fake(kJob, kToken);
  auto bad = makeClient(fake.url(), "wrong-token");
  const auto t0 = std::chrono::steady_clock::now();
  auto reg = bad->registerWorker("h", "a", 1, Deadline::after(5s));
  EXPECT_LT(secondsSince(t0), 1.0);  // not retried
  ASSERT_FALSE(reg.isOk());
  EXPECT_EQ(reg.status().code(), StatusCode::kFailedPrecondition) << reg.status();
  EXPECT_NE(reg.status().message().find("HTTP 401"), std::string::npos) << reg.status();
  EXPECT_NE(reg.status().message().find("invalid token"), std::string::npos) << reg.status();
  EXPECT_NE(reg.status().message().find(fake.url()), std::string::npos) << reg.status();
  EXPECT_EQ(fake.rejectedTokens(), 1);

  ControllerClientOptions o;
  o.url = fake.url();
  o.job = "other-job";
  o.token = kToken;
  o.workerId = "w";
  auto other = ControllerClient::create(o);
  ASSERT_TRUE(other.isOk());
  auto hb = (*other)->heartbeat(1, sampleReport(), Deadline::after(5s));
  EXPECT_EQ(hb.status().code(), StatusCode::kNotFound) << hb.status();
  EXPECT_NE(hb.status().message().find("job not found"), std::string::npos) << hb.status();
}

TEST(ControllerClientTest, UnreachableControllerIsRetriedUntilTheDeadline) {
  const std::string url = "http://127.0.0.1:" + std::to_string(testing::closedLocalPort());
  auto client = makeClient(url);
  const auto t0 = std::chrono::steady_clock::now();
  auto reg = client->registerWorker("h", "a", 1, Deadline::after(600ms));
  const double took = secondsSince(t0);
  ASSERT_FALSE(reg.isOk());
  EXPECT_EQ(reg.status().code(), StatusCode::kUnavailable) << reg.status();
  EXPECT_NE(reg.status().message().find(url), std::string::npos) << reg.status();
  EXPECT_NE(reg.status().message().find("retried until the deadline"), std::string::npos) << reg.status();
  // Backoff 50, 100, 200, 400 ms (capped by the deadline): at least four attempts.
  EXPECT_NE(reg.status().message().find("attempts"), std::string::npos);
  const int attempts = std::stoi(reg.status().message().substr(reg.status().message().rfind('(') + 1));
  EXPECT_GE(attempts, 4) << reg.status();
  EXPECT_LE(attempts, 6) << reg.status();
  EXPECT_GE(took, 0.55);  // it kept trying until the deadline...
  EXPECT_LT(took, 0.85);  // ...and gave up at it
}

TEST(ControllerClientTest, StoreOptionsNameTheGenerationsStore) {
  auto client = makeClient("http://ctl:8080/");
  EXPECT_EQ(client->url(), "http://ctl:8080");
  EXPECT_EQ(client->storeAddress(), "ctl:8080");
  comm::HttpStoreClientOptions o = client->storeOptions(7);
  EXPECT_EQ(o.basePath, "/v1/jobs/fmnist/generations/7/store");
  EXPECT_EQ(o.bearerToken, kToken);
}

TEST(ControllerClientTest, OptionsAreValidated) {
  ControllerClientOptions o;
  o.url = "ctl:8080";
  o.job = "j";
  o.token = "t";
  o.workerId = "w";
  EXPECT_EQ(ControllerClient::create(o).status().code(), StatusCode::kInvalidArgument);
  o.url = "http://ctl:8080";
  o.token.clear();
  EXPECT_EQ(ControllerClient::create(o).status().code(), StatusCode::kInvalidArgument);
}

// ---- JSON codecs, no server ----

TEST(ControllerWireTest, AssignmentRoundTrips) {
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

TEST(ControllerWireTest, HeartbeatReportRoundTrips) {
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
TEST(ControllerWireTest, HeartbeatLanguageModelFiguresRoundTripWhenPresent) {
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

TEST(ControllerWireTest, HeartbeatAnswerRoundTrips) {
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
}  // namespace ddp::runtime
