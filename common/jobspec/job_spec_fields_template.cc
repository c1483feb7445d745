// The spec.kubernetes.template entries of the DDPJob field table (Note [Job spec field table],
// Note [Pod template]).
#include "common/jobspec/job_spec_field_builder.h"

namespace ddp {

void appendPodTemplateFields(std::vector<SpecField>* out) {
  using namespace spec_fields;  // NOLINT: the table's vocabulary
  using T = PodTemplateSpec;
  const auto tpl = [](auto m) { return at(&JobSpec::kubernetes, &KubernetesSpec::podTemplate, m); };
  constexpr bool kList = true;
  std::vector<SpecField> f;
  f.push_back(object("spec.kubernetes.template",
                     "Added to every worker pod, as in a Kubernetes PodTemplateSpec; what the controller owns "
                     "(names, the DDP_* environment, its labels and volumes) cannot be overridden.")
                  // Written only when set: the spec of a job without one reads as before.
                  .emitWhen([](const JobSpec& s) { return !(s.kubernetes.podTemplate == PodTemplateSpec{}); }));
  f.push_back(stringMap("spec.kubernetes.template.labels", tpl(&T::labels),
                        "Labels of the worker pods (not ddp.dev/*, app.kubernetes.io/name or managed-by, nor the "
                        "pod-group keys of Kueue, coscheduling and Volcano)."));
  f.push_back(stringMap("spec.kubernetes.template.annotations", tpl(&T::annotations),
                        "Annotations of the worker pods (sidecar.istio.io/inject, k8s.v1.cni.cncf.io/networks)."));
  f.push_back(kubeObject("spec.kubernetes.template.env", tpl(&T::env),
                         "More environment variables of the worker container (core/v1 EnvVar: name, value or "
                         "valueFrom); names starting DDP_ are the controller's.", kList));
  f.push_back(kubeObject("spec.kubernetes.template.envFrom", tpl(&T::envFrom),
                         "ConfigMaps and Secrets whose keys become variables (core/v1 EnvFromSource); the "
                         "controller's DDP_* variables take precedence.", kList));
  f.push_back(kubeObject("spec.kubernetes.template.volumeMounts", tpl(&T::volumeMounts),
                         "Mounts of the template's volumes in the worker container (core/v1 VolumeMount); not at "
                         "/dev/shm or spec.checkpoint.dir.", kList));
  f.push_back(kubeObject("spec.kubernetes.template.containerSecurityContext", tpl(&T::containerSecurityContext),
                         "Merged over the worker container's securityContext (core/v1 SecurityContext; e.g. "
                         "capabilities.add: [IPC_LOCK] for RDMA)."));
  f.push_back(kubeObject("spec.kubernetes.template.securityContext", tpl(&T::securityContext),
                         "Merged over the worker pods' securityContext (core/v1 PodSecurityContext)."));
  f.push_back(kubeObject("spec.kubernetes.template.volumes", tpl(&T::volumes),
                         "More volumes of the worker pods (core/v1 Volume); not named dshm or checkpoints.", kList));
  f.push_back(kubeObject("spec.kubernetes.template.affinity", tpl(&T::affinity),
                         "The worker pods' affinity (core/v1 Affinity: nodeAffinity, podAffinity, podAntiAffinity)."));
  f.push_back(kubeObject("spec.kubernetes.template.topologySpreadConstraints", tpl(&T::topologySpreadConstraints),
                         "How the worker pods spread over zones or nodes (core/v1 TopologySpreadConstraint).", kList));
  f.push_back(string("spec.kubernetes.template.priorityClassName", tpl(&T::priorityClassName),
                     "The worker pods' PriorityClass; empty: the cluster's default."));
  f.push_back(string("spec.kubernetes.template.schedulerName", tpl(&T::schedulerName),
                     "The scheduler that places the worker pods; empty: the default scheduler."));
  f.push_back(kubeObject("spec.kubernetes.template.imagePullSecrets", tpl(&T::imagePullSecrets),
                         "Secrets to pull the worker image with ([{name: ...}]).", kList));
  f.push_back(stringMap("spec.kubernetes.template.nodeSelector", tpl(&T::nodeSelector),
                        "Node labels the worker pods need; not with spec.kubernetes.nodeSelector."));
  f.push_back(kubeObject("spec.kubernetes.template.tolerations", tpl(&T::tolerations),
                         "Tolerations of the worker pods (core/v1 Toleration); not with "
                         "spec.kubernetes.tolerations.", kList));
  f.push_back(string("spec.kubernetes.template.serviceAccountName", tpl(&T::serviceAccountName),
                     "The worker pods' service account; not with spec.kubernetes.serviceAccountName."));
  for (SpecField& x : f) out->push_back(std::move(x));
}

}  // namespace ddp
