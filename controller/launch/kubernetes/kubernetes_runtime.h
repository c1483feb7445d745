#pragma once
// KubernetesRuntime: what ddp-controller --launcher kubernetes runs, put together: the API client
// (in-cluster configuration), the KubernetesLauncher (handed to the controller as its Launcher),
// leader election on a Lease when a lease name is given (the launcher's readiness follows it)
// and the DDPJob reconciler, which runs only while this replica leads (or always, without
// election). One namespace: DDPJobs are watched, and worker objects created, in `nameSpace`.
// Thread model: create/start/stop from the controller's thread; the parts run their own threads
// (see each). stop() before the job manager stops; the launcher must be destroyed before this.

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "controller/launch/kubernetes/ddpjob_reconciler.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/launch/kubernetes/kubernetes_launcher.h"
#include "controller/launch/kubernetes/leader_elector.h"

namespace ddp::controller::kube {

struct KubernetesRuntimeOptions {
  KubeConfig kube;
  std::string nameSpace;     // DDPJobs and worker objects (default: the config's namespace)
  std::string workerImage;   // default worker image
  std::string leaseName;     // "" : no leader election (a single replica)
  std::string identity;      // this replica (the pod name)
  Launcher::ExitCallback onExit;
};

class KubernetesRuntime {
 public:
  static Result<std::unique_ptr<KubernetesRuntime>> create(KubernetesRuntimeOptions options);
  ~KubernetesRuntime();

  // The launcher, once: the controller owns it from then on (and destroys it before this).
  std::unique_ptr<Launcher> takeLauncher();
  // Starts election (or the reconciler at once) against the job table.
  void start(JobCalls jobs, std::function<std::optional<JobSpec>(const std::string&)> specOf);
  void stop();

 private:
  KubernetesRuntime() = default;
  void startReconciler();
  void stopReconciler();

  KubernetesRuntimeOptions options_;
  std::unique_ptr<KubeClient> client_;
  std::unique_ptr<LeaderElector> elector_;
  std::unique_ptr<KubernetesLauncher> launcher_;
  JobCalls jobs_;
  std::mutex mu_;
  std::function<std::optional<JobSpec>(const std::string&)> specOf_;  // guarded by mu_
  std::unique_ptr<DdpJobReconciler> reconciler_;                       // guarded by mu_
};

}  // namespace ddp::controller::kube
