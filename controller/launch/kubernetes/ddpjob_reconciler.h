#pragma once
// DdpJobReconciler: turns DDPJob resources into the controller's jobs and keeps their status, in
// the style of Kubeflow's trainer: a watch (ResourceWatcher) marks DDPJobs to look at; each tick
// reconciles each one: get its job, submit it when it is new (a document the validation refuses
// gets phase Failed and a Valid=False condition naming every error's field path), write the
// status when due (Note [Status writes] in ddpjob_status.h: a merge patch of the status
// subresource), cancel it past spec.kubernetes.runPolicy.activeDeadlineSeconds, delete its pods
// per cleanPodPolicy once it finished (Running: those not yet ended 30 s after; All; None), delete the
// DDPJob ttlSecondsAfterFinished after it finished; a deleted DDPJob removes its job (the
// launcher deletes its pods, Service and Secret). Only the leader runs one (LeaderElector).
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

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/job_spec.h"
#include "controller/launch/kubernetes/ddpjob_status.h"
#include "controller/launch/kubernetes/kube_client.h"
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
};

// spec.workers.count of a DDPJob object (what `kubectl scale ddpj NAME --replicas=N`, the scale
// subresource, sets); nullopt when absent or not an integer.
std::optional<int> desiredWorkerCount(const nlohmann::json& ddpJob);

struct DdpJobReconcilerOptions {
  std::string watchNamespace;  // "" : every namespace
  Duration tick = std::chrono::seconds(1);
  int watchTimeoutSeconds = 300;
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
  struct Tracked {
    std::string ns, uid;
    int64_t generation = 0;
    nlohmann::json object;
    bool deleted = false;
    bool submitted = false;
    int64_t refusedGeneration = -1;  // the generation whose refusal was written
    bool cleaned = false;            // cleanPodPolicy carried out after the job finished
    nlohmann::json written;          // the status last written (null: none)
    int appliedCount = -1;           // the worker count the job has (-1: not looked at yet)
    int refusedCount = -1;           // a count the job refused (not asked again)
    TimePoint writtenAt{};
  };
  void onEvent(const WatchEvent& e);
  void reconcile(const std::string& name, Tracked& t);
  void writeStatus(const std::string& name, Tracked& t, const nlohmann::json& status);
  // Applies a changed spec.workers.count as a scale of the job (Note [Elastic membership]).
  void applyScale(const std::string& name, Tracked& t, const JobRecord& rec);
  // Deletes the finished job's pods that its cleanPodPolicy names; true when done.
  // `sinceCompletionMs`: how long ago the job ended (pods still Running get kPodExitGraceMs to
  // exit on their own under policy Running). True once nothing is left to delete.
  bool cleanPods(const std::string& name, const Tracked& t, const std::string& policy, int64_t sinceCompletionMs);
  std::string jobPath(const Tracked& t, const std::string& name) const;

  KubeClient& client_;
  const DdpJobReconcilerOptions options_;
  const JobCalls jobs_;
  std::unique_ptr<ResourceWatcher> watcher_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Tracked> tracked_;  // by job name; guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::thread ticker_;
};

}  // namespace ddp::controller::kube
