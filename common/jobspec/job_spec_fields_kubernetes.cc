// The spec.kubernetes entries of the DDPJob field table (Note [Job spec field table]).
#include "common/jobspec/job_spec_field_builder.h"
#include "common/jobspec/job_spec_parser.h"

namespace ddp {

void appendKubernetesFields(std::vector<SpecField>* out) {
  using namespace spec_fields;  // NOLINT: the table's vocabulary
  using K = KubernetesSpec;
  using R = RunPolicySpec;
  using S = SchedulingPolicySpec;
  const auto kube = [](auto... m) { return at(&JobSpec::kubernetes, m...); };
  const auto run = [](auto... m) { return at(&JobSpec::kubernetes, &K::runPolicy, m...); };
  std::vector<SpecField> f;
  f.push_back(object("spec.kubernetes", "How the workers run as pods; ignored by the local launcher."));
  f.push_back(string("spec.kubernetes.image", kube(&K::image), "Worker image; empty: the controller's default."));
  f.push_back(enumeration("spec.kubernetes.imagePullPolicy", kube(&K::imagePullPolicy), kImagePullPolicyNames,
                          "The worker containers' imagePullPolicy."));
  f.push_back(object("spec.kubernetes.resources", "Per-pod requests and limits (a pod runs spec.workers.perPod ranks); nvidia.com/gpu is perPod with device cuda."));
  f.push_back(stringMap("spec.kubernetes.resources.requests", kube(&K::resources, &ResourcesSpec::requests),
                        "Resource name to quantity (cpu: 4, memory: 16Gi).", SpecFieldType::kQuantityMap));
  f.push_back(stringMap("spec.kubernetes.resources.limits", kube(&K::resources, &ResourcesSpec::limits),
                        "Resource name to quantity (nvidia.com/gpu: 1).", SpecFieldType::kQuantityMap));
  f.push_back(stringMap("spec.kubernetes.nodeSelector", kube(&K::nodeSelector), "Node labels the worker pods need."));
  f.push_back(Field("spec.kubernetes.tolerations", SpecFieldType::kObjectList, "Tolerations of the worker pods.")
                  .list(job_spec_detail::parseTolerations, job_spec_detail::emitTolerations));
  f.push_back(item("spec.kubernetes.tolerations[].key", SpecFieldType::kString, "The taint key; empty with Exists: every taint."));
  f.push_back(item("spec.kubernetes.tolerations[].operator", SpecFieldType::kString, "Equal or Exists.")
                  .oneOf({"Equal", "Exists"}));
  f.push_back(item("spec.kubernetes.tolerations[].value", SpecFieldType::kString, "The taint value (Equal only)."));
  f.push_back(item("spec.kubernetes.tolerations[].effect", SpecFieldType::kString, "The effect tolerated; empty: all.")
                  .oneOf({"", "NoSchedule", "PreferNoSchedule", "NoExecute"}));
  f.push_back(item("spec.kubernetes.tolerations[].tolerationSeconds", SpecFieldType::kInteger,
                   "NoExecute: how long the pod stays bound after the taint appears.")
                  .atLeast(0));
  f.push_back(string("spec.kubernetes.serviceAccountName", kube(&K::serviceAccountName),
                     "The worker pods' service account; empty: the namespace's default."));
  f.push_back(string("spec.kubernetes.checkpointVolumeClaim", kube(&K::checkpointVolumeClaim),
                     "A PVC mounted at spec.checkpoint.dir in every worker."));
  f.push_back(boolean("spec.kubernetes.capSysNice", kube(&K::capSysNice),
                      "Add CAP_SYS_NICE (as root) for the communication threads' real-time priority; "
                      "needs a privileged namespace (baseline and restricted forbid it)."));
  f.push_back(string("spec.kubernetes.shmSize", kube(&K::shmSize),
                     "sizeLimit of the pod's memory-backed /dev/shm (NCCL's shared memory; counts against the "
                     "pod's memory); empty: 1Gi per rank of the pod."));
  f.push_back(boolean("spec.kubernetes.hostNetwork", kube(&K::hostNetwork),
                      "Run the worker pods in the node's network namespace (NICs a pod network does not give)."));
  f.push_back(boolean("spec.kubernetes.hostIPC", kube(&K::hostIPC),
                      "Run the worker pods in the node's IPC namespace."));
  f.push_back(string("spec.kubernetes.podSecurityLevel", kube(&K::podSecurityLevel),
                     "The Pod Security level the worker pods are held to: template security contexts and volumes "
                     "beyond it are refused; empty: restricted, or privileged with capSysNice, hostNetwork or "
                     "hostIPC.")
                  .oneOf({"", "restricted", "baseline", "privileged"}));
  f.push_back(object("spec.kubernetes.runPolicy", "Kubeflow's RunPolicy, the parts that fit (restarts: spec.maxRestarts)."));
  f.push_back(enumeration("spec.kubernetes.runPolicy.cleanPodPolicy", run(&R::cleanPodPolicy), kCleanPodPolicyNames,
                          "Which pods a finished job leaves: Running (delete those still running), All or None."));
  f.push_back(optionalInteger("spec.kubernetes.runPolicy.activeDeadlineSeconds", run(&R::activeDeadlineSeconds),
                              "Fail the job after this many seconds; absent: no deadline.")
                  .atLeast(1));
  f.push_back(optionalInteger("spec.kubernetes.runPolicy.ttlSecondsAfterFinished", run(&R::ttlSecondsAfterFinished),
                              "Delete the DDPJob this long after it finished; absent: keep it.")
                  .atLeast(0));
  f.push_back(object("spec.kubernetes.runPolicy.schedulingPolicy", "Gang scheduling of the worker pods."));
  f.push_back(integer("spec.kubernetes.runPolicy.schedulingPolicy.scheduleTimeoutSeconds",
                      run(&R::schedulingPolicy, &S::scheduleTimeoutSeconds),
                      "Every worker pod must run within this many seconds of its creation.")
                  .atLeast(1).atMost(kMaxTimeoutSeconds, "7 days"));
  f.push_back(enumeration("spec.kubernetes.runPolicy.schedulingPolicy.onScheduleTimeout",
                          run(&R::schedulingPolicy, &S::onScheduleTimeout), kScheduleTimeoutActionNames,
                          "Fail the job, or Retry (delete the pods and create them again)."));
  f.push_back(optionalInteger("spec.kubernetes.runPolicy.schedulingPolicy.minAvailable",
                              run(&R::schedulingPolicy, &S::minAvailable),
                              "Pods a gang scheduler places together (its PodGroup's minMember); absent: "
                              "spec.workers.min / spec.workers.perPod.")
                  .atLeast(1).atMost(kMaxWorkersPerJob));
  f.push_back(string("spec.kubernetes.runPolicy.schedulingPolicy.queue", run(&R::schedulingPolicy, &S::queue),
                     "The Volcano queue of the job's PodGroup; empty: Volcano's default. (Kueue: the "
                     "kueue.x-k8s.io/queue-name label.)"));
  f.push_back(string("spec.kubernetes.runPolicy.schedulingPolicy.priorityClass",
                     run(&R::schedulingPolicy, &S::priorityClass),
                     "The PriorityClass of the job's Volcano PodGroup; empty: none."));
  for (SpecField& x : f) out->push_back(std::move(x));
}

}  // namespace ddp
