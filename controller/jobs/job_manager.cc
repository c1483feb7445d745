#include "controller/jobs/job_manager.h"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "common/secret.h"
#include "common/utf8.h"
#include "controller/jobs/memory_estimate.h"
#include "controller/jobs/worker_claim.h"
#include "controller/jobs/job_decision.h"
#include "controller/jobs/job_live.h"
#include "controller/metrics/worker_figures.h"

namespace ddp::controller {
namespace {

using nlohmann::json;


constexpr Duration kHeartbeatScan = std::chrono::milliseconds(250);

// Note [Worker incarnations] (worker_claim.cc): may `req` take the slot `w` holds now?
Status claimSlot(const JobSpec& spec, const WorkerState& w, const RegisterRequest& req, TimePoint now) {
  SlotHolder h;
  h.incarnation = w.incarnation;
  h.processAlive = w.processAlive;
  h.replacing = w.replacing;
  h.running = w.outcome == WorkerOutcome::kRunning;
  h.lastSeen = w.lastSeen;
  h.pid = w.rec.pid;
  const Duration fresh = seconds(1.5 * spec.timeouts.heartbeatSeconds);
  const std::string held = "worker id " + req.workerId + " is held by pid " + std::to_string(w.rec.pid) + ", heard " +
                           formatDuration(now - w.lastSeen) + " ago";
  switch (decideClaim(h, req.incarnation, now, fresh)) {
    case ClaimVerdict::kAccept: return Status::ok();
    case ClaimVerdict::kWait: return unavailable(held + ", not yet seen gone: retry");
    case ClaimVerdict::kRefuse:
      return alreadyExists(held + ", a live process: the registration of pid " + std::to_string(req.pid) +
                           " is refused (one process per worker id)");
  }
  return Status::ok();
}

// Whether a call presenting `incarnation` may act for `w`'s slot (adopting it after a restart).
bool holdsSlot(WorkerState& w, const std::string& incarnation) {
  bool adopt = false;
  if (!incarnationMatches(w.incarnation, incarnation, &adopt)) return false;
  if (adopt) w.incarnation = incarnation;
  return true;
}

RendezvousConfig rendezvousConfig(const JobSpec& spec) {
  RendezvousConfig c;
  c.minWorkers = spec.workers.min;
  c.maxWorkers = spec.workers.max;
  c.lastCall = seconds(spec.timeouts.lastCallSeconds);
  return c;
}

// "worker rank 1 killed by signal 9 (Killed) (fmnist-w1, pid 123)\nits last lines:\n  ..." — the
// first line names the rank the user knows; the worker's last lines follow on their own lines.
std::string describeFailure(int rank, const WorkerExit& exit) {
  std::string who = rank >= 0 ? "worker rank " + std::to_string(rank) : "worker " + exit.workerId;
  std::string how;
  if (!exit.startError.empty()) {
    how = "could not be started: " + exit.startError;
  } else if (!exit.statusKnown) {
    how = "ended while the controller was away (exit status unknown)";
  } else if (exit.signaled) {
    how = "killed by signal " + std::to_string(exit.code) + " (" + ::strsignal(exit.code) + ")";
  } else {
    how = "exited with status " + std::to_string(exit.code);
  }
  std::string msg = who + " " + how + " (" + exit.workerId + ", pid " + std::to_string(exit.pid) + ")";
  if (!exit.lastLines.empty()) {
    msg += "\nits last lines:";
    for (const auto& l : exit.lastLines) msg += "\n  " + toValidUtf8(l);  // Note [Invalid UTF-8]
  }
  return msg;
}

std::string assignmentTailJson(const RendezvousRound& round, const std::string& specYaml,
                               const std::map<std::string, WorkerState>& workers, bool withPeers) {
  json rest = {{"worldSize", round.worldSize()}, {"generation", round.generation}, {"spec", specYaml}};
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

JobManager::Live* JobManager::find(const std::string& name) {
  auto it = jobs_.find(name);
  return it == jobs_.end() ? nullptr : it->second.get();
}

Status JobManager::start() {
  DDP_ASSIGN_OR_RETURN(auto records, store_.list());
  reconcileCatalogs(records);
  std::vector<Live*> relaunch;
  std::vector<JobLaunch> adopt;  // running jobs: their replacements start like their first workers
  {
    std::lock_guard<std::mutex> lock(mu_);
    const TimePoint now = clock_.now();
    for (auto& rec : records) {
      metrics_.jobPhase(rec.name, rec.phase);
      if (isTerminal(rec.phase)) continue;
      auto spec = parseJobSpec(rec.specYaml);
      if (!spec.isOk()) {
        DDP_LOG(Error) << "job " << rec.name << ": stored spec no longer parses: " << spec.status().message();
        continue;
      }
      auto live = std::make_unique<Live>();
      live->spec = *spec;
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
        live->lastCheckpointStep = cps->back().step;
      }
      // Which workers are still there: the launcher re-adopted them (their pids are live), and
      // how the others ended, as far as the record knows.
      const std::vector<int64_t> pids = launcher_.livePids(live->record.name);
      for (auto& [id, w] : live->workers) {
        w.processAlive = w.rec.pid != 0 ? std::find(pids.begin(), pids.end(), w.rec.pid) != pids.end()
                                        : live->record.generation == 0 && !pids.empty();
        if (w.rec.state == "Succeeded") w.outcome = WorkerOutcome::kSucceeded;
        if (w.rec.state == "Stopped") w.outcome = WorkerOutcome::kStopped;
        if (w.rec.state == "Failed") w.outcome = WorkerOutcome::kFailed;
        if (!w.processAlive && w.outcome == WorkerOutcome::kRunning && w.rec.rank >= 0) {
          // Died while no controller watched: an ordinary recoverable fault (verdict Exited,
          // one restart of the budget, a replacement), as if its exit had been seen now.
          w.outcome = WorkerOutcome::kFailed;
          w.failureFromExit = true;
          w.failedAt = now;
          w.message = "worker rank " + std::to_string(w.rec.rank) + " (" + id +
                      ") ended while the controller was away, without reporting that it finished";
        }
      }
      event(*live, kEventNormal, "ControllerRestarted", "the controller restarted and took the job over again");
      Live* raw = live.get();
      jobs_[raw->record.name] = std::move(live);
      // Only a job that never reached rendezvous may still have slots to start; a running one
      // keeps the workers it has.
      raw->launched = raw->record.generation > 0;
      if (!raw->launched) relaunch.push_back(raw);
      if (raw->launched) adopt.push_back(jobLaunchOf(*raw));
      evaluate(*raw);
    }
  }
  for (Live* job : relaunch) launch(*job);
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
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, job] : jobs_) {
    for (auto& w : job->waiters) w.responder->reply(http::Response{503, "application/json", R"({"error":"the controller is stopping"})", {}});
    job->waiters.clear();
  }
}

JobLaunch JobManager::jobLaunchOf(const Live& job) const {
  JobLaunch l;
  l.jobName = job.record.name;
  l.workers = job.spec.workers.count;
  l.env.controllerUrl = options_.controllerUrl;
  l.env.jobName = job.record.name;
  l.env.jobToken = job.record.workerToken;
  l.env.logFormat = options_.workerLogFormat;
  l.env.checkpointDir = options_.workerCheckpointDir;
  l.env.commThreadPriority = options_.commThreadPriority;
  return l;
}

void JobManager::launch(Live& job) {
  JobLaunch l;
  {
    std::lock_guard<std::mutex> lock(mu_);
    l = jobLaunchOf(job);
  }
  Status st = launcher_.ensureWorkers(l);
  std::unique_lock<std::mutex> lock(mu_);
  if (find(l.jobName) != &job) return;  // deleted meanwhile
  job.launched = true;
  if (!st.isOk()) {
    transition(job, JobPhase::kFailed, "LaunchFailed", "could not start the workers: " + st.toString());
    return;
  }
  for (int i = 0; i < l.workers; ++i) {
    const std::string id = l.jobName + "-w" + std::to_string(i);
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
  if (job.cancelRequested && job.stopSent) {
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
  Live* job = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (find(spec.name) != nullptr) return alreadyExists("job " + spec.name + " already exists");
    DDP_RETURN_IF_ERROR(store_.create(rec));
    auto live = std::make_unique<Live>();
    live->record = rec;
    live->spec = spec;
    live->rdzv.emplace(rendezvousConfig(spec), 0);
    event(*live, kEventNormal, "Created", "job created with " + std::to_string(spec.workers.count) + " worker(s)");
    metrics_.jobCreated(spec.name, spec.workers.count);
    job = live.get();
    jobs_[spec.name] = std::move(live);
  }
  launch(*job);
  std::lock_guard<std::mutex> lock(mu_);
  if (Live* again = find(spec.name)) return again->record;
  return store_.get(spec.name);
}

Result<JobRecord> JobManager::get(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Live* job = find(name)) return job->record;
  }
  return store_.get(name);
}

Result<std::vector<JobRecord>> JobManager::list() {
  DDP_ASSIGN_OR_RETURN(auto records, store_.list());
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& r : records) {
    if (Live* job = find(r.name)) r = job->record;
  }
  return records;
}

Result<JobSpec> JobManager::spec(const std::string& name) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (Live* job = find(name)) return job->spec;
  }
  DDP_ASSIGN_OR_RETURN(auto rec, store_.get(name));
  return parseJobSpec(rec.specYaml);
}

bool JobManager::isFinished(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  return job == nullptr || isTerminal(job->record.phase);
}

Result<std::vector<JobEvent>> JobManager::events(const std::string& name) {
  persistFigures(true);  // pending events first
  return store_.events(name);
}

Result<std::vector<CheckpointRecord>> JobManager::checkpoints(const std::string& name) {
  persistFigures(true);
  return store_.checkpoints(name);
}

bool JobManager::workerTokenMatches(const std::string& name, const std::string& token) {
  std::string expected;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Live* job = find(name);
    if (job == nullptr) return false;
    expected = job->record.workerToken;
  }
  return secretEquals(expected, token);
}

Result<int64_t> JobManager::registerWorker(const std::string& name, const RegisterRequest& req, Fenced* fenced,
                                           std::string* incarnation) {
  std::string ignored;
  if (incarnation == nullptr) incarnation = &ignored;
  if (req.workerId.empty() || req.workerId.size() > 253) return invalidArgument("workerId: required, at most 253 characters");
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return notFound("job " + name + " is not running");
  if (isTerminal(job->record.phase) || job->cancelRequested) {
    return failedPrecondition("job " + name + " is " + (job->cancelRequested ? "cancelled" : jobPhaseName(job->record.phase)));
  }
  const TimePoint now = clock_.now();
  if (job->retired.count(req.workerId)) {
    // Note [Elastic membership]: a scale-down removed this slot; the worker stops (410).
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("worker " + req.workerId + " was retired: the job was scaled to " +
                        std::to_string(job->spec.workers.count) + " worker(s)");
  }
  WorkerState& w = job->workers[req.workerId];
  // A member that registers again has left its generation: it sends no flight record of it.
  job->flightRecordWanted.erase(req.workerId);
  job->flightRecordAsked.erase(req.workerId);
  if (req.leftGeneration > 0 && job->rdzv->isCurrent(req.leftGeneration) && w.rec.rank >= 0) {
    // A member aborted its communicator after a fault of its own; the hang detector decides
    // (Note [Hang verdicts], CollectiveFailed) and the worker waits for the next generation.
    if (!w.leftOnItsOwn) {
      w.leftOnItsOwn = true;
      w.leftAt = now;
      w.leftMessage = req.reason.empty() ? "no reason given" : req.reason;
      w.lastSeen = now;
      countAbort(*job, req.workerId, req.leftGeneration);
      if (req.lastStep >= 0) job->stepAtRejoin[req.workerId] = req.lastStep;
      event(*job, kEventWarning, "CommunicatorAborted",
            "worker rank " + std::to_string(w.rec.rank) + " (" + req.workerId + ") left generation " +
                std::to_string(req.leftGeneration) + ": " + w.leftMessage);
      job->dirty = true;
      evaluate(*job);
    }
    *incarnation = w.incarnation;
    return job->rdzv->nextGeneration();
  }
  if (req.leftGeneration > 0 && !job->rdzv->isCurrent(req.leftGeneration) &&
      (req.leftGeneration != job->abortedGeneration || !job->survivors.count(req.workerId))) {
    // Note [Recovery]: a process of a generation that ended without it as a survivor (a stopped
    // worker that was blamed and woke up later): its place went to a replacement.
    fenced->current = fencingGeneration(*job->rdzv);
    event(*job, kEventWarning, "Fenced",
          "worker " + req.workerId + " (pid " + std::to_string(req.pid) + ") tried to rejoin after generation " +
              std::to_string(req.leftGeneration) + ", which ended without it: refused");
    return abortedError("stale generation " + std::to_string(req.leftGeneration));
  }
  if (req.leftGeneration > 0 && req.leftGeneration == job->abortedGeneration) {
    // A survivor of a verdict rejoining: its own abort counts (it may never have been told to by
    // a heartbeat), and so does the step it stopped at.
    countAbort(*job, req.workerId, req.leftGeneration);
    if (req.lastStep >= 0) job->stepAtRejoin[req.workerId] = req.lastStep;
  }
  if (Status claim = claimSlot(job->spec, w, req, now); !claim.isOk()) {
    if (claim.code() == StatusCode::kAlreadyExists) {
      DDP_LOG(Warning) << "job " << name << ": " << claim.message();
      event(*job, kEventWarning, "DuplicateWorkerRefused", claim.message());
    }
    return claim;
  }
  if (w.incarnation.empty() || w.incarnation != req.incarnation) {
    DDP_ASSIGN_OR_RETURN(w.incarnation, randomHex(16));
  }
  *incarnation = w.incarnation;
  w.rec.id = req.workerId;
  w.rec.host = req.host;
  w.rec.advertiseAddress = req.advertiseAddress;
  w.rec.pid = req.pid;
  w.rec.state = "Waiting";
  w.lastSeen = now;
  w.processAlive = true;
  // A fresh start in this slot, or a survivor rejoining: nothing of its last run counts.
  w.outcome = WorkerOutcome::kRunning;
  w.failureFromExit = false;
  w.message.clear();
  w.leftOnItsOwn = false;
  w.replacing = false;
  w.badConfigExit = false;
  w.collectives.clear();
  const int64_t before = job->rdzv->generation();
  const int64_t g = job->rdzv->join(req.workerId, now);
  if (job->rdzv->generation() != before) wakeAssignments(*job);
  if (job->rdzv->active() && !job->rdzv->active()->rankOf(req.workerId)) {
    // A late joiner (Note [Elastic membership]): the generation may end to take it in.
    if (!job->firstLateJoinAt) job->firstLateJoinAt = now;
    evaluateMembership(*job);
  }
  job->dirty = true;
  return g;
}

std::string JobManager::assignmentJson(const Live& job, const std::string& workerId, bool withPeers) const {
  return "{\"rank\":" + std::to_string(*job.rdzv->active()->rankOf(workerId)) +
         (withPeers ? job.assignmentTailWithPeers : job.assignmentTail);
}

void JobManager::wakeAssignments(Live& job) {
  const auto& active = job.rdzv->active();
  if (!active) return;
  // The round just closed: its generation's store, ranks, and one reply per waiting member.
  if (!job.spaces.count(active->generation)) {
    for (auto& [g, space] : job.spaces) space->clear();
    job.spaces.clear();
    job.spaces[active->generation] = std::make_shared<comm::KeySpace>(options_.storeQuotaBytes);
    job.record.generation = active->generation;
    for (auto& [id, w] : job.workers) w.rec.rank = -1;
    job.steppedInGeneration.clear();
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
      w.checkpointAsked = job.checkpointRequest;  // a request before this generation is void
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
    job.dirty = true;
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

void JobManager::awaitAssignment(const std::string& name, const std::string& workerId, Duration wait,
                                 bool withPeers, int64_t after, std::shared_ptr<http::Responder> responder,
                                 const std::string& incarnation) {
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return replyJson(*responder, 404, {{"error", "job " + name + " is not running"}});
  if (isTerminal(job->record.phase) || job->cancelRequested) {
    const char* state = job->cancelRequested ? "Cancelled" : jobPhaseName(job->record.phase);
    return replyJson(*responder, 409, {{"error", "job " + name + " is " + state}, {"state", state}});
  }
  auto known = job->workers.find(workerId);
  if (known == job->workers.end()) {
    return replyJson(*responder, 404, {{"error", "worker " + workerId + " is not registered with job " + name}});
  }
  if (!holdsSlot(known->second, incarnation)) {
    return replyJson(*responder, 410, {{"error", "stale incarnation: worker id " + workerId + " is held by another process"},
                                       {"generation", fencingGeneration(*job->rdzv)}});
  }
  known->second.lastSeen = clock_.now();  // polling is a sign of life too
  const auto& active = job->rdzv->active();
  if (active && active->generation > after && active->rankOf(workerId)) {
    http::Response res;
    res.body = assignmentJson(*job, workerId, withPeers);
    responder->reply(std::move(res));
    return;
  }
  job->waiters.push_back(
      {workerId, std::move(responder), clock_.now() + std::min(wait, options_.maxLongPoll), withPeers, after});
}

Result<std::shared_ptr<comm::KeySpace>> JobManager::keySpace(const std::string& name, int64_t g, Fenced* fenced) {
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return notFound("job " + name + " is not running");
  if (!job->rdzv->isCurrent(g)) {
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("stale generation " + std::to_string(g));
  }
  return job->spaces[g];
}

Result<Command> JobManager::heartbeat(const std::string& name, int64_t g, const Heartbeat& hb, Fenced* fenced) {
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return notFound("job " + name + " is not running");
  if (!job->rdzv->isCurrent(g)) {
    if (g == job->abortedGeneration && job->survivors.count(hb.workerId)) {
      // Note [Recovery]: a survivor of the generation a verdict ended aborts and rejoins.
      auto it = job->workers.find(hb.workerId);
      if (it != job->workers.end()) it->second.lastSeen = clock_.now();
      if (flightRecordCommand(*job, g, hb)) return Command{CommandType::kFlightRecord, 0};
      countAbort(*job, hb.workerId, g);
      return Command{CommandType::kAbort, 0};
    }
    if (g == job->abortedGeneration && awaitingFlightRecords(*job)) return Command{};  // not fenced yet
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("stale generation " + std::to_string(g));
  }
  auto it = job->workers.find(hb.workerId);
  if (it == job->workers.end() || it->second.rec.rank < 0) {
    return notFound("worker " + hb.workerId + " is not a member of generation " + std::to_string(g));
  }
  WorkerState& w = it->second;
  if (!holdsSlot(w, hb.incarnation)) {
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("stale incarnation: worker id " + hb.workerId + " is held by another process");
  }
  w.lastSeen = clock_.now();
  w.rec.lastHeartbeatMs = wallMs();
  if (hb.step != w.rec.step) w.stepChangedAt = w.lastSeen;
  w.rec.step = hb.step;
  if (hb.lastShard && hb.lastShard->generation == g && hb.lastShard->report.rank == w.rec.rank) {
    relearnShardReport(*job, g, *hb.lastShard);  // Note [Two-phase checkpoint commit]: after a restart
  }
  w.collectives = hb.collectives;
  if (!hb.final() && !hb.message.empty() && hb.message != w.lastWarning) {
    w.lastWarning = hb.message;
    event(*job, kEventWarning, "WorkerWarning", "worker rank " + std::to_string(w.rec.rank) + ": " + hb.message);
  }
  if (!w.abortUnreliableSeen && hb.ext.count("abortUnreliable") && hb.ext.at("abortUnreliable") != 0) {
    w.abortUnreliableSeen = true;
    event(*job, kEventWarning, "AbortUnreliable",
          "worker " + hb.workerId + ": its communicator abort did not release a blocked collective in the start-up "
          "self-test; a hang on it is recovered only by replacing the process");
  }
  if (job->recovering) noteRecovered(*job, hb.workerId, hb);
  if (auto steps = hb.counters.find("steps"); steps != hb.counters.end() && steps->second >= 1) {
    job->steppedInGeneration.insert(hb.workerId);  // Note [Elastic membership]: settled
  }
  if (hb.final() && w.outcome == WorkerOutcome::kRunning) {
    w.outcome = hb.state == "Succeeded" ? WorkerOutcome::kSucceeded
                : hb.state == "Stopped" ? WorkerOutcome::kStopped
                                        : WorkerOutcome::kFailed;
    w.message = hb.message.empty() ? "" : "worker rank " + std::to_string(w.rec.rank) + " (" + hb.workerId + "): " + hb.message;
    w.failedAt = clock_.now();
    if (w.outcome == WorkerOutcome::kFailed) job->awaitingSettle = true;
    w.rec.state = hb.state;
    job->dirty = true;
  }
  if (w.rec.rank == 0) {
    JobProgress& p = job->record.progress;
    p.step = hb.step;
    p.totalSteps = hb.totalSteps;
    p.epoch = hb.epoch;
    p.epochs = hb.epochs;
    p.loss = hb.loss;
    p.samplesPerSecond = hb.samplesPerSecond;
    if (hb.testAccuracy) p.testAccuracy = hb.testAccuracy;
    const double globalBatch = static_cast<double>(job->spec.data.batchSize) * job->rdzv->active()->worldSize();
    p.etaSeconds = hb.samplesPerSecond > 0 && p.totalSteps > p.step
                       ? static_cast<double>(p.totalSteps - p.step) * globalBatch / hb.samplesPerSecond
                       : 0;
    // The checkpoint rank 0 resumed from (committed ones arrive by reportCommit: Note
    // [Two-phase checkpoint commit]).
    if (hb.checkpoint && hb.checkpoint->step > job->lastCheckpointStep) job->lastCheckpointStep = hb.checkpoint->step;
  }
  WorkerFigures figures = workerFigures(hb);
  figures.etaSeconds = job->record.progress.etaSeconds;
  metrics_.heartbeat(name, hb.workerId, g, w.rec.rank, figures);
  job->figuresDirty = true;
  if (hb.final()) evaluate(*job);
  Command c;
  if (flightRecordCommand(*job, g, hb) && !hb.final()) {
    c.type = CommandType::kFlightRecord;
  } else if (job->cancelRequested || (isTerminal(job->record.phase) && !hb.final())) {
    c.type = CommandType::kStop;
  } else if (w.checkpointAsked < job->checkpointRequest && !hb.final()) {
    // Each member is told once; the ranks agree on the step themselves (the trainer's
    // per-step flag allreduce), so telling any one of them is enough.
    w.checkpointAsked = job->checkpointRequest;
    c.type = CommandType::kCheckpoint;
    c.step = job->checkpointRequestStep;
  }
  return c;
}

void JobManager::onWorkerExit(const WorkerExit& exit) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    exits_.push_back(exit);
  }
  {
    std::lock_guard<std::mutex> lock(tickMu_);
    exitsPending_ = true;
  }
  tickCv_.notify_all();  // handled now, not at the next tick
}

void JobManager::handleExit(const WorkerExit& exit) {
  Live* job = find(exit.jobName);
  if (job == nullptr) return;
  if (handleRetiredExit(*job, exit)) return;
  WorkerState& w = job->workers[exit.workerId];
  // Cancelled while a replacement was starting: the slot's old process is gone, so an exit of
  // another pid is the replacement's (refused at registration), and it ends the slot.
  const bool replacementOfCancelled = job->cancelRequested && w.replacing && !w.processAlive;
  if (exit.pid != 0 && w.rec.pid != 0 && exit.pid != w.rec.pid && !replacementOfCancelled) {
    // An earlier process of this slot (replaced since): its exit changes nothing.
    event(*job, kEventNormal, "WorkerExited", exit.describe() + " (replaced)");
    return;
  }
  w.rec.id = exit.workerId;
  w.processAlive = false;
  if (w.replacing && !job->cancelRequested) {
    // Note [Recovery]: the culprit the controller is replacing.
    job->rdzv->leave(exit.workerId, clock_.now());
    event(*job, kEventNormal, "WorkerExited", exit.describe() + " (being replaced)");
    job->dirty = true;
    return;
  }
  w.replacing = false;  // a cancel ended the replacement (above): this exit ends the slot
  const bool clean = exit.statusKnown && !exit.signaled && exit.code == 0;
  if (!clean && !exit.killedByLauncher && !job->cancelRequested) metrics_.workerDied(exit.jobName);
  if (w.outcome == WorkerOutcome::kFailed && !w.failureFromExit && !exit.ok() && !exit.killedByLauncher) {
    // It said it failed, then died of something: the exit is the cause to report.
    w.message = describeFailure(w.rec.rank, exit);
    w.failureFromExit = exit.signaled;
  }
  if (w.outcome == WorkerOutcome::kRunning) {
    if (exit.killedByLauncher || job->cancelRequested) {
      w.outcome = WorkerOutcome::kStopped;
    } else if (clean) {
      // Exit 0 without a final heartbeat: a worker that finished (or stopped) cleanly.
      w.outcome = WorkerOutcome::kSucceeded;
    } else {
      w.outcome = WorkerOutcome::kFailed;
      w.message = describeFailure(w.rec.rank, exit);
      w.failureFromExit = true;
      w.badConfigExit = exit.statusKnown && !exit.signaled && exit.code == wire::kWorkerExitBadConfig;
      w.failedAt = clock_.now();
    }
  }
  if (job->record.phase == JobPhase::kRestarting && w.outcome == WorkerOutcome::kFailed && !job->cancelRequested &&
      !(exit.statusKnown && !exit.signaled && exit.code == wire::kWorkerExitBadConfig)) {
    // A worker lost while the job re-forms: replaced as part of the same restart.
    event(*job, kEventWarning, "WorkerFailed", w.message);
    w.outcome = WorkerOutcome::kRunning;
    w.failureFromExit = false;
    w.replacing = true;
    job->rdzv->leave(exit.workerId, clock_.now());
    job->toReplace.push_back(exit.workerId);
    job->dirty = true;
    return;
  }
  w.rec.state = w.outcome == WorkerOutcome::kFailed      ? "Failed"
                : w.outcome == WorkerOutcome::kStopped   ? "Stopped"
                                                         : "Succeeded";
  job->rdzv->leave(exit.workerId, clock_.now());
  event(*job, w.outcome == WorkerOutcome::kFailed ? kEventWarning : kEventNormal,
        w.outcome == WorkerOutcome::kFailed ? "WorkerFailed" : "WorkerExited", exit.describe());
  job->dirty = true;
  evaluate(*job);
}

void JobManager::evaluate(Live& job) {
  if (!job.launched) return;
  if (detectAndRecover(job)) return;
  if (finishedDuringChange(job)) return;
  JobFacts f;
  f.now = clock_.now();
  f.phase = job.record.phase;
  f.cancelRequested = job.cancelRequested;
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
  if (v.stopWorkers) job.stopPending = true;
}

void JobManager::transition(Live& job, JobPhase next, const std::string& reason, const std::string& message) {
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
  job.dirty = true;
}

void JobManager::event(Live& job, const std::string& type, const std::string& reason, const std::string& message) {
  job.pendingEvents.push_back({wallMs(), type, reason, message});
}

void JobManager::persistFigures(bool force) {
  struct Write {
    JobRecord record;
    std::vector<JobEvent> events;
    std::vector<CheckpointRecord> checkpoints;
    std::optional<std::vector<int64_t>> catalog;
    std::map<int64_t, std::string> flightRecords;
    bool finished = false;
  };
  std::vector<Write> writes;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const TimePoint now = clock_.now();
    const bool periodic = force || now - lastPersist_ >= options_.persistEvery;
    if (periodic) lastPersist_ = now;
    for (auto it = jobs_.begin(); it != jobs_.end();) {
      Live& job = *it->second;
      const bool write = job.dirty || (periodic && job.figuresDirty) || !job.pendingEvents.empty() ||
                         !job.pendingCheckpoints.empty() || job.pendingCatalog.has_value() ||
                         !job.pendingFlightRecords.empty();
      if (write) {
        job.record.workers.clear();
        for (const auto& [id, w] : job.workers) job.record.workers.push_back(w.rec);
        writes.push_back({job.record, std::move(job.pendingEvents), std::move(job.pendingCheckpoints),
                          std::move(job.pendingCatalog), std::move(job.pendingFlightRecords),
                          isTerminal(job.record.phase)});
        job.pendingEvents.clear();
        job.pendingFlightRecords.clear();
        job.pendingCheckpoints.clear();
        job.pendingCatalog.reset();
        job.dirty = false;
        job.figuresDirty = false;
      }
      // A finished job whose processes are gone needs no live state any more.
      bool anyAlive = false;
      for (const auto& [id, w] : job.workers) anyAlive = anyAlive || w.processAlive;
      if (isTerminal(job.record.phase) && !anyAlive && job.waiters.empty() && !job.dirty) {
        for (auto& [g, space] : job.spaces) space->clear();
        it = jobs_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& w : writes) {
    // Ranked workers first, by rank (sorted here, outside the lock).
    std::sort(w.record.workers.begin(), w.record.workers.end(), [](const auto& a, const auto& b) {
      return a.rank != b.rank ? (a.rank < 0 ? false : b.rank < 0 ? true : a.rank < b.rank) : a.id < b.id;
    });
    Status st = store_.update(w.record);
    for (const auto& e : w.events) st = st.isOk() ? store_.appendEvent(w.record.name, e) : st;
    for (const auto& c : w.checkpoints) st = st.isOk() ? store_.addCheckpoint(w.record.name, c) : st;
    if (w.catalog && st.isOk()) st = store_.retainCheckpoints(w.record.name, *w.catalog);
    for (const auto& [timeMs, doc] : w.flightRecords) {
      st = st.isOk() ? store_.putFlightRecord(w.record.name, timeMs, doc) : st;
    }
    if (!st.isOk() && st.code() != StatusCode::kNotFound) {
      DDP_LOG(Error) << "job " << w.record.name << ": could not write its record: " << st.toString();
    }
  }
}

void JobManager::tickOnce() {
  std::vector<std::string> toStop;
  std::vector<std::pair<std::string, std::string>> replace;  // (job, worker)
  std::vector<std::pair<std::string, std::string>> retiredKill;  // (job, worker)
  std::vector<std::pair<std::string, std::string>> staleKill;    // (job, worker)
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (!exits_.empty()) {
      WorkerExit e = std::move(exits_.front());
      exits_.pop_front();
      handleExit(e);
    }
    const TimePoint now = clock_.now();
    const bool scanHeartbeats = now - lastHeartbeatScan_ >= kHeartbeatScan;
    if (scanHeartbeats) lastHeartbeatScan_ = now;
    for (auto& [name, jobPtr] : jobs_) {
      Live& job = *jobPtr;
      if (job.rdzv->tick(now)) wakeAssignments(job);
      // A worker that left (its exit, above) may have closed the round: the rest of the expected
      // workers had joined (Rendezvous::expect).
      if (job.rdzv->active() && !job.spaces.count(job.rdzv->active()->generation)) wakeAssignments(job);
      // Late joiners gathered for long enough (Note [Elastic membership]).
      if (job.rdzv->active() && (!job.rdzv->lateJoiners().empty() || !job.retired.empty())) evaluateMembership(job);
      if (scanHeartbeats) expireCheckpoints(job, now);
      std::vector<Waiter> still;
      for (auto& w : job.waiters) {
        if (now >= w.until || w.responder->closed()) {
          http::Response res;
          res.status = 204;
          w.responder->reply(std::move(res));
        } else {
          still.push_back(std::move(w));
        }
      }
      job.waiters = std::move(still);
      if (job.cancelRequested && !job.stopSent && now - job.cancelAt >= options_.stopGrace) {
        job.stopSent = true;
        toStop.push_back(name);
      }
      if (job.cancelRequested || isTerminal(job.record.phase)) {
        for (const auto& id : unresponsiveWhileStopping(job, now)) staleKill.emplace_back(name, id);
      }
      if (job.awaitingSettle && !isTerminal(job.record.phase)) evaluate(job);  // Note [Blaming the right rank]
      if (job.stopPending) {
        job.stopPending = false;
        toStop.push_back(name);
      }
      if (now >= job.retireKillAt) {  // Note [Elastic membership]: retired, and still running
        job.retireKillAt = TimePoint::max();
        for (const auto& id : job.retired) {
          auto w = job.workers.find(id);
          if (w != job.workers.end() && w->second.processAlive) retiredKill.emplace_back(name, id);
        }
      }
      // A culprit is replaced once the survivors' flight records arrived (or their wait ended):
      // killing it first would end the collective they are waiting in.
      if (!job.toReplace.empty() && now >= job.replaceAt && !awaitingFlightRecords(job) &&
          !isTerminal(job.record.phase) && !job.cancelRequested) {
        for (const auto& id : job.toReplace) replace.emplace_back(name, id);
        job.toReplace.clear();
      }
      // Hang detection (Note [Recovery]) every kHeartbeatScan, not every tick: at thousands of
      // workers the scan is the tick's main cost, and it is done under the lock.
      if (scanHeartbeats && job.rdzv->active() && job.record.phase == JobPhase::kRunning) evaluate(job);
    }
  }
  for (const auto& name : toStop) (void)launcher_.stopJob(name, std::chrono::seconds(10));
  for (const auto& [name, id] : retiredKill) (void)launcher_.killWorker(name, id, SIGKILL);
  for (const auto& [name, id] : staleKill) (void)launcher_.killWorker(name, id, SIGKILL);
  for (const auto& [name, id] : replace) {
    Status st = launcher_.replaceWorker(name, id);
    if (st.code() == StatusCode::kUnimplemented) {
      // A launcher that starts nothing (external workers): whatever started the workers starts
      // the replacement; the round waits for it (and the job's rendezvous bound applies).
      std::lock_guard<std::mutex> lock(mu_);
      if (Live* job = find(name)) {
        event(*job, kEventWarning, "WaitingForReplacement",
              id + " must be replaced by whatever started it (" + st.message() + ")");
      }
      continue;
    }
    if (!st.isOk()) {
      DDP_LOG(Error) << "job " << name << ": could not replace " << id << ": " << st.toString();
      std::lock_guard<std::mutex> lock(mu_);
      if (Live* job = find(name)) {
        transition(*job, JobPhase::kFailed, "ReplaceFailed", "could not replace " + id + ": " + st.toString());
        job->stopPending = true;
      }
    }
  }
  persistFigures(false);
}

void JobManager::tickLoop() {
  while (!stopping_) {
    tickOnce();
    std::unique_lock<std::mutex> lock(tickMu_);
    tickCv_.wait_for(lock, options_.tick, [this] { return stopping_.load() || exitsPending_; });
    exitsPending_ = false;
  }
}

size_t JobManager::liveJobs() {
  std::lock_guard<std::mutex> lock(mu_);
  return jobs_.size();
}

}  // namespace ddp::controller
