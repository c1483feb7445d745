// KubernetesLauncher against FakeKubeApiServer (FAKED: the API server) with a job that has a
// pod template (Note [Pod template]): the pods the launcher creates, read back from the API
// server, carry the template's values, and what the controller owns (names, labels, owner
// references, the DDP_* environment, its volumes, restartPolicy, hostname and subdomain) is
// as it is without a template; a replaced worker's pod carries the template too.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

constexpr const char* kJob = R"(apiVersion: ddp.dev/v1
kind: DDPJob
metadata: {name: fm}
spec:
  workers: {count: 2}
  model: {type: mlp}
  data: {dataset: synthetic}
  epochs: 1
  kubernetes:
    resources: {requests: {cpu: "2"}}
    capSysNice: false
    podSecurityLevel: privileged   # IPC_LOCK (Note [Pod security level])
    template:
      labels: {team: vision}
      annotations: {sidecar.istio.io/inject: "false"}
      env: [{name: NCCL_DEBUG, value: INFO}]
      envFrom: [{secretRef: {name: s3-credentials}}]
      volumes: [{name: datasets, persistentVolumeClaim: {claimName: datasets, readOnly: true}}]
      volumeMounts: [{name: datasets, mountPath: /data, readOnly: true}]
      schedulerName: scheduler-plugins-scheduler
      priorityClassName: training
      nodeSelector: {pool: gpu}
      serviceAccountName: trainer
      containerSecurityContext: {capabilities: {add: [IPC_LOCK]}}
)";

class KubernetesLauncherTemplateTest : public testing::FakeApiTest {
 protected:
  // A launcher for job fm with `yaml` as its spec; creates its pods.
  void launch(const char* yaml) {
    auto spec = parseJobSpec(yaml);
    ASSERT_TRUE(spec.isOk()) << spec.status();
    spec_ = *spec;
    KubernetesLauncherOptions o;
    o.nameSpace = "ml";
    o.defaultImage = "ddp-service:0.1.0";
    o.specOf = [this](const std::string& job) -> std::optional<JobSpec> {
      return job == "fm" ? std::optional<JobSpec>(spec_) : std::nullopt;
    };
    o.ownerOf = [](const std::string&) -> std::optional<JobOwner> { return JobOwner{"fm", "uid-fm"}; };
    o.onExit = [](const WorkerExit&) {};
    auto l = KubernetesLauncher::create(*client_, o);
    ASSERT_TRUE(l.isOk()) << l.status();
    launcher_ = std::move(*l);
    ASSERT_TRUE(testing::waitUntil([&] { return launcher_->ready().isOk(); })) << launcher_->ready();
    JobLaunch j;
    j.jobName = "fm";
    j.workers = 2;
    j.env.controllerUrl = "http://ddp.ddp-system.svc:8080";
    j.env.jobToken = "tok";
    ASSERT_TRUE(launcher_->ensureWorkers(j).isOk());
  }

  JobSpec spec_;
  std::unique_ptr<KubernetesLauncher> launcher_;
};

std::map<std::string, json> envByName(const json& container) {
  std::map<std::string, json> out;
  for (const json& e : container["env"]) out[e["name"]] = e;
  return out;
}

TEST_F(KubernetesLauncherTemplateTest, PodsCarryTheTemplateAndTheControllersValues) {
  launch(kJob);
  for (int slot = 0; slot < 2; ++slot) {
    SCOPED_TRACE(slot);
    auto got = api_.object("pods", "ml", "fm-worker-" + std::to_string(slot));
    ASSERT_TRUE(got.has_value());
    const json& pod = *got;
    EXPECT_EQ(pod["metadata"]["labels"]["team"], "vision");
    EXPECT_EQ(pod["metadata"]["labels"][kJobLabel], "fm");
    EXPECT_EQ(pod["metadata"]["labels"][kSlotLabel], std::to_string(slot));
    EXPECT_EQ(pod["metadata"]["labels"]["app.kubernetes.io/name"], "ddp-worker");
    EXPECT_EQ(pod["metadata"]["annotations"]["sidecar.istio.io/inject"], "false");
    EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "uid-fm");
    const json& spec = pod["spec"];
    EXPECT_EQ(spec["schedulerName"], "scheduler-plugins-scheduler");
    EXPECT_EQ(spec["priorityClassName"], "training");
    EXPECT_EQ(spec["nodeSelector"]["pool"], "gpu");
    EXPECT_EQ(spec["serviceAccountName"], "trainer");
    EXPECT_EQ(spec["restartPolicy"], "Never");
    EXPECT_EQ(spec["hostname"], "fm-worker-" + std::to_string(slot));
    EXPECT_EQ(spec["subdomain"], "fm");
    ASSERT_EQ(spec["containers"].size(), 1u);
    const json& c = spec["containers"][0];
    EXPECT_EQ(c["name"], kWorkerContainer);
    EXPECT_EQ(c["resources"]["requests"]["cpu"], "2");
    EXPECT_EQ(c["envFrom"][0]["secretRef"]["name"], "s3-credentials");
    EXPECT_EQ(c["securityContext"]["capabilities"]["add"], json::array({"IPC_LOCK"}));
    EXPECT_EQ(c["securityContext"]["runAsNonRoot"], true);  // the controller's, kept
    const auto env = envByName(c);
    EXPECT_EQ(env.at("NCCL_DEBUG")["value"], "INFO");
    EXPECT_EQ(env.at("DDP_JOB_NAME")["value"], "fm");
    EXPECT_EQ(env.at("DDP_WORKER_ID")["value"], "fm-w" + std::to_string(slot));
    EXPECT_EQ(env.at("DDP_JOB_TOKEN")["valueFrom"]["secretKeyRef"]["name"], "fm-worker-token");
    std::map<std::string, std::string> mounts;
    for (const json& m : c["volumeMounts"]) mounts[m["name"]] = m["mountPath"];
    EXPECT_EQ(mounts, (std::map<std::string, std::string>{{"datasets", "/data"}, {"dshm", "/dev/shm"}}));
    std::set<std::string> volumes;
    for (const json& v : spec["volumes"]) volumes.insert(v["name"].get<std::string>());
    EXPECT_EQ(volumes, (std::set<std::string>{"datasets", "dshm"}));
  }
}

TEST_F(KubernetesLauncherTemplateTest, AReplacedWorkersPodCarriesTheTemplate) {
  launch(kJob);
  const std::string before = (*api_.object("pods", "ml", "fm-worker-1"))["metadata"]["uid"];  // running
  ASSERT_TRUE(launcher_->replaceWorker("fm", "fm-w1").isOk());
  ASSERT_TRUE(testing::waitUntil([&] {
    auto p = api_.object("pods", "ml", "fm-worker-1");
    return p && (*p)["metadata"]["uid"] != before;
  }));
  const json pod = *api_.object("pods", "ml", "fm-worker-1");
  EXPECT_EQ(pod["metadata"]["labels"]["team"], "vision");
  EXPECT_EQ(pod["spec"]["schedulerName"], "scheduler-plugins-scheduler");
}

}  // namespace
}  // namespace ddp::controller::kube
