// ddp-controller's Controller with --launcher kubernetes, in process, against FakeKubeApiServer
// (FAKED: the API server, through --kube-server instead of the in-cluster configuration; no
// kubelet: pods are created, never run). The wiring: leader election on the Lease, readiness
// following it, a DDPJob turned into worker pods and a status, and the lease released on stop;
// a standby that changes nothing until it leads (Note [Standby replicas]).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
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

// --launcher kubernetes against the fake API server, leader election on Lease ml/ddp-leader, as
// the pod `podName` (POD_NAME from the downward API).
Result<ControllerConfig> kubernetesConfig(const std::string& stateDir, const std::string& apiUrl,
                                          const std::string& podName) {
  return parseControllerConfig(
      {"--state-dir", stateDir, "--listen", "127.0.0.1:0", "--launcher", "kubernetes", "--worker-image",
       "ddp-service:0.1.0", "--watch-namespace", "ml", "--leader-election-lease", "ddp-leader", "--kube-server",
       apiUrl},
      [podName](const std::string& name) -> std::optional<std::string> {
        if (name == "POD_NAME") return podName;
        return std::nullopt;
      });
}

TEST(KubernetesControllerTest, ControllerRunsDdpJobsThroughTheKubernetesLauncher) {
  kube::testing::FakeKubeApiServer api;
  ASSERT_TRUE(api.start().isOk());
  ddp::test::TempDir dir;
  auto config = kubernetesConfig(dir.path(), api.url(), "ddp-7d9f-abc");
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

// Note [Standby replicas]: while another replica holds the Lease (the test renews it as that
// replica would), the controller is not ready, answers a submit with 503 naming the reason and
// creates no pod for a DDPJob; once the other replica releases the Lease it leads, becomes ready
// and runs the DDPJob.
TEST(KubernetesControllerTest, AStandbyChangesNothingUntilItLeads) {
  kube::testing::FakeKubeApiServer api;
  ASSERT_TRUE(api.start().isOk());
  const std::string kLeases = "coordination.k8s.io/v1/leases";
  api.put(kLeases, "ml",
          json{{"apiVersion", "coordination.k8s.io/v1"},
               {"kind", "Lease"},
               {"metadata", {{"name", "ddp-leader"}, {"namespace", "ml"}}},
               {"spec", {{"holderIdentity", "ddp-other"}, {"leaseDurationSeconds", 15},
                         {"renewTime", "2030-01-01T00:00:00.000000Z"}}}});
  std::atomic<bool> renewing{true};
  std::thread other([&] {
    for (int i = 0; renewing; ++i) {
      auto l = api.object(kLeases, "ml", "ddp-leader");
      if (l) {
        (*l)["spec"]["renewTime"] = "2030-01-01T00:00:" + std::string(i % 60 < 10 ? "0" : "") +
                                    std::to_string(i % 60) + ".000000Z";
        api.put(kLeases, "ml", *l);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  struct Join {
    std::atomic<bool>& flag;
    std::thread& t;
    ~Join() {
      flag = false;
      if (t.joinable()) t.join();
    }
  } join{renewing, other};

  ddp::test::TempDir dir;
  auto config = kubernetesConfig(dir.path(), api.url(), "ddp-standby");
  ASSERT_TRUE(config.isOk()) << config.status();
  auto controller = Controller::start(*config);
  ASSERT_TRUE(controller.isOk()) << controller.status();
  httplib::Client client("127.0.0.1", (*controller)->port());
  client.set_read_timeout(10, 0);
  const httplib::Headers auth{{"Authorization", "Bearer " + (*controller)->token()}};
  api.put("ddp.dev/v1/ddpjobs", "ml",
          json::parse(R"({"metadata":{"name":"fm"},"spec":{"workers":{"count":2},"model":{"type":"mlp"},)"
                      R"("data":{"dataset":"synthetic"},"epochs":1}})"));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  auto ready = client.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503) << ready->body;
  const std::string yaml =
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata:\n  name: direct\nspec:\n  workers: {count: 1}\n"
      "  model: {type: mlp}\n  data: {dataset: synthetic}\n  epochs: 1\n";
  auto submitted = client.Post("/v1/jobs", auth, yaml, "application/yaml");
  ASSERT_TRUE(submitted);
  EXPECT_EQ(submitted->status, 503) << submitted->body;
  EXPECT_NE(submitted->body.find("standby"), std::string::npos) << submitted->body;
  EXPECT_TRUE(api.objects("pods", "ml").empty());
  EXPECT_EQ(api.object(kLeases, "ml", "ddp-leader").value()["spec"]["holderIdentity"], "ddp-other");

  // The other replica stops and releases the Lease: this one leads.
  renewing = false;
  other.join();
  auto l = api.object(kLeases, "ml", "ddp-leader");
  (*l)["spec"]["holderIdentity"] = "";
  api.put(kLeases, "ml", *l);
  ASSERT_TRUE(waitUntil([&] {
    auto r = client.Get("/readyz");
    return r && r->status == 200;
  }, std::chrono::seconds(10)));
  ASSERT_TRUE(waitUntil([&] { return api.objects("pods", "ml").size() == 2; }, std::chrono::seconds(10)));
  auto again = client.Post("/v1/jobs", auth, yaml, "application/yaml");
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 201) << again->body;
  (*controller)->stop();
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
