#include "controller/kubernetes/ddpjob_reconciler.h"

#include "common/clock.h"
#include "common/jobspec/job_spec_kubernetes.h"
#include "common/log.h"
#include "controller/kubernetes/gang_schedule.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// A pod whose worker reported its training finished is still Running until its process has
// exited and the kubelet has said so; cleanPodPolicy Running gives it this long before it counts
// as "still running" and is deleted.
constexpr int64_t kPodExitGraceMs = 30'000;

const json& runPolicyOf(const json& ddpJob) {
  static const json kNone = json::object();
  const json& spec = ddpJob.contains("spec") ? ddpJob["spec"] : kNone;
  const json& k = spec.is_object() && spec.contains("kubernetes") ? spec["kubernetes"] : kNone;
  return k.is_object() && k.contains("runPolicy") && k["runPolicy"].is_object() ? k["runPolicy"] : kNone;
}

}  // namespace

bool suspendWanted(const json& ddpJob) {
  const json& s = ddpJob.value("spec", json::object()).value("suspend", json());
  return s.is_boolean() && s.get<bool>();
}

std::string managedByOf(const json& ddpJob) {
  const json& by = ddpJob.value("spec", json::object()).value("managedBy", json());
  return by.is_string() ? by.get<std::string>() : "";
}

bool managedElsewhere(const json& ddpJob) {
  const std::string by = managedByOf(ddpJob);
  return !by.empty() && by != kDdpControllerManager;
}

std::optional<int> desiredWorkerCount(const json& ddpJob) {
  const json& count = ddpJob.value("spec", json::object()).value("workers", json::object()).value("count", json());
  if (!count.is_number_integer()) return std::nullopt;
  const int64_t n = count.get<int64_t>();
  if (n < 0 || n > kMaxWorkersPerJob) return std::nullopt;
  return static_cast<int>(n);
}

DdpJobReconciler::DdpJobReconciler(KubeClient& client, DdpJobReconcilerOptions options, JobCalls jobs)
    : client_(client), options_(std::move(options)), jobs_(std::move(jobs)), recorder_(client, options_.instance) {
  std::vector<std::string> paths;
  for (const std::string& ns : options_.watchNamespaces) paths.push_back("/apis/ddp.dev/v1/namespaces/" + ns + "/ddpjobs");
  if (paths.empty()) paths.push_back("/apis/ddp.dev/v1/ddpjobs");  // every namespace
  for (const std::string& path : paths) {
    ResourceWatcherOptions wo;
    wo.collectionPath = path;
    wo.watchTimeoutSeconds = options_.watchTimeoutSeconds;
    watchers_.push_back(std::make_unique<ResourceWatcher>(client_, wo, [this](const WatchEvent& e) { onEvent(e); }));
  }
}

DdpJobReconciler::~DdpJobReconciler() { stop(); }

void DdpJobReconciler::start() {
  for (auto& w : watchers_) w->start();
  std::lock_guard<std::mutex> lock(mu_);
  if (ticker_.joinable()) return;
  ticker_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      reconcileAll();
      lock.lock();
      cv_.wait_for(lock, options_.tick, [&] { return stopping_; });
    }
  });
}

void DdpJobReconciler::stop() {
  for (auto& w : watchers_) w->stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

std::optional<JobOwner> DdpJobReconciler::ownerOf(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tracked_.find(job);
  if (it == tracked_.end()) return std::nullopt;
  return JobOwner{job, it->second.uid};
}

void DdpJobReconciler::onEvent(const WatchEvent& e) {
  const json& m = e.object.value("metadata", json::object());
  const std::string name = m.value("name", "");
  if (name.empty()) return;
  const std::string ns = m.value("namespace", "");
  std::lock_guard<std::mutex> lock(mu_);
  auto held = tracked_.find(name);
  if (held != tracked_.end() && held->second.ns != ns) {  // Note [Names across namespaces]
    if (e.type == WatchEvent::Type::kDeleted) {
      clashes_.erase(ns + "/" + name);
      return;
    }
    Clash& c = clashes_[ns + "/" + name];
    c.uid = m.value("uid", "");
    c.heldBy = held->second.ns;
    c.generation = m.value("generation", int64_t{1});
    return;
  }
  clashes_.erase(ns + "/" + name);
  Tracked& t = tracked_[name];
  t.ns = ns;
  if (e.type == WatchEvent::Type::kDeleted) {
    t.deleted = true;
    return;
  }
  t.uid = m.value("uid", "");
  t.generation = m.value("generation", int64_t{1});
  t.object = e.object;
  t.deleted = false;
}

std::string DdpJobReconciler::jobPath(const Tracked& t, const std::string& name) const {
  return "/apis/ddp.dev/v1/namespaces/" + t.ns + "/ddpjobs/" + name;
}

void DdpJobReconciler::writeStatus(const std::string& name, Tracked& t, const json& status) {
  auto r = client_.mergePatch(jobPath(t, name) + "/status", {{"status", status}});
  if (!r.isOk()) {
    DDP_LOG(Warning) << "kubernetes: status of DDPJob " << t.ns << "/" << name << ": " << r.status().message();
    return;
  }
  t.p.written = status;
  t.p.writtenAt = std::chrono::steady_clock::now();
}

bool DdpJobReconciler::leftToAnotherManager(const std::string& name, Tracked& t) {
  const std::string now = managedByOf(t.object);
  if (!t.p.manager) t.p.manager = now;
  const auto elsewhere = [](const std::string& by) { return !by.empty() && by != kDdpControllerManager; };
  const bool first = elsewhere(*t.p.manager);
  const std::optional<SpecError> change = managedByChangeError(*t.p.manager, now);
  // A change between two other managers is theirs to refuse: no Event on a job not ours.
  if (change && (!first || !elsewhere(now)) && t.p.managerChangeReported != t.generation) {
    t.p.managerChangeReported = t.generation;
    DDP_LOG(Warning) << "kubernetes: DDPJob " << t.ns << "/" << name << ": " << change->toString();
    (void)recorder_.record(subject(name, t), kEventWarning, "ManagedByChanged",
                           change->toString() + "; " + (first ? "it stays with that manager: not started here"
                                                              : "this controller goes on running it"));
  }
  return first;
}

void DdpJobReconciler::reconcile(const std::string& name, Tracked& t) {
  if (leftToAnotherManager(name, t)) return;  // Note [Managed by]
  if (t.deleted) {
    Status st = jobs_.remove(name, Deadline::after(options_.removeDeadline));
    if (!st.isOk() && st.code() != StatusCode::kNotFound) {
      DDP_LOG(Warning) << "kubernetes: removing job " << name << ": " << st.message();
    }
    return;
  }
  if (!t.p.submitted) {
    auto existing = jobs_.get(name);
    if (existing.isOk()) {
      t.p.submitted = true;  // known already (a restarted controller): Note [Mirrored events]
      t.p.eventMark = {unixMillisNow(), 0};
    } else if (finishedBefore(t.object)) {
      reconcileFinishedBefore(name, t);
      return;
    } else {
      if (t.p.refusedGeneration == t.generation) return;
      std::vector<SpecError> errors;
      auto spec = parseJobSpec(t.object.dump(), &errors);  // JSON is YAML
      Result<JobRecord> rec = spec.isOk() ? jobs_.submit(*spec) : Result<JobRecord>(spec.status());
      if (!rec.isOk()) {
        t.p.refusedGeneration = t.generation;
        (void)recorder_.record(subject(name, t), kEventWarning, "InvalidSpec", rec.status().message());
        writeStatus(name, t, invalidJobStatus(rec.status().message(), t.generation, unixMillisNow()));
        return;
      }
      t.p.submitted = true;
    }
  }
  auto rec = jobs_.get(name);
  if (!rec.isOk()) return;
  mirrorEvents(name, t, *rec);
  applySuspend(name, t, *rec);
  applyScale(name, t, *rec);
  json desired = ddpJobStatus(*rec, t.generation);
  if (t.p.failure) desired = withFailure(desired, t.p.failure->reason, t.p.failure->message, t.p.failure->atMs);
  if (statusWriteDue(t.p.written, t.p.writtenAt, desired, std::chrono::steady_clock::now())) writeStatus(name, t, desired);
  const json& policy = runPolicyOf(t.object);
  enforceDeadline(name, t, *rec, policy);
  enforceSchedule(name, t, *rec, policy);
  if (!isTerminal(rec->phase)) return;
  const int64_t now = unixMillisNow();
  if (!t.p.cleaned) t.p.cleaned = cleanPods(name, t, policy.value("cleanPodPolicy", "Running"), now - rec->completionMs);
  deleteAfterTtl(name, t, policy, rec->completionMs);
}

void DdpJobReconciler::reconcileFinishedBefore(const std::string& name, const Tracked& t) {
  const json& status = t.object.value("status", json::object());
  const std::optional<int64_t> completion = parseRfc3339Ms(status.value("completionTime", ""));
  if (completion) deleteAfterTtl(name, t, runPolicyOf(t.object), *completion);
}

void DdpJobReconciler::deleteAfterTtl(const std::string& name, const Tracked& t, const json& policy,
                                      int64_t completionMs) {
  if (!policy.contains("ttlSecondsAfterFinished") || completionMs <= 0) return;
  if (unixMillisNow() - completionMs < policy["ttlSecondsAfterFinished"].get<int64_t>() * 1000) return;
  Status st = client_.remove(jobPath(t, name));
  if (!st.isOk() && st.code() != StatusCode::kNotFound) DDP_LOG(Warning) << "kubernetes: ttl of " << name << ": " << st.message();
}

void DdpJobReconciler::mirrorEvents(const std::string& name, Tracked& t, const JobRecord& rec) {
  if (!jobs_.events || t.p.eventsDone) return;
  const TimePoint now = std::chrono::steady_clock::now();
  if (t.p.eventsPhase == rec.phase && now - t.p.eventsPolledAt < options_.eventPollInterval) return;
  auto all = jobs_.events(name);
  if (!all.isOk()) return;
  t.p.eventsPolledAt = now;
  t.p.eventsPhase = rec.phase;
  for (const JobEvent& e : eventsPast(*all, &t.p.eventMark)) (void)recorder_.record(subject(name, t), e);
  // The record said finished: its last events were stored before (JobManager::events persists).
  t.p.eventsDone = isTerminal(rec.phase);
}

void DdpJobReconciler::applySuspend(const std::string& name, const Tracked& t, const JobRecord& rec) {
  if (!jobs_.suspend || !jobs_.resume || isTerminal(rec.phase)) return;
  auto spec = decodeJobSpec(rec.specYaml);  // the job's stored spec.suspend: what was applied
  if (!spec.isOk()) return;
  const bool want = suspendWanted(t.object);
  if (want == spec->suspend) return;
  auto r = want ? jobs_.suspend(name) : jobs_.resume(name);
  // A resume while the workers still stop is asked again at the next tick.
  if (!r.isOk() && r.status().code() != StatusCode::kFailedPrecondition) {
    DDP_LOG(Warning) << "kubernetes: DDPJob " << name << ": spec.suspend " << want << ": " << r.status().message();
  } else if (r.isOk()) {
    DDP_LOG(Info) << "kubernetes: DDPJob " << name << (want ? " suspended" : " resumed");
  }
}

void DdpJobReconciler::enforceDeadline(const std::string& name, Tracked& t, const JobRecord& rec, const json& policy) {
  if (isTerminal(rec.phase) || rec.phase == JobPhase::kSuspended || t.p.deadlinePassed || rec.createdMs <= 0) return;
  if (!policy.contains("activeDeadlineSeconds") || !policy["activeDeadlineSeconds"].is_number_integer()) return;
  const int64_t deadline = policy["activeDeadlineSeconds"].get<int64_t>();
  if (unixMillisNow() - rec.createdMs < deadline * 1000) return;
  const std::string message = "the job passed activeDeadlineSeconds (" + std::to_string(deadline) +
                              " s since it was accepted, " + jobPhaseName(rec.phase) + "): cancelling it";
  DDP_LOG(Info) << "kubernetes: job " << name << ": " << message;
  auto r = jobs_.cancel(name);
  if (!r.isOk() && r.status().code() != StatusCode::kFailedPrecondition) {
    DDP_LOG(Warning) << "kubernetes: cancelling " << name << ": " << r.status().message();
    return;  // tried again on the next tick
  }
  t.p.deadlinePassed = true;
  (void)recorder_.record(subject(name, t), kEventWarning, "DeadlineExceeded", message);
}

void DdpJobReconciler::enforceSchedule(const std::string& name, Tracked& t, const JobRecord& rec, const json& policy) {
  if (isTerminal(rec.phase) || rec.phase == JobPhase::kSuspended || t.p.failure) return;
  const TimePoint steadyNow = std::chrono::steady_clock::now();
  if (steadyNow < t.p.podsNextList) return;
  t.p.podsNextList = steadyNow + options_.podListInterval;
  const json& sp = policy.value("schedulingPolicy", json::object());
  const int64_t timeoutSeconds = sp.value("scheduleTimeoutSeconds", kDefaultScheduleTimeoutSeconds);
  const bool retry = sp.value("onScheduleTimeout", "Fail") == "Retry";
  auto list = client_.get(podsPath(t) + jobPodsQuery(name));
  if (!list.isOk()) return;
  const int64_t now = unixMillisNow();
  std::vector<PodSchedule> pods;
  std::map<std::string, int64_t> seen;
  for (const json& pod : list->value("items", json::array())) {
    PodSchedule p = podScheduleOf(pod);
    auto it = t.p.podSeen.find(p.uid);
    // A gated pod's wait starts once its gate is gone (Note [Schedule timeout]).
    p.sinceMs = it == t.p.podSeen.end() || p.gated ? now : it->second;
    seen[p.uid] = p.sinceMs;
    pods.push_back(std::move(p));
  }
  t.p.podSeen = std::move(seen);
  const GangVerdict v = decideGang(pods, now, timeoutSeconds * 1000);
  // Every pod ran: only a replacement can wait again; looked at less often.
  if (v.state == GangState::kOk) t.p.podsNextList = steadyNow + 10 * options_.podListInterval;
  if (v.state != GangState::kTimedOut) return;
  for (const PodSchedule& p : v.notRunning) t.p.podSeen[p.uid] = now;  // the wait starts over
  if (!retry) {
    (void)recorder_.record(subject(name, t), kEventWarning, "ScheduleTimeout", v.message + "; failing the job");
    failJob(name, t, "ScheduleTimeout", v.message);
    return;
  }
  // A pod's first rank names it; replaceWorkers takes the pod's other ranks with it (Note
  // [Several ranks per pod] in worker/control/pod_supervisor.h).
  const json& workersSpec = t.object.value("spec", json::object()).value("workers", json::object());
  const int perPod = std::max(1, workersSpec.value("perPod", 1));
  std::vector<std::string> workers;
  for (const PodSchedule& p : v.notRunning) {
    if (p.slot >= 0) workers.push_back(workerIdFor(name, p.slot * perPod));
  }
  if (!jobs_.replaceWorkers) {
    (void)recorder_.record(subject(name, t), kEventWarning, "ScheduleTimeout",
                           v.message + "; onScheduleTimeout Retry: this controller cannot replace pods, they keep "
                                       "waiting for the scheduler (the timeout starts over)");
    return;
  }
  (void)recorder_.record(subject(name, t), kEventWarning, "ScheduleTimeout",
                         v.message + "; onScheduleTimeout Retry: deleting them to create them again");
  Status st = jobs_.replaceWorkers(name, workers);
  if (!st.isOk()) {
    DDP_LOG(Warning) << "kubernetes: job " << name << ": replacing its waiting pods: " << st.message();
    (void)recorder_.record(subject(name, t), kEventWarning, "ScheduleRetryFailed", st.message());
  }
}

void DdpJobReconciler::failJob(const std::string& name, Tracked& t, const std::string& reason,
                               const std::string& message) {
  DDP_LOG(Info) << "kubernetes: job " << name << " failed: " << reason << ": " << message;
  if (jobs_.fail) {
    auto r = jobs_.fail(name, reason, message);
    if (r.isOk() || r.status().code() == StatusCode::kFailedPrecondition) return;
    DDP_LOG(Warning) << "kubernetes: failing job " << name << ": " << r.status().message() << "; cancelling it";
  }
  t.p.failure = Progress::Failure{reason, message, unixMillisNow()};
  auto r = jobs_.cancel(name);
  if (!r.isOk() && r.status().code() != StatusCode::kFailedPrecondition) {
    DDP_LOG(Warning) << "kubernetes: cancelling job " << name << ": " << r.status().message();
  }
}

void DdpJobReconciler::applyScale(const std::string& name, Tracked& t, const JobRecord& rec) {
  if (!jobs_.scale || isTerminal(rec.phase)) return;
  const std::optional<int> desired = desiredWorkerCount(t.object);
  if (!desired) return;
  if (t.p.appliedCount < 0) {  // the count the job was submitted (or last scaled) with
    auto spec = decodeJobSpec(rec.specYaml);
    if (!spec.isOk()) return;
    t.p.appliedCount = spec->workers.count;
  }
  if (*desired == t.p.appliedCount || *desired == t.p.refusedCount) return;
  auto r = jobs_.scale(name, *desired);
  if (r.isOk()) {
    DDP_LOG(Info) << "kubernetes: DDPJob " << t.ns << "/" << name << " scaled to " << *desired << " worker(s)";
    t.p.appliedCount = *desired;
    return;
  }
  // The workers of the last scale-down are still stopping: asked again on the next tick.
  if (r.status().code() == StatusCode::kFailedPrecondition) return;
  t.p.refusedCount = *desired;
  DDP_LOG(Warning) << "kubernetes: DDPJob " << t.ns << "/" << name << ": scale refused: " << r.status().message();
  (void)recorder_.record(subject(name, t), kEventWarning, "ScaleRefused",
                         "spec.workers.count " + std::to_string(*desired) + ": " + r.status().message());
}

bool DdpJobReconciler::cleanPods(const std::string& name, const Tracked& t, const std::string& policy,
                                 int64_t sinceCompletionMs) {
  if (policy == "None") return true;
  const std::string pods = podsPath(t);
  auto list = client_.get(pods + jobPodsQuery(name));
  if (!list.isOk()) return false;
  bool done = true;
  for (const json& pod : list->value("items", json::array())) {
    const std::string phase = pod.value("status", json::object()).value("phase", "");
    if (policy == "Running" && (phase == "Succeeded" || phase == "Failed")) continue;
    if (policy == "Running" && sinceCompletionMs < kPodExitGraceMs) {
      done = false;  // perhaps still exiting: looked at again on the next tick
      continue;
    }
    Status st = client_.remove(pods + "/" + pod["metadata"].value("name", ""));
    done = done && (st.isOk() || st.code() == StatusCode::kNotFound);
  }
  return done;
}

void DdpJobReconciler::reportClashes() {
  std::map<std::string, Clash> due;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [key, c] : clashes_) {
      if (c.reportedGeneration != c.generation) due[key] = c;
    }
  }
  for (const auto& [key, c] : due) {
    const std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
    const std::string message = "the DDPJob " + c.heldBy + "/" + name + " holds the name " + name +
                                ": job names are unique across the namespaces one controller serves " +
                                "(rename this one, or change its spec once the other is gone)";
    Tracked t;
    t.ns = ns;
    t.uid = c.uid;
    (void)recorder_.record(subject(name, t), kEventWarning, "NameTaken", message);
    json status = invalidJobStatus(message, c.generation, unixMillisNow());
    for (json& cond : status["conditions"]) cond["reason"] = "NameTaken";
    auto r = client_.mergePatch(jobPath(t, name) + "/status", {{"status", status}});
    if (!r.isOk()) DDP_LOG(Warning) << "kubernetes: status of DDPJob " << key << ": " << r.status().message();
    std::lock_guard<std::mutex> lock(mu_);
    auto it = clashes_.find(key);
    if (r.isOk() && it != clashes_.end() && it->second.generation == c.generation) it->second.reportedGeneration = c.generation;
  }
}

void DdpJobReconciler::reconcileAll() {
  reportClashes();
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, t] : tracked_) names.push_back(name);
  }
  for (const std::string& name : names) {
    Tracked t;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = tracked_.find(name);
      if (it == tracked_.end()) continue;
      t = it->second;
    }
    reconcile(name, t);  // no lock held: API and job calls
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tracked_.find(name);
    if (it == tracked_.end()) continue;
    if (t.deleted && it->second.deleted) {
      tracked_.erase(it);
      continue;
    }
    // Keep what the watch changed meanwhile; take over what reconcile() learnt.
    it->second.p = std::move(t.p);
  }
}

}  // namespace ddp::controller::kube
