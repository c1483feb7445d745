#pragma once
// PodTemplateSpec: spec.kubernetes.template, what a job adds to its worker pods beyond the
// fields of spec.kubernetes (Note [Pod template]). Parsed with the rest of the document; checked
// by validatePodTemplate (pod_template_validate.cc), part of JobSpec::validate(); applied to
// each worker pod by the Kubernetes launcher (controller/launch/kubernetes/pod_template_apply.h).
// Thread model: plain values and pure functions.
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

}  // namespace ddp
