#pragma once
// What a job's pods carry for the schedulers that place them as a group, and the PodGroup a gang
// scheduler needs (Notes [Kueue pod groups] and [Gang scheduler PodGroups]). Pure: the launcher
// adds them to the pods of worker_objects.h and creates the PodGroup; tests check them field by
// field.
//
// Note [Kueue pod groups]
// A DDPJob labelled kueue.x-k8s.io/queue-name (metadata.labels, also through the REST API) is
// queued by Kueue through its plain pod group integration: every worker pod carries that label,
// kueue.x-k8s.io/pod-group-name (the job's name: the pods of one job are one Kueue workload) and
// the annotation kueue.x-k8s.io/pod-group-total-count (the job's pod count). Kueue's webhook
// gives each such pod the scheduling gate kueue.x-k8s.io/admission, and removes it from the
// group's pods once the workload is admitted (quota is there for all of them). A gated pod is
// Pending; the schedule timeout (Note [Schedule timeout] in controller/kubernetes/gang_schedule.h)
// waits for admission without counting (it starts when the gate is gone), so a job queued
// behind others is not failed for waiting its turn. The group's count is fixed when its pods are
// made: scaling a Kueue-queued job makes pods with a new count, which Kueue treats as another
// group; queue such jobs without elastic scaling.
//
// Note [Gang scheduler PodGroups]
// With a gang scheduler named by the pods' schedulerName (the controller's
// --gang-scheduler-name, as Kubeflow's training operator has it), the launcher creates one
// PodGroup per job, "<job>", owned by the DDPJob (deleted with it), before the pods, and marks
// each pod for it:
//  - scheduler-plugins' coscheduling (schedulerName scheduler-plugins-scheduler):
//    scheduling.x-k8s.io/v1alpha1 PodGroup {minMember, scheduleTimeoutSeconds}, pods labelled
//    scheduling.x-k8s.io/pod-group: <job>;
//  - Volcano (schedulerName volcano): scheduling.volcano.sh/v1beta1 PodGroup {minMember, queue,
//    priorityClassName}, pods annotated scheduling.k8s.io/group-name: <job>.
// minMember is schedulingPolicy.minAvailable, or else spec.workers.min / spec.workers.perPod: the
// fewest pods the job trains with (an elastic job may start with fewer than its count). Another scheduler name
// (the default scheduler among them) gets no PodGroup; the controller's own schedule timeout
// applies in every case.
// Thread model: pure functions.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/jobspec/job_spec.h"

namespace ddp::controller::kube {

inline constexpr const char* kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kKueuePodGroupLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr const char* kKueuePodGroupTotalCount = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr const char* kKueueAdmissionGate = "kueue.x-k8s.io/admission";
inline constexpr const char* kCoschedulingSchedulerName = "scheduler-plugins-scheduler";
inline constexpr const char* kCoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group";
inline constexpr const char* kVolcanoSchedulerName = "volcano";
inline constexpr const char* kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";

enum class GangScheduler { kNone, kCoscheduling, kVolcano };

// The gang scheduler a pod's schedulerName names (kNone: the default scheduler or another).
GangScheduler gangSchedulerFor(std::string_view schedulerName);
// The PodGroup's minMember: schedulingPolicy.minAvailable, or else spec.workers.min.
int64_t gangMinMember(const JobSpec& spec);

struct PodSchedulingInput {
  std::string job;            // the job's name (the PodGroup's and Kueue group's name)
  std::string nameSpace;
  std::string schedulerName;  // the pods' schedulerName ("" : the default scheduler)
  int pods = 0;               // the job's pod count now
  const JobSpec* spec = nullptr;
};

// Adds to a worker pod what the schedulers need: schedulerName, the Kueue labels and
// annotation, the PodGroup label or annotation (Notes above).
void addPodScheduling(const PodSchedulingInput& in, nlohmann::json* pod);
// The job's PodGroup for its gang scheduler, with the labels and owner references of
// `jobMetadata` (the metadata of the job's other objects: its headless Service's); nullopt when
// the scheduler needs none.
std::optional<nlohmann::json> buildPodGroup(const PodSchedulingInput& in, const nlohmann::json& jobMetadata);
// The collection a PodGroup of `scheduler` is created in: "/apis/<group>/<version>/namespaces/<ns>/podgroups".
std::string podGroupCollection(GangScheduler scheduler, const std::string& nameSpace);

}  // namespace ddp::controller::kube
