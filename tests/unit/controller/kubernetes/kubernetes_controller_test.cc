// ddp-controller's Controller with --launcher kubernetes, in process, against FakeKubeApiServer
// (FAKED: the API server, through --kube-server instead of the in-cluster configuration; no
// kubelet: pods are created, never run). The wiring: leader election on the Lease, readiness
// following it, a DDPJob turned into worker pods and a status, and the lease released on stop.
#include <gtest/gtest.h>

#include <thread>

#include "controller/jobs/job_manager.h"
#include "controller/launch/launcher.h"
#include "controller/service/controller.h"
#include "controller/service/controller_config.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

using kube::testing::waitUntil;

TEST(KubernetesControllerTest, ControllerRunsDdpJobsThroughTheKubernetesLauncher) {
  kube::testing::FakeKubeApiServer api;
  ASSERT_TRUE(api.start().isOk());
  ddp::test::TempDir dir;
  auto config = parseControllerConfig(
      {"--state-dir", dir.path(), "--listen", "127.0.0.1:0", "--launcher", "kubernetes", "--worker-image",
       "ddp-service:0.1.0", "--watch-namespace", "ml", "--leader-election-lease", "ddp-leader", "--kube-server",
       api.url()},
      [](const std::string& name) -> std::optional<std::string> {
        if (name == "POD_NAME") return std::string("ddp-7d9f-abc");
        return std::nullopt;
      });
  ASSERT_TRUE(config.isOk()) << config.status();
  auto controller = Controller::start(*config);
  ASSERT_TRUE(controller.isOk()) << controller.status();
  EXPECT_EQ((*controller)->launcher().name(), "kubernetes");
  ASSERT_TRUE(waitUntil([&] { return (*controller)->launcher().ready().isOk(); })) << (*controller)->launcher().ready();
  auto lease = api.object("coordination.k8s.io/v1/leases", "ml", "ddp-leader");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "ddp-7d9f-abc");

  api.put("ddp.dev/v1/ddpjobs", "ml",
          json::parse(R"({"metadata":{"name":"fm"},"spec":{"workers":{"count":2},"model":{"type":"mlp"},)"
                      R"("data":{"dataset":"synthetic"},"epochs":1}})"));
  ASSERT_TRUE(waitUntil([&] { return api.objects("pods", "ml").size() == 2; }));
  const json pod = *api.object("pods", "ml", "fm-worker-0");
  EXPECT_EQ(pod["spec"]["containers"][0]["image"], "ddp-service:0.1.0");
  ASSERT_TRUE(waitUntil([&] {
    auto j = api.object("ddp.dev/v1/ddpjobs", "ml", "fm");
    return j && j->contains("status") && (*j)["status"].value("phase", "") == "Pending";
  }));
  EXPECT_TRUE((*controller)->jobs().get("fm").isOk());

  (*controller)->stop();
  lease = api.object("coordination.k8s.io/v1/leases", "ml", "ddp-leader");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "");  // released for a standby
}

TEST(KubernetesControllerTest, TheKubernetesLauncherNeedsAWorkerImageAndACluster) {
  auto noImage = parseControllerConfig({"--state-dir", "/tmp/x", "--launcher", "kubernetes"},
                                       [](const std::string&) { return std::optional<std::string>(); });
  EXPECT_EQ(noImage.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(noImage.status().message().find("--worker-image"), std::string::npos);
  ddp::test::TempDir dir;
  auto config = parseControllerConfig({"--state-dir", dir.path(), "--listen", "127.0.0.1:0", "--launcher",
                                       "kubernetes", "--worker-image", "x"},
                                      [](const std::string&) { return std::optional<std::string>(); });
  ASSERT_TRUE(config.isOk());
  auto controller = Controller::start(*config);  // not in a pod: no in-cluster configuration
  EXPECT_EQ(controller.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(controller.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos) << controller.status();
}

}  // namespace
}  // namespace ddp::controller
