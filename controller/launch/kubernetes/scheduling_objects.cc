#include "controller/launch/kubernetes/scheduling_objects.h"

#include <algorithm>

namespace ddp::controller::kube {

using nlohmann::json;

GangScheduler gangSchedulerFor(std::string_view schedulerName) {
  if (schedulerName == kCoschedulingSchedulerName) return GangScheduler::kCoscheduling;
  if (schedulerName == kVolcanoSchedulerName) return GangScheduler::kVolcano;
  return GangScheduler::kNone;
}

int64_t gangMinMember(const JobSpec& spec) {
  const auto& minAvailable = spec.kubernetes.runPolicy.schedulingPolicy.minAvailable;
  // Pods, not ranks: a pod of spec.workers.perPod ranks is one member (Note [Several ranks per pod]).
  return minAvailable ? *minAvailable : spec.workers.min / std::max(1, spec.workers.perPod);
}

void addPodScheduling(const PodSchedulingInput& in, json* pod) {
  json& meta = (*pod)["metadata"];
  if (!in.schedulerName.empty()) (*pod)["spec"]["schedulerName"] = in.schedulerName;
  auto queue = in.spec->labels.find(kKueueQueueLabel);
  if (queue != in.spec->labels.end()) {
    meta["labels"][kKueueQueueLabel] = queue->second;
    meta["labels"][kKueuePodGroupLabel] = in.job;
    meta["annotations"][kKueuePodGroupTotalCount] = std::to_string(in.pods);
  }
  switch (gangSchedulerFor(in.schedulerName)) {
    case GangScheduler::kCoscheduling: meta["labels"][kCoschedulingPodGroupLabel] = in.job; break;
    case GangScheduler::kVolcano: meta["annotations"][kVolcanoGroupAnnotation] = in.job; break;
    case GangScheduler::kNone: break;
  }
}

std::string podGroupCollection(GangScheduler scheduler, const std::string& nameSpace) {
  const char* groupVersion = scheduler == GangScheduler::kVolcano ? "scheduling.volcano.sh/v1beta1"
                                                                  : "scheduling.x-k8s.io/v1alpha1";
  return "/apis/" + std::string(groupVersion) + "/namespaces/" + nameSpace + "/podgroups";
}

std::optional<json> buildPodGroup(const PodSchedulingInput& in, const json& jobMetadata) {
  const GangScheduler scheduler = gangSchedulerFor(in.schedulerName);
  if (scheduler == GangScheduler::kNone) return std::nullopt;
  const SchedulingPolicySpec& sp = in.spec->kubernetes.runPolicy.schedulingPolicy;
  json meta = {{"name", in.job}, {"namespace", in.nameSpace}};
  if (jobMetadata.contains("labels")) meta["labels"] = jobMetadata["labels"];
  if (jobMetadata.contains("ownerReferences")) meta["ownerReferences"] = jobMetadata["ownerReferences"];
  json spec = {{"minMember", gangMinMember(*in.spec)}};
  if (scheduler == GangScheduler::kCoscheduling) {
    spec["scheduleTimeoutSeconds"] = sp.scheduleTimeoutSeconds;
    return json{{"apiVersion", "scheduling.x-k8s.io/v1alpha1"}, {"kind", "PodGroup"}, {"metadata", meta}, {"spec", spec}};
  }
  if (!sp.queue.empty()) spec["queue"] = sp.queue;
  if (!sp.priorityClass.empty()) spec["priorityClassName"] = sp.priorityClass;
  return json{{"apiVersion", "scheduling.volcano.sh/v1beta1"}, {"kind", "PodGroup"}, {"metadata", meta}, {"spec", spec}};
}

}  // namespace ddp::controller::kube
