#pragma once
// Kubernetes Events about a DDPJob (core/v1 Event objects), so that `kubectl describe ddpj NAME`
// and `kubectl get events` show what happened to it: the controller's own job events mirrored
// (Note [Mirrored events]) and what only the reconciler sees (a refused spec or scale, the active
// deadline, the schedule timeout).
//
// Note [Mirrored events]
// The controller keeps every job's events in its job table (JobManager::events). The reconciler
// posts each of them once as an Event on the job's DDPJob, in order, remembering a watermark per
// DDPJob (EventMark: the time of the last event posted and how many of the events at that very
// millisecond were posted; store order breaks ties). A job the reconciler submitted itself is
// mirrored from its first event. A job it finds already in the job table (the controller
// restarted with its job table, or a new leader sharing it) is mirrored from the time the
// reconciler started tracking it: what the previous process posted is not posted again, at the
// price of losing what happened between the two processes. The events are posted the way
// client-go's core/v1 recorder posts them: a unique name "<ddpjob>.<hex>", count 1,
// firstTimestamp = lastTimestamp = the event's time, source.component and reportingComponent
// "ddp-controller", reportingInstance the replica; no eventTime (an Event with eventTime must also
// carry an action, which core/v1 recorders leave to events.k8s.io). Type Warning for the job
// event types Warning and for failure-ish reasons (…Failed, …Timeout, …Exceeded, …Refused).
// Posting is best effort: a failure is logged, never retried, and a post waits at most
// kEventPostTimeout.
// Thread model: the pure functions are pure; KubeEventRecorder is thread-safe (KubeClient is).

#include <atomic>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/status.h"
#include "controller/launch/kubernetes/kube_client.h"
#include "controller/store/job_record.h"

namespace ddp::controller::kube {

inline constexpr const char* kEventComponent = "ddp-controller";
inline constexpr Duration kEventPostTimeout = std::chrono::seconds(5);
// Event messages longer than this are cut (the API server's limit for a note).
inline constexpr size_t kEventMessageLimit = 1024;

// The DDPJob an Event is about.
struct EventSubject {
  std::string ns, name, uid;
};

// Warning or Normal for a job event (Note [Mirrored events]).
std::string kubeEventType(const JobEvent& e);

// The core/v1 Event object (Note [Mirrored events]); `name` from kubeEventName().
nlohmann::json buildKubeEvent(const EventSubject& subject, const JobEvent& e, const std::string& instance,
                              const std::string& name);

// "<subject>.<hex of unixNanos><hex of seq>": unique per recorder, a DNS subdomain.
std::string kubeEventName(const std::string& subject, int64_t unixNanos, uint64_t seq);

// How far a DDPJob's job events have been mirrored (Note [Mirrored events]).
struct EventMark {
  int64_t timeMs = 0;  // events before this time were all posted
  size_t atTime = 0;   // of the events at exactly timeMs, this many were posted
};

// The events of `all` (in store order) past `mark`; advances `mark` past them.
std::vector<JobEvent> eventsPast(const std::vector<JobEvent>& all, EventMark* mark);

class KubeEventRecorder {
 public:
  // `instance`: reportingInstance (the controller replica, e.g. its pod name).
  KubeEventRecorder(KubeClient& client, std::string instance);

  // POSTs one Event to the subject's namespace; blocks at most kEventPostTimeout. Failures are
  // logged and returned (callers go on).
  Status record(const EventSubject& subject, const JobEvent& e);
  Status record(const EventSubject& subject, const std::string& type, const std::string& reason,
                const std::string& message);

 private:
  KubeClient& client_;
  const std::string instance_;
  std::atomic<uint64_t> seq_{0};
};

}  // namespace ddp::controller::kube
