#include "controller/jobs/job_manager.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/secret.h"
#include "controller/jobs/data_checks.h"
#include "controller/jobs/init_checks.h"
#include "controller/jobs/memory_estimate.h"
#include "controller/jobs/job_decision.h"
#include "controller/jobs/job.h"
#include "controller/metrics/worker_figures.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

RendezvousConfig rendezvousConfig(const JobSpec& spec) {
  RendezvousConfig c;
  c.minWorkers = spec.workers.min;
  c.maxWorkers = spec.workers.max;
  c.lastCall = seconds(spec.timeouts.lastCallSeconds);
  return c;
}

std::string assignmentTailJson(const RendezvousRound& round, const std::string& specYaml,
                               const std::map<std::string, WorkerState>& workers, bool withPeers) {
  json rest = {{"worldSize", round.worldSize()}, {"generation", round.generation}, {"spec", specYaml},
               {"specSchema", kJobSpecSchemaVersion}};
  if (withPeers) {
    json peers = json::array();
    for (int r = 0; r < round.worldSize(); ++r) {
      const std::string& id = round.members[static_cast<size_t>(r)];
      auto it = workers.find(id);
      peers.push_back({{"rank", r}, {"workerId", id},
                       {"advertiseAddress", it == workers.end() ? "" : it->second.rec.advertiseAddress}});
    }
    rest["peers"] = std::move(peers);
  }
  std::string text = rest.dump();  // "{...}": keep "," + the members + "}"
  return "," + text.substr(1);
}

}  // namespace

JobManager::JobManager(JobManagerOptions options, JobStore& store, Launcher& launcher, const Clock& clock)
    : options_(std::move(options)),
      store_(store),
      launcher_(launcher),
      clock_(clock),
      metrics_(options_.metrics != nullptr ? *options_.metrics : NullMetricsSink::instance()) {}

JobManager::~JobManager() { stop(); }

int64_t JobManager::wallMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

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
  auto live = std::make_shared<Job>();
  live->spec = std::move(spec);
  live->record = std::move(rec);
  live->generationStart = now;
  std::vector<WorkerRecord> byRank;
  for (const auto& w : live->record.workers) {
    WorkerState ws;
    ws.rec = w;
    ws.lastSeen = now;  // a restarted controller gives every worker a full heartbeat window
    ws.stepChangedAt = now;  // ... and a full progress window
    live->workers[w.id] = ws;
    if (w.rank >= 0) byRank.push_back(w);
  }
  std::sort(byRank.begin(), byRank.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  if (live->record.generation > 0 && !byRank.empty()) {
    RendezvousRound round;
    round.generation = live->record.generation;
    round.closedAt = now;
    for (const auto& w : byRank) round.members.push_back(w.id);
    live->rdzv = Rendezvous::restored(rendezvousConfig(live->spec), round);
    live->assignmentTail = assignmentTailJson(*live->rdzv->active(), live->record.specYaml, live->workers, false);
    live->assignmentTailWithPeers =
        assignmentTailJson(*live->rdzv->active(), live->record.specYaml, live->workers, true);
    live->spaces[round.generation] = std::make_shared<comm::KeySpace>(options_.storeQuotaBytes);
  } else {
    live->rdzv.emplace(rendezvousConfig(live->spec), live->record.generation);
  }
  if (auto cps = store_.checkpoints(live->record.name); cps.isOk() && !cps->empty()) {
    live->checkpoints.lastStep = cps->back().step;
  }
  markWorkersAfterRestart(launcher_.livePids(live->record.name), live->record.generation, now, &live->workers);
  event(*live, kEventNormal, "ControllerRestarted", "the controller restarted and took the job over again");
  // Only a job that never reached rendezvous may still have slots to start; a running one
  // keeps the workers it has.
  live->lifecycle.launched = live->record.generation > 0;
  return live;
}

Status JobManager::start() {
  DDP_ASSIGN_OR_RETURN(auto records, store_.list());
  reconcileCatalogs(records);
  std::vector<std::shared_ptr<Job>> relaunch;
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
    if (job->lifecycle.launched) {
      adopt.push_back(jobLaunchOf(*job));
    } else {
      relaunch.push_back(job);
    }
    evaluate(*job);
  }
  for (const auto& job : relaunch) launch(job);
  for (const JobLaunch& l : adopt) {
    if (Status st = launcher_.adoptJob(l); !st.isOk()) {
      DDP_LOG(Error) << "job " << l.jobName << ": the launcher could not take it over: " << st.toString()
                     << " (a worker that has to be replaced will fail the job)";
    }
  }
  stopping_ = false;
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
  persistFigures(true);
  for (const auto& job : snapshot()) {
    std::lock_guard<std::mutex> lock(job->mu);
    for (auto& w : job->waiters) w.responder->reply(http::Response{503, "application/json", R"({"error":"the controller is stopping"})", {}});
    job->waiters.clear();
  }
}

JobLaunch JobManager::jobLaunchOf(const Job& job) const {
  JobLaunch l;
  l.jobName = job.record.name;
  l.workers = job.spec.workers.count;
  l.env.controllerUrl = options_.controllerUrl;
  l.env.jobName = job.record.name;
  l.env.jobToken = job.record.workerToken;
  l.env.logFormat = options_.workerLogFormat;
  l.env.checkpointDir = options_.workerCheckpointDir;
  l.env.commThreadPriority = options_.commThreadPriority;
  l.command = job.spec.worker.command;
  return l;
}

void JobManager::launch(const std::shared_ptr<Job>& jobPtr) {
  Job& job = *jobPtr;
  JobLaunch l;
  {
    std::lock_guard<std::mutex> lock(job.mu);
    l = jobLaunchOf(job);
  }
  Status st = launcher_.ensureWorkers(l);
  std::unique_lock<std::mutex> lock(job.mu);
  if (job.removed) return;  // deleted meanwhile
  job.lifecycle.launched = true;
  if (!st.isOk()) {
    transition(job, JobPhase::kFailed, "LaunchFailed", "could not start the workers: " + st.toString());
    return;
  }
  for (int i = 0; i < l.workers; ++i) {
    const std::string id = workerIdFor(l.jobName, i);
    if (!job.workers.count(id)) {
      WorkerState ws;
      ws.rec.id = id;
      ws.rec.state = "Starting";
      ws.lastSeen = clock_.now();
      job.workers[id] = ws;
    }
  }
  // The workers may have registered and closed the rendezvous while the launcher was still
  // starting the others: that close found the job not launched yet and decided nothing, and the
  // job would stay Pending (no hang detection) until a worker finished.
  if (job.rdzv->active()) evaluate(job);
  if (job.lifecycle.cancelRequested && job.lifecycle.stopSent) {
    // Cancelled while the launcher was still starting the workers: the cancel's stopJob knew
    // only the workers started by then. Stop again, now that every one exists.
    lock.unlock();
    (void)launcher_.stopJob(l.jobName, cancelStopGrace());
  }
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
    DDP_RETURN_IF_ERROR(checkWorkerMemory(spec, launcher_.workerMemory(spec.workers.max, podLimit)));
  }
  JobRecord rec;
  rec.name = spec.name;
  DDP_ASSIGN_OR_RETURN(rec.uid, randomHex(16));
  rec.specYaml = spec.toYaml();
  DDP_ASSIGN_OR_RETURN(rec.workerToken, randomHex(32));
  rec.createdMs = wallMs();
  rec.phase = JobPhase::kPending;
  rec.setCondition(kConditionCreated, true, "JobCreated", "the job was accepted", rec.createdMs);
  auto job = std::make_shared<Job>();
  {
    // One submission at a time: the name's check, its store row and its registry entry.
    std::lock_guard<std::mutex> one(submitMu_);
    if (lookup(spec.name) != nullptr) return alreadyExists("job " + spec.name + " already exists");
    DDP_RETURN_IF_ERROR(store_.create(rec));
    job->record = rec;
    job->spec = spec;
    job->rdzv.emplace(rendezvousConfig(spec), 0);
    event(*job, kEventNormal, "Created", "job created with " + std::to_string(spec.workers.count) + " worker(s)");
    metrics_.jobCreated(spec.name, spec.workers.count);
    std::lock_guard<std::mutex> lock(jobsMu_);
    jobs_[spec.name] = job;
  }
  launch(job);
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

std::string JobManager::assignmentJson(const Job& job, const std::string& workerId, bool withPeers) const {
  return "{\"rank\":" + std::to_string(*job.rdzv->active()->rankOf(workerId)) +
         (withPeers ? job.assignmentTailWithPeers : job.assignmentTail);
}

void JobManager::wakeAssignments(Job& job) {
  const auto& active = job.rdzv->active();
  if (!active) return;
  // The round just closed: its generation's store, ranks, and one reply per waiting member.
  if (!job.spaces.count(active->generation)) {
    for (auto& [g, space] : job.spaces) space->clear();
    job.spaces.clear();
    job.spaces[active->generation] = std::make_shared<comm::KeySpace>(options_.storeQuotaBytes);
    job.record.generation = active->generation;
    for (auto& [id, w] : job.workers) w.rec.rank = -1;
    job.membership.steppedInGeneration.clear();
    const TimePoint now = clock_.now();
    job.generationStart = now;
    metrics_.rendezvousClosed(job.record.name, active->generation, active->worldSize(),
                              std::chrono::duration<double>(active->closedAt - active->openedAt).count());
    for (int r = 0; r < active->worldSize(); ++r) {
      WorkerState& w = job.workers[active->members[static_cast<size_t>(r)]];
      w.rec.rank = r;
      w.rec.state = "Running";
      w.lastSeen = now;  // the heartbeat window starts with the generation
      w.stepChangedAt = now;
      w.collectives.clear();
      w.leftOnItsOwn = false;
      w.checkpointAsked = job.checkpoints.requests;  // a request before this generation is void
    }
    if (job.record.phase == JobPhase::kRestarting) {
      const int64_t ms = wallMs();
      job.record.setCondition(kConditionRestarting, false, "Rejoined",
                              "generation " + std::to_string(active->generation) + " formed", ms);
      job.record.phase = JobPhase::kRunning;
      metrics_.jobPhase(job.record.name, JobPhase::kRunning);
      job.record.setCondition(kConditionRunning, true, "Rejoined",
                              "generation " + std::to_string(active->generation) + " with " +
                                  std::to_string(active->worldSize()) + " worker(s) resumes from a survivor's state or the last checkpoint",
                              ms);
    }
    job.assignmentTail = assignmentTailJson(*active, job.record.specYaml, job.workers, false);
    job.assignmentTailWithPeers = assignmentTailJson(*active, job.record.specYaml, job.workers, true);
    event(job, kEventNormal, "RendezvousClosed",
          "generation " + std::to_string(active->generation) + " with " + std::to_string(active->worldSize()) +
              " worker(s)");
    noteMembership(job);
    job.outbox.dirty = true;
    evaluate(job);
  }
  std::vector<Waiter> still;
  for (auto& w : job.waiters) {
    if (active->generation > w.after && active->rankOf(w.workerId)) {
      http::Response res;
      res.body = assignmentJson(job, w.workerId, w.withPeers);
      w.responder->reply(std::move(res));
    } else {
      still.push_back(std::move(w));
    }
  }
  job.waiters = std::move(still);
}

void JobManager::evaluate(Job& job) {
  if (!job.lifecycle.launched) return;
  if (detectAndRecover(job)) return;
  if (finishedDuringChange(job)) return;
  JobFacts f;
  f.now = clock_.now();
  f.phase = job.record.phase;
  f.cancelRequested = job.lifecycle.cancelRequested;
  f.generationActive = job.rdzv->active().has_value();
  for (const auto& [id, w] : job.workers) {
    if (w.processAlive || w.replacing) ++f.liveProcesses;
    if (f.generationActive && !job.rdzv->active()->rankOf(id)) continue;
    f.members.push_back({id, w.outcome, w.processAlive, w.message, w.failureFromExit, w.failedAt});
  }
  JobVerdict v = decideJob(f);
  if (!v.next) return;
  transition(job, *v.next, v.reason, v.message);
  // The ticker signals them, outside the lock (evaluate also runs on request paths that must
  // not wait for the launcher).
  if (v.stopWorkers) job.lifecycle.stopPending = true;
}

void JobManager::transition(Job& job, JobPhase next, const std::string& reason, const std::string& message) {
  const int64_t now = wallMs();
  JobRecord& r = job.record;
  if (r.phase == next) return;
  if (next == JobPhase::kRunning) {
    if (r.startMs == 0) r.startMs = now;
    r.setCondition(kConditionRunning, true, reason, message, now);
  } else if (isTerminal(next)) {
    r.completionMs = now;
    r.setCondition(kConditionRunning, false, reason, message, now);
    const char* type = next == JobPhase::kSucceeded ? kConditionSucceeded
                       : next == JobPhase::kFailed  ? kConditionFailed
                                                    : kConditionCancelled;
    r.setCondition(type, true, reason, message, now);
  }
  r.phase = next;
  metrics_.jobPhase(r.name, next);
  event(job, next == JobPhase::kFailed ? kEventWarning : kEventNormal, reason, message);
  DDP_LOG(Info) << "job " << r.name << ": " << jobPhaseName(next) << " (" << message << ")";
  if (isTerminal(next)) {
    for (auto& w : job.waiters) {
      replyJson(*w.responder, 409, {{"error", "job " + r.name + " is " + jobPhaseName(next)}, {"state", jobPhaseName(next)}});
    }
    job.waiters.clear();
  }
  job.outbox.dirty = true;
}

void JobManager::event(Job& job, const std::string& type, const std::string& reason, const std::string& message) {
  job.outbox.events.push_back({wallMs(), type, reason, message});
}

void JobManager::persistFigures(bool force) {
  const TimePoint now = clock_.now();
  const bool periodic = force || now - lastPersist_ >= options_.persistEvery;
  if (periodic) lastPersist_ = now;
  for (const auto& job : snapshot()) {
    if (persistJob(*job, periodic)) continue;
    // A finished job whose processes are gone needs no live state any more, once its last
    // batch was written (by an earlier pass), so that nothing it kept (events, flight records)
    // is missing from both the store and memory meanwhile.
    std::lock_guard<std::mutex> lock(job->mu);
    bool anyAlive = false;
    for (const auto& [id, w] : job->workers) anyAlive = anyAlive || w.processAlive;
    if (!job->removed && isTerminal(job->record.phase) && !anyAlive && job->waiters.empty() && !job->outbox.due(true)) {
      unregister(*job);
    }
  }
}

bool JobManager::persistJob(Job& job, bool periodic) {
  // Note [Persistence order] (job.h): the batch is taken and written under the job's persistMu.
  std::lock_guard<std::mutex> inOrder(job.persistMu);
  JobRecord record;
  Outbox::Batch batch;
  {
    std::lock_guard<std::mutex> lock(job.mu);
    if (job.removed || !job.outbox.due(periodic)) return false;
    job.record.workers.clear();
    for (const auto& [id, w] : job.workers) job.record.workers.push_back(w.rec);
    record = job.record;
    batch = job.outbox.take();
  }
  writeBatch(record, batch);
  return true;
}

void JobManager::writeBatch(JobRecord& record, const Outbox::Batch& batch) {
  // Ranked workers first, by rank (sorted here, outside the lock).
  std::sort(record.workers.begin(), record.workers.end(), [](const auto& a, const auto& b) {
    return a.rank != b.rank ? (a.rank < 0 ? false : b.rank < 0 ? true : a.rank < b.rank) : a.id < b.id;
  });
  Status st = store_.update(record);
  for (const auto& e : batch.events) st = st.isOk() ? store_.appendEvent(record.name, e) : st;
  for (const auto& c : batch.checkpoints) st = st.isOk() ? store_.addCheckpoint(record.name, c) : st;
  if (batch.catalog && st.isOk()) st = store_.retainCheckpoints(record.name, *batch.catalog);
  for (const auto& [timeMs, doc] : batch.flightRecords) {
    st = st.isOk() ? store_.putFlightRecord(record.name, timeMs, doc) : st;
  }
  if (!st.isOk() && st.code() != StatusCode::kNotFound) {
    DDP_LOG(Error) << "job " << record.name << ": could not write its record: " << st.toString();
  }
}

size_t JobManager::liveJobs() {
  std::lock_guard<std::mutex> lock(jobsMu_);
  return jobs_.size();
}

}  // namespace ddp::controller
