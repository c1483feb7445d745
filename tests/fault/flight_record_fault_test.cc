// Flight records of a real hang (controller/jobs/hang/flight_records.h), with real processes: an
// in-process controller starts two ddp-worker processes over loopback; rank 1 stalls inside
// training before step 60 (DDP_TEST_STALL) while its heartbeats go on, so rank 0 waits in a
// collective rank 1 never issues. After the CollectiveStuck verdict the controller asks rank 0
// for its flight record (the `flightRecord` heartbeat command), keeps it with the verdict and
// serves it at GET /v1/jobs/{name}/flightrecords; `ddpctl describe` prints the summary; the
// fault families of /metrics count the verdict and the recovery; the records are in the job
// store; a worker SIGKILLed afterwards (by PID) counts as a death. Cleanup: the harness.
#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <regex>

#include <nlohmann/json.hpp>

#include "controller/jobs/hang/flight_records.h"
#include "controller/store/sqlite_job_store.h"
#include "tests/fault/fault_harness.h"
#include "tests/integration/cli_process.h"
#include "tests/support/prometheus_text.h"

namespace ddp {
namespace {

using nlohmann::json;
using test::FaultHarness;

TEST(FlightRecordFaultTest, AStuckCollectiveIsExplainedByTheRanksFlightRecords) {
  ::setenv("DDP_TEST_STALL", "1:60:60", 1);
  struct Unset {
    ~Unset() { ::unsetenv("DDP_TEST_STALL"); }
  } unset;
  FaultHarness h;
  ASSERT_TRUE(h.ok()) << h.startError();
  ASSERT_TRUE(h.submit(test::faultJobYaml("stuck", h.dir() + "/ckpt", 100000, 3)).isOk());
  ASSERT_TRUE(h.waitFor(30, [&] { return h.event("stuck", "Recovered") != nullptr; })) << h.describeEvents("stuck");
  auto verdict = h.event("stuck", "CollectiveStuck");
  ASSERT_NE(verdict, nullptr) << h.describeEvents("stuck");

  httplib::Client client("127.0.0.1", h.controller().port());
  client.set_read_timeout(10, 0);
  const httplib::Headers auth = {{"Authorization", "Bearer " + h.controller().token()}};
  auto unauthenticated = client.Get("/v1/jobs/stuck/flightrecords");
  ASSERT_TRUE(unauthenticated);
  EXPECT_EQ(unauthenticated->status, 401);
  auto missing = client.Get("/v1/jobs/nope/flightrecords", auth);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto res = client.Get("/v1/jobs/stuck/flightrecords", auth);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  ASSERT_EQ(body["flightRecords"].size(), 1u) << body.dump(2);
  const json& e = body["flightRecords"][0];
  EXPECT_EQ(e["reason"], "CollectiveStuck");
  EXPECT_EQ(e["generation"], 1);
  ASSERT_EQ(e["ranks"].size(), 2u);
  EXPECT_TRUE(e["ranks"][1]["culprit"].get<bool>());
  EXPECT_EQ(e["ranks"][0]["status"], "received") << e.dump(2);
  bool unfinished = false;
  for (const auto& op : e["ranks"][0]["ops"]) unfinished = unfinished || op["state"] == "running" || op["state"] == "queued";
  EXPECT_TRUE(unfinished) << "rank 0 was waiting in a collective: " << e["ranks"][0].dump(2);
  // The summary names the op the verdict names, and the time rank 0 waited in it (>= hangSeconds).
  const std::string summary = e["summary"];
  std::smatch m;
  ASSERT_TRUE(std::regex_match(summary, m,
                               std::regex(R"(rank 1 never reached (\w+) #(\d+) \(.+\); rank 0 waiting in it for (\d+\.\d) s)")))
      << summary;
  EXPECT_NE(verdict->message.find("rank 1 never reached " + m[1].str() + " #" + m[2].str()), std::string::npos)
      << verdict->message << " vs " << summary;
  EXPECT_GE(std::stod(m[3].str()), 5.0) << summary;

  // ddpctl describe prints it.
  auto described = test::runCli({test::kFaultBin + "/ddpctl", "describe", "stuck", "--server", h.controller().url(),
                                 "--token-file", h.controller().tokenFile()},
                                30);
  EXPECT_EQ(described.exitCode, 0) << described.err;
  EXPECT_NE(described.out.find("Hangs:"), std::string::npos) << described.out;
  EXPECT_NE(described.out.find(summary), std::string::npos) << described.out;

  // The fault families of /metrics.
  auto scrape = client.Get("/metrics", auth);
  ASSERT_TRUE(scrape);
  const auto t = test::PromText::parse(scrape->body);
  EXPECT_EQ(t.value("ddp_hangs_detected_total", {{"job", "stuck"}, {"reason", "CollectiveStuck"}}), 1);
  EXPECT_EQ(t.value("ddp_job_restarts_total", {{"job", "stuck"}}), 1);
  EXPECT_EQ(t.value("ddp_recovery_seconds_count", {{"job", "stuck"}}), 1);
  EXPECT_GE(*t.value("ddp_aborts_total", {{"job", "stuck"}}), 1) << "rank 0 aborted its communicator";
  EXPECT_EQ(t.value("ddp_worker_deaths_total", {{"job", "stuck"}}), 0) << "the replaced rank was killed by the controller";
  EXPECT_EQ(t.value("ddp_job_generation", {{"job", "stuck"}}), 2);

  // The last op the blamed rank completed, from its last heartbeat: the one before the op it
  // never reached.
  const json& blamedView = e["ranks"][1]["lastHeartbeat"];
  ASSERT_FALSE(blamedView.empty()) << e["ranks"][1].dump(2);
  EXPECT_EQ(blamedView[0]["lastCompleted"], std::stoll(m[2].str()) - 1) << blamedView.dump(2);

  // Kept with the verdict in the job store (a restarted controller serves them from there),
  // with rank 0's answer.
  auto store = controller::SqliteJobStore::open(h.dir() + "/state/jobs.db");
  ASSERT_TRUE(store.isOk()) << store.status();
  EXPECT_TRUE(h.waitFor(10, [&] {
    auto docs = (*store)->flightRecords("stuck");
    if (!docs.isOk() || docs->size() != 1) return false;
    auto stored = controller::decodeFlightRecordEvent(docs->front());
    return stored.isOk() && stored->reason == "CollectiveStuck" && stored->ranks.size() == 2 &&
           stored->ranks[0].status == "received" && !stored->ranks[0].ops.empty();
  })) << "the verdict's flight records were not written to the job store";

  // A worker that dies (SIGKILL from outside, not the controller's kill) counts as a death.
  const int64_t pid = h.pidOfRank("stuck", 0);
  ASSERT_GT(pid, 0);
  h.signal(pid, SIGKILL);
  ASSERT_TRUE(h.waitFor(30, [&] {
    auto r = client.Get("/metrics", auth);
    if (!r) return false;
    auto v = test::PromText::parse(r->body).value("ddp_worker_deaths_total", {{"job", "stuck"}});
    return v && *v == 1;
  })) << h.describeEvents("stuck");
}

}  // namespace
}  // namespace ddp
