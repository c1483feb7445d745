#pragma once
// LeaderElector: leader election among controller replicas on one coordination.k8s.io/v1 Lease
// (the rules: lease_decision.h). Every retryPeriod a replica reads the Lease and creates,
// renews or takes it over with a PUT carrying the resourceVersion it read, so that of two
// replicas writing at once one gets 409 Conflict and stays a standby. A leader that cannot
// renew within renewDeadline steps down (before any standby may take over); stop() releases a
// held lease (empty holderIdentity) so a standby takes over at its next attempt. readiness()
// is what /readyz answers: a standby is Unavailable, so the Service sends users and workers to
// the leader only.
// Thread model: start() starts one thread that calls tryAcquireOrRenew() every retryPeriod
// and the callbacks (on that thread); stop() joins it. tryAcquireOrRenew() may also be called
// directly (tests, with a FakeClock) when the thread is not running. leading() and
// readiness() are thread-safe.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "common/clock.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/kubernetes/lease_decision.h"

namespace ddp::controller::kube {

struct LeaderElectorOptions {
  std::string nameSpace;  // where the Lease lives (the controller's namespace)
  std::string leaseName;  // e.g. "ddp-leader"
  std::string identity;   // this replica (its pod name)
  LeaseTiming timing;
  std::function<void()> onStartedLeading;  // on the elector's thread
  // On the elector's thread for a loss, on stop()'s thread for stop()'s release (the caller tells
  // them apart: Note [Fencing on leadership loss] in kubernetes_runtime.h).
  std::function<void()> onStoppedLeading;
};

class LeaderElector {
 public:
  // InvalidArgument for empty names or bad timing.
  static Result<std::unique_ptr<LeaderElector>> create(KubeClient& client, LeaderElectorOptions options,
                                                       const Clock& clock = SystemClock::instance());
  ~LeaderElector();

  void start();
  void stop();  // releases the lease when leading
  // One attempt: read the Lease, then create / renew / take over / wait; steps down when a
  // leader could not renew within renewDeadline. Returns whether this replica leads after it.
  bool tryAcquireOrRenew();

  bool leading() const { return leading_.load(); }
  Status readiness() const;

 private:
  LeaderElector(KubeClient& client, LeaderElectorOptions options, const Clock& clock);
  Status write(LeaseAction action, const nlohmann::json& current);
  void setLeading(bool leading);
  std::string path() const;

  KubeClient& client_;
  const LeaderElectorOptions options_;
  const Clock& clock_;
  std::atomic<bool> leading_{false};
  // Loop-thread (or direct caller) state:
  std::string observedRecord_;  // holder|renewTime|resourceVersion last seen
  TimePoint observedAt_{};
  TimePoint lastRenewed_{};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
};

}  // namespace ddp::controller::kube
