#include "controller/launch/kubernetes/kubernetes_launcher.h"

#include <algorithm>
#include <csignal>
#include <thread>

#include "common/log.h"
#include "common/secret.h"
#include "controller/launch/kubernetes/base64.h"
#include "controller/launch/kubernetes/object_ownership.h"

namespace ddp::controller::kube {
namespace {

using nlohmann::json;

std::string label(const json& pod, const char* key) {
  const json& labels = pod["metadata"].value("labels", json::object());
  return labels.value(key, "");
}

// A LogStream over text fetched once (the pod log API; following: PodLogFollowStream).
class TextLogStream final : public LogStream {
 public:
  explicit TextLogStream(std::string text) : text_(std::move(text)) {}
  Result<std::string> read(Deadline) override {
    if (done_) return outOfRange("end of log");
    done_ = true;
    return std::move(text_);
  }
  bool done() const override { return done_; }

 private:
  std::string text_;
  bool done_ = false;
};

// Whether the job's token Secret holds `token`: the API server answers with base64 `data`; an
// object as written (stringData) is taken too.
bool secretHoldsToken(const json& secret, const std::string& token) {
  const json data = secret.value("data", json::object());
  if (data.contains(kTokenKey) && data[kTokenKey].is_string()) {
    return secretEquals(base64Encode(token), data[kTokenKey].get<std::string>());
  }
  const json stringData = secret.value("stringData", json::object());
  return stringData.contains(kTokenKey) && stringData[kTokenKey].is_string() &&
         secretEquals(token, stringData[kTokenKey].get<std::string>());
}

}  // namespace

Result<std::unique_ptr<KubernetesLauncher>> KubernetesLauncher::create(KubeClient& client,
                                                                       KubernetesLauncherOptions options) {
  if (options.nameSpace.empty() || !options.specOf) {
    return invalidArgument("kubernetes launcher: a namespace and a job spec lookup are required");
  }
  std::unique_ptr<KubernetesLauncher> l(new KubernetesLauncher(client, std::move(options)));
  std::vector<std::string> paths;  // Note [Served namespaces]
  if (l->options_.allNamespaces) paths.push_back("/api/v1/pods");
  if (paths.empty()) paths.push_back(podsPath(l->options_.nameSpace));
  for (const std::string& ns : l->options_.allNamespaces ? std::vector<std::string>{} : l->options_.namespaces) {
    if (std::find(paths.begin(), paths.end(), podsPath(ns)) == paths.end()) paths.push_back(podsPath(ns));
  }
  KubernetesLauncher* self = l.get();
  for (const std::string& path : paths) {
    ResourceWatcherOptions wo;
    wo.collectionPath = path;
    wo.labelSelector = kJobLabel;  // every pod that belongs to a job
    wo.watchTimeoutSeconds = l->options_.podWatchTimeoutSeconds;
    l->pods_.push_back(std::make_unique<ResourceWatcher>(client, wo, [self](const WatchEvent& e) { self->onPodEvent(e); }));
    l->pods_.back()->start();
  }
  l->reaper_ = std::thread([self] { self->reapLoop(); });
  return l;
}

KubernetesLauncher::KubernetesLauncher(KubeClient& client, KubernetesLauncherOptions options)
    : client_(client), options_(std::move(options)) {}

KubernetesLauncher::~KubernetesLauncher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  for (auto& w : pods_) w->stop();
}

void KubernetesLauncher::reapLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    const TimePoint now = std::chrono::steady_clock::now();
    std::vector<std::pair<std::string, int>> due;
    TimePoint next = now + std::chrono::seconds(1);
    for (auto it = stopAt_.begin(); it != stopAt_.end();) {
      if (it->second <= now) {
        auto job = jobs_.find(it->first.first);
        if (job != jobs_.end() && !job->second.slots[it->first.second].ended) due.push_back(it->first);
        it = stopAt_.erase(it);
      } else {
        next = std::min(next, it->second);
        ++it;
      }
    }
    if (!due.empty()) {
      lock.unlock();
      for (const auto& [job, slot] : due) {
        Status st = deletePod(job, slot, 0);
        if (!st.isOk() && st.code() != StatusCode::kNotFound) {
          DDP_LOG(Warning) << "kubernetes: stopping " << workerPodName(job, slot) << ": " << st.message();
        }
      }
      lock.lock();
      continue;
    }
    cv_.wait_until(lock, next, [&] { return stopping_; });
  }
}

Result<std::string> KubernetesLauncher::namespaceOf(const JobSpec& spec) const {
  if (spec.nameSpace.empty() || spec.nameSpace == options_.nameSpace || options_.allNamespaces) {
    return spec.nameSpace.empty() ? options_.nameSpace : spec.nameSpace;
  }
  const auto& served = options_.namespaces;
  if (std::find(served.begin(), served.end(), spec.nameSpace) != served.end()) return spec.nameSpace;
  std::string list = options_.nameSpace;
  for (const std::string& ns : served) list += ns == options_.nameSpace ? "" : ", " + ns;
  return invalidArgument("metadata.namespace: '" + spec.nameSpace + "' is not a namespace this controller serves (" +
                         list + "; --watch-namespace, --watch-all-namespaces)");
}

std::string KubernetesLauncher::jobNamespace(const std::string& job) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(job);
  return it == jobs_.end() || it->second.nameSpace.empty() ? options_.nameSpace : it->second.nameSpace;
}

std::optional<WorkerMemoryBudget> KubernetesLauncher::workerMemory(int, int ranksPerPod, const std::string& limit) const {
  if (limit.empty()) return std::nullopt;
  auto bytes = parseKubernetesQuantity(limit);
  if (!bytes.isOk() || *bytes <= 0) return std::nullopt;  // the spec's validation names a bad quantity
  // Note [Several ranks per pod]: the pod's ranks are processes of one container, under its one
  // limit.
  const int ranks = std::max(1, ranksPerPod);
  std::string source = "the worker pod's memory limit " + limit;
  if (ranks > 1) source += " shared by its " + std::to_string(ranks) + " ranks";
  return WorkerMemoryBudget{static_cast<int64_t>(*bytes) / ranks, source, "spec.kubernetes.resources.limits.memory"};
}

Status KubernetesLauncher::ready() const {
  for (const auto& w : pods_) {
    if (!w->synced()) return unavailable("kubernetes: the pod watch has not synced yet: " + w->lastError().message());
  }
  return Status::ok();
}

Result<WorkerObjectsInput> KubernetesLauncher::inputFor(const JobLaunch& launch) const {
  std::optional<JobSpec> spec = options_.specOf(launch.jobName);
  if (!spec) return notFound("kubernetes: no spec for job " + launch.jobName);
  WorkerObjectsInput in;
  DDP_ASSIGN_OR_RETURN(in.nameSpace, namespaceOf(*spec));
  in.defaultImage = options_.defaultImage;
  in.launch = launch;
  in.spec = *spec;
  in.schedulerName = options_.schedulerName;
  if (options_.ownerOf) in.owner = options_.ownerOf(launch.jobName);
  return in;
}

Status KubernetesLauncher::ensureWorkers(const JobLaunch& job) {
  DDP_RETURN_IF_ERROR(validateJobName(job.jobName));
  DDP_ASSIGN_OR_RETURN(WorkerObjectsInput in, inputFor(job));
  bool checked = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job.jobName);
    checked = it != jobs_.end() && it->second.incarnationChecked && it->second.launch.env.jobToken == job.env.jobToken;
  }
  if (!checked) DDP_RETURN_IF_ERROR(replaceOtherIncarnation(in));
  for (auto [collection, object] : {std::pair{secretsPath(in.nameSpace), buildTokenSecret(in)},
                                    std::pair{servicesPath(in.nameSpace), buildHeadlessService(in)}}) {
    // Once this launch found them the job's, an existing one is taken without reading it again.
    DDP_RETURN_IF_ERROR(createOwned(collection, object, in, /*knownOwned=*/checked));
  }
  DDP_RETURN_IF_ERROR(ensurePodGroup(in));
  std::vector<int> toCreate;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job& j = jobs_[job.jobName];
    j.launch = job;
    j.owner = in.owner;
    j.nameSpace = in.nameSpace;
    j.incarnationChecked = true;
    for (int s = 0; s < podCount(job.workers, job.perPod); ++s) {
      if (!j.slots[s].created) toCreate.push_back(s);
    }
  }
  for (int s : toCreate) DDP_RETURN_IF_ERROR(createPod(job.jobName, s));
  return Status::ok();
}

Status KubernetesLauncher::ensurePodGroup(const WorkerObjectsInput& in) {
  std::optional<json> group = buildPodGroup(schedulingInput(in), buildHeadlessService(in)["metadata"]);
  if (!group) return Status::ok();
  const std::string collection = podGroupCollection(gangSchedulerFor(in.schedulerName), in.nameSpace);
  // Note [Object ownership]: a PodGroup of the job's name that another object owns is not taken
  // (its minMember would gate the job's pods), nor deleted when the job goes.
  Status st = createOwned(collection, *group, in);
  if (!st.isOk()) {
    return Status(st.code(), "kubernetes: job " + in.launch.jobName + ": creating its PodGroup for the " +
                                 in.schedulerName + " scheduler: " + st.message());
  }
  std::lock_guard<std::mutex> lock(mu_);
  jobs_[in.launch.jobName].podGroupPath = collection + "/" + in.launch.jobName;
  return Status::ok();
}

Status KubernetesLauncher::replaceOtherIncarnation(const WorkerObjectsInput& in) {
  const std::string& job = in.launch.jobName;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_[job].nameSpace = in.nameSpace;  // deleteJobPods' namespace
  }
  auto secret = client_.get(secretsPath(in.nameSpace) + "/" + tokenSecretName(job));
  if (!secret.isOk() && secret.status().code() == StatusCode::kNotFound) return Status::ok();  // a new job
  if (!secret.isOk()) return secret.status();
  const Ownership whose = ownershipOf(*secret, job, in.owner);  // Note [Object ownership]
  if (whose == Ownership::kAnother) return notTheJobs("secrets", *secret, job);
  if (whose == Ownership::kJobs && secretHoldsToken(*secret, in.launch.env.jobToken)) return Status::ok();
  DDP_LOG(Warning) << "kubernetes: job " << job << ": its Secret and pods are of another incarnation of the job "
                   << "(e.g. a previous leader's); replacing them (Note [Job incarnations])";
  DDP_RETURN_IF_ERROR(deleteJobPods(job, in.owner));
  Status st = client_.remove(secretsPath(in.nameSpace) + "/" + tokenSecretName(job));
  if (!st.isOk() && st.code() != StatusCode::kNotFound) return st;
  return Status::ok();
}

Status KubernetesLauncher::deleteJobPods(const std::string& job, const std::optional<JobOwner>& owner) {
  const std::string collection = podsPath(jobNamespace(job));
  const std::string list = collection + jobPodsQuery(job);
  const Deadline deadline = Deadline::after(options_.replaceTimeout);
  for (bool first = true;; first = false) {
    DDP_ASSIGN_OR_RETURN(json pods, client_.get(list));
    json items = json::array();
    for (const json& pod : pods.value("items", json::array())) {
      if (ownershipOf(pod, job, owner) != Ownership::kAnother) items.push_back(pod);  // Note [Object ownership]
    }
    if (items.empty()) return Status::ok();
    if (deadline.expired()) {
      return unavailable("kubernetes: job " + job + ": " + std::to_string(items.size()) + " pods of another incarnation " +
                         "still there after " + formatDuration(options_.replaceTimeout));
    }
    for (const json& pod : items) {
      const json& meta = pod["metadata"];
      {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_[job].stalePods.insert(meta.value("uid", ""));
      }
      if (!first && meta.contains("deletionTimestamp")) continue;  // on its way
      // At once (grace 0): a fresh pod of the same name can be created only when it is gone.
      Status st = client_.remove(collection + "/" + meta.value("name", "") + "?gracePeriodSeconds=0");
      if (!st.isOk() && st.code() != StatusCode::kNotFound) return st;
    }
    std::this_thread::sleep_for(std::min<Duration>(std::chrono::milliseconds(200), deadline.remaining()));
  }
}

Status KubernetesLauncher::adoptJob(const JobLaunch& job) {
  DDP_RETURN_IF_ERROR(validateJobName(job.jobName));
  DDP_ASSIGN_OR_RETURN(WorkerObjectsInput in, inputFor(job));
  std::lock_guard<std::mutex> lock(mu_);
  Job& j = jobs_[job.jobName];
  j.launch = job;
  j.nameSpace = in.nameSpace;
  if (options_.ownerOf) j.owner = options_.ownerOf(job.jobName);
  for (int s = 0; s < podCount(job.workers, job.perPod); ++s) j.slots[s].created = true;
  return Status::ok();
}

Status KubernetesLauncher::createPod(const std::string& job, int slot) {
  JobLaunch launch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return notFound("kubernetes: unknown job " + job);
    launch = it->second.launch;
  }
  DDP_ASSIGN_OR_RETURN(WorkerObjectsInput in, inputFor(launch));
  DDP_RETURN_IF_ERROR(createOwned(podsPath(in.nameSpace), buildWorkerPod(in, slot), in));
  std::lock_guard<std::mutex> lock(mu_);
  Slot& s = jobs_[job].slots[slot];
  s.created = true;
  s.ended = false;
  return Status::ok();
}

Status KubernetesLauncher::deletePod(const std::string& job, int slot, std::optional<int64_t> graceSeconds) {
  std::string path = podsPath(jobNamespace(job)) + "/" + workerPodName(job, slot);
  if (graceSeconds) path += "?gracePeriodSeconds=" + std::to_string(*graceSeconds);
  return client_.remove(path);
}

std::optional<int> KubernetesLauncher::podOf(const std::string& job, const std::string& workerId) const {
  int perPod = 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it != jobs_.end()) perPod = std::max(1, it->second.launch.perPod);
  }
  return podOfWorkerId(job, workerId, perPod);
}

Status KubernetesLauncher::killWorker(const std::string& job, const std::string& workerId, int signal) {
  // Note [Several ranks per pod]: a rank is killed with its pod (its siblings too).
  const std::optional<int> slot = podOf(job, workerId);
  if (!slot) return notFound("kubernetes: " + workerId + " is not a worker of job " + job);
  // Pods take no signals: SIGKILL deletes at once, anything else with the default grace
  // (SIGTERM, then SIGKILL after terminationGracePeriodSeconds).
  return deletePod(job, *slot, signal == SIGKILL ? std::optional<int64_t>(0) : std::nullopt);
}

Status KubernetesLauncher::replaceWorker(const std::string& job, const std::string& workerId) {
  const std::optional<int> slot = podOf(job, workerId);
  if (!slot) return notFound("kubernetes: " + workerId + " is not a worker of job " + job);
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job& j = jobs_[job];
    Slot& s = j.slots[*slot];
    // Note [Several ranks per pod]: the controller asks for every rank of a pod; the first ask
    // replaces the pod, the siblings' asks find their rank in the replacement already.
    if (s.covered.erase(workerId) > 0) return Status::ok();
    s.covered.clear();
    for (const std::string& id : workerIdsOfPod(job, *slot, std::max(1, j.launch.perPod))) {
      if (id != workerId) s.covered.insert(id);
    }
    s.replacePending = true;
  }
  Status st = deletePod(job, *slot, 0);
  if (st.code() != StatusCode::kNotFound) return st;
  // Already gone: no DELETED event will come for it; create the replacement now.
  bool create = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job& j = jobs_[job];
    create = !j.holdReplacements;
    if (create) j.slots[*slot].replacePending = false;
  }
  return create ? createPod(job, *slot) : Status::ok();
}

void KubernetesLauncher::holdReplacements(const std::string& job, bool hold) {
  std::vector<int> release;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Job& j = jobs_[job];
    j.holdReplacements = hold;
    if (hold) return;
    for (auto& [slot, s] : j.slots) {
      if (s.replacePending && (s.ended || !s.created)) {
        s.replacePending = false;
        release.push_back(slot);
      }
    }
  }
  for (int slot : release) (void)createPod(job, slot);
}

void KubernetesLauncher::onPodEvent(const WatchEvent& e) {
  const std::string job = label(e.object, kJobLabel);
  const std::string slotText = label(e.object, kSlotLabel);
  if (job.empty() || slotText.empty()) return;
  const int slot = std::atoi(slotText.c_str());
  const json status = e.object.value("status", json::object());
  const std::string phase = status.value("phase", "");
  const bool deleted = e.type == WatchEvent::Type::kDeleted;
  if (!deleted && phase != "Succeeded" && phase != "Failed") return;
  WorkerExit exit;
  exit.jobName = job;
  exit.code = phase == "Succeeded" ? 0 : 1;
  for (const json& cs : status.value("containerStatuses", json::array())) {
    if (cs.value("name", "") != kWorkerContainer) continue;
    const json& t = cs.value("state", json::object()).value("terminated", json::object());
    if (t.contains("exitCode")) exit.code = t["exitCode"].get<int>();
    if (t.contains("signal")) {
      exit.signaled = true;
      exit.code = t["signal"].get<int>();
    }
    if (t.contains("message")) exit.lastLines.push_back(t["message"].get<std::string>());
  }
  bool report = false, recreate = false;
  int perPod = 1;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return;  // not a job of this controller (or forgotten)
    const std::string podNs = e.object.value("metadata", json::object()).value("namespace", "");
    if (!podNs.empty() && podNs != (it->second.nameSpace.empty() ? options_.nameSpace : it->second.nameSpace)) {
      return;  // a pod of the same job name in another namespace: not this job's (Note [Served namespaces])
    }
    perPod = std::max(1, it->second.launch.perPod);
    // Another incarnation's pod (Note [Job incarnations]): not a worker of this job.
    if (it->second.stalePods.count(e.object.value("metadata", json::object()).value("uid", ""))) return;
    Slot& s = it->second.slots[slot];
    if (!s.ended) {
      s.ended = true;
      report = true;
      exit.killedByLauncher = s.replacePending;
      if (deleted && phase != "Succeeded" && phase != "Failed") {
        exit.signaled = true;
        exit.code = SIGKILL;  // deleted while running
      }
    }
    if (deleted && s.replacePending && !it->second.holdReplacements) {
      s.replacePending = false;
      recreate = true;
    }
  }
  // Every rank of the pod ended with it (Note [Several ranks per pod]).
  for (int l = 0; report && options_.onExit && l < perPod; ++l) {
    exit.slot = slot * perPod + l;
    exit.workerId = workerIdFor(job, exit.slot);
    options_.onExit(exit);
  }
  if (recreate) {
    Status st = createPod(job, slot);
    if (!st.isOk()) DDP_LOG(Warning) << "kubernetes: replacing " << workerPodName(job, slot) << ": " << st.message();
  }
}

Result<std::unique_ptr<LogStream>> KubernetesLauncher::openLog(const std::string& job, const std::string& workerId,
                                                               LogOptions options) {
  std::vector<int> slots;
  if (workerId.empty()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return notFound("kubernetes: unknown job " + job);
    for (const auto& [slot, s] : it->second.slots) slots.push_back(slot);
  } else {
    std::optional<int> slot = podOf(job, workerId);  // a pod's log holds all of its ranks
    if (!slot) return notFound("kubernetes: " + workerId + " is not a worker of job " + job);
    slots.push_back(*slot);
  }
  if (options.follow) {
    PodLogStreamOptions fo;
    fo.podsPath = podsPath(jobNamespace(job));
    fo.job = job;
    fo.slots = slots;
    fo.prefixLines = workerId.empty();
    fo.tailLines = options.tailLines;
    fo.pollInterval = options_.logPollInterval;
    return std::unique_ptr<LogStream>(new PodLogFollowStream(client_, std::move(fo)));
  }
  std::string text;
  for (int slot : slots) {
    std::string path = podLogPath(podsPath(jobNamespace(job)), job, slot);
    if (options.tailLines >= 0) path += "&tailLines=" + std::to_string(options.tailLines);
    DDP_ASSIGN_OR_RETURN(KubeResponse r, client_.request("GET", path));
    DDP_RETURN_IF_ERROR(apiStatus(r, "log of " + workerPodName(job, slot)));
    if (workerId.empty()) {
      size_t start = 0;
      while (start < r.body.size()) {
        size_t nl = r.body.find('\n', start);
        const size_t end = nl == std::string::npos ? r.body.size() : nl + 1;
        text += "[w" + std::to_string(slot) + "] " + r.body.substr(start, end - start);
        start = end;
      }
    } else {
      text += r.body;
    }
  }
  if (!text.empty() && text.back() != '\n') text += '\n';
  return std::unique_ptr<LogStream>(new TextLogStream(std::move(text)));
}

Status KubernetesLauncher::stopJob(const std::string& job, Duration grace) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it == jobs_.end()) return Status::ok();
    const TimePoint at = std::chrono::steady_clock::now() + grace;
    for (auto& [slot, s] : it->second.slots) {
      s.replacePending = false;
      if (s.created && !s.ended && !stopAt_.count({job, slot})) stopAt_[{job, slot}] = at;
    }
  }
  cv_.notify_all();
  return Status::ok();
}

Status KubernetesLauncher::forgetJob(const std::string& job) {
  std::set<int> slots;
  std::string podGroup;
  std::optional<JobOwner> owner;
  std::string nameSpace = options_.nameSpace;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(job);
    if (it != jobs_.end()) {
      podGroup = it->second.podGroupPath;
      for (const auto& [slot, s] : it->second.slots) slots.insert(slot);
      owner = it->second.owner;
      if (!it->second.nameSpace.empty()) nameSpace = it->second.nameSpace;
      jobs_.erase(it);
    }
    std::erase_if(stopAt_, [&](const auto& e) { return e.first.first == job; });
  }
  if (!owner && options_.ownerOf) owner = options_.ownerOf(job);
  for (int slot : slots) (void)removeOwned(podsPath(nameSpace) + "/" + workerPodName(job, slot), job, owner);  // ended pods too
  for (const std::string& path : {servicesPath(nameSpace) + "/" + job, secretsPath(nameSpace) + "/" + tokenSecretName(job)}) {
    DDP_RETURN_IF_ERROR(removeOwned(path, job, owner));
  }
  if (!podGroup.empty()) {  // one this launcher created (a DDPJob's goes with it anyway)
    Status st = client_.remove(podGroup);
    if (!st.isOk() && st.code() != StatusCode::kNotFound) return st;
  }
  return Status::ok();
}

Status KubernetesLauncher::createOwned(const std::string& collection, const json& object, const WorkerObjectsInput& in,
                                       bool knownOwned) {
  const std::string job = in.launch.jobName;
  const std::string path = collection + "/" + object["metadata"].value("name", "");
  const std::string resource = collection.substr(collection.rfind('/') + 1);
  const Deadline deadline = Deadline::after(options_.replaceTimeout);
  while (true) {
    auto created = client_.create(collection, object);
    if (created.isOk() || created.status().code() != StatusCode::kAlreadyExists) return created.status();
    if (knownOwned) return Status::ok();
    auto existing = client_.get(path);
    if (!existing.isOk() && existing.status().code() == StatusCode::kNotFound) continue;  // gone meanwhile
    if (!existing.isOk()) return existing.status();
    switch (ownershipOf(*existing, job, in.owner)) {  // Note [Object ownership]
      case Ownership::kJobs: return Status::ok();
      case Ownership::kAnother: return notTheJobs(resource, *existing, job);
      case Ownership::kEarlierIncarnation: break;
    }
    if (deadline.expired()) {
      return unavailable("kubernetes: job " + job + ": " + resource + "/" + object["metadata"].value("name", "") +
                         " of an earlier DDPJob of this name still there after " +
                         formatDuration(options_.replaceTimeout));
    }
    Status st = client_.remove(path + (resource == "pods" ? "?gracePeriodSeconds=0" : ""));
    if (!st.isOk() && st.code() != StatusCode::kNotFound) return st;
    std::this_thread::sleep_for(std::min<Duration>(std::chrono::milliseconds(200), deadline.remaining()));
  }
}

Status KubernetesLauncher::removeOwned(const std::string& path, const std::string& job,
                                       const std::optional<JobOwner>& owner) {
  auto existing = client_.get(path);
  if (!existing.isOk()) return existing.status().code() == StatusCode::kNotFound ? Status::ok() : existing.status();
  if (ownershipOf(*existing, job, owner) != Ownership::kJobs) {  // Note [Object ownership]
    DDP_LOG(Info) << "kubernetes: job " << job << ": leaving " << path << " alone: it is not the job's ("
                  << describeOwner(*existing) << ")";
    return Status::ok();
  }
  Status st = client_.remove(path);
  return st.code() == StatusCode::kNotFound ? Status::ok() : st;
}

Status KubernetesLauncher::notTheJobs(const std::string& resource, const json& existing, const std::string& job) {
  return failedPrecondition("kubernetes: " + resource + "/" + existing["metadata"].value("name", "") +
                            " already exists and is not job " + job + "'s (" + describeOwner(existing) +
                            "): the job's objects are named after the job, so it cannot run under this name; "
                            "submit it under another name (Note [Object ownership])");
}

std::vector<int64_t> KubernetesLauncher::livePids(const std::string&) const { return {}; }

}  // namespace ddp::controller::kube
