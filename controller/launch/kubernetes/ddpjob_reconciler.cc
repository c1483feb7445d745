#include "controller/launch/kubernetes/ddpjob_reconciler.h"

#include "common/clock.h"
#include "common/log.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// A pod whose worker reported its training finished is still Running until its process has
// exited and the kubelet has said so; cleanPodPolicy Running gives it this long before it counts
// as "still running" and is deleted.
constexpr int64_t kPodExitGraceMs = 30'000;

}  // namespace

std::optional<int> desiredWorkerCount(const json& ddpJob) {
  const json& count = ddpJob.value("spec", json::object()).value("workers", json::object()).value("count", json());
  if (!count.is_number_integer()) return std::nullopt;
  const int64_t n = count.get<int64_t>();
  if (n < 0 || n > kMaxWorkersPerJob) return std::nullopt;
  return static_cast<int>(n);
}

DdpJobReconciler::DdpJobReconciler(KubeClient& client, DdpJobReconcilerOptions options, JobCalls jobs)
    : client_(client), options_(std::move(options)), jobs_(std::move(jobs)) {
  ResourceWatcherOptions wo;
  wo.collectionPath = options_.watchNamespace.empty()
                          ? "/apis/ddp.dev/v1/ddpjobs"
                          : "/apis/ddp.dev/v1/namespaces/" + options_.watchNamespace + "/ddpjobs";
  wo.watchTimeoutSeconds = options_.watchTimeoutSeconds;
  watcher_ = std::make_unique<ResourceWatcher>(client_, wo, [this](const WatchEvent& e) { onEvent(e); });
}

DdpJobReconciler::~DdpJobReconciler() { stop(); }

void DdpJobReconciler::start() {
  watcher_->start();
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
  watcher_->stop();
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
  std::lock_guard<std::mutex> lock(mu_);
  Tracked& t = tracked_[name];
  t.ns = m.value("namespace", "");
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
  t.written = status;
  t.writtenAt = std::chrono::steady_clock::now();
}

void DdpJobReconciler::reconcile(const std::string& name, Tracked& t) {
  if (t.deleted) {
    Status st = jobs_.remove(name, Deadline::after(std::chrono::seconds(30)));
    if (!st.isOk() && st.code() != StatusCode::kNotFound) {
      DDP_LOG(Warning) << "kubernetes: removing job " << name << ": " << st.message();
    }
    return;
  }
  if (!t.submitted) {
    auto existing = jobs_.get(name);
    if (existing.isOk()) {
      t.submitted = true;  // known already (a restarted controller)
    } else {
      if (t.refusedGeneration == t.generation) return;
      std::vector<SpecError> errors;
      auto spec = parseJobSpec(t.object.dump(), &errors);  // JSON is YAML
      Result<JobRecord> rec = spec.isOk() ? jobs_.submit(*spec) : Result<JobRecord>(spec.status());
      if (!rec.isOk()) {
        t.refusedGeneration = t.generation;
        writeStatus(name, t, invalidJobStatus(rec.status().message(), t.generation, unixMillisNow()));
        return;
      }
      t.submitted = true;
    }
  }
  auto rec = jobs_.get(name);
  if (!rec.isOk()) return;
  applyScale(name, t, *rec);
  const json desired = ddpJobStatus(*rec, t.generation);
  if (statusWriteDue(t.written, t.writtenAt, desired, std::chrono::steady_clock::now())) writeStatus(name, t, desired);
  // The run policy (spec.kubernetes.runPolicy).
  const json& policy = t.object.value("spec", json::object()).value("kubernetes", json::object()).value("runPolicy", json::object());
  const int64_t now = unixMillisNow();
  if (!isTerminal(rec->phase) && policy.contains("activeDeadlineSeconds") && rec->startMs > 0 &&
      now - rec->startMs >= policy["activeDeadlineSeconds"].get<int64_t>() * 1000) {
    DDP_LOG(Info) << "kubernetes: job " << name << " passed activeDeadlineSeconds: cancelling it";
    (void)jobs_.cancel(name);
  }
  if (isTerminal(rec->phase) && !t.cleaned) t.cleaned = cleanPods(name, t, policy.value("cleanPodPolicy", "Running"), now - rec->completionMs);
  if (isTerminal(rec->phase) && policy.contains("ttlSecondsAfterFinished") && rec->completionMs > 0 &&
      now - rec->completionMs >= policy["ttlSecondsAfterFinished"].get<int64_t>() * 1000) {
    Status st = client_.remove(jobPath(t, name));
    if (!st.isOk() && st.code() != StatusCode::kNotFound) DDP_LOG(Warning) << "kubernetes: ttl of " << name << ": " << st.message();
  }
}

void DdpJobReconciler::applyScale(const std::string& name, Tracked& t, const JobRecord& rec) {
  if (!jobs_.scale || isTerminal(rec.phase)) return;
  const std::optional<int> desired = desiredWorkerCount(t.object);
  if (!desired) return;
  if (t.appliedCount < 0) {  // the count the job was submitted (or last scaled) with
    auto spec = parseJobSpec(rec.specYaml);
    if (!spec.isOk()) return;
    t.appliedCount = spec->workers.count;
  }
  if (*desired == t.appliedCount || *desired == t.refusedCount) return;
  auto r = jobs_.scale(name, *desired);
  if (r.isOk()) {
    DDP_LOG(Info) << "kubernetes: DDPJob " << t.ns << "/" << name << " scaled to " << *desired << " worker(s)";
    t.appliedCount = *desired;
    return;
  }
  // The workers of the last scale-down are still stopping: asked again on the next tick.
  if (r.status().code() == StatusCode::kFailedPrecondition) return;
  t.refusedCount = *desired;
  DDP_LOG(Warning) << "kubernetes: DDPJob " << t.ns << "/" << name << ": scale refused: " << r.status().message();
}

bool DdpJobReconciler::cleanPods(const std::string& name, const Tracked& t, const std::string& policy,
                                 int64_t sinceCompletionMs) {
  if (policy == "None") return true;
  const std::string pods = "/api/v1/namespaces/" + t.ns + "/pods";
  auto list = client_.get(pods + "?labelSelector=" + std::string(kJobLabel) + "%3D" + name);
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

void DdpJobReconciler::reconcileAll() {
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
    it->second.submitted = t.submitted;
    it->second.refusedGeneration = t.refusedGeneration;
    it->second.cleaned = t.cleaned;
    it->second.written = t.written;
    it->second.writtenAt = t.writtenAt;
    it->second.appliedCount = t.appliedCount;
    it->second.refusedCount = t.refusedCount;
  }
}

}  // namespace ddp::controller::kube
