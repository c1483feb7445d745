// End to end on Kubernetes, without a cluster: a DDPJob resource goes to status Succeeded with
// real workers training. FAKED: the API server (FakeKubeApiServer, real REST paths and watch
// streams) and the kubelet (TestKubelet, tests/integration/test_kubelet.h: it runs each pod the controller creates as a local
// ddp-worker process with the environment its pod spec carries: values, the token from the
// job's Secret, the pod IP (127.0.0.1) from the downward API; and writes the pod's status as a
// kubelet would: Running, then Succeeded or Failed with the exit code). Real: ddp-controller's
// Controller with --launcher kubernetes, the workers, Gloo over loopback. Processes are killed
// by pid and reaped.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "controller/jobs/job_manager.h"
#include "controller/service/controller.h"
#include "controller/service/controller_config.h"
#include "tests/support/temp_dir.h"
#include "tests/integration/test_kubelet.h"
#include "tests/unit/controller/kubernetes/fake_kube_api_server.h"

namespace ddp::controller {
namespace {

using nlohmann::json;
using kube::testing::FakeKubeApiServer;
using testing::TestKubelet;

// Runs one DDPJob (2 synthetic-data workers, 30 steps) with `runPolicy` to its end; returns its
// last status; `started`: the pods the kubelet ran; `podsLeft`: pods left a moment after the end.
json runJob(const std::string& runPolicy, int* started, size_t* podsLeft) {
  json status = json::object();
  FakeKubeApiServer api;
  EXPECT_TRUE(api.start().isOk());
  ddp::test::TempDir dir;
  auto config = parseControllerConfig({"--state-dir", dir.path(), "--listen", "127.0.0.1:0", "--launcher",
                                       "kubernetes", "--worker-image", "ddp-service:test", "--watch-namespace",
                                       "ml", "--kube-server", api.url()},
                                      [](const std::string&) { return std::optional<std::string>(); });
  EXPECT_TRUE(config.isOk()) << config.status();
  auto controller = Controller::start(*config);
  EXPECT_TRUE(controller.isOk()) << controller.status();
  if (!controller.isOk()) return status;
  TestKubelet kubelet(api, "ml", dir.path());
  api.put("ddp.dev/v1/ddpjobs", "ml", json::parse(std::string(R"({
    "metadata": {"name": "synthetic-k8s"},
    "spec": {"workers": {"count": 2}, "model": {"type": "mlp", "hidden": [32]},
             "data": {"dataset": "synthetic", "batchSize": 32,
                      "synthetic": {"samples": 512, "features": 16, "classes": 4}},
             "optimizer": {"type": "sgd", "lr": 0.1}, "steps": 30, "eval": {"everyEpoch": false},
             "kubernetes": {"capSysNice": false, "runPolicy": )" + runPolicy + "}}}")));
  for (int i = 0; i < 1200; ++i) {  // at most 60 s
    auto job = api.object("ddp.dev/v1/ddpjobs", "ml", "synthetic-k8s");
    if (job && job->contains("status")) status = (*job)["status"];
    const std::string phase = status.value("phase", "");
    if (phase == "Succeeded" || phase == "Failed") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the reconciler's next tick
  *started = kubelet.started();
  *podsLeft = api.objects("pods", "ml").size();
  (*controller)->stop();
  return status;
}

TEST(KubernetesE2eTest, ADdpJobResourceTrainsToSucceededWithRealWorkers) {
  int started = 0;
  size_t podsLeft = 0;
  const json status = runJob(R"({"cleanPodPolicy": "Running"})", &started, &podsLeft);
  EXPECT_EQ(status.value("phase", ""), "Succeeded") << status.dump(2);
  EXPECT_EQ(started, 2);
  EXPECT_EQ(status["progress"]["step"], 30) << status.dump(2);
  EXPECT_EQ(status["worldSize"], 2);
  EXPECT_TRUE(status.contains("completionTime"));
  EXPECT_EQ(podsLeft, 2u);  // cleanPodPolicy Running: the ended pods stay (for their logs)
}

TEST(KubernetesE2eTest, CleanPodPolicyAllDeletesTheFinishedPods) {
  int started = 0;
  size_t podsLeft = 0;
  const json status = runJob(R"({"cleanPodPolicy": "All"})", &started, &podsLeft);
  EXPECT_EQ(status.value("phase", ""), "Succeeded") << status.dump(2);
  EXPECT_EQ(podsLeft, 0u);
}

}  // namespace
}  // namespace ddp::controller
