// `ddpctl scale` and the route behind it (POST /v1/jobs/{name}/scale, Note [Elastic membership]
// in controller/jobs/membership/membership.h) against a real in-process controller (HTTP API, SQLite job
// table; the external launcher, so no worker process is started): validation errors name the
// field, the route takes the controller token only, and the new count is in the job table, so a
// controller started again on the same state dir has it.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>
#include <stdlib.h>

#include <fstream>
#include <sstream>

#include "common/jobspec/job_spec.h"
#include "controller/jobs/job_manager.h"
#include "controller/service/controller.h"
#include "tests/support/controller_process.h"
#include "tests/support/temp_dir.h"
#include "tools/ddpctl/client_commands.h"

namespace ddp::ddpctl {
namespace {

constexpr const char* kJob =
    "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: el\nspec:\n"
    "  workers:\n    count: 2\n    min: 1\n    max: 4\n"
    "  model:\n    type: mlp\n    hidden: [8]\n"
    "  data:\n    dataset: synthetic\n    batchSize: 4\n"
    "    synthetic:\n      samples: 64\n      features: 4\n      classes: 2\n"
    "  optimizer:\n    type: sgd\n    lr: 0.1\n  steps: 10\n";

class ScaleCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { start(); }
  void TearDown() override {
    if (ctl_) ctl_->stop();
  }
  void start() {
    controller::ControllerConfig c;
    c.listenHost = "127.0.0.1";
    c.listenPort = 0;
    c.stateDir = dir_ + "/state";
    c.launcher = "external";
    c.logLevel = log::Level::kWarning;
    auto started = controller::Controller::start(c);
    ASSERT_TRUE(started.isOk()) << started.status();
    ctl_ = std::move(*started);
  }
  int run(const std::vector<std::string>& args) {
    out_.str("");
    err_.str("");
    ClientIo io{.out = out_,
                .err = err_,
                .in = in_,
                .env = [](const std::string&) { return std::optional<std::string>(); },
                .outIsTty = false,
                .sleep = [](Duration) {},
                .nowUnixSeconds = [] { return int64_t{0}; }};
    std::vector<std::string> all = args;
    all.insert(all.end(), {"--server", ctl_->url(), "--token-file", ctl_->tokenFile()});
    return runClientCommand(args[0] == "submit" ? "submit" : "scale",
                            std::vector<std::string>(all.begin() + 1, all.end()), io);
  }
  int count() {
    auto spec = ctl_->jobs().spec("el");
    return spec.isOk() ? spec->workers.count : -1;
  }

  test::TempDir tmp_{"ddp-scale"};
  const std::string dir_ = tmp_.path();
  std::unique_ptr<controller::Controller> ctl_;
  std::ostringstream out_, err_;
  std::istringstream in_;
};

TEST_F(ScaleCommandTest, ScaleSetsTheWorkerCountDurably) {
  auto spec = parseJobSpec(kJob);
  ASSERT_TRUE(spec.isOk()) << spec.status();
  ASSERT_TRUE(ctl_->jobs().submit(*spec).isOk());
  EXPECT_EQ(run({"scale", "el", "3"}), kClientOk) << err_.str();
  EXPECT_EQ(out_.str(), "job el scaled to 3 worker(s): the next generation forms with them (see `ddpctl describe el`)\n");
  EXPECT_EQ(count(), 3);
  bool scaledEvent = false;
  auto events = ctl_->jobs().events("el");
  ASSERT_TRUE(events.isOk());
  for (const auto& e : *events) {
    scaledEvent = scaledEvent || (e.reason == "Scaled" && e.message == "scaled to 3 worker(s) (from 2)");
  }
  EXPECT_TRUE(scaledEvent);
  // The job table has it: a controller started again on the same state dir.
  ctl_->stop();
  ctl_.reset();
  start();
  EXPECT_EQ(count(), 3);
  EXPECT_EQ(run({"scale", "el", "1"}), kClientOk) << err_.str();
  EXPECT_EQ(count(), 1);
}

TEST_F(ScaleCommandTest, OutOfRangeCountsAreRefusedNamingTheField) {
  auto spec = parseJobSpec(kJob);
  ASSERT_TRUE(spec.isOk());
  ASSERT_TRUE(ctl_->jobs().submit(*spec).isOk());
  EXPECT_EQ(run({"scale", "el", "5"}), kClientFailed);
  EXPECT_EQ(err_.str(), "ddpctl: cannot scale job el: workers: 5 is outside [spec.workers.min, spec.workers.max] = [1, 4]\n");
  EXPECT_EQ(run({"scale", "el", "zero"}), kClientUsage);
  EXPECT_EQ(err_.str(), "ddpctl: scale: N must be a positive number of workers, got 'zero'\n");
  EXPECT_EQ(run({"scale", "missing", "2"}), kClientFailed);
  EXPECT_NE(err_.str().find("missing"), std::string::npos) << err_.str();
  EXPECT_EQ(count(), 2);
}

TEST_F(ScaleCommandTest, TheRouteTakesTheControllerTokenAndAnObjectWithWorkers) {
  auto spec = parseJobSpec(kJob);
  ASSERT_TRUE(spec.isOk());
  auto rec = ctl_->jobs().submit(*spec);
  ASSERT_TRUE(rec.isOk());
  httplib::Client http("127.0.0.1", ctl_->port());
  const std::string body = R"({"workers":4})";
  auto none = http.Post("/v1/jobs/el/scale", body, "application/json");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  httplib::Headers workerAuth = {{"Authorization", "Bearer " + rec->workerToken}};
  auto worker = http.Post("/v1/jobs/el/scale", workerAuth, body, "application/json");
  ASSERT_TRUE(worker);
  EXPECT_EQ(worker->status, 401) << "a worker token opens no user route";
  httplib::Headers auth = {{"Authorization", "Bearer " + ctl_->token()}};
  for (const char* bad : {"[]", "{}", R"({"workers":"3"})", R"({"workers":2.5})", R"({"workers":0})", "not json"}) {
    auto r = http.Post("/v1/jobs/el/scale", auth, bad, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad;
    EXPECT_NE(r->body.find("workers"), std::string::npos) << bad << ": " << r->body;
  }
  auto ok = http.Post("/v1/jobs/el/scale", auth, body, "application/json");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_NE(ok->body.find(R"("count":4)"), std::string::npos) << ok->body;
  EXPECT_EQ(count(), 4);
  ASSERT_TRUE(ctl_->jobs().cancel("el").isOk());
  auto late = http.Post("/v1/jobs/el/scale", auth, body, "application/json");
  ASSERT_TRUE(late);
  EXPECT_EQ(late->status, 409) << late->body;
}

// The scale is in the job table when the route answers: a ddp-controller process SIGKILLed right
// after `ddpctl scale` and started again on its state dir has the new count.
TEST_F(ScaleCommandTest, AScaleSurvivesASigkillOfTheController) {
  const std::string state = dir_ + "/killed";
  test::ControllerProcess first(state, {"DDP_CONTROLLER_LAUNCHER=external"});
  const std::string url = first.start();
  ASSERT_FALSE(url.empty());
  const std::string tokenFile = state + "/token";
  std::ofstream(dir_ + "/job.yaml") << kJob;
  auto ddpctl = [&](const std::string& command, std::vector<std::string> args, const std::string& server) {
    out_.str("");
    err_.str("");
    ClientIo io{.out = out_,
                .err = err_,
                .in = in_,
                .env = [](const std::string&) { return std::optional<std::string>(); },
                .outIsTty = false,
                .sleep = [](Duration) {},
                .nowUnixSeconds = [] { return int64_t{0}; }};
    args.insert(args.end(), {"--server", server, "--token-file", tokenFile});
    return runClientCommand(command, args, io);
  };
  ASSERT_EQ(ddpctl("submit", {dir_ + "/job.yaml"}, url), kClientOk) << err_.str();
  ASSERT_EQ(ddpctl("scale", {"el", "4"}, url), kClientOk) << err_.str();
  first.kill(SIGKILL);
  test::ControllerProcess second(state, {"DDP_CONTROLLER_LAUNCHER=external"});
  const std::string again = second.start();
  ASSERT_FALSE(again.empty());
  ASSERT_EQ(ddpctl("get", {"el", "-o", "json"}, again), kClientOk) << err_.str();
  const nlohmann::json job = nlohmann::json::parse(out_.str(), nullptr, false);
  EXPECT_EQ(job["spec"]["workers"]["count"], 4) << out_.str();
}

}  // namespace
}  // namespace ddp::ddpctl
