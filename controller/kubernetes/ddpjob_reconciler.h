#pragma once
// DdpJobReconciler: turns DDPJob resources into the controller's jobs and keeps their status, in
// the style of Kubeflow's trainer: a watch (ResourceWatcher) marks DDPJobs to look at; each tick
// reconciles each one: get its job, submit it when it is new (a document the validation refuses
// gets phase Failed and a Valid=False condition naming every error's field path; a DDPJob whose
// status says it already finished is left alone: Note [Finished before]), mirror the job's events
// as Kubernetes Events (Note [Mirrored events] in kube_events.h), write the status when due (Note
// [Status writes] in ddpjob_status.h: a merge patch of the status subresource), carry out the run
// policy (Note [Run policy]), and delete the DDPJob ttlSecondsAfterFinished after it finished; a
// deleted DDPJob removes its job (the launcher deletes its pods, Service and Secret). Only the
// leader runs one (LeaderElector).
//
// Note [Run policy]
// spec.kubernetes.runPolicy, as Kubeflow's trainer has it:
//  - activeDeadlineSeconds counts from the job's acceptance (JobRecord::createdMs), so a job
//    stuck Pending expires too; past it: a Warning Event DeadlineExceeded and a cancel. A
//    Suspended job is not cancelled meanwhile (the deadline acts once it is resumed).
//  - schedulingPolicy (Note [Schedule timeout] in gang_schedule.h): the job's pods are listed at
//    most every podListInterval while it has not finished; when the gang timed out, a Warning
//    Event ScheduleTimeout names the waiting pods and why, then onScheduleTimeout Fail fails the
//    job with reason ScheduleTimeout (JobCalls::fail; unset: the job is cancelled and the
//    DDPJob's status says Failed, reason ScheduleTimeout), or Retry deletes and recreates the pods
//    not running (JobCalls::replaceWorkers; unset: they are left to the scheduler and the wait
//    starts over), the new pods with a new timeout.
//  - cleanPodPolicy once the job finished: Running deletes the pods not yet ended 30 s after;
//    All every pod; None none (pods a stopping job's launcher deleted are gone anyway).
//
// Note [Finished before]
// A new leader starts with the job table it finds (an emptyDir: none). A DDPJob whose written
// status is Succeeded, Failed or Cancelled for its current spec (finishedBefore() in
// ddpjob_status.h) and that has no job in the table is not submitted again: it is left as it is,
// and its ttlSecondsAfterFinished counts from status.completionTime (none: it stays).
//
// Note [Managed by]
// spec.managedBy, as Kubernetes' Job (1.30+) and Kubeflow's TrainJob have it: empty or
// kDdpControllerManager ("ddp.dev/ddp-controller") means this controller; any other value (e.g.
// "kueue.x-k8s.io/multikueue", which dispatches the job to a worker cluster) hands the DDPJob to
// that manager, and this controller leaves it entirely alone: no job, no pods, no status writes,
// no Events, no TTL. The field is immutable after creation (the CRD's transition rule
// managed-by-immutable, so that a job is never managed by two controllers in turn). Should it
// change anyway (a CRD installed without the rule, an API server that does not run it), the
// change is refused, not acted on: the manager is the one this controller first saw for the
// DDPJob (Progress::manager), and a change to or from this controller gets a Warning Event
// ManagedByChanged naming spec.managedBy (managedByChangeError), once per generation. So a job
// this controller runs goes on until it ends, and a DDPJob handed over from another manager is
// not started. A controller that starts after the change sees only the new value.

//
// Note [Names across namespaces]
// The controller's job table knows a job by its name alone, so a controller that serves several
// namespaces runs one DDPJob of a name at a time: a DDPJob named like one it already tracks in
// another namespace is not submitted; its status says Failed, reason NameTaken, naming the
// namespace that holds the name (and a Warning Event says so). It is looked at again when its
// spec changes (a new generation) after the other one is gone.
// Thread model: start() starts the watch thread and one tick thread, which does every API write
// and every call into the jobs; stop() joins both. ownerOf() is thread-safe.

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/jobspec/job_spec.h"
#include "controller/kubernetes/ddpjob_status.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/kubernetes/kube_events.h"
#include "controller/launch/kubernetes/resource_watcher.h"
#include "controller/launch/kubernetes/worker_objects.h"
#include "controller/store/job_record.h"

namespace ddp::controller::kube {

// The controller's job table, as the reconciler uses it (JobManager's methods of these names).
struct JobCalls {
  std::function<Result<JobRecord>(const JobSpec&)> submit;
  std::function<Result<JobRecord>(const std::string&)> get;
  std::function<Result<JobRecord>(const std::string&)> cancel;
  std::function<Status(const std::string&, Deadline)> remove;
  // Sets the job's worker count (Note [Elastic membership]); unset: scaling is not applied.
  std::function<Result<JobRecord>(const std::string&, int)> scale;
  // The job's events, oldest first (Note [Mirrored events]); unset: none are mirrored.
  std::function<Result<std::vector<JobEvent>>(const std::string&)> events;
  // Fails the job with this condition reason and message, stopping its workers (Note [Run
  // policy]); unset: the reconciler cancels it and writes the failure into the DDPJob's status.
  std::function<Result<JobRecord>(const std::string& job, const std::string& reason, const std::string& message)> fail;
  // Deletes these workers' pods and creates them again without failing the job (a schedule
  // timeout's Retry, Note [Run policy]); unset: Retry leaves the pods to the scheduler.
  std::function<Status(const std::string& job, const std::vector<std::string>& workerIds)> replaceWorkers;
  // spec.suspend (Note [Suspended jobs] in controller/jobs/lifecycle/suspension.h); unset: not
  // applied.
  std::function<Result<JobRecord>(const std::string&)> suspend;
  std::function<Result<JobRecord>(const std::string&)> resume;
};

// The DDPJob's spec.suspend (false when absent or not a boolean).
bool suspendWanted(const nlohmann::json& ddpJob);
// Whether the DDPJob names another manager in spec.managedBy (Note [Managed by]).
bool managedElsewhere(const nlohmann::json& ddpJob);
// The DDPJob's spec.managedBy ("" when absent or not a string).
std::string managedByOf(const nlohmann::json& ddpJob);

// spec.workers.count of a DDPJob object (what `kubectl scale ddpj NAME --replicas=N`, the scale
// subresource, sets); nullopt when absent or not an integer.
std::optional<int> desiredWorkerCount(const nlohmann::json& ddpJob);

struct DdpJobReconcilerOptions {
  std::vector<std::string> watchNamespaces;  // one watch each; empty: every namespace (one watch)
  Duration tick = std::chrono::seconds(1);
  int watchTimeoutSeconds = 300;
  // A non-finished job's pods are listed for the schedule timeout at most this often (every
  // tenth time as often once all of them ran).
  Duration podListInterval = std::chrono::seconds(3);
  // A job's events are looked at this often (and at each phase change) to mirror them.
  Duration eventPollInterval = std::chrono::seconds(2);
  // How long the removal of a deleted DDPJob's job (its workers stopped, its record and logs
  // gone) may take before it is given up with a warning.
  Duration removeDeadline = std::chrono::seconds(30);
  std::string instance = kEventComponent;  // the Events' reportingInstance (the replica)
};

class DdpJobReconciler {
 public:
  DdpJobReconciler(KubeClient& client, DdpJobReconcilerOptions options, JobCalls jobs);
  ~DdpJobReconciler();

  void start();
  void stop();
  // The DDPJob behind a job (owner references of its pods); nullopt when there is none.
  std::optional<JobOwner> ownerOf(const std::string& job) const;
  // One pass over every known DDPJob (the tick thread's work; tests may call it directly).
  void reconcileAll();

 private:
  // What reconcile() learns about a DDPJob (kept across ticks; the watch never changes it).
  struct Progress {
    bool submitted = false;
    int64_t refusedGeneration = -1;  // the generation whose refusal was written
    bool cleaned = false;            // cleanPodPolicy carried out after the job finished
    nlohmann::json written;          // the status last written (null: none)
    TimePoint writtenAt{};
    int appliedCount = -1;           // the worker count the job has (-1: not looked at yet)
    int refusedCount = -1;           // a count the job refused (not asked again)
    EventMark eventMark;             // Note [Mirrored events]
    TimePoint eventsPolledAt{};
    std::optional<JobPhase> eventsPhase;  // the phase at the last look at the events
    bool eventsDone = false;              // the finished job's last events were mirrored
    bool deadlinePassed = false;          // activeDeadlineSeconds acted on
    TimePoint podsNextList{};  // when to list the job's pods again
    std::map<std::string, int64_t> podSeen;  // pod uid -> when first listed (unix ms)
    struct Failure {
      std::string reason, message;
      int64_t atMs = 0;
    };
    std::optional<Failure> failure;  // failed by the reconciler through a cancel (JobCalls::fail unset)
    std::optional<std::string> manager;     // spec.managedBy as first seen (Note [Managed by])
    int64_t managerChangeReported = -1;     // the generation whose ManagedByChanged was posted
  };
  struct Tracked {
    std::string ns, uid;
    int64_t generation = 0;
    nlohmann::json object;
    bool deleted = false;
    Progress p;
  };
  // A DDPJob whose name another namespace's DDPJob holds (Note [Names across namespaces]).
  struct Clash {
    std::string uid, heldBy;  // heldBy: the namespace that holds the name
    int64_t generation = 0;
    int64_t reportedGeneration = -1;
  };
  void onEvent(const WatchEvent& e);
  // Writes NameTaken into each clash's status once per generation (the tick thread).
  void reportClashes();
  void reconcile(const std::string& name, Tracked& t);
  // Whether another manager has the DDPJob, by the spec.managedBy first seen; reports a change
  // (Note [Managed by]).
  bool leftToAnotherManager(const std::string& name, Tracked& t);
  void writeStatus(const std::string& name, Tracked& t, const nlohmann::json& status);
  // Applies the DDPJob's spec.suspend to the job (Note [Suspended jobs]).
  void applySuspend(const std::string& name, const Tracked& t, const JobRecord& rec);
  // Applies a changed spec.workers.count as a scale of the job (Note [Elastic membership]).
  void applyScale(const std::string& name, Tracked& t, const JobRecord& rec);
  // Deletes the finished job's pods that its cleanPodPolicy names; true when done.
  // `sinceCompletionMs`: how long ago the job ended (pods still Running get kPodExitGraceMs to
  // exit on their own under policy Running). True once nothing is left to delete.
  bool cleanPods(const std::string& name, const Tracked& t, const std::string& policy, int64_t sinceCompletionMs);
  // Posts the job's events not mirrored yet (Note [Mirrored events]).
  void mirrorEvents(const std::string& name, Tracked& t, const JobRecord& rec);
  // Note [Run policy]: activeDeadlineSeconds and the schedule timeout.
  void enforceDeadline(const std::string& name, Tracked& t, const JobRecord& rec, const nlohmann::json& policy);
  void enforceSchedule(const std::string& name, Tracked& t, const JobRecord& rec, const nlohmann::json& policy);
  // Fails the job (JobCalls::fail, or a cancel and the failure in the DDPJob's status).
  void failJob(const std::string& name, Tracked& t, const std::string& reason, const std::string& message);
  // A DDPJob left alone (Note [Finished before]): only its TTL applies.
  void reconcileFinishedBefore(const std::string& name, const Tracked& t);
  void deleteAfterTtl(const std::string& name, const Tracked& t, const nlohmann::json& policy, int64_t completionMs);
  EventSubject subject(const std::string& name, const Tracked& t) const { return {t.ns, name, t.uid}; }
  std::string jobPath(const Tracked& t, const std::string& name) const;
  static std::string podsPath(const Tracked& t) { return "/api/v1/namespaces/" + t.ns + "/pods"; }

  KubeClient& client_;
  const DdpJobReconcilerOptions options_;
  const JobCalls jobs_;
  KubeEventRecorder recorder_;
  std::vector<std::unique_ptr<ResourceWatcher>> watchers_;  // one per namespace, or one for all
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Tracked> tracked_;  // by job name; guarded by mu_
  std::map<std::string, Clash> clashes_;    // by "namespace/name"; guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::thread ticker_;
};

}  // namespace ddp::controller::kube
