// The REST contract of ddp-controller (docs/API.md), route by route with good and bad input,
// against a real in-process Controller over loopback HTTP: real SQLite state dir, real local
// launcher. The workers it starts are a stand-in program (a shell script that sleeps), so this
// test plays the workers' side of the protocol itself (register, assignment, store, heartbeat).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <fstream>
#include <functional>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec.h"
#include "common/store/http_store_client.h"
#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "tests/support/stand_in_controller_test.h"

namespace ddp::controller {
namespace {

using nlohmann::json;


std::string jobYaml(const std::string& name, int workers = 2) {
  return "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: " + name +
         "\nspec:\n  workers: {count: " + std::to_string(workers) +
         "}\n  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 10\n";
}

class ApiContractTest : public test::StandInControllerTest<> {
 protected:
  void SetUp() override { startController(); }
  httplib::Result post(const std::string& path, const std::string& body, const std::string& type,
                       const httplib::Headers& h) {
    return client_->Post(path.c_str(), h, body, type.c_str());
  }
  // The job's events once `done` holds for them (the job manager's ticker writes them after the
  // answer that caused them), or as they are after 2 s.
  json eventsUntil(const std::string& job, const std::function<bool(const json&)>& done) {
    json events;
    for (int i = 0; i < 200; ++i) {
      events = json::parse(client_->Get(("/v1/jobs/" + job + "/events").c_str(), auth_)->body)["events"];
      if (done(events)) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return events;
  }
  json submitOk(const std::string& name, int workers = 2) {
    auto r = post("/v1/jobs", jobYaml(name, workers), "application/yaml", auth_);
    EXPECT_TRUE(r);
    EXPECT_EQ(r->status, 201) << r->body;
    return json::parse(r->body);
  }
  std::string workerToken(const std::string& name) {
    auto rec = ctl_->jobs().get(name);
    EXPECT_TRUE(rec.isOk());
    return rec->workerToken;
  }
};

TEST_F(ApiContractTest, HealthNeedsNoTokenEverythingElseDoes) {
  auto h = client_->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = client_->Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  auto none = client_->Get("/v1/jobs");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(json::parse(none->body)["error"].get<std::string>().find("missing bearer token"), std::string::npos);
  auto wrong = client_->Get("/v1/jobs", {{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto ok = client_->Get("/v1/jobs", auth_);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_TRUE(json::parse(ok->body)["jobs"].empty());
}

TEST_F(ApiContractTest, TheGeneratedTokenFileIsPrivate) {
  struct stat st {};
  ASSERT_EQ(::stat(ctl_->tokenFile().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ctl_->token().size(), 64u);  // 256 bits, hex
}

TEST_F(ApiContractTest, SubmitGetListAndTheJobObject) {
  json job = submitOk("alpha");
  EXPECT_EQ(job["metadata"]["name"], "alpha");
  EXPECT_EQ(job["status"]["phase"], "Pending");
  EXPECT_EQ(job["status"]["conditions"][0]["type"], "Created");
  EXPECT_EQ(job["spec"]["workers"]["count"], 2);
  EXPECT_EQ(job["spec"]["timeouts"]["heartbeatSeconds"], 1);
  auto g = client_->Get("/v1/jobs/alpha", auth_);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->status, 200);
  json got = json::parse(g->body);
  for (const char* k : {"phase", "conditions", "startTime", "completionTime", "generation", "restarts", "workers", "progress"}) {
    EXPECT_TRUE(got["status"].contains(k)) << k;
  }
  for (const char* k : {"step", "totalSteps", "epoch", "epochs", "loss", "samplesPerSecond", "testAccuracy", "etaSeconds",
                        "valLoss", "perplexity", "tokensPerSecond", "mfu"}) {
    EXPECT_TRUE(got["status"]["progress"].contains(k)) << k;
  }
  for (const char* k : {"testAccuracy", "valLoss", "perplexity", "tokensPerSecond", "mfu"}) {
    EXPECT_TRUE(got["status"]["progress"][k].is_null()) << k << ": unknown before the first report";
  }
  // JSON documents are accepted too.
  const std::string js = R"({"apiVersion":"ddp.dev/v1","kind":"DDPJob","metadata":{"name":"beta"},)"
                         R"("spec":{"model":{"type":"mlp","hidden":[8]},"data":{"dataset":"synthetic"},"steps":5}})";
  auto j = post("/v1/jobs", js, "application/json", auth_);
  ASSERT_TRUE(j);
  EXPECT_EQ(j->status, 201) << j->body;
  auto l = client_->Get("/v1/jobs?phase=Pending", auth_);
  ASSERT_TRUE(l);
  EXPECT_EQ(json::parse(l->body)["jobs"].size(), 2u);
  auto none = client_->Get("/v1/jobs?phase=Succeeded", auth_);
  EXPECT_TRUE(json::parse(none->body)["jobs"].empty());
  auto bad = client_->Get("/v1/jobs?phase=Bogus", auth_);
  EXPECT_EQ(bad->status, 400);
  auto missing = client_->Get("/v1/jobs/nope", auth_);
  EXPECT_EQ(missing->status, 404);
}

TEST_F(ApiContractTest, BadDocumentsAreRefusedWithEveryErrorAndNothingIsStored) {
  auto malformed = post("/v1/jobs", "metadata: {name: x\nspec: [", "application/yaml", auth_);
  ASSERT_TRUE(malformed);
  EXPECT_EQ(malformed->status, 400);
  json m = json::parse(malformed->body);
  ASSERT_FALSE(m["details"].empty());
  EXPECT_GT(m["details"][0]["line"].get<int>(), 0);

  const std::string twoErrors = "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: bad}\nspec:\n"
                                "  workers: {count: 0}\n  bogusField: 1\n  steps: 10\n";
  auto v = post("/v1/jobs", twoErrors, "application/yaml", auth_);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->status, 400);
  json d = json::parse(v->body)["details"];
  ASSERT_GE(d.size(), 2u) << v->body;
  bool unknown = false, count = false;
  for (const auto& e : d) {
    unknown = unknown || e["path"].get<std::string>().find("bogusField") != std::string::npos;
    count = count || e["path"] == "spec.workers.count";
    EXPECT_TRUE(e.contains("line") && e.contains("column") && e.contains("message"));
  }
  EXPECT_TRUE(unknown) << v->body;
  EXPECT_TRUE(count) << v->body;

  auto type = post("/v1/jobs", jobYaml("t"), "text/plain", auth_);
  EXPECT_EQ(type->status, 415);
  auto big = post("/v1/jobs", std::string(2u << 20, '#'), "application/yaml", auth_);
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  auto tooMany = post("/v1/jobs", jobYaml("huge", 4000), "application/yaml", auth_);
  EXPECT_EQ(tooMany->status, 400);
  EXPECT_NE(tooMany->body.find("spec.workers.count"), std::string::npos) << tooMany->body;
  // Note [Job names]: a name its Service or its last worker pod could not carry.
  for (const std::string& name : {std::string("7up"), std::string(52, 'a')}) {
    auto refused = post("/v1/jobs", jobYaml(name), "application/yaml", auth_);
    EXPECT_EQ(refused->status, 400) << refused->body;
    EXPECT_NE(refused->body.find("metadata.name"), std::string::npos) << refused->body;
    EXPECT_NE(refused->body.find(name == "7up" ? "DNS-1035" : "at most 51 characters"), std::string::npos) << refused->body;
  }

  submitOk("dup");
  auto dup = post("/v1/jobs", jobYaml("dup"), "application/yaml", auth_);
  EXPECT_EQ(dup->status, 409);
  auto l = client_->Get("/v1/jobs", auth_);
  EXPECT_EQ(json::parse(l->body)["jobs"].size(), 1u) << "only the valid job was stored";
  EXPECT_EQ(client_->Get("/healthz")->status, 200) << "the server keeps serving";
}

// Note [Invalid UTF-8]: no byte a client sends yields a 500 or an answer that is not JSON.
TEST_F(ApiContractTest, InvalidUtf8AndSecondDocumentsAre400NamingWhereNotA500) {
  auto badName = post("/v1/jobs", jobYaml("j\xFFob"), "application/yaml", auth_);
  ASSERT_TRUE(badName);
  EXPECT_EQ(badName->status, 400) << badName->body;
  json b = json::parse(badName->body);  // throws (fails the test) if the body is not valid JSON
  ASSERT_FALSE(b["details"].empty());
  EXPECT_NE(b["details"][0]["message"].get<std::string>().find("not valid UTF-8: invalid UTF-8 at byte 55"), std::string::npos)
      << b.dump();
  EXPECT_EQ(b["details"][0]["line"], 4);

  auto badJson = post("/v1/jobs", "{\"metadata\": {\"name\": \"\xC0\xAF\"}}", "application/json", auth_);
  ASSERT_TRUE(badJson);
  EXPECT_EQ(badJson->status, 400) << badJson->body;

  auto two = post("/v1/jobs", jobYaml("first") + "---\n" + jobYaml("second"), "application/yaml", auth_);
  ASSERT_TRUE(two);
  EXPECT_EQ(two->status, 400) << two->body;
  EXPECT_NE(two->body.find("2 YAML documents"), std::string::npos) << two->body;

  for (const char* path : {"/v1/jobs/%FF", "/v1/jobs/%ED%A0%80/events", "/v1/jobs?x=%C0%AF"}) {
    auto r = client_->Get(path, auth_);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 400) << path << ": " << r->body;
    EXPECT_NE(json::parse(r->body)["error"].get<std::string>().find("not valid UTF-8"), std::string::npos) << path;
  }
  EXPECT_EQ(json::parse(client_->Get("/v1/jobs", auth_)->body)["jobs"].size(), 0u) << "nothing was stored";
}

// Note [Allowed path roots]: a job may not point its workers at /etc, a relative path or the
// controller's own state dir; a directory under the temporary folder (a default root) is fine.
TEST_F(ApiContractTest, CheckpointDirectoriesOutsideTheAllowedRootsAreRefusedNamingTheField) {
  const std::string base = jobYaml("confined");
  for (const std::string& dir : {std::string("/etc"), std::string("relative/ckpt"), ctl_->tokenFile() + "-dir"}) {
    SCOPED_TRACE(dir);
    auto r = post("/v1/jobs", base + "  checkpoint: {dir: " + dir + ", everySteps: 5}\n", "application/yaml", auth_);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << r->body;
    json d = json::parse(r->body)["details"];
    ASSERT_EQ(d.size(), 1u) << r->body;
    EXPECT_EQ(d[0]["path"], "spec.checkpoint.dir") << r->body;
  }
  auto ok = post("/v1/jobs", base + "  checkpoint: {dir: " + dir_.path() + "/ckpt, everySteps: 5}\n",
                 "application/yaml", auth_);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 201) << ok->body;
}

// Note [Memory estimate]: a model no worker of this machine can hold is refused at submission,
// naming spec.model, instead of failing every worker (issue: hidden [100000000], signal 11).
TEST_F(ApiContractTest, AModelTooLargeForTheWorkersIsRefusedAtSubmission) {
  std::string yaml = jobYaml("huge");
  yaml.replace(yaml.find("hidden: [8]"), 11, "hidden: [100000000]");
  auto r = post("/v1/jobs", yaml, "application/yaml", auth_);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  json d = json::parse(r->body)["details"];
  ASSERT_EQ(d.size(), 1u) << r->body;
  EXPECT_EQ(d[0]["path"], "spec.model") << r->body;
  EXPECT_NE(d[0]["message"].get<std::string>().find("of memory shared by 2 worker(s)"), std::string::npos) << r->body;
  EXPECT_EQ(ctl_->jobs().get("huge").status().code(), StatusCode::kNotFound) << "nothing stored";
}

// Note [Suspended jobs]: POST .../suspend and .../resume answer the job; 409 for a finished one
// (or a resume while the workers still stop), 404 for an unknown one, 401 without the token.
TEST_F(ApiContractTest, SuspendAndResume) {
  std::string yaml = jobYaml("paused") + "  suspend: true\n";
  auto created = post("/v1/jobs", yaml, "application/yaml", auth_);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  EXPECT_EQ(json::parse(created->body)["status"]["phase"], "Suspended");
  EXPECT_EQ(json::parse(created->body)["spec"]["suspend"], true) << created->body;
  auto again = post("/v1/jobs/paused/suspend", "", "application/json", auth_);
  EXPECT_EQ(again->status, 200) << again->body;
  EXPECT_EQ(json::parse(again->body)["status"]["phase"], "Suspended");
  auto resumed = post("/v1/jobs/paused/resume", "", "application/json", auth_);
  ASSERT_EQ(resumed->status, 200) << resumed->body;
  EXPECT_NE(json::parse(resumed->body)["status"]["phase"], "Suspended") << resumed->body;
  EXPECT_FALSE(json::parse(client_->Get("/v1/jobs/paused", auth_)->body)["spec"].contains("suspend"));
  EXPECT_EQ(post("/v1/jobs/nope/suspend", "", "application/json", auth_)->status, 404);
  EXPECT_EQ(post("/v1/jobs/paused/resume", "", "application/json", {})->status, 401);
  ASSERT_EQ(post("/v1/jobs/paused/cancel", "", "application/json", auth_)->status, 200);
  std::string phase;
  for (int i = 0; i < 200 && phase != "Cancelled"; ++i) {
    phase = json::parse(client_->Get("/v1/jobs/paused", auth_)->body)["status"]["phase"];
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ASSERT_EQ(phase, "Cancelled");
  EXPECT_EQ(post("/v1/jobs/paused/suspend", "", "application/json", auth_)->status, 409);
  EXPECT_EQ(post("/v1/jobs/paused/resume", "", "application/json", auth_)->status, 409);
}

TEST_F(ApiContractTest, CancelDeleteEventsCheckpointsAndLogs) {
  submitOk("gamma");
  auto cps = client_->Get("/v1/jobs/gamma/checkpoints", auth_);
  ASSERT_TRUE(cps);
  EXPECT_EQ(cps->status, 200);
  EXPECT_TRUE(json::parse(cps->body)["checkpoints"].empty());
  // The stand-in workers print one line each.
  std::string logs;
  for (int i = 0; i < 100 && logs.find("fake worker gamma-w1") == std::string::npos; ++i) {
    logs = client_->Get("/v1/jobs/gamma/logs", auth_)->body;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_NE(logs.find("fake worker gamma-w0"), std::string::npos) << logs;
  auto one = client_->Get("/v1/jobs/gamma/logs?rank=1&tail=5", auth_);
  EXPECT_EQ(one->status, 200);
  EXPECT_NE(one->body.find("gamma-w1"), std::string::npos);
  EXPECT_EQ(one->body.find("gamma-w0"), std::string::npos);
  EXPECT_EQ(client_->Get("/v1/jobs/gamma/logs?rank=x", auth_)->status, 400);

  auto c = post("/v1/jobs/gamma/cancel", "", "application/json", auth_);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->status, 200);
  std::string phase;
  for (int i = 0; i < 200 && phase != "Cancelled"; ++i) {
    phase = json::parse(client_->Get("/v1/jobs/gamma", auth_)->body)["status"]["phase"];
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  EXPECT_EQ(phase, "Cancelled");
  EXPECT_EQ(post("/v1/jobs/gamma/cancel", "", "application/json", auth_)->status, 409);
  const json ev = eventsUntil("gamma", [](const json& e) { return !e.empty() && e.back()["reason"] == "JobCancelled"; });
  ASSERT_FALSE(ev.empty());
  EXPECT_EQ(ev[0]["reason"], "Created");
  EXPECT_EQ(ev.back()["reason"], "JobCancelled");

  auto del = client_->Delete("/v1/jobs/gamma", auth_);
  ASSERT_TRUE(del);
  EXPECT_EQ(del->status, 200) << del->body;
  EXPECT_EQ(client_->Get("/v1/jobs/gamma", auth_)->status, 404);
  EXPECT_EQ(client_->Delete("/v1/jobs/gamma", auth_)->status, 404);
  submitOk("gamma");  // the name can be used again
}

TEST_F(ApiContractTest, WorkerRoutesRendezvousStoreHeartbeatAndIsolation) {
  submitOk("one");
  submitOk("two", 1);
  const httplib::Headers w1 = {{"Authorization", "Bearer " + workerToken("one")}};
  const httplib::Headers w2 = {{"Authorization", "Bearer " + workerToken("two")}};
  // The controller token is not a worker token, and job two's token is not valid for job one.
  EXPECT_EQ(post("/v1/jobs/one/workers", R"({"workerId":"one-w0"})", "application/json", auth_)->status, 401);
  EXPECT_EQ(post("/v1/jobs/one/workers", R"({"workerId":"one-w0"})", "application/json", w2)->status, 401);
  EXPECT_EQ(client_->Get("/v1/jobs/two", w2)->status, 401) << "a worker token is no user token";

  auto reg = post("/v1/jobs/one/workers", R"({"workerId":"one-w1","host":"127.0.0.1","pid":1})", "application/json", w1);
  ASSERT_TRUE(reg);
  EXPECT_EQ(reg->status, 200) << reg->body;
  EXPECT_EQ(json::parse(reg->body)["generation"], 1);
  // The round is open: a long poll answers 204 after its wait, without a result.
  auto waiting = client_->Get("/v1/jobs/one/workers/one-w1/assignment?wait_ms=100", w1);
  EXPECT_EQ(waiting->status, 204);
  // A waiting request is released by the round closing (the second worker joins).
  int assignedStatus = 0;
  std::string assignedBody;
  std::thread poll([&] {
    httplib::Client c("127.0.0.1", ctl_->port());
    auto r = c.Get("/v1/jobs/one/workers/one-w1/assignment?wait_ms=2000", w1);
    if (r) {
      assignedStatus = r->status;
      assignedBody = r->body;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(post("/v1/jobs/one/workers", R"({"workerId":"one-w0"})", "application/json", w1)->status, 200);
  poll.join();
  ASSERT_EQ(assignedStatus, 200) << assignedBody;
  json a = json::parse(assignedBody);
  EXPECT_EQ(a["rank"], 1);
  EXPECT_EQ(a["worldSize"], 2);
  EXPECT_EQ(a["generation"], 1);
  auto assignedSpec = decodeJobSpec(a["spec"].get<std::string>());
  ASSERT_TRUE(assignedSpec.isOk()) << assignedSpec.status();
  EXPECT_EQ(assignedSpec->name, "one");
  EXPECT_FALSE(a.contains("peers")) << "peers only when asked for";
  auto withPeers = client_->Get("/v1/jobs/one/workers/one-w0/assignment?peers=1", w1);
  ASSERT_EQ(withPeers->status, 200);
  json p = json::parse(withPeers->body);
  EXPECT_EQ(p["rank"], 0);
  ASSERT_EQ(p["peers"].size(), 2u);
  EXPECT_EQ(p["peers"][1]["workerId"], "one-w1");
  EXPECT_EQ(p["peers"][1]["rank"], 1);
  EXPECT_EQ(json::parse(client_->Get("/v1/jobs/one", auth_)->body)["status"]["phase"], "Running");

  // Store: the server applies the namespace; job two's token cannot reach job one's keys.
  comm::HttpStoreClientOptions so;
  so.basePath = "/v1/jobs/one/generations/1/store";
  so.bearerToken = workerToken("one");
  comm::HttpStoreClient store("127.0.0.1", ctl_->port(), so);
  ASSERT_TRUE(store.set("k", "v1").isOk());
  auto v = store.get("k", Deadline::after(std::chrono::seconds(2)));
  ASSERT_TRUE(v.isOk()) << v.status().toString();
  EXPECT_EQ(*v, "v1");
  so.bearerToken = workerToken("two");
  comm::HttpStoreClient intruder("127.0.0.1", ctl_->port(), so);
  EXPECT_FALSE(intruder.set("k", "evil").isOk());
  EXPECT_FALSE(intruder.get("k", Deadline::after(std::chrono::milliseconds(300))).isOk());
  EXPECT_EQ(*store.get("k", Deadline::after(std::chrono::seconds(2))), "v1");
  // Fencing: a generation that is not current gets 410 with the current one.
  auto stale = client_->Get("/v1/jobs/one/generations/7/store/value?key=k", w1);
  EXPECT_EQ(stale->status, 410);
  EXPECT_EQ(json::parse(stale->body)["generation"], 1);
  comm::HttpStoreClientOptions staleOpts;
  staleOpts.basePath = "/v1/jobs/one/generations/0/store";
  staleOpts.bearerToken = workerToken("one");
  comm::HttpStoreClient staleClient("127.0.0.1", ctl_->port(), staleOpts);
  EXPECT_EQ(staleClient.set("k", "x").code(), StatusCode::kAborted);

  // Heartbeats: progress from rank 0; the answer carries a command; bad bodies are 400.
  const std::string hb = R"({"workerId":"one-w0","rank":0,"state":"Running","step":3,"totalSteps":10,)"
                         R"("epoch":0,"epochs":1,"loss":0.5,"samplesPerSecond":100,"counters":{"samples":48}})";
  auto h = post("/v1/jobs/one/generations/1/heartbeat", hb, "application/json", w1);
  ASSERT_TRUE(h);
  ASSERT_EQ(h->status, 200) << h->body;
  EXPECT_EQ(json::parse(h->body)["command"]["type"], "none");
  EXPECT_EQ(post("/v1/jobs/one/generations/2/heartbeat", hb, "application/json", w1)->status, 410);
  EXPECT_EQ(post("/v1/jobs/one/generations/1/heartbeat", "{", "application/json", w1)->status, 400);
  EXPECT_EQ(post("/v1/jobs/one/generations/1/heartbeat", R"({"workerId":"one-w0","state":"Weird"})", "application/json", w1)->status, 400);
  json job = json::parse(client_->Get("/v1/jobs/one", auth_)->body);
  EXPECT_EQ(job["status"]["progress"]["step"], 3);
  EXPECT_EQ(job["status"]["progress"]["totalSteps"], 10);
  // Cancel: the next heartbeat answer is `stop`.
  EXPECT_EQ(post("/v1/jobs/one/cancel", "", "application/json", auth_)->status, 200);
  auto stop = post("/v1/jobs/one/generations/1/heartbeat", hb, "application/json", w1);
  EXPECT_EQ(json::parse(stop->body)["command"]["type"], "stop");
}

// POST /v1/jobs/{name}/checkpoints (docs/API.md; ddpctl checkpoint NAME): 202 with the step
// rank 0 last reported once the job runs with a checkpoint directory, and every member hears
// `checkpoint` in its next heartbeat answer; 409 while it cannot (not running yet, no
// directory, cancelled); 404 for an unknown job; 401 without the user token.
TEST_F(ApiContractTest, OnDemandCheckpointRoute) {
  const std::string yaml = "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: ckpt\nspec:\n"
                           "  workers: {count: 2}\n  model: {type: mlp, hidden: [8]}\n"
                           "  data: {dataset: synthetic, batchSize: 8}\n  steps: 10\n"
                           "  checkpoint: {dir: " + dir_.path() + "/ckpt, everySteps: 5}\n";
  auto created = post("/v1/jobs", yaml, "application/yaml", auth_);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  submitOk("nodir");
  const std::string route = "/v1/jobs/ckpt/checkpoints";
  auto pending = post(route, "", "application/json", auth_);
  ASSERT_TRUE(pending);
  EXPECT_EQ(pending->status, 409) << pending->body;
  EXPECT_NE(json::parse(pending->body)["error"].get<std::string>().find("ask again once it runs"), std::string::npos)
      << pending->body;

  const httplib::Headers w = {{"Authorization", "Bearer " + workerToken("ckpt")}};
  ASSERT_EQ(post("/v1/jobs/ckpt/workers", R"({"workerId":"ckpt-w0"})", "application/json", w)->status, 200);
  ASSERT_EQ(post("/v1/jobs/ckpt/workers", R"({"workerId":"ckpt-w1"})", "application/json", w)->status, 200);
  ASSERT_EQ(client_->Get("/v1/jobs/ckpt/workers/ckpt-w0/assignment?wait_ms=2000", w)->status, 200);
  const std::string hb = R"({"workerId":"ckpt-w0","rank":0,"state":"Running","step":7,"totalSteps":10})";
  ASSERT_EQ(post("/v1/jobs/ckpt/generations/1/heartbeat", hb, "application/json", w)->status, 200);
  std::string phase;
  for (int i = 0; i < 200 && phase != "Running"; ++i) {
    phase = json::parse(client_->Get("/v1/jobs/ckpt", auth_)->body)["status"]["phase"];
    if (phase != "Running") std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(phase, "Running");

  auto accepted = post(route, "", "application/json", auth_);
  ASSERT_TRUE(accepted);
  ASSERT_EQ(accepted->status, 202) << accepted->body;
  EXPECT_EQ(json::parse(accepted->body)["requested"], true);
  EXPECT_EQ(json::parse(accepted->body)["afterStep"], 7);
  auto told = post("/v1/jobs/ckpt/generations/1/heartbeat", hb, "application/json", w);
  ASSERT_EQ(told->status, 200) << told->body;
  EXPECT_EQ(json::parse(told->body)["command"]["type"], "checkpoint") << told->body;
  auto once = post("/v1/jobs/ckpt/generations/1/heartbeat", hb, "application/json", w);
  EXPECT_EQ(json::parse(once->body)["command"]["type"], "none") << "each member is told once";
  auto hasRequest = [](const json& events) {
    for (const auto& e : events) {
      if (e["reason"] == "CheckpointRequested") return true;
    }
    return false;
  };
  const json ev = eventsUntil("ckpt", hasRequest);
  EXPECT_TRUE(hasRequest(ev)) << ev.dump();

  auto noDir = post("/v1/jobs/nodir/checkpoints", "", "application/json", auth_);
  EXPECT_EQ(noDir->status, 409);
  EXPECT_NE(noDir->body.find("no checkpoint directory"), std::string::npos) << noDir->body;
  auto unknown = post("/v1/jobs/nosuch/checkpoints", "", "application/json", auth_);
  EXPECT_EQ(unknown->status, 404) << unknown->body;
  EXPECT_EQ(post(route, "", "application/json", {})->status, 401);
  EXPECT_EQ(post(route, "", "application/json", {{"Authorization", "Bearer nope"}})->status, 401);
  EXPECT_EQ(post(route, "", "application/json", w)->status, 401) << "a worker token is no user token";

  ASSERT_EQ(post("/v1/jobs/ckpt/cancel", "", "application/json", auth_)->status, 200);
  auto cancelled = post(route, "", "application/json", auth_);
  EXPECT_EQ(cancelled->status, 409) << cancelled->body;
}

TEST_F(ApiContractTest, FollowedLogsStreamUntilTheJobEnds) {
  submitOk("delta", 1);
  std::string streamed;
  bool sawFirstLine = false;
  std::mutex mu;
  std::condition_variable cv;
  std::thread follower([&] {
    httplib::Client c("127.0.0.1", ctl_->port());
    c.set_read_timeout(20, 0);
    c.Get("/v1/jobs/delta/logs?follow=1", auth_, [&](const char* data, size_t n) {
      std::lock_guard<std::mutex> lock(mu);
      streamed.append(data, n);
      if (streamed.find("fake worker delta-w0") != std::string::npos) sawFirstLine = true;
      cv.notify_all();
      return true;
    });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return sawFirstLine; })) << streamed;
  }
  // The job ends (cancelled): the stream is finished by the server, not by a timeout.
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(post("/v1/jobs/delta/cancel", "", "application/json", auth_)->status, 200);
  follower.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(streamed.find("[w0] fake worker delta-w0"), std::string::npos) << streamed;
}

TEST_F(ApiContractTest, UnknownRoutesAndMethods) {
  EXPECT_EQ(client_->Get("/v2/nothing", auth_)->status, 404);
  EXPECT_EQ(client_->Put("/v1/jobs", auth_, "", "application/json")->status, 405);
}

}  // namespace
}  // namespace ddp::controller
