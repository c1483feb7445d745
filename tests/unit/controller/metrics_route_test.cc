// GET /metrics on a real in-process Controller over loopback HTTP (real SQLite state dir, real
// local launcher whose workers are a stand-in program that sleeps): the token rule, the
// --metrics-open switch, the content type, a submitted job's series at zero, and the request
// figures of the routes called before.
#include <gtest/gtest.h>
#include <httplib.h>

#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "tests/support/prometheus_text.h"
#include "tests/support/stand_in_controller_test.h"

namespace ddp::controller {
namespace {

class MetricsRouteTest : public test::StandInControllerTest<::testing::TestWithParam<bool>> {
 protected:
  void SetUp() override {
    startController([this](ControllerConfig& c) { c.metricsOpen = GetParam(); });
  }
};

TEST_P(MetricsRouteTest, NeedsTheTokenUnlessOpen) {
  const bool open = GetParam();
  auto anonymous = client_->Get("/metrics");
  ASSERT_TRUE(anonymous);
  if (open) {
    EXPECT_EQ(anonymous->status, 200);
  } else {
    EXPECT_EQ(anonymous->status, 401);
    EXPECT_NE(anonymous->body.find("missing bearer token"), std::string::npos) << anonymous->body;
    auto wrong = client_->Get("/metrics", {{"Authorization", "Bearer nope"}});
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401);
  }
  auto ok = client_->Get("/metrics", auth_);
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const auto t = test::PromText::parse(ok->body);
  EXPECT_EQ(t.value("ddp_controller_info"), 1);
  EXPECT_EQ(t.value("ddp_jobs", {{"phase", "Running"}}), 0);
}

TEST_P(MetricsRouteTest, ASubmittedJobHasItsSeriesAndRequestsAreCountedByRoute) {
  const std::string yaml =
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: m1\nspec:\n  workers: {count: 2}\n"
      "  model: {type: mlp, hidden: [8]}\n  data: {dataset: synthetic, batchSize: 8}\n  steps: 10\n";
  auto created = client_->Post("/v1/jobs", auth_, yaml, "application/yaml");
  ASSERT_TRUE(created);
  ASSERT_EQ(created->status, 201) << created->body;
  auto missing = client_->Get("/v1/jobs/nope", auth_);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  auto res = client_->Get("/metrics", auth_);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  const auto t = test::PromText::parse(res->body);
  EXPECT_EQ(t.value("ddp_jobs_created_total"), 1);
  EXPECT_EQ(t.value("ddp_job_steps_total", {{"job", "m1"}}), 0);
  // The stand-in workers are started but never register.
  EXPECT_EQ(t.value("ddp_job_workers", {{"job", "m1"}, {"state", "Starting"}}), 2);
  EXPECT_EQ(t.value("ddp_job_world_size", {{"job", "m1"}}), 0);
  EXPECT_EQ(t.value("ddp_http_requests_total", {{"route", "POST /v1/jobs"}, {"code", "201"}}), 1);
  EXPECT_EQ(t.value("ddp_http_requests_total", {{"route", "GET /v1/jobs/{name}"}, {"code", "404"}}), 1);
  EXPECT_EQ(t.value("ddp_http_request_seconds_count", {{"route", "POST /v1/jobs"}}), 1);
}

INSTANTIATE_TEST_SUITE_P(Auth, MetricsRouteTest, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Open" : "TokenRequired"; });

}  // namespace
}  // namespace ddp::controller
