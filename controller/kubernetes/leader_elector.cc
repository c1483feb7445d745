#include "controller/kubernetes/leader_elector.h"

#include <ctime>

#include "common/log.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

// RFC 3339 with microseconds (a Kubernetes MicroTime), from the wall clock.
std::string microTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(us / 1000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(us % 1000000));
  return buf;
}

}  // namespace

Result<std::unique_ptr<LeaderElector>> LeaderElector::create(KubeClient& client, LeaderElectorOptions options,
                                                             const Clock& clock) {
  if (options.nameSpace.empty() || options.leaseName.empty() || options.identity.empty()) {
    return invalidArgument("leader election: namespace, lease name and identity are required");
  }
  DDP_RETURN_IF_ERROR(options.timing.validate());
  return std::unique_ptr<LeaderElector>(new LeaderElector(client, std::move(options), clock));
}

LeaderElector::LeaderElector(KubeClient& client, LeaderElectorOptions options, const Clock& clock)
    : client_(client), options_(std::move(options)), clock_(clock) {}

LeaderElector::~LeaderElector() { stop(); }

std::string LeaderElector::path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + options_.nameSpace + "/leases/" + options_.leaseName;
}

void LeaderElector::setLeading(bool leading) {
  if (leading_.exchange(leading) == leading) return syncLeaderLabel(leading);
  DDP_LOG(Info) << "leader election: " << options_.identity << (leading ? " now leads" : " stopped leading")
                << " (lease " << options_.nameSpace << "/" << options_.leaseName << ")";
  if (!leading) syncLeaderLabel(false);  // off the Service first (Note [Leader label])
  if (leading && options_.onStartedLeading) options_.onStartedLeading();
  if (!leading && options_.onStoppedLeading) options_.onStoppedLeading();
  if (leading) syncLeaderLabel(true);  // on the Service once its jobs are started
}

void LeaderElector::syncLeaderLabel(bool want) {
  if (options_.podName.empty() || labelled_ == want) return;
  const json patch = {{"metadata", {{"labels", {{kLeaderLabel, want ? json("true") : json(nullptr)}}}}}};
  auto r = client_.mergePatch("/api/v1/namespaces/" + options_.nameSpace + "/pods/" + options_.podName, patch);
  if (r.isOk()) {
    labelled_ = want;
    labelError_.clear();
    return;
  }
  if (r.status().message() != labelError_) {  // retried at the next attempt; logged once
    labelError_ = r.status().message();
    DDP_LOG(Warning) << "leader election: " << (want ? "labelling" : "unlabelling") << " pod " << options_.podName
                     << " " << kLeaderLabel << ": " << labelError_;
  }
}

Status LeaderElector::write(LeaseAction action, const json& current) {
  const int64_t seconds = std::chrono::duration_cast<std::chrono::seconds>(options_.timing.leaseDuration).count();
  const std::string now = microTimeNow();
  if (action == LeaseAction::kCreate) {
    json lease = {{"apiVersion", "coordination.k8s.io/v1"}, {"kind", "Lease"},
                  {"metadata", {{"name", options_.leaseName}, {"namespace", options_.nameSpace}}},
                  {"spec", {{"holderIdentity", options_.identity}, {"leaseDurationSeconds", seconds},
                            {"acquireTime", now}, {"renewTime", now}, {"leaseTransitions", 0}}}};
    auto r = client_.create("/apis/coordination.k8s.io/v1/namespaces/" + options_.nameSpace + "/leases", lease);
    return r.status();
  }
  json lease = current;
  json& spec = lease["spec"];
  if (action == LeaseAction::kTakeOver) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = options_.identity;
  spec["leaseDurationSeconds"] = seconds;
  spec["renewTime"] = now;
  auto r = client_.replace(path(), lease);  // carries the resourceVersion read: 409 if stale
  return r.status();
}

bool LeaderElector::tryAcquireOrRenew() {
  const TimePoint now = clock_.now();
  auto current = client_.get(path());
  const bool exists = current.isOk();
  if (!exists && current.status().code() != StatusCode::kNotFound) {
    DDP_LOG(Warning) << "leader election: " << current.status().message();
  } else {
    std::string holder;
    if (exists) {
      const json& spec = (*current)["spec"];
      holder = spec.value("holderIdentity", "");
      const std::string record = holder + "|" + spec.value("renewTime", "") + "|" +
                                 (*current)["metadata"].value("resourceVersion", "");
      if (record != observedRecord_) {
        observedRecord_ = record;
        observedAt_ = now;
      }
    }
    const LeaseAction action = decideLease(exists, holder, observedAt_, options_.identity, now, options_.timing);
    if (action == LeaseAction::kWait) {
      setLeading(false);
      return false;
    }
    Status st = write(action, exists ? *current : json::object());
    if (st.isOk()) {
      lastRenewed_ = now;
      setLeading(true);
      return true;
    }
    if (st.code() != StatusCode::kAborted && st.code() != StatusCode::kAlreadyExists) {
      DDP_LOG(Warning) << "leader election: " << st.message();
    }
  }
  // No write this round (an error, or another replica won the race): a leader keeps leading
  // until its renew deadline passes.
  if (leading() && !stillLeading(lastRenewed_, now, options_.timing)) setLeading(false);
  return leading();
}

void LeaderElector::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      lock.unlock();
      tryAcquireOrRenew();
      lock.lock();
      cv_.wait_for(lock, options_.timing.retryPeriod, [&] { return stopping_; });
    }
  });
}

void LeaderElector::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (leading()) {
    syncLeaderLabel(false);  // off the Service before the lease goes (Note [Leader label])
    // Release: an empty holder lets a standby take over at its next attempt.
    auto current = client_.get(path());
    if (current.isOk() && (*current)["spec"].value("holderIdentity", "") == options_.identity) {
      json lease = *current;
      lease["spec"]["holderIdentity"] = "";
      (void)client_.replace(path(), lease);
    }
    setLeading(false);
  }
}

}  // namespace ddp::controller::kube
