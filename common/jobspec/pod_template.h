#pragma once
// PodTemplateSpec: spec.kubernetes.template, what a job adds to its worker pods beyond the
// fields of spec.kubernetes (Note [Pod template]). Parsed with the rest of the document; checked
// by validatePodTemplate (pod_template_validate.cc), part of JobSpec::validate(); applied to
// each worker pod by the Kubernetes launcher (controller/launch/kubernetes/pod_template_apply.h).
// Thread model: plain values and pure functions.
//
// Note [Pod security level]
// spec.kubernetes.podSecurityLevel names the Pod Security Standards level (restricted,
// baseline, privileged) the worker pods are held to; empty: restricted, or privileged when the
// spec's own opt-ins (capSysNice, hostNetwork, hostIPC) already need a privileged namespace. The
// controller's pods meet restricted (Note [Worker pod security]); since the template's security
// contexts merge over the controller's, a template could otherwise undo that without a word
// (runAsUser 0, privileged, allowPrivilegeEscalation, capabilities.add, an Unconfined seccomp
// profile, a hostPath volume). validatePodSecurityLevel refuses each such setting that the
// level forbids, naming the field, the rule and the level that allows it; a level set
// explicitly also refuses capSysNice, hostNetwork and hostIPC beyond it. So a job that needs
// IPC_LOCK for RDMA says podSecurityLevel: privileged, and the namespace it runs in must admit
// that. The rules are the Pod Security Standards' (policy version latest) for what a template
// can set; tests/kubernetes/pod_security.mjs and the fake API server check the pods themselves.
//
// Note [Pod template]
// A subset of a PodTemplateSpec, spelled as Kubernetes spells it, so that a user copies it from
// a pod they know works on their cluster:
//   labels, annotations          the pod's metadata (Istio, Multus networks, cost labels)
//   env, envFrom, volumeMounts   the worker container's (NCCL_* variables, Secrets, data mounts)
//   containerSecurityContext     the worker container's securityContext (capabilities such as
//                                IPC_LOCK for RDMA), merged over the controller's
//   securityContext, volumes, affinity, topologySpreadConstraints, priorityClassName,
//   schedulerName, imagePullSecrets, nodeSelector, tolerations, serviceAccountName
//                                the pod spec's
// Structured values are carried as they are (Note [Carried Kubernetes objects]). The controller
// owns what makes a pod one of the job's workers, and a template that would change it is
// refused at submission, naming the field: the pod's name and namespace, owner references, the
// containers, ports, hostname and subdomain, restartPolicy, the labels and annotations it
// selects and groups pods by (isControllerOwnedPodKey), the worker's environment contract (every
// name starting DDP_, common/launch/worker_env.h), and its volumes (dshm at /dev/shm, the
// checkpoint claim at spec.checkpoint.dir). nodeSelector, tolerations and serviceAccountName may
// be set in spec.kubernetes or in the template, not both. Security contexts merge: the
// template's keys replace the controller's, lists of strings (capabilities.add / drop,
// supplementalGroups) are joined.

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

struct JobSpec;
struct KubernetesSpec;
struct SpecError;

// The prefix of the worker environment's names (common/launch/worker_env.h), all owned by the
// controller.
inline constexpr std::string_view kControllerEnvPrefix = "DDP_";

// The compact JSON text of a carried Kubernetes object or list; empty: absent.
using KubeObjectJson = std::string;

struct PodTemplateSpec {
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  KubeObjectJson env;                       // [core/v1 EnvVar]
  KubeObjectJson envFrom;                   // [EnvFromSource]
  KubeObjectJson volumeMounts;              // [VolumeMount] of the worker container
  KubeObjectJson containerSecurityContext;  // SecurityContext of the worker container
  KubeObjectJson securityContext;           // PodSecurityContext
  KubeObjectJson volumes;                   // [Volume]
  KubeObjectJson affinity;                  // Affinity
  KubeObjectJson topologySpreadConstraints; // [TopologySpreadConstraint]
  std::string priorityClassName;
  std::string schedulerName;
  KubeObjectJson imagePullSecrets;          // [LocalObjectReference]
  std::map<std::string, std::string> nodeSelector;
  KubeObjectJson tolerations;               // [Toleration]
  std::string serviceAccountName;
  bool operator==(const PodTemplateSpec&) const = default;
};

// A pod label or annotation key the controller sets or selects by: ddp.dev/*, the
// app.kubernetes.io name and managed-by labels, and the pod-group keys of Kueue, the
// scheduler-plugins coscheduling and Volcano.
bool isControllerOwnedPodKey(std::string_view key);

// The checks of spec.kubernetes.template (Note [Pod template]), appended to `errors` with their
// field paths; part of JobSpec::validate().
void validatePodTemplate(const JobSpec& spec, std::vector<SpecError>* errors);

// The level the worker pods are held to (Note [Pod security level]): podSecurityLevel, or its
// default when empty.
std::string effectivePodSecurityLevel(const KubernetesSpec& k);
// What the template's security contexts and volumes, and an explicit level's opt-ins, ask of the
// pods beyond that level (pod_template_security.cc); part of JobSpec::validate().
void validatePodSecurityLevel(const JobSpec& spec, std::vector<SpecError>* errors);

}  // namespace ddp
