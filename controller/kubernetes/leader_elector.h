#pragma once
// LeaderElector: leader election among controller replicas on one coordination.k8s.io/v1 Lease
// (the rules: lease_decision.h). Every retryPeriod a replica reads the Lease and creates,
// renews or takes it over with a PUT carrying the resourceVersion it read, so that of two
// replicas writing at once one gets 409 Conflict and stays a standby. A leader that cannot
// renew within renewDeadline steps down (before any standby may take over); stop() releases a
// held lease (empty holderIdentity) so a standby takes over at its next attempt. Note [Leader
// label]: the leader labels its own pod ddp.dev/leader=true, which the controller's Service
// selects, so users and workers reach the leader only while every replica is Ready.
//
// Note [Leader label]
// A standby is Ready (/readyz 200: it serves reads, and a Deployment rollout or `helm upgrade
// --wait` must see the new pod Ready before it removes the old leader), so readiness cannot be
// what keeps traffic off it. Instead the leader merge-patches its own pod (podName, from the
// downward API) with the label kLeaderLabel="true" after onStartedLeading returned (its jobs are
// started by then), and the chart's Service selects that label. A replica that stops leading
// removes it before onStoppedLeading runs (and before stop() releases the lease); a standby
// removes it at its first attempt too (a container restarted after losing the lease keeps its
// pod, and with it the label). A write that fails (the API server unreachable) is retried at the
// next attempt; a pod being replaced is also not Ready while it restarts.
// Thread model: start() starts one thread that calls tryAcquireOrRenew() every retryPeriod
// and the callbacks (on that thread); stop() joins it. tryAcquireOrRenew() may also be called
// directly (tests, with a FakeClock) when the thread is not running. leading() is thread-safe.

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/kubernetes/lease_decision.h"

namespace ddp::controller::kube {

// The label the leader's pod carries (Note [Leader label]).
inline constexpr const char* kLeaderLabel = "ddp.dev/leader";

struct LeaderElectorOptions {
  std::string nameSpace;  // where the Lease lives (the controller's namespace, its pod's too)
  std::string leaseName;  // e.g. "ddp-leader"
  std::string identity;   // this replica (its pod name)
  std::string podName;    // this replica's pod, labelled while it leads; "": no label (not in a pod)
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

 private:
  LeaderElector(KubeClient& client, LeaderElectorOptions options, const Clock& clock);
  Status write(LeaseAction action, const nlohmann::json& current);
  void setLeading(bool leading);
  void syncLeaderLabel(bool leader);  // Note [Leader label]: writes the pod's label unless written
  std::string path() const;

  KubeClient& client_;
  const LeaderElectorOptions options_;
  const Clock& clock_;
  std::atomic<bool> leading_{false};
  // Loop-thread (or direct caller) state:
  std::string observedRecord_;  // holder|renewTime|resourceVersion last seen
  TimePoint observedAt_{};
  TimePoint lastRenewed_{};
  std::optional<bool> labelled_;  // the pod's leader label as last written; nullopt: unknown
  std::string labelError_;        // the last failed label write's message (logged once)
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
};

}  // namespace ddp::controller::kube
