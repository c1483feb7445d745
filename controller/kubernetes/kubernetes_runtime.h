#pragma once
// KubernetesRuntime: what ddp-controller --launcher kubernetes runs, put together: the API client
// (in-cluster configuration), the KubernetesLauncher (handed to the controller as its Launcher),
// leader election on a Lease when a lease name is given (the launcher's readiness follows it)
// and the DDPJob reconciler, which runs only while this replica leads (or always, without
// election). DDPJobs are watched in `watchNamespaces` (default: `nameSpace`), or in every
// namespace; a job's worker objects go to its DDPJob's namespace, a REST API job's to
// `nameSpace` (Note [Served namespaces] in kubernetes_launcher.h).
//
// Note [Fencing on leadership loss]
// The reconciler is not the only writer: the job manager and the launcher keep creating and
// deleting pods for the jobs in this replica's table. So, as client-go controllers do, a replica
// that LOSES the lease (another identity holds it, or it could not renew within the renew
// deadline) does not carry on as a standby: onLostLeadership runs at once (ddp-controller's main
// logs at Error and exits non-zero, so Kubernetes restarts it as a standby) and the reconciler
// stops. stop() releasing the lease at shutdown is not a loss: onLostLeadership is not called.
//
// Note [Standby replicas]
// A replica that does not lead must not act on the jobs in its table either: its job manager
// would see the workers (which heartbeat to the leader) go silent and replace their pods. So
// under leader election the controller starts its job manager (which loads the table, adopts
// the running jobs' pods and starts its ticker) only when this replica starts leading
// (start()'s onLeading); until then the job manager answers every change with Unavailable (503)
// and reads come from the table. A replica restarted after losing the lease (its emptyDir
// table kept) is such a standby until it leads again.
//
// Thread model: create/start/stop from the controller's thread; the parts run their own threads
// (see each); onLostLeadership runs on the leader elector's thread. stop() before the job
// manager stops; the launcher must be destroyed before this.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "controller/kubernetes/ddpjob_reconciler.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "controller/kubernetes/leader_elector.h"

namespace ddp::controller::kube {

struct KubernetesRuntimeOptions {
  KubeConfig kube;
  std::string nameSpace;     // the REST API's jobs (default: the config's namespace)
  std::vector<std::string> watchNamespaces;  // DDPJobs served (empty: {nameSpace})
  bool watchAllNamespaces = false;           // DDPJobs of every namespace
  std::string workerImage;   // default worker image
  std::string schedulerName; // the worker pods' schedulerName ("" : the default scheduler)
  std::string leaseName;     // "" : no leader election (a single replica)
  std::string identity;      // this replica (the pod name)
  std::string podName;       // its pod, labelled while it leads (Note [Leader label]); "": none
  LeaseTiming leaseTiming;   // client-go's defaults (15 s lease, 10 s renew deadline, 2 s retry)
  Launcher::ExitCallback onExit;
  // Leadership was lost, not released (Note [Fencing on leadership loss]); on the elector's
  // thread, before the reconciler stops. Unset: only the reconciler stops (logged at Error).
  std::function<void()> onLostLeadership;
};

class KubernetesRuntime {
 public:
  static Result<std::unique_ptr<KubernetesRuntime>> create(KubernetesRuntimeOptions options);
  ~KubernetesRuntime();

  // The launcher, once: the controller owns it from then on (and destroys it before this).
  std::unique_ptr<Launcher> takeLauncher();
  // Starts election (or the reconciler at once) against the job table. With leader election,
  // `onLeading` runs once when this replica first leads, before the reconciler starts (Note
  // [Standby replicas]); an error from it is logged and the reconciler does not start.
  void start(JobCalls jobs, std::function<std::optional<JobSpec>(const std::string&)> specOf,
             std::function<Status()> onLeading = {});
  bool electsLeader() const { return elector_ != nullptr; }
  // A replica under leader election that does not lead (/readyz answers 200 for it: Note
  // [Leader label] in leader_elector.h). Thread-safe.
  bool standby() const { return elector_ && !elector_->leading(); }
  void stop();

 private:
  KubernetesRuntime() = default;
  void startReconciler();
  void stopReconciler();
  void stoppedLeading();  // on the elector's thread (or stop()'s)

  KubernetesRuntimeOptions options_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<KubernetesLauncher> launcher_;
  JobCalls jobs_;
  std::function<Status()> onLeading_;  // set before the elector starts; run once
  bool led_ = false;                   // onLeading_ ran (the elector's thread only)
  std::atomic<bool> stopping_{false};  // stop() began: losing the lease now is releasing it
  std::mutex mu_;
  std::function<std::optional<JobSpec>(const std::string&)> specOf_;  // guarded by mu_
  std::unique_ptr<DdpJobReconciler> reconciler_;                       // guarded by mu_
};

}  // namespace ddp::controller::kube
