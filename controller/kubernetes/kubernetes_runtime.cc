#include "controller/kubernetes/kubernetes_runtime.h"

#include "common/log.h"

namespace ddp::controller::kube {

Result<std::unique_ptr<KubernetesRuntime>> KubernetesRuntime::create(KubernetesRuntimeOptions options) {
  std::unique_ptr<KubernetesRuntime> r(new KubernetesRuntime());
  if (options.nameSpace.empty()) options.nameSpace = options.kube.nameSpace;
  if (options.nameSpace.empty()) return invalidArgument("kubernetes: no namespace (--watch-namespace)");
  if (options.watchNamespaces.empty()) options.watchNamespaces = {options.nameSpace};
  r->options_ = options;
  DDP_ASSIGN_OR_RETURN(r->client_, KubeClient::create(options.kube));
  KubernetesRuntime* self = r.get();
  if (!options.leaseName.empty()) {
    LeaderElectorOptions eo;
    eo.nameSpace = options.kube.nameSpace.empty() ? options.nameSpace : options.kube.nameSpace;
    eo.leaseName = options.leaseName;
    eo.identity = options.identity;
    eo.podName = options.podName;
    eo.timing = options.leaseTiming;
    eo.onStartedLeading = [self] { self->startReconciler(); };
    eo.onStoppedLeading = [self] { self->stoppedLeading(); };
    DDP_ASSIGN_OR_RETURN(r->elector_, LeaderElector::create(*r->client_, eo));
  }
  KubernetesLauncherOptions lo;
  lo.nameSpace = options.nameSpace;
  lo.namespaces = options.watchNamespaces;
  lo.allNamespaces = options.watchAllNamespaces;
  lo.defaultImage = options.workerImage;
  lo.schedulerName = options.schedulerName;
  lo.onExit = options.onExit;
  lo.specOf = [self](const std::string& job) -> std::optional<JobSpec> {
    std::lock_guard<std::mutex> lock(self->mu_);
    return self->specOf_ ? self->specOf_(job) : std::nullopt;
  };
  lo.ownerOf = [self](const std::string& job) -> std::optional<JobOwner> {
    std::lock_guard<std::mutex> lock(self->mu_);
    return self->reconciler_ ? self->reconciler_->ownerOf(job) : std::nullopt;
  };
  DDP_ASSIGN_OR_RETURN(r->launcher_, KubernetesLauncher::create(*r->client_, lo));
  return r;
}

KubernetesRuntime::~KubernetesRuntime() { stop(); }

std::unique_ptr<Launcher> KubernetesRuntime::takeLauncher() { return std::move(launcher_); }

void KubernetesRuntime::start(JobCalls jobs, std::function<std::optional<JobSpec>(const std::string&)> specOf,
                              std::function<Status()> onLeading) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_ = std::move(jobs);
    specOf_ = std::move(specOf);
  }
  onLeading_ = std::move(onLeading);
  if (elector_) elector_->start();
  else startReconciler();
}

void KubernetesRuntime::startReconciler() {
  if (onLeading_ && !led_) {
    // Note [Standby replicas]. Not under mu_: the job manager's start calls the launcher,
    // which asks specOf (mu_).
    led_ = true;
    if (Status st = onLeading_(); !st.isOk()) {
      DDP_LOG(Error) << "leader election: " << options_.identity << " leads but could not start its jobs: "
                     << st.toString() << "; the reconciler does not start";
      return;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (reconciler_) return;
  DdpJobReconcilerOptions ro;
  if (!options_.watchAllNamespaces) ro.watchNamespaces = options_.watchNamespaces;
  ro.instance = options_.identity;  // the Events' reportingInstance: this replica's pod name
  reconciler_ = std::make_unique<DdpJobReconciler>(*client_, ro, jobs_);
  reconciler_->start();
}

void KubernetesRuntime::stopReconciler() {
  std::unique_ptr<DdpJobReconciler> r;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r = std::move(reconciler_);
  }
  if (r) r->stop();
}

void KubernetesRuntime::stoppedLeading() {
  // Note [Fencing on leadership loss].
  if (!stopping_.load()) {
    DDP_LOG(Error) << "leader election: " << options_.identity << " lost the lease " << options_.leaseName
                   << "; another replica may lead now, so this one must not touch worker objects any more";
    if (options_.onLostLeadership) options_.onLostLeadership();
  }
  stopReconciler();
}

void KubernetesRuntime::stop() {
  stopping_ = true;
  if (elector_) elector_->stop();  // releases the lease; stops the reconciler through the callback
  stopReconciler();
}

}  // namespace ddp::controller::kube
