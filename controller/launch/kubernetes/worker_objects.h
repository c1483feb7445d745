#pragma once
// The Kubernetes objects of one job, as pure functions of the job (Note [Worker pods]): its
// worker pods, the headless Service that gives them DNS names, and the Secret with the job's
// worker token. The Kubernetes launcher creates them; tests check them field by field.
//
// Note [Worker pods]
// One pod per slot, "<job>-worker-<slot>", restartPolicy Never: the controller decides about
// restarts (spec.maxRestarts), never the kubelet. The container runs ddp-worker with the
// environment every launcher gives a worker (common/launch/worker_env.h), except that the job
// token comes from the job's Secret (secretKeyRef, not in the pod spec) and the advertise address
// is the pod IP (downward API), so Gloo and NCCL reach the worker across nodes. From
// spec.kubernetes: image (or the controller's default), pull policy, resources (with device cuda
// and no GPU named, nvidia.com/gpu: 1), nodeSelector, tolerations, service account, the
// security context of Note [Worker pod security], and the checkpoint claim mounted at
// spec.checkpoint.dir. Every pod gets a memory-backed /dev/shm (NCCL's shared memory
// between processes; a container's default 64 MiB is too small). Labels: ddp.dev/job and
// ddp.dev/slot select a job's pods and one slot; owner references to the DDPJob (when it has a
// uid) let Kubernetes delete them with it. What the schedulers read (schedulerName, Kueue's labels,
// a gang scheduler's PodGroup label): scheduling_objects.h; the job's
// spec.kubernetes.template.schedulerName, when set, is the pods' scheduler instead of the
// controller's. Last, the job's spec.kubernetes.template adds its labels, environment, volumes
// and placement (Note [Pod template], pod_template_apply.h); its securityContext is merged over
// the one of Note [Worker pod security].
// With spec.workers.perPod N > 1 (Note [Several ranks per pod] in worker/control/pod_supervisor.h)
// slot p is a pod of N ranks: its container gets DDP_POD_WORKER_IDS (workerIdsOfPod) instead of
// DDP_WORKER_ID, nvidia.com/gpu: N with device cuda, and a /dev/shm of N GiB unless
// spec.kubernetes.shmSize says otherwise (the sizeLimit of the memory-backed emptyDir, which
// counts against the pod's memory limit). spec.kubernetes.hostNetwork (with dnsPolicy
// ClusterFirstWithHostNet, so the job's Service names still resolve) and hostIPC are passed on.
//
// Note [Worker pod security]
// By default a worker pod meets the Pod Security Standards' restricted level, so it runs in a
// namespace labelled pod-security.kubernetes.io/enforce: restricted: the image's user (uid and
// gid kWorkerUid, runAsNonRoot), allowPrivilegeEscalation false, every capability dropped,
// seccompProfile RuntimeDefault (pod level); fsGroup kWorkerUid lets it write the checkpoint
// claim. spec.kubernetes.capSysNice (off by default) adds CAP_SYS_NICE for the communication
// threads' real-time priority (Note [Comm thread priority]). Kubernetes gives a non-root
// process no effective capability from `capabilities.add` (a pod spec has no ambient
// capabilities), so such a worker runs as root in its container (runAsUser 0); root and
// SYS_NICE are forbidden by the baseline level too, so it needs a privileged namespace
// (docs/KUBERNETES.md, "GPU notes", with the measured effect). tests/kubernetes/pod_security.mjs
// checks the pods against the restricted rules; the fake API server enforces a namespace's level.
// The hostNetwork and hostIPC opt-ins are forbidden by baseline too.
// Thread model: pure functions.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec.h"
#include "controller/launch/kubernetes/scheduling_objects.h"
#include "controller/launch/launcher.h"

namespace ddp::controller::kube {

inline constexpr const char* kJobLabel = "ddp.dev/job";
inline constexpr const char* kSlotLabel = "ddp.dev/slot";
// The label selector of a job's worker pods (the labels metadata() gives them).
inline std::string workerPodSelector(const std::string& job) {
  return "app.kubernetes.io/name=ddp-worker," + std::string(kJobLabel) + "=" + job;
}
inline constexpr const char* kWorkerContainer = "worker";
inline constexpr const char* kTokenKey = "token";
inline constexpr int64_t kWorkerUid = 10001;  // the image's ddp user (Dockerfile)

// The DDPJob that owns a job's objects (absent for a job submitted through the REST API).
struct JobOwner {
  std::string name;
  std::string uid;
};

struct WorkerObjectsInput {
  std::string nameSpace;
  std::string defaultImage;  // when spec.kubernetes.image is empty
  JobLaunch launch;          // job name, worker count, the worker environment
  JobSpec spec;
  std::optional<JobOwner> owner;
  // The pods' schedulerName ("" : the default scheduler); a gang scheduler's gets its PodGroup
  // (Note [Gang scheduler PodGroups] in scheduling_objects.h).
  std::string schedulerName;
};

std::string workerPodName(const std::string& job, int slot);  // "<job>-worker-<slot>"
std::string tokenSecretName(const std::string& job);          // "<job>-worker-token"
// The query that lists a job's worker pods: "?labelSelector=ddp.dev/job%3D<job>".
std::string jobPodsQuery(const std::string& job);
// A worker pod's log: "<podsPath>/<job>-worker-<slot>/log?container=worker" (more "&..." may follow).
std::string podLogPath(const std::string& podsPath, const std::string& job, int slot);

// The pod of slot `slot` (a pod slot: ranks slot*perPod .. slot*perPod+perPod-1).
nlohmann::json buildWorkerPod(const WorkerObjectsInput& in, int slot);
// How many pods a launch of `workers` ranks runs: workers / perPod, rounded up.
int podCount(int workers, int perPod);
// spec.kubernetes.shmSize, or kShmGiPerRank Gi per rank of the pod.
std::string shmSizeLimit(const JobSpec& spec);
nlohmann::json buildHeadlessService(const WorkerObjectsInput& in);
nlohmann::json buildTokenSecret(const WorkerObjectsInput& in);
// What scheduling_objects.h needs of the job (it points into `in`: keep `in` alive).
PodSchedulingInput schedulingInput(const WorkerObjectsInput& in);

}  // namespace ddp::controller::kube
