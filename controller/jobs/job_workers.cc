// JobManager: the workers' side of a job (the worker routes, docs/API.md "Worker routes"):
// registration with its claim on a worker id (Note [Worker incarnations] in worker_claim.cc),
// the rendezvous assignment, the per-generation store, heartbeats, and the launcher's reports of
// their exits.

#include <algorithm>
#include <cstring>

#include "common/protocol/progress_figures.h"
#include "common/log.h"
#include "common/secret.h"
#include "common/utf8.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/worker_claim.h"
#include "controller/metrics/worker_figures.h"

namespace ddp::controller {
namespace {

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

// The job's progress from rank 0's heartbeat (the ETA at the global batch of `globalBatch`).
void noteProgress(const Heartbeat& hb, int64_t globalBatch, JobProgress* p) {
  // Evaluation and language-model figures keep their last value while a heartbeat has none.
  wire::copyProgressFigures(hb, p, wire::AbsentFigures::kKeepLast);
  p->etaSeconds = hb.samplesPerSecond > 0 && p->totalSteps > p->step
                      ? static_cast<double>(p->totalSteps - p->step) * static_cast<double>(globalBatch) /
                            hb.samplesPerSecond
                      : 0;
}

// `req`'s process holds `w`'s slot from now: its incarnation (the one it had, or a new one), and
// nothing of the slot's last run counts (a fresh start, or a survivor rejoining).
Status takeSlot(WorkerState& w, const RegisterRequest& req, TimePoint now) {
  if (w.incarnation.empty() || w.incarnation != req.incarnation) {
    DDP_ASSIGN_OR_RETURN(w.incarnation, randomHex(16));
  }
  w.rec.id = req.workerId;
  w.rec.host = req.host;
  w.rec.advertiseAddress = req.advertiseAddress;
  w.rec.pid = req.pid;
  w.rec.state = "Waiting";
  w.lastSeen = now;
  w.processAlive = true;
  w.outcome = WorkerOutcome::kRunning;
  w.failureFromExit = false;
  w.message.clear();
  w.leftOnItsOwn = false;
  w.replacing = false;
  w.badConfigExit = false;
  w.collectives.clear();
  return Status::ok();
}

// Whether a call presenting `incarnation` may act for `w`'s slot (adopting it after a restart).
bool holdsSlot(WorkerState& w, const std::string& incarnation) {
  bool adopt = false;
  if (!incarnationMatches(w.incarnation, incarnation, &adopt)) return false;
  if (adopt) w.incarnation = incarnation;
  return true;
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

}  // namespace

bool JobManager::workerTokenMatches(const std::string& name, const std::string& token) {
  std::string expected;
  {
    LockedJob job = lockJob(name);
    if (!job) return false;
    expected = job->record.workerToken;
  }
  return secretEquals(expected, token);
}

// After a restart: which workers are still there (the launcher re-adopted them: their pids are
// live) and how the others ended, as far as the record knows.
void markWorkersAfterRestart(const std::vector<int64_t>& pids, int64_t generation, TimePoint now,
                             std::map<std::string, WorkerState>* workers) {
  for (auto& [id, w] : *workers) {
    w.processAlive = w.rec.pid != 0 ? std::find(pids.begin(), pids.end(), w.rec.pid) != pids.end()
                                    : generation == 0 && !pids.empty();
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
}

Result<int64_t> JobManager::registerWorker(const std::string& name, const RegisterRequest& req, Fenced* fenced,
                                           std::string* incarnation) {
  std::string ignored;
  if (incarnation == nullptr) incarnation = &ignored;
  if (req.workerId.empty() || req.workerId.size() > 253) return invalidArgument("workerId: required, at most 253 characters");
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  if (isTerminal(job->record.phase) || job->lifecycle.cancelRequested) {
    return failedPrecondition("job " + name + " is " + (job->lifecycle.cancelRequested ? "cancelled" : jobPhaseName(job->record.phase)));
  }
  const TimePoint now = clock_.now();
  if (job->membership.retired.count(req.workerId)) {
    // Note [Elastic membership]: a scale-down removed this slot; the worker stops (410).
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("worker " + req.workerId + " was retired: the job was scaled to " +
                        std::to_string(job->spec.workers.count) + " worker(s)");
  }
  WorkerState& w = job->workers[req.workerId];
  // A member that registers again has left its generation: it sends no flight record of it.
  job->flight.forget(req.workerId);
  if (req.leftGeneration > 0 && job->rdzv->isCurrent(req.leftGeneration) && w.rec.rank >= 0) {
    // A member aborted its communicator after a fault of its own; the hang detector decides
    // (Note [Hang verdicts], CollectiveFailed) and the worker waits for the next generation.
    if (!w.leftOnItsOwn) {
      w.leftOnItsOwn = true;
      w.leftAt = now;
      w.leftMessage = req.reason.empty() ? "no reason given" : req.reason;
      w.lastSeen = now;
      countAbort(*job, req.workerId, req.leftGeneration);
      if (req.lastStep >= 0) job->recovery.stepAtRejoin[req.workerId] = req.lastStep;
      event(*job, kEventWarning, "CommunicatorAborted",
            "worker rank " + std::to_string(w.rec.rank) + " (" + req.workerId + ") left generation " +
                std::to_string(req.leftGeneration) + ": " + w.leftMessage);
      job->outbox.dirty = true;
      evaluate(*job);
    }
    *incarnation = w.incarnation;
    return job->rdzv->nextGeneration();
  }
  if (req.leftGeneration > 0 && !job->rdzv->isCurrent(req.leftGeneration) &&
      !job->recovery.survived(req.leftGeneration, req.workerId)) {
    // Note [Recovery]: a process of a generation that ended without it as a survivor (a stopped
    // worker that was blamed and woke up later): its place went to a replacement.
    fenced->current = fencingGeneration(*job->rdzv);
    event(*job, kEventWarning, "Fenced",
          "worker " + req.workerId + " (pid " + std::to_string(req.pid) + ") tried to rejoin after generation " +
              std::to_string(req.leftGeneration) + ", which ended without it: refused");
    return abortedError("stale generation " + std::to_string(req.leftGeneration));
  }
  if (req.leftGeneration > 0 && req.leftGeneration == job->recovery.abortedGeneration) {
    // A survivor of a verdict rejoining: its own abort counts (it may never have been told to by
    // a heartbeat), and so does the step it stopped at.
    countAbort(*job, req.workerId, req.leftGeneration);
    if (req.lastStep >= 0) job->recovery.stepAtRejoin[req.workerId] = req.lastStep;
  }
  if (Status claim = claimSlot(job->spec, w, req, now); !claim.isOk()) {
    if (claim.code() == StatusCode::kAlreadyExists) {
      DDP_LOG(Warning) << "job " << name << ": " << claim.message();
      event(*job, kEventWarning, "DuplicateWorkerRefused", claim.message());
    }
    return claim;
  }
  DDP_RETURN_IF_ERROR(takeSlot(w, req, now));
  *incarnation = w.incarnation;
  const int64_t before = job->rdzv->generation();
  const int64_t g = job->rdzv->join(req.workerId, now);
  if (job->rdzv->generation() != before) wakeAssignments(*job);
  if (job->rdzv->active() && !job->rdzv->active()->rankOf(req.workerId)) {
    // A late joiner (Note [Elastic membership]): the generation may end to take it in.
    job->membership.noteLateJoin(now);
    evaluateMembership(*job);
  }
  job->outbox.dirty = true;
  return g;
}

void JobManager::awaitAssignment(const std::string& name, const std::string& workerId, Duration wait,
                                 bool withPeers, int64_t after, std::shared_ptr<http::Responder> responder,
                                 const std::string& incarnation) {
  LockedJob job = lockJob(name);
  if (!job) return replyJson(*responder, 404, {{"error", "job " + name + " is not running"}});
  if (isTerminal(job->record.phase) || job->lifecycle.cancelRequested) {
    const char* state = job->lifecycle.cancelRequested ? "Cancelled" : jobPhaseName(job->record.phase);
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
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  if (!job->rdzv->isCurrent(g)) {
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("stale generation " + std::to_string(g));
  }
  return job->spaces[g];
}

Result<Command> JobManager::staleHeartbeat(Job& job, int64_t g, const Heartbeat& hb, Fenced* fenced) {
  if (job.recovery.survived(g, hb.workerId)) {
    // Note [Recovery]: a survivor of the generation a verdict ended aborts and rejoins.
    auto it = job.workers.find(hb.workerId);
    if (it != job.workers.end()) it->second.lastSeen = clock_.now();
    if (flightRecordCommand(job, g, hb)) return Command{CommandType::kFlightRecord, 0};
    countAbort(job, hb.workerId, g);
    return Command{CommandType::kAbort, 0};
  }
  if (g == job.recovery.abortedGeneration && awaitingFlightRecords(job)) return Command{};  // not fenced yet
  fenced->current = fencingGeneration(*job.rdzv);
  return abortedError("stale generation " + std::to_string(g));
}

Result<Command> JobManager::heartbeat(const std::string& name, int64_t g, const Heartbeat& hb, Fenced* fenced) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  if (!job->rdzv->isCurrent(g)) return staleHeartbeat(*job, g, hb, fenced);
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
  if (job->recovery.recovering) noteRecovered(*job, hb.workerId, hb);
  if (auto steps = hb.counters.find("steps"); steps != hb.counters.end() && steps->second >= 1) {
    job->membership.steppedInGeneration.insert(hb.workerId);  // Note [Elastic membership]: settled
  }
  if (hb.final() && w.outcome == WorkerOutcome::kRunning) {
    w.outcome = hb.state == "Succeeded" ? WorkerOutcome::kSucceeded
                : hb.state == "Stopped" ? WorkerOutcome::kStopped
                                        : WorkerOutcome::kFailed;
    w.message = hb.message.empty() ? "" : "worker rank " + std::to_string(w.rec.rank) + " (" + hb.workerId + "): " + hb.message;
    w.failedAt = clock_.now();
    if (w.outcome == WorkerOutcome::kFailed) job->lifecycle.awaitingSettle = true;
    w.rec.state = hb.state;
    job->outbox.dirty = true;
  }
  if (w.rec.rank == 0) {
    noteProgress(hb, static_cast<int64_t>(job->spec.data.batchSize) * job->rdzv->active()->worldSize(),
                 &job->record.progress);
    // The checkpoint rank 0 resumed from (committed ones arrive by reportCommit: Note
    // [Two-phase checkpoint commit]).
    if (hb.checkpoint && hb.checkpoint->step > job->checkpoints.lastStep) job->checkpoints.lastStep = hb.checkpoint->step;
  }
  WorkerFigures figures = workerFigures(hb);
  figures.etaSeconds = job->record.progress.etaSeconds;
  metrics_.heartbeat(name, hb.workerId, g, w.rec.rank, figures);
  job->outbox.figuresDirty = true;
  if (hb.final()) evaluate(*job);
  Command c;
  if (flightRecordCommand(*job, g, hb) && !hb.final()) {
    c.type = CommandType::kFlightRecord;
  } else if (job->lifecycle.cancelRequested || (isTerminal(job->record.phase) && !hb.final())) {
    c.type = CommandType::kStop;
  } else if (w.checkpointAsked < job->checkpoints.requests && !hb.final()) {
    // Each member is told once; the ranks agree on the step themselves (the trainer's
    // per-step flag allreduce), so telling any one of them is enough.
    w.checkpointAsked = job->checkpoints.requests;
    c.type = CommandType::kCheckpoint;
    c.step = job->checkpoints.requestStep;
  }
  return c;
}

void JobManager::onWorkerExit(const WorkerExit& exit) {
  {
    std::lock_guard<std::mutex> lock(exitsMu_);
    exits_.push_back(exit);
  }
  {
    std::lock_guard<std::mutex> lock(tickMu_);
    exitsPending_ = true;
  }
  tickCv_.notify_all();  // handled now, not at the next tick
}

void JobManager::handleExit(const WorkerExit& exit) {
  LockedJob job = lockJob(exit.jobName);
  if (!job) return;
  if (handleRetiredExit(*job, exit)) return;
  WorkerState& w = job->workers[exit.workerId];
  // Cancelled while a replacement was starting: the slot's old process is gone, so an exit of
  // another pid is the replacement's (refused at registration), and it ends the slot.
  const bool replacementOfCancelled = job->lifecycle.cancelRequested && w.replacing && !w.processAlive;
  if (exit.pid != 0 && w.rec.pid != 0 && exit.pid != w.rec.pid && !replacementOfCancelled) {
    // An earlier process of this slot (replaced since): its exit changes nothing.
    event(*job, kEventNormal, "WorkerExited", exit.describe() + " (replaced)");
    return;
  }
  w.rec.id = exit.workerId;
  w.processAlive = false;
  if (w.replacing && !job->lifecycle.cancelRequested) {
    // Note [Recovery]: the culprit the controller is replacing.
    job->rdzv->leave(exit.workerId, clock_.now());
    event(*job, kEventNormal, "WorkerExited", exit.describe() + " (being replaced)");
    job->outbox.dirty = true;
    return;
  }
  w.replacing = false;  // a cancel ended the replacement (above): this exit ends the slot
  const bool clean = exit.statusKnown && !exit.signaled && exit.code == 0;
  if (!clean && !exit.killedByLauncher && !job->lifecycle.cancelRequested) metrics_.workerDied(exit.jobName);
  if (w.outcome == WorkerOutcome::kFailed && !w.failureFromExit && !exit.ok() && !exit.killedByLauncher) {
    // It said it failed, then died of something: the exit is the cause to report.
    w.message = describeFailure(w.rec.rank, exit);
    w.failureFromExit = exit.signaled;
  }
  if (w.outcome == WorkerOutcome::kRunning) {
    if (exit.killedByLauncher || job->lifecycle.cancelRequested) {
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
  if (job->record.phase == JobPhase::kRestarting && w.outcome == WorkerOutcome::kFailed && !job->lifecycle.cancelRequested &&
      !(exit.statusKnown && !exit.signaled && exit.code == wire::kWorkerExitBadConfig)) {
    // A worker lost while the job re-forms: replaced as part of the same restart.
    event(*job, kEventWarning, "WorkerFailed", w.message);
    w.outcome = WorkerOutcome::kRunning;
    w.failureFromExit = false;
    w.replacing = true;
    job->rdzv->leave(exit.workerId, clock_.now());
    job->recovery.toReplace.push_back(exit.workerId);
    job->outbox.dirty = true;
    return;
  }
  w.rec.state = w.outcome == WorkerOutcome::kFailed      ? "Failed"
                : w.outcome == WorkerOutcome::kStopped   ? "Stopped"
                                                         : "Succeeded";
  job->rdzv->leave(exit.workerId, clock_.now());
  event(*job, w.outcome == WorkerOutcome::kFailed ? kEventWarning : kEventNormal,
        w.outcome == WorkerOutcome::kFailed ? "WorkerFailed" : "WorkerExited", exit.describe());
  job->outbox.dirty = true;
  evaluate(*job);
}

}  // namespace ddp::controller
