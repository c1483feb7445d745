// Flight records kept with their verdict (controller/jobs/hang/flight_records.h): the job store's
// codec round-trips every field; the last completed op a heartbeat's view shows; and a
// restarted controller (a real in-process Controller over loopback HTTP, real SQLite state dir)
// still serves the records its job store holds at GET /v1/jobs/{name}/flightrecords. The
// workers are a stand-in program (a shell script that sleeps): no hang happens here, the
// record is written to the store as the controller's persist would.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "controller/jobs/hang/flight_records.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/support/temp_dir.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

FlightRecordEvent sampleEvent() {
  FlightRecordEvent e;
  e.timeMs = 1'790'000'000'123;
  e.reason = "CollectiveStuck";
  e.message = "rank 1 never reached allreduce #812";
  e.generation = 3;
  RankFlightRecord r0;
  r0.rank = 0;
  r0.workerId = "j-w0";
  r0.status = "received";
  r0.lastHeartbeat = {CollectiveView{"gloo", 812, 812, "allreduce", 6.1}};
  FlightOp op;
  op.backend = "gloo";
  op.seq = 812;
  op.op = "allreduce";
  op.bytes = 4'200'000;
  op.state = "running";
  op.issuedSecondsAgo = 6.2;
  op.startedSecondsAgo = 6.1;
  op.endedSecondsAgo = -1;
  r0.ops = {op};
  r0.receivedMs = e.timeMs + 300;
  RankFlightRecord r1;
  r1.rank = 1;
  r1.workerId = "j-w1";
  r1.culprit = true;
  r1.status = "unavailable: blamed by the verdict (its last heartbeat is its view)";
  r1.lastHeartbeat = {CollectiveView{"gloo", 811, -1, "", 0}};
  e.ranks = {r0, r1};
  return e;
}

TEST(FlightRecordsStoreTest, TheCodecKeepsEveryField) {
  const FlightRecordEvent e = sampleEvent();
  auto back = decodeFlightRecordEvent(encodeFlightRecordEvent(e));
  ASSERT_TRUE(back.isOk()) << back.status();
  EXPECT_EQ(encodeFlightRecordEvent(*back), encodeFlightRecordEvent(e));
  EXPECT_EQ(back->timeMs, e.timeMs);
  ASSERT_EQ(back->ranks.size(), 2u);
  EXPECT_EQ(back->ranks[0].ops[0].bytes, 4'200'000);
  EXPECT_EQ(back->ranks[0].ops[0].endedSecondsAgo, -1);
  EXPECT_TRUE(back->ranks[1].culprit);
  EXPECT_EQ(summarizeFlightRecords(*back), summarizeFlightRecords(e));
  auto bad = decodeFlightRecordEvent(R"({"timeMs": 1, "reason": "Exited"})");
  ASSERT_FALSE(bad.isOk());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("message"), std::string::npos) << bad.status();
  EXPECT_FALSE(decodeFlightRecordEvent("not json").isOk());
}

TEST(FlightRecordsStoreTest, LastCompletedIsJustBeforeTheOldestUnfinishedOp) {
  EXPECT_EQ(lastCompletedSeq(CollectiveView{"gloo", 812, 812, "allreduce", 6}), 811);
  EXPECT_EQ(lastCompletedSeq(CollectiveView{"gloo", 815, 812, "allreduce", 6}), 811);  // 813.. queued behind it
  EXPECT_EQ(lastCompletedSeq(CollectiveView{"gloo", 811, -1, "", 0}), 811);           // nothing unfinished
  EXPECT_EQ(lastCompletedSeq(CollectiveView{"gloo", -1, -1, "", 0}), -1);             // nothing issued yet
}

Result<std::unique_ptr<Controller>> startController(const std::string& dir) {
  ControllerConfig c;
  c.listenPort = 0;
  c.stateDir = dir + "/state";
  c.workerBinary = dir + "/fake-worker.sh";
  c.stopGrace = std::chrono::seconds(1);
  return Controller::start(c);
}

TEST(FlightRecordsStoreTest, ARestartedControllerServesTheStoredRecords) {
  test::TempDir dir("flight_records");
  const std::string fake = dir.path() + "/fake-worker.sh";
  std::ofstream(fake) << "#!/bin/sh\nexec sleep 60\n";
  ::chmod(fake.c_str(), 0755);
  {
    auto ctl = startController(dir.path());
    ASSERT_TRUE(ctl.isOk()) << ctl.status();
    auto spec = parseJobSpec(
        "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: hung\nspec:\n  workers: {count: 2}\n"
        "  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 10\n");
    ASSERT_TRUE(spec.isOk()) << spec.status();
    ASSERT_TRUE((*ctl)->jobs().submit(*spec).isOk());
    ASSERT_TRUE((*ctl)->jobs().cancel("hung").isOk());
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < until) {
      auto rec = (*ctl)->jobs().get("hung");
      if (rec.isOk() && isTerminal(rec->phase)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    auto rec = (*ctl)->jobs().get("hung");
    ASSERT_TRUE(rec.isOk() && isTerminal(rec->phase)) << "the cancelled job did not end";
    (void)(*ctl)->launcher().forgetJob("hung");
    (*ctl)->stop();
  }
  {
    // What the first controller's persist writes after a verdict (here written directly).
    auto store = SqliteJobStore::open(dir.path() + "/state/jobs.db");
    ASSERT_TRUE(store.isOk()) << store.status();
    ASSERT_TRUE((*store)->putFlightRecord("hung", sampleEvent().timeMs, encodeFlightRecordEvent(sampleEvent())).isOk());
  }
  auto ctl = startController(dir.path());
  ASSERT_TRUE(ctl.isOk()) << ctl.status();
  httplib::Client client("127.0.0.1", (*ctl)->port());
  client.set_read_timeout(10, 0);
  auto res = client.Get("/v1/jobs/hung/flightrecords", {{"Authorization", "Bearer " + (*ctl)->token()}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  ASSERT_EQ(body["flightRecords"].size(), 1u) << body.dump(2);
  const json& e = body["flightRecords"][0];
  EXPECT_EQ(e["reason"], "CollectiveStuck");
  EXPECT_EQ(e["generation"], 3);
  EXPECT_EQ(e["summary"], summarizeFlightRecords(sampleEvent()));
  EXPECT_EQ(e["ranks"][0]["ops"][0]["bytes"], 4'200'000);
  EXPECT_EQ(e["ranks"][0]["lastHeartbeat"][0]["lastCompleted"], 811);
  EXPECT_EQ(e["ranks"][1]["lastHeartbeat"][0]["lastCompleted"], 811);
  (*ctl)->stop();
}

}  // namespace
}  // namespace ddp::controller
