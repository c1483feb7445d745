// ddp-controller's Controller with --launcher kubernetes, in process, against FakeKubeApiServer
// (FAKED: the API server, through --kube-server instead of the in-cluster configuration; no
// kubelet: pods are created, never run). The wiring: leader election on the Lease, the leader
// label following it, a DDPJob turned into worker pods and a status, and the lease released on
// stop; a standby that is Ready but changes nothing until it leads (Note [Standby replicas]);
// a Deployment's rollout from one controller pod to the next (Note [Leader label]).
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
  // Ready no longer means leading (a standby is Ready too: Note [Standby replicas]): wait for
  // this replica, the only one, to take the Lease.
  std::optional<json> lease;
  EXPECT_TRUE(waitUntil([&] {
    lease = api.object("coordination.k8s.io/v1/leases", "ml", "ddp-leader");
    return lease.has_value() && (*lease)["spec"].value("holderIdentity", "") == "ddp-7d9f-abc";
  })) << (lease ? lease->dump() : "no lease");

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
// replica would), the controller is Ready but answers a submit with 503 naming the reason and
// creates no pod for a DDPJob; once the other replica releases the Lease it leads and runs the
// DDPJob.
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
  EXPECT_EQ(ready->status, 200) << ready->body;  // a standby is Ready (Note [Leader label])
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

// A controller pod as the Deployment makes it (the controller labels it; nothing else writes it).
void controllerPod(kube::testing::FakeKubeApiServer& api, const std::string& name) {
  api.put("pods", "ml", {{"apiVersion", "v1"}, {"kind", "Pod"},
                         {"metadata", {{"name", name}, {"labels", {{"app.kubernetes.io/name", "ddp"}}}}},
                         {"spec", {{"containers", json::array({{{"name", "controller"}, {"image", "ddp"}}})}}}});
}

// The controller pods the Service selects: its selector carries ddp.dev/leader=true.
std::vector<std::string> serviceEndpoints(kube::testing::FakeKubeApiServer& api) {
  std::vector<std::string> out;
  for (const json& pod : api.objects("pods", "ml")) {
    if (pod["metadata"].value("labels", json::object()).value("ddp.dev/leader", "") == "true") out.push_back(pod["metadata"]["name"]);
  }
  return out;
}

// Deletes a pod as the Deployment's ReplicaSet would.
bool removePod(kube::testing::FakeKubeApiServer& api, const std::string& name) {
  httplib::Client client(api.url());
  auto r = client.Delete("/api/v1/namespaces/ml/pods/" + name);
  return r && r->status == 200;
}

int readyz(Controller& c) {
  httplib::Client client("127.0.0.1", c.workerPort());
  client.set_read_timeout(5, 0);
  auto r = client.Get("/readyz");
  return r ? r->status : -1;
}

// A Deployment rollout (`kubectl rollout restart`, `helm upgrade`) with maxSurge 1: the new pod
// starts beside the old leader and must become Ready as a standby (the rollout waits for that
// before it removes the old pod), without the Service's leader label; the old pod is removed
// (its controller stops: it unlabels its pod and releases the Lease); the new pod leads, labels
// itself and runs the jobs. At every step the Service selects at most one pod, the leader.
TEST(KubernetesControllerTest, ARolloutMovesLeadershipAndTheLeaderLabelToTheNewPod) {
  kube::testing::FakeKubeApiServer api;
  ASSERT_TRUE(api.start().isOk());
  controllerPod(api, "ddp-old");
  ddp::test::TempDir oldDir, newDir;
  auto oldConfig = kubernetesConfig(oldDir.path(), api.url(), "ddp-old");
  ASSERT_TRUE(oldConfig.isOk()) << oldConfig.status();
  auto oldController = Controller::start(*oldConfig);
  ASSERT_TRUE(oldController.isOk()) << oldController.status();
  ASSERT_TRUE(waitUntil([&] { return serviceEndpoints(api) == std::vector<std::string>{"ddp-old"}; }));
  EXPECT_TRUE(waitUntil([&] { return readyz(**oldController) == 200; }));
  api.put("ddp.dev/v1/ddpjobs", "ml",
          json::parse(R"({"metadata":{"name":"fm"},"spec":{"workers":{"count":2},"model":{"type":"mlp"},)"
                      R"("data":{"dataset":"synthetic"},"epochs":1}})"));
  ASSERT_TRUE(waitUntil([&] { return api.objects("pods", "ml").size() == 3; }));  // ddp-old + 2 workers

  // The surge pod: Ready as a standby, off the Service.
  controllerPod(api, "ddp-new");
  auto newConfig = kubernetesConfig(newDir.path(), api.url(), "ddp-new");
  ASSERT_TRUE(newConfig.isOk()) << newConfig.status();
  auto newController = Controller::start(*newConfig);
  ASSERT_TRUE(newController.isOk()) << newController.status();
  EXPECT_TRUE(waitUntil([&] { return readyz(**newController) == 200; }));
  EXPECT_FALSE((*newController)->jobs().changesAllowed().isOk());
  EXPECT_EQ(serviceEndpoints(api), std::vector<std::string>{"ddp-old"});

  // The rollout removes the old pod: its controller stops, then the pod goes.
  (*oldController)->stop();
  EXPECT_TRUE(serviceEndpoints(api).empty());
  ASSERT_TRUE(removePod(api, "ddp-old"));
  ASSERT_TRUE(waitUntil([&] { return serviceEndpoints(api) == std::vector<std::string>{"ddp-new"}; },
                        std::chrono::seconds(10)));
  EXPECT_EQ(api.object("coordination.k8s.io/v1/leases", "ml", "ddp-leader").value()["spec"]["holderIdentity"], "ddp-new");
  EXPECT_TRUE(waitUntil([&] { return readyz(**newController) == 200 && (*newController)->jobs().get("fm").isOk(); },
                        std::chrono::seconds(10)));
  (*newController)->stop();
  EXPECT_TRUE(serviceEndpoints(api).empty());
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
