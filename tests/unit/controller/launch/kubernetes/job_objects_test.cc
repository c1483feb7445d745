// renderJobObjects (what `ddpctl render` prints) against its oracle, the objects
// KubernetesLauncher creates in the fake API server (FAKED: the API server) for the same job,
// launched as the JobManager launches it (makeJobLaunch) and owned by a DDPJob, with the default
// scheduler, with Volcano's PodGroup and with two ranks per pod; and the
// refusals of checkJobObject, each naming the object and field the API server would refuse.
#include "controller/launch/kubernetes/job_objects.h"

#include <gtest/gtest.h>

#include <map>

#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "tests/unit/controller/kubernetes/fake_api_test.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

JobSpec specOf(const std::string& yaml) {
  auto spec = parseJobSpec(yaml);
  EXPECT_TRUE(spec.isOk()) << spec.status();
  return spec.isOk() ? *spec : JobSpec{};
}

const char* kJob =
    "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: fm, labels: {kueue.x-k8s.io/queue-name: research}}\n"
    "spec:\n"
    "  workers: {count: 3}\n"
    "  model: {type: mlp}\n"
    "  data: {dataset: synthetic}\n"
    "  epochs: 1\n"
    "  checkpoint: {dir: /ckpt, everySteps: 10}\n"
    "  worker: {command: [/opt/t/bin/trainer, --width, \"32\"]}\n"
    "  kubernetes:\n"
    "    resources: {requests: {cpu: \"2\", memory: 4Gi}, limits: {memory: 8Gi}}\n"
    "    nodeSelector: {pool: train}\n"
    "    tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]\n"
    "    serviceAccountName: trainer\n"
    "    checkpointVolumeClaim: ckpt\n";

// `created` as the renderer writes it: without what the API server adds, the owner's uid and
// the worker token as the placeholders of Note [Rendered objects].
json asRendered(json created, const std::string& ownerUid, const std::string& token) {
  json& m = created["metadata"];
  for (const char* k : {"uid", "resourceVersion", "creationTimestamp", "generation"}) m.erase(k);
  created.erase("status");
  for (json& ref : m.value("ownerReferences", json::array())) {
    EXPECT_EQ(ref["uid"], ownerUid);
  }
  if (m.contains("ownerReferences")) {
    for (json& ref : m["ownerReferences"]) ref["uid"] = kRenderedOwnerUid;
  }
  if (created["kind"] == "Secret") {
    EXPECT_EQ(created["stringData"]["token"], token);
    created["stringData"]["token"] = kRenderedToken;
  }
  return created;
}

// The launcher creates a job's objects in the fake (pods with `schedulerName`); renderJobObjects
// must give the same ones.
// The pods' scheduler and spec.workers.perPod.
struct Layout {
  std::string scheduler;
  int perPod = 1;
};

class KubernetesJobObjectsTest : public testing::FakeApiTest, public ::testing::WithParamInterface<Layout> {
 protected:
  // The objects the launcher created in namespace ml, by "Kind/name".
  std::map<std::string, json> created(const std::string& podGroups) {
    std::map<std::string, json> out;
    for (const std::string& resource : {std::string("secrets"), std::string("services"), std::string("pods"), podGroups}) {
      if (resource.empty()) continue;
      for (const json& obj : api_.objects(resource, "ml")) {
        out[obj["kind"].get<std::string>() + "/" + obj["metadata"]["name"].get<std::string>()] = obj;
      }
    }
    return out;
  }
};

TEST_P(KubernetesJobObjectsTest, RenderedObjectsAreThoseTheLauncherCreates) {
  const std::string scheduler = GetParam().scheduler;
  const int perPod = GetParam().perPod;
  // A Kueue queue label: the pods carry Kueue's group labels too (Note [Kueue pod groups]).
  std::string yaml = kJob;
  if (perPod > 1) {
    yaml.replace(yaml.find("{count: 3}"), 10, "{count: 6, perPod: " + std::to_string(perPod) + "}");
  }
  const JobSpec spec = specOf(yaml);
  const WorkerLaunchSettings settings{"http://ddp.ml.svc:8081", "json", "", "normal"};
  KubernetesLauncherOptions o;
  o.nameSpace = "ml";
  o.defaultImage = "ddp-service:0.1.0";
  o.schedulerName = scheduler;
  o.specOf = [&](const std::string&) -> std::optional<JobSpec> { return spec; };
  o.ownerOf = [](const std::string& job) -> std::optional<JobOwner> { return JobOwner{job, "uid-of-fm"}; };
  o.onExit = [](const WorkerExit&) {};
  auto launcher = KubernetesLauncher::create(*client_, o);
  ASSERT_TRUE(launcher.isOk()) << launcher.status();
  ASSERT_TRUE(testing::waitUntil([&] { return (*launcher)->ready().isOk(); }));
  ASSERT_TRUE((*launcher)->ensureWorkers(makeJobLaunch("fm", spec, "tok-1", settings)).isOk());

  RenderOptions r;
  r.nameSpace = "ml";
  r.defaultImage = "ddp-service:0.1.0";
  r.schedulerName = scheduler;
  r.settings = settings;
  auto rendered = renderJobObjects(spec, r);
  ASSERT_TRUE(rendered.isOk()) << rendered.status();
  const bool group = scheduler == kVolcanoSchedulerName;
  std::map<std::string, json> made = created(group ? "scheduling.volcano.sh/v1beta1/podgroups" : "");
  const size_t pods = perPod > 1 ? 6 / perPod : 3;
  ASSERT_EQ(rendered->size(), 2 + (group ? 1u : 0u) + pods);  // Secret, Service, [PodGroup], pods
  EXPECT_EQ(made.size(), rendered->size());
  for (const json& obj : *rendered) {
    const std::string key = obj["kind"].get<std::string>() + "/" + obj["metadata"]["name"].get<std::string>();
    SCOPED_TRACE(key);
    ASSERT_TRUE(made.count(key)) << "rendered but not created";
    EXPECT_EQ(asRendered(made[key], "uid-of-fm", "tok-1"), obj);
  }
  EXPECT_EQ((*rendered)[0]["kind"], "Secret");
  EXPECT_EQ((*rendered)[1]["kind"], "Service");
  if (group) EXPECT_EQ((*rendered)[2]["kind"], "PodGroup");
  EXPECT_EQ(rendered->back()["metadata"]["name"], "fm-worker-" + std::to_string(pods - 1));
  EXPECT_EQ(rendered->back()["metadata"]["labels"][kKueueQueueLabel], "research");
}

INSTANTIATE_TEST_SUITE_P(Layouts, KubernetesJobObjectsTest,
                         ::testing::Values(Layout{"", 1}, Layout{kVolcanoSchedulerName, 1}, Layout{"", 2}),
                         [](const auto& info) {
                           return (info.param.scheduler.empty() ? std::string("Default") : info.param.scheduler) +
                                  "PerPod" + std::to_string(info.param.perPod);
                         });

// Note [Several ranks per pod]: 4 ranks, 2 to a pod, render as the launcher creates them: 2 pods.
class KubernetesJobObjectsPerPodTest : public testing::FakeApiTest {};

TEST_F(KubernetesJobObjectsPerPodTest, APodOfSeveralRanksRendersAsTheLauncherCreatesIt) {
  const JobSpec spec = specOf(
      "apiVersion: ddp.dev/v1\nkind: DDPJob\nmetadata: {name: fm}\n"
      "spec: {workers: {count: 4, perPod: 2}, model: {type: mlp}, data: {dataset: synthetic}, epochs: 1,\n"
      "       kubernetes: {shmSize: 3Gi, hostNetwork: true}}\n");
  const WorkerLaunchSettings settings{"http://ddp.ml.svc:8081", "json", "", "normal"};
  KubernetesLauncherOptions o;
  o.nameSpace = "ml";
  o.defaultImage = "ddp-service:0.1.0";
  o.specOf = [&](const std::string&) -> std::optional<JobSpec> { return spec; };
  o.ownerOf = [](const std::string& job) -> std::optional<JobOwner> { return JobOwner{job, "uid-of-fm"}; };
  o.onExit = [](const WorkerExit&) {};
  auto launcher = KubernetesLauncher::create(*client_, o);
  ASSERT_TRUE(launcher.isOk()) << launcher.status();
  ASSERT_TRUE(testing::waitUntil([&] { return (*launcher)->ready().isOk(); }));
  ASSERT_TRUE((*launcher)->ensureWorkers(makeJobLaunch("fm", spec, "tok-1", settings)).isOk());
  RenderOptions r;
  r.nameSpace = "ml";
  r.defaultImage = "ddp-service:0.1.0";
  r.settings = settings;
  auto rendered = renderJobObjects(spec, r);
  ASSERT_TRUE(rendered.isOk()) << rendered.status();
  ASSERT_EQ(rendered->size(), 4u);  // Secret, Service, 2 pods
  ASSERT_EQ(api_.objects("pods", "ml").size(), 2u);
  for (int p = 0; p < 2; ++p) {
    const json& pod = (*rendered)[2 + static_cast<size_t>(p)];
    const auto made = api_.object("pods", "ml", "fm-worker-" + std::to_string(p));
    ASSERT_TRUE(made.has_value());
    EXPECT_EQ(asRendered(*made, "uid-of-fm", "tok-1"), pod);
    EXPECT_EQ(pod["spec"]["hostNetwork"], true);
    EXPECT_EQ(pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "3Gi");
  }
}

TEST(KubernetesJobObjectsRefusalTest, NamesTheObjectAndFieldTheApiServerWouldRefuse) {
  JobSpec spec = specOf(kJob);
  RenderOptions r;
  r.defaultImage = "ddp-service:0.1.0";
  ASSERT_TRUE(renderJobObjects(spec, r).isOk());

  RenderOptions noImage;
  auto st = renderJobObjects(spec, noImage).status();
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("Pod fm-worker-0: spec.containers[0].image: required"), std::string::npos) << st;

  RenderOptions badNamespace = r;
  badNamespace.nameSpace = "ML_team";
  st = renderJobObjects(spec, badNamespace).status();
  EXPECT_NE(st.message().find("metadata.namespace: must be a DNS-1123 label"), std::string::npos) << st;

  JobSpec digit = spec;
  digit.name = "7up";  // a DNS-1123 label, but a Service needs DNS-1035
  st = renderJobObjects(digit, r).status();
  EXPECT_NE(st.message().find("Service 7up: metadata.name: a Service's name must be a DNS-1035 label"),
            std::string::npos)
      << st;

  JobSpec longName = spec;
  longName.name = std::string(56, 'a');  // <name>-worker-0 is 65 characters: too long a hostname
  st = renderJobObjects(longName, r).status();
  EXPECT_NE(st.message().find("spec.hostname: must be a DNS-1123 label"), std::string::npos) << st;
}

TEST(KubernetesJobObjectsRefusalTest, ChecksLabelsOfAnyObject) {
  json pod = {{"kind", "Pod"},
              {"metadata", {{"name", "p"}, {"namespace", "ml"}, {"labels", {{"ddp.dev/job", "-bad"}}}}},
              {"spec", {{"containers", json::array({{{"name", "w"}, {"image", "i"}}})}}}};
  Status st = checkJobObject(pod);
  EXPECT_NE(st.message().find("Pod p: metadata.labels[ddp.dev/job]: must be a label value"), std::string::npos) << st;
  pod["metadata"]["labels"] = {{"ddp.dev/job", "ok"}};
  EXPECT_TRUE(checkJobObject(pod).isOk());
}

}  // namespace
}  // namespace ddp::controller::kube
