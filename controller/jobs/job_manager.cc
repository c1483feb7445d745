// JobManager: the registry of jobs (Note [Per-job locking] in job.h), its start (the stored jobs
// live again) and stop, submission and the read-only calls. The per-job logic is the Job's
// (job.cc and the job_*.cc files); the other calls are job_manager_calls.cc, the ticker and the
// persistence writers job_ticker.cc.
#include "controller/jobs/job_manager.h"

#include <algorithm>

#include "common/checkpoint/checkpoint_catalog.h"
#include "common/log.h"
#include "common/secret.h"
#include "controller/jobs/admission/data_checks.h"
#include "controller/jobs/admission/init_checks.h"
#include "controller/jobs/job.h"
#include "controller/jobs/admission/memory_estimate.h"

namespace ddp::controller {

JobManager::JobManager(JobManagerOptions options, JobStore& store, Launcher& launcher, const Clock& clock)
    : options_(std::move(options)),
      store_(store),
      launcher_(launcher),
      clock_(clock),
      metrics_(options_.metrics != nullptr ? *options_.metrics : NullMetricsSink::instance()),
      env_{options_, clock_, metrics_} {}

JobManager::~JobManager() { stop(); }

std::shared_ptr<Job> JobManager::lookup(const std::string& name) const {
  std::lock_guard<std::mutex> lock(jobsMu_);
  auto it = jobs_.find(name);
  return it == jobs_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<Job>> JobManager::snapshot() const {
  std::lock_guard<std::mutex> lock(jobsMu_);
  std::vector<std::shared_ptr<Job>> out;
  out.reserve(jobs_.size());
  for (const auto& [name, job] : jobs_) out.push_back(job);
  return out;
}

LockedJob JobManager::lockJob(const std::string& name) const {
  std::shared_ptr<Job> job = lookup(name);
  if (job == nullptr) return {};
  LockedJob locked(std::move(job));
  if (locked->removed) return {};  // erased from the registry while we waited for its lock
  return locked;
}

void JobManager::unregister(Job& job) {
  job.removed = true;
  for (auto& [g, space] : job.spaces) space->clear();
  std::lock_guard<std::mutex> lock(jobsMu_);
  auto it = jobs_.find(job.record.name);
  if (it != jobs_.end() && it->second.get() == &job) jobs_.erase(it);
}

std::shared_ptr<Job> JobManager::restoreJob(JobRecord rec, JobSpec spec, TimePoint now) {
  auto live = std::make_shared<Job>(env_);
  live->spec = std::move(spec);
  live->record = std::move(rec);
  int64_t lastCheckpoint = -1;
  if (auto cps = store_.checkpoints(live->record.name); cps.isOk() && !cps->empty()) lastCheckpoint = cps->back().step;
  live->restore(now, launcher_.livePids(live->record.name), lastCheckpoint);
  return live;
}

void JobManager::reconcileCatalogs(const std::vector<JobRecord>& records) {
  if (!options_.catalogFromDisk) return;
  for (const JobRecord& rec : records) {
    auto spec = decodeJobSpec(rec.specYaml);
    if (!spec.isOk()) continue;
    const std::string dir = options_.workerCheckpointDir.empty() ? spec->checkpoint.dir : options_.workerCheckpointDir;
    if (dir.empty()) continue;
    auto onDisk = runtime::listCommitted(runtime::CheckpointStore(dir), rec.name);
    if (!onDisk.isOk()) {
      DDP_LOG(Warning) << "job " << rec.name << ": checkpoint catalog not reconciled with " << dir << ": "
                       << onDisk.status().message();
      continue;
    }
    std::vector<int64_t> steps;
    Status st = Status::ok();
    for (const runtime::CommittedCheckpoint& c : *onDisk) {
      steps.push_back(c.step);
      if (st.isOk()) st = store_.addCheckpoint(rec.name, {c.step, c.createdUnixMs, c.bytes, c.worldSize, c.path});
    }
    if (st.isOk()) st = store_.retainCheckpoints(rec.name, steps);
    if (!st.isOk()) DDP_LOG(Warning) << "job " << rec.name << ": checkpoint catalog: " << st.message();
  }
}

Status JobManager::start() {
  DDP_ASSIGN_OR_RETURN(auto records, store_.list());
  reconcileCatalogs(records);
  std::vector<std::shared_ptr<Job>> relaunch;  // never launched: their first reconcile launches them
  std::vector<JobLaunch> adopt;  // running jobs: their replacements start like their first workers
  const TimePoint now = clock_.now();
  for (auto& rec : records) {
    metrics_.jobPhase(rec.name, rec.phase);
    if (isTerminal(rec.phase)) continue;
    auto spec = decodeJobSpec(rec.specYaml);  // Note [Validated once]
    if (!spec.isOk()) {
      DDP_LOG(Error) << "job " << rec.name << ": stored spec no longer parses: " << spec.status().message();
      continue;
    }
    std::shared_ptr<Job> job = restoreJob(std::move(rec), std::move(*spec), now);
    {
      std::lock_guard<std::mutex> lock(jobsMu_);
      jobs_[job->record.name] = job;
    }
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->record.phase == JobPhase::kSuspended) {
      job->markSuspended();  // Note [Suspended jobs]: no worker until resumed
    } else if (job->lifecycle.launched) {
      adopt.push_back(job->launchRequest());
    } else {
      relaunch.push_back(job);
    }
    job->evaluate();
  }
  for (const auto& job : relaunch) reconcileNow(job);  // before the ticker's (Note [Tick actions])
  for (const JobLaunch& l : adopt) {
    if (Status st = launcher_.adoptJob(l); !st.isOk()) {
      DDP_LOG(Error) << "job " << l.jobName << ": the launcher could not take it over: " << st.toString()
                     << " (a worker that has to be replaced will fail the job)";
    }
  }
  stopping_ = false;
  writersStop_ = false;
  for (int i = 0; i < std::max(1, options_.persistWriters); ++i) writers_.emplace_back([this] { writerLoop(); });
  ticker_ = std::thread([this] { tickLoop(); });
  started_ = true;
  return Status::ok();
}

Status JobManager::changesAllowed() const {
  if (started_) return Status::ok();
  return unavailable("this controller replica is a standby (it does not hold the leader election lease): "
                     "send changes to the leader, through the controller's Service");
}

void JobManager::stop() {
  if (stopping_.exchange(true)) return;
  tickCv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  stopWriters();
  for (const auto& job : snapshot()) persistJob(*job, true);  // what is left, at once
  for (const auto& job : snapshot()) {
    std::lock_guard<std::mutex> lock(job->mu);
    for (auto& w : job->waiters) w.responder->reply(http::Response{503, "application/json", R"({"error":"the controller is stopping"})", {}});
    job->waiters.clear();
  }
}

void JobManager::launch(const std::shared_ptr<Job>& job) {
  JobLaunch l;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->removed) return;
    l = job->launchRequest();
  }
  Status st = launcher_.ensureWorkers(l);
  bool stopAgain = false;
  {
    std::lock_guard<std::mutex> lock(job->mu);
    if (job->removed) return;  // deleted meanwhile
    stopAgain = job->noteLaunched(l, st);
  }
  if (stopAgain) (void)launcher_.stopJob(l.jobName, job->cancelStopGrace());
}

Result<JobRecord> JobManager::submit(const JobSpec& spec) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  if (spec.workers.count > launcher_.maxWorkersPerJob()) {
    return invalidArgument("spec.workers.count: " + std::to_string(spec.workers.count) + " is more than the " +
                           launcher_.name() + " launcher can start (" + std::to_string(launcher_.maxWorkersPerJob()) +
                           ")");
  }
  DDP_RETURN_IF_ERROR(options_.paths.check("spec.checkpoint.dir", spec.checkpoint.dir));
  for (const auto& [field, path] : userDataPaths(spec)) DDP_RETURN_IF_ERROR(options_.paths.check(field, path));
  DDP_RETURN_IF_ERROR(options_.paths.check("spec.init.from", spec.init.from));
  if (launcher_.sharesFilesystem()) {
    DDP_RETURN_IF_ERROR(checkDataFiles(spec));
    DDP_RETURN_IF_ERROR(checkInitFile(spec));  // Note [Init file checks]
  }
  DDP_RETURN_IF_ERROR(options_.workerCommands.check(spec.worker.command));  // Note [Worker commands]
  {  // Note [Memory estimate]
    const auto limit = spec.kubernetes.resources.limits.find("memory");
    const std::string podLimit = limit == spec.kubernetes.resources.limits.end() ? "" : limit->second;
    DDP_RETURN_IF_ERROR(
        checkWorkerMemory(spec, launcher_.workerMemory(spec.workers.max, spec.workers.perPod, podLimit)));
  }
  JobRecord rec;
  rec.name = spec.name;
  DDP_ASSIGN_OR_RETURN(rec.uid, randomHex(16));
  rec.specYaml = spec.toYaml();
  DDP_ASSIGN_OR_RETURN(rec.workerToken, randomHex(32));
  rec.createdMs = wallMs();
  rec.phase = JobPhase::kPending;
  rec.setCondition(kConditionCreated, true, "JobCreated", "the job was accepted", rec.createdMs);
  auto job = std::make_shared<Job>(env_);
  job->lifecycle.launchHeld = true;  // launched by the reconcile below, not by a tick meanwhile
  {
    // One submission at a time: the name's check, its store row and its registry entry.
    std::lock_guard<std::mutex> one(submitMu_);
    if (lookup(spec.name) != nullptr) return alreadyExists("job " + spec.name + " already exists");
    DDP_RETURN_IF_ERROR(store_.create(rec));
    job->record = rec;
    job->spec = spec;
    job->openRendezvous();
    job->event(kEventNormal, "Created", "job created with " + std::to_string(spec.workers.count) + " worker(s)");
    metrics_.jobCreated(spec.name, spec.workers.count);
    if (spec.suspend) {  // Note [Suspended jobs]: stored, no worker started
      job->markSuspended();
      job->transition(JobPhase::kSuspended, "JobSuspended",
                      "submitted with spec.suspend: no worker starts until the job is resumed");
    }
    std::lock_guard<std::mutex> lock(jobsMu_);
    jobs_[spec.name] = job;
  }
  reconcileNow(job);  // Note [Tick actions]: its launch, whose failure is in this answer
  std::lock_guard<std::mutex> lock(job->mu);
  if (!job->removed) return job->record;
  return store_.get(spec.name);
}

Result<JobRecord> JobManager::get(const std::string& name) {
  if (LockedJob job = lockJob(name)) return job->record;
  return store_.get(name);
}

Result<std::vector<JobRecord>> JobManager::list() {
  DDP_ASSIGN_OR_RETURN(auto records, store_.list());
  for (auto& r : records) {
    if (LockedJob job = lockJob(r.name)) r = job->record;
  }
  return records;
}

Result<JobSpec> JobManager::spec(const std::string& name) {
  if (LockedJob job = lockJob(name)) return job->spec;
  DDP_ASSIGN_OR_RETURN(auto rec, store_.get(name));
  return decodeJobSpec(rec.specYaml);
}

bool JobManager::isFinished(const std::string& name) {
  LockedJob job = lockJob(name);
  return !job || isTerminal(job->record.phase);
}

Result<std::vector<JobEvent>> JobManager::events(const std::string& name) {
  if (auto job = lookup(name)) persistJob(*job, true);  // pending events first
  return store_.events(name);
}

Result<std::vector<CheckpointRecord>> JobManager::checkpoints(const std::string& name) {
  if (auto job = lookup(name)) persistJob(*job, true);
  return store_.checkpoints(name);
}

std::vector<JobGauges> JobManager::gauges() {
  const TimePoint now = clock_.now();
  std::vector<JobGauges> out;
  for (const auto& job : snapshot()) {
    std::lock_guard<std::mutex> lock(job->mu);
    if (!job->removed) out.push_back(job->gauges(now));
  }
  return out;
}

size_t JobManager::liveJobs() {
  std::lock_guard<std::mutex> lock(jobsMu_);
  return jobs_.size();
}

}  // namespace ddp::controller
