// A job's spec.kubernetes.template in its worker pods (pod_template_apply.h, Note [Pod
// template]): the template's values arrive where Kubernetes reads them, everything the
// controller sets without a template is still there (the oracle: the same job's pod built
// without the template), the security contexts merge, every key, name and path the controller
// sets is one a template is refused for, the pods pass the Kubernetes schemas
// (kubernetes-models), and the example's template hardens its pods to Pod Security's restricted
// level (the fake admission's checker).
#include "controller/launch/kubernetes/pod_template_apply.h"

#include <gtest/gtest.h>

#include <string>

#include "controller/launch/kubernetes/worker_objects.h"
#include "tests/unit/controller/kubernetes/fake_admission.h"
#include "tests/unit/controller/launch/kubernetes/kubernetes_models.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

WorkerObjectsInput templateJob() {
  auto spec = loadJobSpecFile(DDP_SOURCE_DIR "/manifests/examples/ddpjob-pod-template.yaml");
  EXPECT_TRUE(spec.isOk()) << spec.status();
  WorkerObjectsInput in;
  in.nameSpace = "ml";
  in.defaultImage = "ddp-service:0.1.0";
  in.spec = *spec;
  in.launch.jobName = spec->name;
  in.launch.workers = spec->workers.count;
  in.launch.env.controllerUrl = "http://ddp.ddp-system.svc:8080";
  in.launch.env.jobToken = "s3cret";
  in.owner = JobOwner{spec->name, "0b7c2a8e-uid"};
  return in;
}

// Every value of `base` is in `with`: objects key by key, arrays as a prefix (the template
// appends). Empty when so, else the first path where it is not.
std::string missingFrom(const json& with, const json& base, const std::string& path = "") {
  if (base.is_object()) {
    if (!with.is_object()) return path;
    for (const auto& [k, v] : base.items()) {
      if (!with.contains(k)) return path + "." + k;
      if (std::string m = missingFrom(with[k], v, path + "." + k); !m.empty()) return m;
    }
    return "";
  }
  if (base.is_array()) {
    if (!with.is_array() || with.size() < base.size()) return path;
    for (size_t i = 0; i < base.size(); ++i) {
      if (std::string m = missingFrom(with[i], base[i], path + "[" + std::to_string(i) + "]"); !m.empty()) return m;
    }
    return "";
  }
  return with == base ? "" : path;
}

TEST(PodTemplateApplyTest, ThePodCarriesTheTemplateAndEverythingTheControllerSets) {
  const WorkerObjectsInput in = templateJob();
  WorkerObjectsInput plain = in;
  plain.spec.kubernetes.podTemplate = PodTemplateSpec{};
  const json pod = buildWorkerPod(in, 1);
  const json without = buildWorkerPod(plain, 1);
  EXPECT_EQ(missingFrom(pod, without), "") << pod.dump(2);
  ASSERT_NE(pod, without);

  EXPECT_EQ(pod["metadata"]["labels"]["team"], "vision");
  EXPECT_EQ(pod["metadata"]["annotations"]["sidecar.istio.io/inject"], "false");
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["priorityClassName"], "training-high");
  EXPECT_EQ(spec["imagePullSecrets"], json::parse(R"([{"name": "registry-example-com"}])"));
  EXPECT_EQ(spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["weight"], 100);
  EXPECT_EQ(spec["topologySpreadConstraints"][0]["topologyKey"], "topology.kubernetes.io/zone");
  EXPECT_EQ(spec["tolerations"][0]["key"], "nvidia.com/gpu");
  EXPECT_EQ(spec["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(spec["volumes"].back()["persistentVolumeClaim"]["claimName"], "datasets");
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["volumeMounts"].back(), json::parse(R"({"name": "datasets", "mountPath": "/data", "readOnly": true})"));
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json::array({"ALL"}));
  // The template's variables come after the controller's, which stay as they were.
  const size_t controllerVars = without["spec"]["containers"][0]["env"].size();
  ASSERT_EQ(c["env"].size(), controllerVars + 3);
  EXPECT_EQ(c["env"][controllerVars], json::parse(R"({"name": "NCCL_DEBUG", "value": "WARN"})"));
  EXPECT_EQ(c["env"][controllerVars + 2]["valueFrom"]["secretKeyRef"]["name"], "wandb");
}

// Security contexts merge: the template's keys over the controller's, capability lists joined.
TEST(PodTemplateApplyTest, SecurityContextsMergeOverTheControllers) {
  WorkerObjectsInput in = templateJob();
  in.spec.kubernetes.capSysNice = true;
  in.spec.kubernetes.podTemplate.containerSecurityContext = R"({"capabilities": {"add": ["IPC_LOCK", "SYS_NICE"]}})";
  in.spec.kubernetes.podTemplate.securityContext = R"({"fsGroup": 2000, "supplementalGroups": [3000]})";
  const json pod = buildWorkerPod(in, 0);
  const json& sc = pod["spec"]["containers"][0]["securityContext"];
  EXPECT_EQ(sc["capabilities"]["add"], json::array({"SYS_NICE", "IPC_LOCK"}));
  EXPECT_EQ(sc["runAsUser"], 0);  // capSysNice's
  EXPECT_EQ(pod["spec"]["securityContext"]["fsGroup"], 2000);
  EXPECT_EQ(pod["spec"]["securityContext"]["supplementalGroups"], json::array({3000}));

  json base = {{"a", {{"b", 1}, {"list", {"x"}}}}, {"n", json::array({1})}};
  mergeOver(base, {{"a", {{"c", 2}, {"list", {"y", "x"}}}}, {"n", json::array({2})}});
  EXPECT_EQ(base, json::parse(R"({"a": {"b": 1, "c": 2, "list": ["x", "y"]}, "n": [2]})"));
}

// The refusal side of "the controller owns it": a template setting any label or annotation,
// environment variable, volume or mount path that the controller gives a worker pod is
// refused at submission, naming the field. The list comes from a pod as built, so a key the
// controller starts setting is covered (or this fails).
TEST(PodTemplateApplyTest, EverythingTheControllerSetsIsRefusedInATemplate) {
  WorkerObjectsInput in = templateJob();
  in.spec.kubernetes.podTemplate = PodTemplateSpec{};
  const json pod = buildWorkerPod(in, 0);
  const std::string text = [] {
    std::ifstream f(DDP_SOURCE_DIR "/manifests/examples/ddpjob-pod-template.yaml");
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  // The example with its template replaced by `body`.
  auto refused = [&](const std::string& body, const std::string& path) {
    const std::string doc = text.substr(0, text.find("    template:\n")) + "    template:\n" + body;
    std::vector<SpecError> errors;
    auto r = parseJobSpec(doc, &errors);
    bool found = false;
    for (const SpecError& e : errors) found |= e.path == path;
    return !r.isOk() && found;
  };
  int checked = 0;
  for (const auto& [key, value] : pod["metadata"]["labels"].items()) {
    EXPECT_TRUE(refused("      labels: {\"" + key + "\": x}\n", "spec.kubernetes.template.labels[" + key + "]")) << key;
    EXPECT_TRUE(refused("      annotations: {\"" + key + "\": x}\n", "spec.kubernetes.template.annotations[" + key + "]"))
        << key;
    ++checked;
  }
  const json& c = pod["spec"]["containers"][0];
  for (const json& e : c["env"]) {
    const std::string name = e["name"];
    EXPECT_TRUE(refused("      env: [{name: " + name + ", value: x}]\n", "spec.kubernetes.template.env[0].name")) << name;
    ++checked;
  }
  for (const json& v : pod["spec"]["volumes"]) {
    const std::string name = v["name"];
    EXPECT_TRUE(refused("      volumes: [{name: " + name + ", emptyDir: {}}]\n", "spec.kubernetes.template.volumes[0].name"))
        << name;
    ++checked;
  }
  for (const json& m : c["volumeMounts"]) {
    const std::string path = m["mountPath"];
    EXPECT_TRUE(refused("      volumes: [{name: mine, emptyDir: {}}]\n      volumeMounts: [{name: mine, mountPath: " + path +
                            "}]\n",
                        "spec.kubernetes.template.volumeMounts[0].mountPath"))
        << path;
    ++checked;
  }
  EXPECT_GE(checked, 12);  // 4 labels, 6 variables, 2 volumes, 2 mounts at least
}

// The example's template (allowPrivilegeEscalation false, capabilities dropped, RuntimeDefault
// seccomp; capSysNice off) makes its pods meet the restricted level; an added IPC_LOCK (with
// SYS_NICE) is beyond baseline, as the standards say.
TEST(PodTemplateApplyTest, TheExampleTemplateMeetsPodSecurityRestricted) {
  WorkerObjectsInput in = templateJob();
  const std::vector<std::string> violations = testing::podSecurityViolations(buildWorkerPod(in, 0), "restricted");
  EXPECT_TRUE(violations.empty()) << violations.front();
  in.spec.kubernetes.capSysNice = true;
  in.spec.kubernetes.podTemplate.containerSecurityContext = R"({"capabilities": {"add": ["IPC_LOCK"]}})";
  EXPECT_FALSE(testing::podSecurityViolations(buildWorkerPod(in, 0), "baseline").empty());
}

// A job's own scheduler (template.schedulerName) is its pods' scheduler, before the
// controller's --gang-scheduler-name, with the gang scheduler's PodGroup and pod label.
TEST(PodTemplateApplyTest, TheTemplatesSchedulerComesBeforeTheControllers) {
  WorkerObjectsInput in = templateJob();
  in.schedulerName = kVolcanoSchedulerName;
  EXPECT_EQ(buildWorkerPod(in, 0)["spec"]["schedulerName"], kVolcanoSchedulerName);
  in.spec.kubernetes.podTemplate.schedulerName = kCoschedulingSchedulerName;
  const json pod = buildWorkerPod(in, 0);
  EXPECT_EQ(pod["spec"]["schedulerName"], kCoschedulingSchedulerName);
  EXPECT_EQ(pod["metadata"]["labels"][kCoschedulingPodGroupLabel], in.launch.jobName);
  EXPECT_FALSE(pod["metadata"].contains("annotations") &&
               pod["metadata"]["annotations"].contains(kVolcanoGroupAnnotation));
  const auto group = buildPodGroup(schedulingInput(in), buildHeadlessService(in)["metadata"]);
  ASSERT_TRUE(group.has_value());
  EXPECT_EQ((*group)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
}

TEST(PodTemplateApplyTest, TemplatedPodsPassTheKubernetesSchemas) {
  WorkerObjectsInput in = templateJob();
  WorkerObjectsInput merged = in;
  merged.spec.kubernetes.capSysNice = true;
  merged.spec.kubernetes.podTemplate.containerSecurityContext = R"({"capabilities": {"add": ["IPC_LOCK"]}})";
  const auto report = testing::validateWithKubernetesModels({buildWorkerPod(in, 0), buildWorkerPod(in, 3),
                                                             buildWorkerPod(merged, 0)});
  if (report.skipped) GTEST_SKIP() << report.text;
  EXPECT_EQ(report.rc, 0) << report.text;
  EXPECT_NE(report.text.find("3 objects valid, 0 invalid"), std::string::npos) << report.text;
}

}  // namespace
}  // namespace ddp::controller::kube
