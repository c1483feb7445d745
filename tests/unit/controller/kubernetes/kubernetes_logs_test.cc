// `ddpctl logs -f` end to end with the Kubernetes launcher: ddp-controller's Controller in
// process (--launcher kubernetes) against FakeKubeApiServer (FAKED: the API server, and the
// kubelet: the test writes the pod's log, stamped as the kubelet stamps it). GET
// /v1/jobs/{name}/logs?follow=1 streams what the pod writes while it writes it (Note [Following
// pod logs]) and ends once the job has ended.
#include <gtest/gtest.h>
#include <httplib.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "controller/service/controller.h"
#include "controller/service/controller_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller {
namespace {

using nlohmann::json;
using kube::testing::waitUntil;

TEST(KubernetesLogsTest, AFollowedLogStreamsWhatThePodWritesUntilTheJobEnds) {
  kube::testing::FakeKubeApiServer api;
  ASSERT_TRUE(api.start().isOk());
  ddp::test::TempDir dir;
  auto config = parseControllerConfig({"--state-dir", dir.path(), "--listen", "127.0.0.1:0", "--launcher", "kubernetes",
                                       "--worker-image", "ddp-service:0.1.0", "--watch-namespace", "ml",
                                       "--kube-server", api.url()},
                                      [](const std::string&) { return std::optional<std::string>(); });
  ASSERT_TRUE(config.isOk()) << config.status();
  auto controller = Controller::start(*config);
  ASSERT_TRUE(controller.isOk()) << controller.status();
  Controller& ctl = **controller;
  api.put("ddp.dev/v1/ddpjobs", "ml",
          json::parse(R"({"metadata":{"name":"fm"},"spec":{"workers":{"count":1},"model":{"type":"mlp"},)"
                      R"("data":{"dataset":"synthetic"},"epochs":1}})"));
  ASSERT_TRUE(waitUntil([&] { return api.object("pods", "ml", "fm-worker-0").has_value(); }));
  api.setPodLog("ml", "fm-worker-0", "step 1\n");

  const httplib::Headers auth = {{"Authorization", "Bearer " + ctl.token()}};
  std::mutex mu;
  std::condition_variable cv;
  std::string streamed;
  std::thread follower([&] {
    httplib::Client c("127.0.0.1", ctl.port());
    c.set_read_timeout(20, 0);
    c.Get("/v1/jobs/fm/logs?rank=0&follow=1", auth, [&](const char* data, size_t n) {
      std::lock_guard<std::mutex> lock(mu);
      streamed.append(data, n);
      cv.notify_all();
      return true;
    });
  });
  auto sees = [&](const std::string& text) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return streamed.find(text) != std::string::npos; });
  };
  EXPECT_TRUE(sees("step 1\n")) << streamed;
  api.appendPodLog("ml", "fm-worker-0", "step 2\n");
  EXPECT_TRUE(sees("step 1\nstep 2\n")) << streamed;  // new lines only, in order
  // The job ends (cancelled before its worker registered): the server ends the stream.
  const auto start = std::chrono::steady_clock::now();
  httplib::Client c("127.0.0.1", ctl.port());
  EXPECT_EQ(c.Post("/v1/jobs/fm/cancel", auth, "", "application/json")->status, 200);
  follower.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(streamed, "step 1\nstep 2\n");
  ctl.stop();
}

}  // namespace
}  // namespace ddp::controller
