#pragma once
// KubernetesSpec: the `spec.kubernetes` section of a DDPJob, what a Kubernetes launcher needs to
// turn the job into pods (image, per-worker resources, placement, the checkpoint volume, the run
// policy). Parsed and validated with the rest of the document (parseJobSpec, JobSpec::validate);
// the local launcher ignores it. docs/JOB_SPEC.md documents every field; docs/KUBERNETES.md how
// the controller uses them.
//
//   spec:
//     kubernetes:
//       image: registry.example.com/ddp:0.1.0
//       resources: {limits: {nvidia.com/gpu: 1, memory: 16Gi}}
//       nodeSelector: {nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
//       tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
//       checkpointVolumeClaim: ddp-checkpoints
//       runPolicy: {cleanPodPolicy: Running, activeDeadlineSeconds: 86400}
//
// Names follow Kubernetes (PodSpec) and Kubeflow's RunPolicy where they fit. spec.maxRestarts
// stays the one restart budget (no backoffLimit): worker pods run with restartPolicy Never and
// the controller, not the kubelet, decides about restarts.
// Thread model: plain values and pure functions.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/jobspec/pod_template.h"
#include "common/status.h"

namespace ddp {

// The resource a worker on spec.device cuda gets when the document names no GPU resource.
inline constexpr const char* kNvidiaGpuResource = "nvidia.com/gpu";
// /dev/shm of a worker pod without spec.kubernetes.shmSize: this many GiB per rank of the pod.
inline constexpr int kShmGiPerRank = 1;
// Default of spec.kubernetes.runPolicy.schedulingPolicy.scheduleTimeoutSeconds.
inline constexpr int64_t kDefaultScheduleTimeoutSeconds = 300;

// Which pods a finished (or cancelled) job leaves behind (Kubeflow's cleanPodPolicy).
enum class CleanPodPolicy : uint8_t { kRunning = 0, kAll, kNone };
enum class ImagePullPolicy : uint8_t { kIfNotPresent = 0, kAlways, kNever };
// What happens when not every worker pod runs within the schedule timeout.
enum class ScheduleTimeoutAction : uint8_t { kFail = 0, kRetry };

// The Kubernetes spellings ("Running", "IfNotPresent", "Fail", ...).
const char* cleanPodPolicyName(CleanPodPolicy v);
const char* imagePullPolicyName(ImagePullPolicy v);
const char* scheduleTimeoutActionName(ScheduleTimeoutAction v);

// One toleration of the worker pods (core/v1 Toleration).
struct TolerationSpec {
  std::string key;              // empty with operator Exists: tolerate every taint
  std::string op = "Equal";     // YAML: operator; Equal | Exists
  std::string value;            // Equal only
  std::string effect;           // "" (all) | NoSchedule | PreferNoSchedule | NoExecute
  std::optional<int64_t> tolerationSeconds;  // NoExecute only
  bool operator==(const TolerationSpec&) const = default;
};

// Per-worker resources: resource name -> quantity ("4", "500m", "16Gi").
struct ResourcesSpec {
  std::map<std::string, std::string> requests;
  std::map<std::string, std::string> limits;
  bool operator==(const ResourcesSpec&) const = default;
};

// Gang scheduling, as Kubeflow's SchedulingPolicy: every worker pod must run within
// scheduleTimeoutSeconds of its creation (of its admission under Kueue); with a gang scheduler
// (Note [Gang scheduler PodGroups] in controller/launch/kubernetes/scheduling_objects.h) the
// controller creates its PodGroup from minAvailable, queue and priorityClass.
struct SchedulingPolicySpec {
  int64_t scheduleTimeoutSeconds = kDefaultScheduleTimeoutSeconds;
  ScheduleTimeoutAction onScheduleTimeout = ScheduleTimeoutAction::kFail;
  std::optional<int64_t> minAvailable;  // the PodGroup's minMember; absent: spec.workers.min
  std::string queue;                    // the Volcano queue of the PodGroup; empty: the default
  std::string priorityClass;            // the PodGroup's priorityClassName (Volcano); empty: none
  bool operator==(const SchedulingPolicySpec&) const = default;
};

// Kubeflow's RunPolicy, the parts that fit (restarts: spec.maxRestarts).
struct RunPolicySpec {
  CleanPodPolicy cleanPodPolicy = CleanPodPolicy::kRunning;
  std::optional<int64_t> activeDeadlineSeconds;    // absent: no deadline
  std::optional<int64_t> ttlSecondsAfterFinished;  // absent: the DDPJob stays until deleted
  SchedulingPolicySpec schedulingPolicy;
  bool operator==(const RunPolicySpec&) const = default;
};

struct KubernetesSpec {
  std::string image;  // empty: the controller's default worker image (--worker-image)
  ImagePullPolicy imagePullPolicy = ImagePullPolicy::kIfNotPresent;
  ResourcesSpec resources;
  std::map<std::string, std::string> nodeSelector;
  std::vector<TolerationSpec> tolerations;
  std::string serviceAccountName;     // empty: the namespace's default
  std::string checkpointVolumeClaim;  // a PVC mounted at spec.checkpoint.dir in every worker
  bool capSysNice = false;            // add CAP_SYS_NICE, as root (Note [Worker pod security])
  std::string shmSize;                // /dev/shm's sizeLimit; empty: kShmGiPerRank Gi per rank of the pod
  bool hostNetwork = false;           // the pods use the node's network namespace
  bool hostIPC = false;               // the pods use the node's IPC namespace
  std::string podSecurityLevel;       // restricted, baseline, privileged; empty: Note [Pod security level]
  RunPolicySpec runPolicy;
  PodTemplateSpec podTemplate;        // YAML: template (Note [Pod template])
  bool operator==(const KubernetesSpec&) const = default;
};

// A Kubernetes resource quantity ("500m", "16Gi", "1e3", "2") as a number of base units;
// InvalidArgument naming the text when it is not one.
Result<double> parseKubernetesQuantity(std::string_view text);

// Kubernetes name rules: a DNS-1123 subdomain (object names: 1-253 characters of a-z, 0-9,
// '-' and '.', each dot-separated part starting and ending alphanumeric) and a qualified name
// (label keys, resource names: an optional DNS subdomain prefix and '/', then 1-63 characters
// of alphanumerics, '-', '_' and '.', starting and ending alphanumeric).
bool isDnsSubdomain(std::string_view s);
bool isQualifiedName(std::string_view s);

}  // namespace ddp
