// The objects the Kubernetes launcher creates for a job (worker_objects.h, Note [Worker pods]),
// field by field, and validated offline against the Kubernetes OpenAPI schemas with the npm
// package kubernetes-models (tests/kubernetes/validate_objects.mjs; skipped with the reason when
// scripts/k8s_tools.sh cannot install it because npm is unreachable).
#include "controller/launch/kubernetes/worker_objects.h"

#include <gtest/gtest.h>

#include <tuple>

#include "common/jobspec/job_names.h"
#include "tests/unit/controller/kubernetes/fake_admission.h"
#include "tests/unit/controller/launch/kubernetes/kubernetes_models.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

WorkerObjectsInput gpuJob() {
  auto spec = loadJobSpecFile(DDP_SOURCE_DIR "/manifests/examples/ddpjob-gpu.yaml");
  EXPECT_TRUE(spec.isOk()) << spec.status();
  WorkerObjectsInput in;
  in.nameSpace = "ml";
  in.defaultImage = "ddp-service:0.1.0";
  in.spec = *spec;
  in.launch.jobName = spec->name;
  in.launch.workers = spec->workers.count;
  in.launch.env.controllerUrl = "http://ddp.ddp-system.svc:8080";
  in.launch.env.jobToken = "s3cret";
  in.launch.env.logFormat = "json";
  in.launch.extraEnv = {"NCCL_DEBUG=WARN"};
  in.owner = JobOwner{spec->name, "0b7c2a8e-uid"};
  return in;
}

std::map<std::string, json> envByName(const json& container) {
  std::map<std::string, json> out;
  for (const json& e : container["env"]) out[e["name"]] = e;
  return out;
}

// The container runs ddp-worker, or spec.worker.command (a trainer of the job's own, in the job's
// image: Note [Worker commands]) with the same environment.
TEST(KubernetesWorkerObjectsTest, PodRunsDdpWorkerOrTheJobsWorkerCommand) {
  WorkerObjectsInput in = gpuJob();
  const json plain = buildWorkerPod(in, 0)["spec"]["containers"][0];
  EXPECT_EQ(plain["command"], json::array({"ddp-worker"}));
  in.spec.worker.command = {"/opt/trainer/bin/two-tower-trainer", "--tower-width", "32"};
  in.spec.kubernetes.image = "registry.example/two-tower:1";
  const json own = buildWorkerPod(in, 0)["spec"]["containers"][0];
  EXPECT_EQ(own["command"], json::array({"/opt/trainer/bin/two-tower-trainer", "--tower-width", "32"}));
  EXPECT_EQ(own["image"], "registry.example/two-tower:1");
  EXPECT_EQ(own["env"], plain["env"]);
}

TEST(KubernetesWorkerObjectsTest, PodCarriesTheJobsKubernetesSection) {
  const WorkerObjectsInput in = gpuJob();
  const json pod = buildWorkerPod(in, 2);
  EXPECT_EQ(pod["metadata"]["name"], "fashion-mnist-gpu-worker-2");
  EXPECT_EQ(pod["metadata"]["namespace"], "ml");
  EXPECT_EQ(pod["metadata"]["labels"][kJobLabel], "fashion-mnist-gpu");
  EXPECT_EQ(pod["metadata"]["labels"][kSlotLabel], "2");
  // The status' selector (the scale subresource's labelSelectorPath) matches every worker pod
  // of the job (the labels a pod of this job carries).
  const std::string selector = workerPodSelector("fashion-mnist-gpu");
  size_t start = 0;
  while (start < selector.size()) {
    const size_t comma = std::min(selector.find(',', start), selector.size());
    const std::string term = selector.substr(start, comma - start);
    const size_t eq = term.find('=');
    ASSERT_NE(eq, std::string::npos) << term;
    EXPECT_EQ(pod["metadata"]["labels"].value(term.substr(0, eq), ""), term.substr(eq + 1)) << term;
    start = comma + 1;
  }
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "DDPJob");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "0b7c2a8e-uid");
  const json& spec = pod["spec"];
  EXPECT_EQ(spec["restartPolicy"], "Never");
  EXPECT_EQ(spec["subdomain"], "fashion-mnist-gpu");  // DNS through the headless Service
  EXPECT_EQ(spec["tolerations"][0]["key"], "nvidia.com/gpu");
  EXPECT_EQ(spec["tolerations"][0]["operator"], "Exists");
  const json& c = spec["containers"][0];
  EXPECT_EQ(c["image"], "ddp-service:0.1.0");  // the job names none: the controller's default
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(c["resources"]["requests"]["memory"], "8Gi");
  EXPECT_EQ(c["securityContext"]["capabilities"]["drop"][0], "ALL");  // restricted (Note [Worker pod security])
  EXPECT_EQ(c["securityContext"]["runAsUser"], kWorkerUid);
  EXPECT_EQ(spec["securityContext"]["fsGroup"], kWorkerUid);
  bool checkpoints = false, shm = false;
  for (const json& m : c["volumeMounts"]) {
    checkpoints |= m["name"] == "checkpoints" && m["mountPath"] == "/checkpoints/fashion-mnist-gpu";
    shm |= m["name"] == "dshm" && m["mountPath"] == "/dev/shm";
  }
  EXPECT_TRUE(checkpoints);
  EXPECT_TRUE(shm);
  EXPECT_EQ(spec["volumes"][1]["persistentVolumeClaim"]["claimName"], "ddp-checkpoints");
  const auto env = envByName(c);
  EXPECT_EQ(env.at("DDP_CONTROLLER_URL")["value"], "http://ddp.ddp-system.svc:8080");
  EXPECT_EQ(env.at("DDP_JOB_NAME")["value"], "fashion-mnist-gpu");
  EXPECT_EQ(env.at("DDP_WORKER_ID")["value"], "fashion-mnist-gpu-w2");
  EXPECT_EQ(env.at("NCCL_DEBUG")["value"], "WARN");
  // The token never appears in the pod spec; the advertise address is the pod's IP.
  EXPECT_EQ(env.at("DDP_JOB_TOKEN")["valueFrom"]["secretKeyRef"]["name"], "fashion-mnist-gpu-worker-token");
  EXPECT_FALSE(env.at("DDP_JOB_TOKEN").contains("value"));
  EXPECT_EQ(pod.dump().find("s3cret"), std::string::npos);
  EXPECT_EQ(env.at("DDP_ADVERTISE_ADDR")["valueFrom"]["fieldRef"]["fieldPath"], "status.podIP");
}

// Note [Worker pod security]: restricted by default; capSysNice adds SYS_NICE as root.
TEST(KubernetesWorkerObjectsTest, CudaGetsOneGpuByDefaultAndCapSysNiceIsAnOptIn) {
  WorkerObjectsInput in = gpuJob();
  in.spec.kubernetes.resources.limits.erase(kNvidiaGpuResource);
  in.spec.kubernetes.image = "registry.example.com/ddp:cuda";
  ASSERT_FALSE(in.spec.kubernetes.capSysNice);  // the default
  const json pod = buildWorkerPod(in, 0);
  const json c = pod["spec"]["containers"][0];
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(c["securityContext"]["capabilities"], json({{"drop", {"ALL"}}}));
  EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(c["securityContext"]["runAsUser"], kWorkerUid);
  EXPECT_EQ(c["securityContext"]["runAsGroup"], kWorkerUid);
  EXPECT_EQ(c["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["spec"]["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(c["image"], "registry.example.com/ddp:cuda");
  in.spec.kubernetes.capSysNice = true;
  const json nice = buildWorkerPod(in, 0)["spec"]["containers"][0]["securityContext"];
  EXPECT_EQ(nice["runAsUser"], 0);
  EXPECT_EQ(nice["capabilities"]["add"], json::array({"SYS_NICE"}));
  in.spec.device = JobDevice::kCpu;
  EXPECT_FALSE(buildWorkerPod(in, 0)["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpu"));
}

// Note [Several ranks per pod]: pod 1 of a job of 8 ranks 4 to a pod runs ranks 4..7 under the
// supervisor, asks for 4 GPUs and gets 4 GiB of /dev/shm.
WorkerObjectsInput fourPerPod() {
  WorkerObjectsInput in = gpuJob();
  in.spec.workers = {8, 8, 8, 4};
  in.launch.workers = 8;
  in.launch.perPod = 4;
  in.spec.kubernetes.resources.limits.erase(kNvidiaGpuResource);
  return in;
}

TEST(KubernetesWorkerObjectsTest, APodOfSeveralRanksNamesThemAndAsksForAGpuEach) {
  WorkerObjectsInput in = fourPerPod();
  const json pod = buildWorkerPod(in, 1);
  EXPECT_EQ(pod["metadata"]["name"], "fashion-mnist-gpu-worker-1");
  EXPECT_EQ(pod["metadata"]["labels"][kSlotLabel], "1");
  const json& c = pod["spec"]["containers"][0];
  const auto env = envByName(c);
  EXPECT_EQ(env.at("DDP_POD_WORKER_IDS")["value"],
            "fashion-mnist-gpu-w4,fashion-mnist-gpu-w5,fashion-mnist-gpu-w6,fashion-mnist-gpu-w7");
  EXPECT_EQ(env.count("DDP_WORKER_ID"), 0u);  // the supervisor gives each rank its own
  EXPECT_EQ(c["resources"]["limits"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(pod["spec"]["volumes"][0]["emptyDir"]["medium"], "Memory");
  EXPECT_EQ(pod["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "4Gi");
  EXPECT_FALSE(pod["spec"].contains("hostNetwork"));
  EXPECT_FALSE(pod["spec"].contains("hostIPC"));
  in.spec.kubernetes.shmSize = "16Gi";
  in.spec.kubernetes.hostNetwork = true;
  in.spec.kubernetes.hostIPC = true;
  const json host = buildWorkerPod(in, 0);
  EXPECT_EQ(host["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "16Gi");
  EXPECT_EQ(host["spec"]["hostNetwork"], true);
  EXPECT_EQ(host["spec"]["dnsPolicy"], "ClusterFirstWithHostNet");  // Service names still resolve
  EXPECT_EQ(host["spec"]["hostIPC"], true);
  EXPECT_EQ(podCount(8, 4), 2);
  // The schedulers count pods: Kueue's group total and a gang's minMember (workers.min / perPod).
  in.spec.labels[kKueueQueueLabel] = "research";
  EXPECT_EQ(buildWorkerPod(in, 0)["metadata"]["annotations"][kKueuePodGroupTotalCount], "2");
  EXPECT_EQ(gangMinMember(in.spec), 2);
  EXPECT_EQ(podCount(3, 1), 3);
  // One rank per pod keeps DDP_WORKER_ID and a 1 GiB /dev/shm.
  const json one = buildWorkerPod(gpuJob(), 3);
  EXPECT_EQ(envByName(one["spec"]["containers"][0]).at("DDP_WORKER_ID")["value"], "fashion-mnist-gpu-w3");
  EXPECT_EQ(one["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], "1Gi");
}

TEST(KubernetesWorkerObjectsTest, HeadlessServiceAndTokenSecret) {
  const WorkerObjectsInput in = gpuJob();
  const json svc = buildHeadlessService(in);
  EXPECT_EQ(svc["metadata"]["name"], "fashion-mnist-gpu");
  EXPECT_EQ(svc["spec"]["clusterIP"], "None");
  EXPECT_EQ(svc["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(svc["spec"]["selector"][kJobLabel], "fashion-mnist-gpu");
  const json secret = buildTokenSecret(in);
  EXPECT_EQ(secret["metadata"]["name"], "fashion-mnist-gpu-worker-token");
  EXPECT_EQ(secret["stringData"][kTokenKey], "s3cret");
}

// Note [Job names]: with the longest name validation takes, every object of the job, the last
// slot's pod too, is one the API server admits (the fake's name rules, written apart from
// common/jobspec/job_names.h); one character more and the last pod is refused; a name starting
// with a digit makes a Service name the API server refuses.
TEST(KubernetesWorkerObjectsTest, EveryGeneratedNameOfTheLongestJobNameIsAdmitted) {
  using testing::admit;
  WorkerObjectsInput in = gpuJob();
  in.launch.jobName = std::string(kMaxJobNameLength, 'j');
  ASSERT_TRUE(checkJobName(in.launch.jobName).isOk());
  const int last = kMaxWorkersPerJob - 1;
  for (const auto& [resource, kind, object] : {std::tuple{"pods", "Pod", buildWorkerPod(in, last)},
                                               std::tuple{"services", "Service", buildHeadlessService(in)},
                                               std::tuple{"secrets", "Secret", buildTokenSecret(in)}}) {
    const auto refused = admit(resource, kind, object, nullptr);
    EXPECT_FALSE(refused.has_value()) << refused->message;
  }
  in.launch.jobName += "j";
  EXPECT_FALSE(checkJobName(in.launch.jobName).isOk());
  const auto pod = admit("pods", "Pod", buildWorkerPod(in, last), nullptr);
  ASSERT_TRUE(pod.has_value());
  EXPECT_EQ(pod->code, 422);
  in.launch.jobName = "7up";
  EXPECT_FALSE(checkJobName(in.launch.jobName).isOk());
  const auto svc = admit("services", "Service", buildHeadlessService(in), nullptr);
  ASSERT_TRUE(svc.has_value());
  EXPECT_NE(svc->message.find("DNS-1035"), std::string::npos) << svc->message;
}

TEST(KubernetesWorkerObjectsTest, ObjectsPassTheKubernetesSchemas) {
  const WorkerObjectsInput in = gpuJob();
  // A pod of a Kueue-queued job on Volcano: the schedulers' labels, annotations, schedulerName
  // (scheduling_objects.h; the PodGroup kinds are not in kubernetes-models).
  WorkerObjectsInput queued = gpuJob();
  queued.spec.labels[kKueueQueueLabel] = "research";
  queued.schedulerName = kVolcanoSchedulerName;
  WorkerObjectsInput pods = fourPerPod();  // Note [Several ranks per pod], host namespaces on
  pods.spec.kubernetes.hostNetwork = true;
  pods.spec.kubernetes.hostIPC = true;
  const auto report = testing::validateWithKubernetesModels({buildWorkerPod(in, 0), buildHeadlessService(in),
                                                             buildTokenSecret(in), buildWorkerPod(queued, 1),
                                                             buildWorkerPod(pods, 1)});
  if (report.skipped) GTEST_SKIP() << report.text;
  EXPECT_EQ(report.rc, 0) << report.text;
  EXPECT_NE(report.text.find("5 objects valid, 0 invalid"), std::string::npos) << report.text;
}

// The pods the launcher builds (its own code) against the restricted Pod Security Standard,
// checked by tests/kubernetes/pod_security.mjs: every default pod (CPU, GPU, with a checkpoint
// claim) meets it; the capSysNice opt-in meets neither restricted nor baseline, named.
TEST(KubernetesWorkerObjectsTest, DefaultPodsMeetTheRestrictedPodSecurityStandard) {
  auto [rc, tools] = testing::runCommand(DDP_SOURCE_DIR "/scripts/k8s_tools.sh");
  if (rc == 77) GTEST_SKIP() << tools;
  ASSERT_EQ(rc, 0) << tools;
  while (!tools.empty() && (tools.back() == '\n')) tools.pop_back();
  tools = tools.substr(tools.rfind('\n') + 1);
  const std::string check = "DDP_K8S_MODULES=" + tools + "/node_modules node " DDP_SOURCE_DIR "/tests/kubernetes/pod_security.mjs ";
  ddp::test::TempDir dir;
  WorkerObjectsInput gpu = gpuJob();
  WorkerObjectsInput cpu = gpuJob();
  cpu.spec.device = JobDevice::kCpu;
  cpu.spec.kubernetes.checkpointVolumeClaim.clear();
  {
    std::ofstream out(dir.path() + "/default.yaml");
    out << buildWorkerPod(gpu, 0).dump() << "\n---\n" << buildWorkerPod(cpu, 1).dump() << "\n";
  }
  auto [ok, report] = testing::runCommand(check + dir.path() + "/default.yaml");
  EXPECT_EQ(ok, 0) << report;
  EXPECT_NE(report.find("2 pods meet restricted, 0 do not"), std::string::npos) << report;
  gpu.spec.kubernetes.capSysNice = true;
  {
    std::ofstream out(dir.path() + "/nice.yaml");
    out << buildWorkerPod(gpu, 0).dump() << "\n";
  }
  for (const char* level : {"restricted", "baseline"}) {
    auto [refused, why] = testing::runCommand(check + "--level " + level + " " + dir.path() + "/nice.yaml");
    EXPECT_EQ(refused, 1) << why;
    EXPECT_NE(why.find("capability SYS_NICE added"), std::string::npos) << why;
  }
}

}  // namespace
}  // namespace ddp::controller::kube
