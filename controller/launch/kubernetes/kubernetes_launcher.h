#pragma once
// KubernetesLauncher: the Launcher (controller/launch/launcher.h) that runs a job's workers as
// pods (Note [Worker pods] in worker_objects.h). ensureWorkers creates the job's token Secret,
// headless Service and one pod per slot that never had one (an object of this incarnation of the
// job is kept: idempotent; objects of another incarnation are replaced, Note [Job incarnations]);
// with a gang scheduler (KubernetesLauncherOptions::schedulerName) the job's PodGroup first;
// killWorker and replaceWorker delete a worker's pod (replaceWorker then creates a fresh pod in
// the slot once the old one is gone, unless replacements are held); stopJob gives the job's
// running pods `grace` to end by themselves (the controller has told their workers to stop) and
// deletes those still running then, so pods that end on their own stay for their logs
// (cleanPodPolicy decides about them); forgetJob deletes the pods, Service and Secret at once,
// those the job owns only (Note [Object ownership] in object_ownership.h: an object of the
// job's name that is another's fails the launch instead of being taken or deleted);
// logs come from the pod log API (following: pod_log_stream.h). A pod watch (ResourceWatcher on
// the pods labelled ddp.dev/job) reports each worker pod that ended (phase Succeeded or Failed,
// or deleted while running) once through the exit callback, with the container's exit code
// (pid 0: pods have no pid the controller knows); a pod of several ranks (spec.workers.perPod,
// Note [Several ranks per pod] in worker/control/pod_supervisor.h) reports one exit per rank, and
// killWorker and replaceWorker act on a rank's whole pod. ready() is the pod watch having synced
// (a standby is ready too: Note [Leader label] in controller/kubernetes/leader_elector.h). The
// DDPJob reconcile loop, the schedule timeout,
// cleanPodPolicy, deadlines and TTL are the reconciler's (ddpjob_reconciler.h).
//
// Note [Job incarnations]
// A job's objects are named after the job, so objects made for an earlier incarnation of the job
// can still be there when a job of that name is launched: a new leader whose job table (an
// emptyDir per replica) did not hold the job re-submits the running DDPJob as a new job, with a
// new worker token; the old pods still carry the old token and dial the old controller's
// rendezvous. The token tells the incarnations apart: the first ensureWorkers of a job in this
// launcher reads the job's Secret, and when its token is not this launch's, deletes every pod
// labelled ddp.dev/job=<job> (at once, and waits until they are gone, kReplaceTimeout), then
// the Secret, and creates the Secret and fresh pods; the watch's events for the deleted pods are
// not reported as exits of the new job. Same token: everything stays (a relaunch or scale of the
// same job). adoptJob (a restarted controller with its durable job table) reads nothing. The
// fresh workers resume from the last committed checkpoint on the checkpoint volume.
//
// Thread model: thread-safe; the exit callback runs on the pod watch's thread; one more thread
// deletes the pods stopJob gave a grace period (joined by the destructor). ensureWorkers blocks
// for at most kReplaceTimeout plus the API calls' own deadlines.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <condition_variable>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/jobspec/job_spec.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/launch/kubernetes/pod_log_stream.h"
#include "controller/launch/kubernetes/resource_watcher.h"
#include "controller/launch/kubernetes/worker_objects.h"
#include "controller/launch/launcher.h"

namespace ddp::controller::kube {

// How long ensureWorkers waits for the pods of another incarnation to be gone.
// Note [Served namespaces]
// A job's worker objects go to its spec's metadata.namespace (a DDPJob's own namespace: owner
// references cannot cross namespaces, and the job's volume claims, Secrets and quotas are the
// namespace's), or to `nameSpace` when the spec names none (a job from the REST API). The
// launcher serves `nameSpace`, `namespaces` and, with `allNamespaces`, every namespace; a job
// naming another is refused at ensureWorkers, naming the namespaces served. The pod watch is one
// per served namespace, or one cluster-wide; a pod counts for a job only in the job's namespace.

inline constexpr Duration kReplaceTimeout = std::chrono::seconds(30);

struct KubernetesLauncherOptions {
  std::string nameSpace;     // where a job's objects go when its spec names no namespace
  std::vector<std::string> namespaces;  // more namespaces served (Note [Served namespaces])
  bool allNamespaces = false;           // every namespace served (a cluster-wide pod watch)
  std::string defaultImage;  // for jobs without spec.kubernetes.image
  // The spec of a job (the controller's job store); nullopt: unknown job (ensureWorkers fails).
  std::function<std::optional<JobSpec>(const std::string& job)> specOf;
  // The DDPJob that owns a job, for owner references; nullopt for jobs from the REST API.
  std::function<std::optional<JobOwner>(const std::string& job)> ownerOf;
  Launcher::ExitCallback onExit;
  // The worker pods' schedulerName (--gang-scheduler-name); a gang scheduler's gets a PodGroup
  // per job (Note [Gang scheduler PodGroups] in scheduling_objects.h). "" : the default scheduler.
  std::string schedulerName;
  int podWatchTimeoutSeconds = 300;
  Duration replaceTimeout = kReplaceTimeout;  // Note [Job incarnations]
  Duration logPollInterval = kLogPollInterval;  // following a log (pod_log_stream.h)
};

class KubernetesLauncher final : public Launcher {
 public:
  // Starts the pod watch. InvalidArgument without a namespace or specOf.
  static Result<std::unique_ptr<KubernetesLauncher>> create(KubeClient& client, KubernetesLauncherOptions options);
  ~KubernetesLauncher() override;

  std::string name() const override { return "kubernetes"; }
  Status ready() const override;
  int maxWorkersPerJob() const override { return kMaxWorkersPerJob; }
  // Each worker pod's memory limit (spec.kubernetes.resources.limits.memory), when the job sets one.
  // A pod's memory limit shared by its ranks (Note [Memory estimate]).
  std::optional<WorkerMemoryBudget> workerMemory(int workers, int ranksPerPod,
                                                 const std::string& kubernetesLimit) const override;
  Status ensureWorkers(const JobLaunch& job) override;
  // Records the job's launch and takes every slot's pod as existing (a restarted controller's
  // running job: its pods are not listed again; a replacement recreates the slot's pod).
  Status adoptJob(const JobLaunch& job) override;
  Status killWorker(const std::string& job, const std::string& workerId, int signal) override;
  Status replaceWorker(const std::string& job, const std::string& workerId) override;
  void holdReplacements(const std::string& job, bool hold) override;
  Result<std::unique_ptr<LogStream>> openLog(const std::string& job, const std::string& workerId,
                                             LogOptions options) override;
  Status stopJob(const std::string& job, Duration grace) override;
  Status forgetJob(const std::string& job) override;
  std::vector<int64_t> livePids(const std::string& job) const override;

 private:
  struct Slot {
    bool created = false;         // a pod was created for it (by us, or found)
    bool ended = false;           // its current pod ended (reported once)
    bool replacePending = false;  // recreate once the old pod is gone
    // Ranks of the pod whose replacement an ask for a sibling already made (Note [Several ranks
    // per pod]): asking for them again changes nothing.
    std::set<std::string> covered;
  };
  struct Job {
    JobLaunch launch;
    std::optional<JobOwner> owner;  // its DDPJob when launched (forgetJob deletes only what it owns)
    std::map<int, Slot> slots;      // by pod slot (one rank each, or spec.workers.perPod)
    bool holdReplacements = false;
    bool incarnationChecked = false;  // Note [Job incarnations]: this launch's token was checked
    std::string podGroupPath;         // the PodGroup this launcher created ("" : none)
    std::set<std::string> stalePods;  // uids of another incarnation's pods: their events are not exits
    std::string nameSpace;            // where its objects are (Note [Served namespaces])
  };

  KubernetesLauncher(KubeClient& client, KubernetesLauncherOptions options);
  void onPodEvent(const WatchEvent& e);
  void reapLoop();
  Status createPod(const std::string& job, int slot);  // mu_ not held
  // Note [Job incarnations]: replaces the objects of another incarnation of `in`'s job. mu_ not held.
  Status replaceOtherIncarnation(const WorkerObjectsInput& in);
  // Every pod labelled with the job that is the job's or an earlier incarnation's, at once; waits.
  Status deleteJobPods(const std::string& job, const std::optional<JobOwner>& owner);
  // Creates `object` in `collection`; one of that name already there is taken when it is the
  // job's, replaced when an earlier incarnation's (waits until it is gone, replaceTimeout) and
  // FailedPrecondition naming it and its owner when another's (Note [Object ownership]);
  // `knownOwned`: this launch already found it the job's, it is taken unread.
  Status createOwned(const std::string& collection, const nlohmann::json& object, const WorkerObjectsInput& in,
                     bool knownOwned = false);
  // Deletes the object at `path` when it is the job's; NotFound and another's are ok.
  Status removeOwned(const std::string& path, const std::string& job, const std::optional<JobOwner>& owner);
  static Status notTheJobs(const std::string& resource, const nlohmann::json& existing, const std::string& job);
  // Creates the job's PodGroup when its scheduler needs one (an existing one is kept). mu_ not held.
  Status ensurePodGroup(const WorkerObjectsInput& in);
  Status deletePod(const std::string& job, int slot, std::optional<int64_t> graceSeconds);
  std::optional<int> podOf(const std::string& job, const std::string& workerId) const;  // mu_ not held
  // The namespace of a job's objects (Note [Served namespaces]); InvalidArgument when not served.
  Result<std::string> namespaceOf(const JobSpec& spec) const;
  std::string jobNamespace(const std::string& job) const;  // a known job's (else nameSpace); mu_ not held
  static std::string podsPath(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/pods"; }
  static std::string secretsPath(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/secrets"; }
  static std::string servicesPath(const std::string& ns) { return "/api/v1/namespaces/" + ns + "/services"; }
  Result<WorkerObjectsInput> inputFor(const JobLaunch& launch) const;

  KubeClient& client_;
  const KubernetesLauncherOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, Job> jobs_;  // guarded by mu_
  std::map<std::pair<std::string, int>, TimePoint> stopAt_;  // pods to delete then; guarded by mu_
  bool stopping_ = false;                                    // guarded by mu_
  std::condition_variable cv_;
  std::thread reaper_;  // deletes the pods of stopAt_ when due
  std::vector<std::unique_ptr<ResourceWatcher>> pods_;  // one per served namespace, or one for all
};

}  // namespace ddp::controller::kube
