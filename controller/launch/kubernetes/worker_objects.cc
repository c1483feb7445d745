#include "controller/launch/kubernetes/worker_objects.h"

#include <algorithm>

#include "common/jobspec/job_names.h"
#include "common/launch/worker_env.h"
#include "controller/launch/kubernetes/scheduling_objects.h"
#include "controller/launch/kubernetes/pod_template_apply.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

json metadata(const WorkerObjectsInput& in, const std::string& name, std::optional<int> slot) {
  json labels = {{"app.kubernetes.io/name", "ddp-worker"}, {"app.kubernetes.io/managed-by", "ddp-controller"},
                 {kJobLabel, in.launch.jobName}};
  if (slot) labels[kSlotLabel] = std::to_string(*slot);
  json m = {{"name", name}, {"namespace", in.nameSpace}, {"labels", labels}};
  if (in.owner && !in.owner->uid.empty()) {
    m["ownerReferences"] = json::array({{{"apiVersion", kJobApiVersion}, {"kind", kJobKind}, {"name", in.owner->name},
                                         {"uid", in.owner->uid}, {"controller", true}, {"blockOwnerDeletion", true}}});
  }
  return m;
}

json environment(const WorkerObjectsInput& in, int slot) {
  launch::WorkerEnv env = in.launch.env;
  env.jobName = in.launch.jobName;
  const int perPod = std::max(1, in.spec.workers.perPod);
  if (perPod > 1) {  // Note [Several ranks per pod]: the supervisor names each rank
    env.workerId.clear();
    env.podWorkerIds = workerIdsOfPod(in.launch.jobName, slot, perPod);
  } else {
    env.workerId = workerIdFor(in.launch.jobName, slot);
  }
  json out = json::array();
  std::vector<std::string> entries = launch::workerEnvironment(env);
  entries.insert(entries.end(), in.launch.extraEnv.begin(), in.launch.extraEnv.end());
  for (const std::string& e : entries) {
    const size_t eq = e.find('=');
    const std::string name = e.substr(0, eq);
    if (name == launch::kEnvJobToken || name == launch::kEnvAdvertiseAddr) continue;  // below
    out.push_back({{"name", name}, {"value", eq == std::string::npos ? "" : e.substr(eq + 1)}});
  }
  out.push_back({{"name", launch::kEnvJobToken},
                 {"valueFrom", {{"secretKeyRef", {{"name", tokenSecretName(in.launch.jobName)}, {"key", kTokenKey}}}}}});
  out.push_back({{"name", launch::kEnvAdvertiseAddr}, {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}});
  return out;
}

// ddp-worker, or the job's own trainer in its image (spec.worker.command).
json workerCommand(const JobSpec& spec) {
  if (spec.worker.command.empty()) return json::array({"ddp-worker"});
  json out = json::array();
  for (const std::string& arg : spec.worker.command) out.push_back(arg);
  return out;
}

json resources(const JobSpec& spec) {
  const ResourcesSpec& r = spec.kubernetes.resources;
  json requests = json::object(), limits = json::object();
  for (const auto& [k, v] : r.requests) requests[k] = v;
  for (const auto& [k, v] : r.limits) limits[k] = v;
  if (spec.device == JobDevice::kCuda && !r.limits.count(kNvidiaGpuResource) && !r.requests.count(kNvidiaGpuResource)) {
    limits[kNvidiaGpuResource] = std::to_string(std::max(1, spec.workers.perPod));  // a GPU per rank
  }
  json out = json::object();
  if (!requests.empty()) out["requests"] = requests;
  if (!limits.empty()) out["limits"] = limits;
  return out;
}

// Note [Worker pod security]: restricted by default; SYS_NICE (as root) only when asked for.
json containerSecurity(bool capSysNice) {
  if (capSysNice) {
    return {{"runAsUser", 0}, {"allowPrivilegeEscalation", false},
            {"capabilities", {{"drop", json::array({"ALL"})}, {"add", json::array({"SYS_NICE"})}}}};
  }
  return {{"runAsUser", kWorkerUid}, {"runAsGroup", kWorkerUid}, {"runAsNonRoot", true},
          {"allowPrivilegeEscalation", false}, {"capabilities", {{"drop", json::array({"ALL"})}}}};
}

}  // namespace

// Note [Job names] (common/jobspec/job_names.h) bounds the job name by these.
std::string workerPodName(const std::string& job, int slot) {
  return job + std::string(kWorkerPodInfix) + std::to_string(slot);
}
std::string tokenSecretName(const std::string& job) { return job + std::string(kWorkerTokenSuffix); }
std::string jobPodsQuery(const std::string& job) { return "?labelSelector=" + std::string(kJobLabel) + "%3D" + job; }
std::string podLogPath(const std::string& podsPath, const std::string& job, int slot) {
  return podsPath + "/" + workerPodName(job, slot) + "/log?container=" + kWorkerContainer;
}

int podCount(int workers, int perPod) {
  perPod = std::max(1, perPod);
  return (workers + perPod - 1) / perPod;
}

std::string shmSizeLimit(const JobSpec& spec) {
  if (!spec.kubernetes.shmSize.empty()) return spec.kubernetes.shmSize;
  return std::to_string(kShmGiPerRank * std::max(1, spec.workers.perPod)) + "Gi";
}

json buildWorkerPod(const WorkerObjectsInput& in, int slot) {
  const KubernetesSpec& k = in.spec.kubernetes;
  const std::string name = workerPodName(in.launch.jobName, slot);
  json container = {{"name", kWorkerContainer},
                    {"image", k.image.empty() ? in.defaultImage : k.image},
                    {"imagePullPolicy", imagePullPolicyName(k.imagePullPolicy)},
                    {"command", workerCommand(in.spec)},
                    {"env", environment(in, slot)},
                    {"resources", resources(in.spec)},
                    {"volumeMounts", json::array({{{"name", "dshm"}, {"mountPath", "/dev/shm"}}})}};
  json volumes =
      json::array({{{"name", "dshm"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", shmSizeLimit(in.spec)}}}}});
  container["securityContext"] = containerSecurity(k.capSysNice);
  if (!k.checkpointVolumeClaim.empty()) {
    container["volumeMounts"].push_back({{"name", "checkpoints"}, {"mountPath", in.spec.checkpoint.dir}});
    volumes.push_back({{"name", "checkpoints"}, {"persistentVolumeClaim", {{"claimName", k.checkpointVolumeClaim}}}});
  }
  json podSpec = {{"restartPolicy", "Never"},
                  {"hostname", name},
                  {"subdomain", in.launch.jobName},
                  {"enableServiceLinks", false},
                  {"securityContext", {{"fsGroup", kWorkerUid}, {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
                  {"containers", json::array({container})},
                  {"volumes", volumes}};
  if (k.hostNetwork) {
    podSpec["hostNetwork"] = true;
    podSpec["dnsPolicy"] = "ClusterFirstWithHostNet";  // the job's Service names still resolve
  }
  if (k.hostIPC) podSpec["hostIPC"] = true;
  if (!k.serviceAccountName.empty()) podSpec["serviceAccountName"] = k.serviceAccountName;
  if (!k.nodeSelector.empty()) podSpec["nodeSelector"] = k.nodeSelector;
  if (!k.tolerations.empty()) {
    json tolerations = json::array();
    for (const TolerationSpec& t : k.tolerations) {
      json j = {{"operator", t.op}};
      if (!t.key.empty()) j["key"] = t.key;
      if (!t.value.empty()) j["value"] = t.value;
      if (!t.effect.empty()) j["effect"] = t.effect;
      if (t.tolerationSeconds) j["tolerationSeconds"] = *t.tolerationSeconds;
      tolerations.push_back(j);
    }
    podSpec["tolerations"] = tolerations;
  }
  json pod = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", metadata(in, name, slot)}, {"spec", podSpec}};
  addPodScheduling(schedulingInput(in), &pod);
  applyPodTemplate(in.spec.kubernetes.podTemplate, kWorkerContainer, pod);  // Note [Pod template]
  return pod;
}

// The job's own scheduler (spec.kubernetes.template.schedulerName) before the controller's.
PodSchedulingInput schedulingInput(const WorkerObjectsInput& in) {
  const std::string& own = in.spec.kubernetes.podTemplate.schedulerName;
  return {in.launch.jobName, in.nameSpace, own.empty() ? in.schedulerName : own,
          podCount(in.launch.workers, in.spec.workers.perPod), &in.spec};
}

json buildHeadlessService(const WorkerObjectsInput& in) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata", metadata(in, in.launch.jobName, std::nullopt)},
          {"spec", {{"clusterIP", "None"}, {"publishNotReadyAddresses", true},
                    {"selector", {{kJobLabel, in.launch.jobName}}}}}};
}

json buildTokenSecret(const WorkerObjectsInput& in) {
  return {{"apiVersion", "v1"},
          {"kind", "Secret"},
          {"metadata", metadata(in, tokenSecretName(in.launch.jobName), std::nullopt)},
          {"type", "Opaque"},
          {"stringData", {{kTokenKey, in.launch.env.jobToken}}}};
}

}  // namespace ddp::controller::kube
