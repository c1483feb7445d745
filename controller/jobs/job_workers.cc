// Job: its workers' side (the worker routes, docs/API.md "Worker routes"):
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
#include "controller/jobs/membership/worker_claim.h"
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
  protocol::copyProgressFigures(hb, p, protocol::AbsentFigures::kKeepLast);
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

Result<int64_t> Job::registerWorker(const RegisterRequest& req, Fenced* fenced, std::string* incarnation) {
  const std::string& name = record.name;
  if (isTerminal(record.phase) || lifecycle.cancelRequested) {
    return failedPrecondition("job " + name + " is " + (lifecycle.cancelRequested ? "cancelled" : jobPhaseName(record.phase)));
  }
  const TimePoint now = env.clock.now();
  if (membership.retired.count(req.workerId)) {
    // Note [Elastic membership]: a scale-down removed this slot; the worker stops (410).
    fenced->current = fencingGeneration(*rdzv);
    return abortedError("worker " + req.workerId + " was retired: the job was scaled to " +
                        std::to_string(spec.workers.count) + " worker(s)");
  }
  WorkerState& w = workers[req.workerId];
  // A member that registers again has left its generation: it sends no flight record of it.
  flight.forget(req.workerId);
  if (req.leftGeneration > 0 && rdzv->isCurrent(req.leftGeneration) && w.rec.rank >= 0) {
    // A member aborted its communicator after a fault of its own; the hang detector decides
    // (Note [Hang verdicts], CollectiveFailed) and the worker waits for the next generation.
    if (!w.leftOnItsOwn) {
      w.leftOnItsOwn = true;
      w.leftAt = now;
      w.leftMessage = req.reason.empty() ? "no reason given" : req.reason;
      w.lastSeen = now;
      countAbort(req.workerId, req.leftGeneration);
      if (req.lastStep >= 0) recovery.stepAtRejoin[req.workerId] = req.lastStep;
      event(kEventWarning, "CommunicatorAborted",
            "worker rank " + std::to_string(w.rec.rank) + " (" + req.workerId + ") left generation " +
                std::to_string(req.leftGeneration) + ": " + w.leftMessage);
      outbox.dirty = true;
      evaluate();
    }
    *incarnation = w.incarnation;
    return rdzv->nextGeneration();
  }
  if (req.leftGeneration > 0 && !rdzv->isCurrent(req.leftGeneration) &&
      !recovery.survived(req.leftGeneration, req.workerId)) {
    // Note [Recovery]: a process of a generation that ended without it as a survivor (a stopped
    // worker that was blamed and woke up later): its place went to a replacement.
    fenced->current = fencingGeneration(*rdzv);
    event(kEventWarning, "Fenced",
          "worker " + req.workerId + " (pid " + std::to_string(req.pid) + ") tried to rejoin after generation " +
              std::to_string(req.leftGeneration) + ", which ended without it: refused");
    return abortedError("stale generation " + std::to_string(req.leftGeneration));
  }
  if (req.leftGeneration > 0 && req.leftGeneration == recovery.abortedGeneration) {
    // A survivor of a verdict rejoining: its own abort counts (it may never have been told to by
    // a heartbeat), and so does the step it stopped at.
    countAbort(req.workerId, req.leftGeneration);
    if (req.lastStep >= 0) recovery.stepAtRejoin[req.workerId] = req.lastStep;
  }
  if (Status claim = claimSlot(spec, w, req, now); !claim.isOk()) {
    if (claim.code() == StatusCode::kAlreadyExists) {
      DDP_LOG(Warning) << "job " << name << ": " << claim.message();
      event(kEventWarning, "DuplicateWorkerRefused", claim.message());
    }
    return claim;
  }
  DDP_RETURN_IF_ERROR(takeSlot(w, req, now));
  *incarnation = w.incarnation;
  const int64_t before = rdzv->generation();
  const int64_t g = rdzv->join(req.workerId, now);
  if (rdzv->generation() != before) wakeAssignments();
  if (rdzv->active() && !rdzv->active()->rankOf(req.workerId)) {
    // A late joiner (Note [Elastic membership]): the generation may end to take it in.
    membership.noteLateJoin(now);
    evaluateMembership();
  }
  outbox.dirty = true;
  return g;
}

void Job::awaitAssignment(const std::string& workerId, Duration wait, bool withPeers, int64_t after,
                          std::shared_ptr<http::Responder> responder, const std::string& incarnation) {
  const std::string& name = record.name;
  if (isTerminal(record.phase) || lifecycle.cancelRequested) {
    const char* state = lifecycle.cancelRequested ? "Cancelled" : jobPhaseName(record.phase);
    return replyJson(*responder, 409, {{"error", "job " + name + " is " + state}, {"state", state}});
  }
  auto known = workers.find(workerId);
  if (known == workers.end()) {
    return replyJson(*responder, 404, {{"error", "worker " + workerId + " is not registered with job " + name}});
  }
  if (!holdsSlot(known->second, incarnation)) {
    return replyJson(*responder, 410, {{"error", "stale incarnation: worker id " + workerId + " is held by another process"},
                                       {"generation", fencingGeneration(*rdzv)}});
  }
  known->second.lastSeen = env.clock.now();  // polling is a sign of life too
  const auto& active = rdzv->active();
  if (active && active->generation > after && active->rankOf(workerId)) {
    http::Response res;
    res.body = assignmentJson(workerId, withPeers);
    responder->reply(std::move(res));
    return;
  }
  waiters.push_back(
      {workerId, std::move(responder), env.clock.now() + std::min(wait, env.options.maxLongPoll), withPeers, after});
}

Result<std::shared_ptr<comm::KeySpace>> Job::keySpace(int64_t g, Fenced* fenced) {
  if (!rdzv->isCurrent(g)) {
    fenced->current = fencingGeneration(*rdzv);
    return abortedError("stale generation " + std::to_string(g));
  }
  return spaces[g];
}

Result<Command> Job::staleHeartbeat(int64_t g, const Heartbeat& hb, Fenced* fenced) {
  if (recovery.survived(g, hb.workerId)) {
    // Note [Recovery]: a survivor of the generation a verdict ended aborts and rejoins.
    auto it = workers.find(hb.workerId);
    if (it != workers.end()) it->second.lastSeen = env.clock.now();
    if (flightRecordCommand(g, hb)) return Command{CommandType::kFlightRecord, 0};
    countAbort(hb.workerId, g);
    return Command{CommandType::kAbort, 0};
  }
  if (g == recovery.abortedGeneration && awaitingFlightRecords()) return Command{};  // not fenced yet
  fenced->current = fencingGeneration(*rdzv);
  return abortedError("stale generation " + std::to_string(g));
}

Result<Command> Job::heartbeat(int64_t g, const Heartbeat& hb, Fenced* fenced) {
  const std::string& name = record.name;
  if (!rdzv->isCurrent(g)) return staleHeartbeat(g, hb, fenced);
  auto it = workers.find(hb.workerId);
  if (it == workers.end() || it->second.rec.rank < 0) {
    return notFound("worker " + hb.workerId + " is not a member of generation " + std::to_string(g));
  }
  WorkerState& w = it->second;
  if (!holdsSlot(w, hb.incarnation)) {
    fenced->current = fencingGeneration(*rdzv);
    return abortedError("stale incarnation: worker id " + hb.workerId + " is held by another process");
  }
  w.lastSeen = env.clock.now();
  w.rec.lastHeartbeatMs = wallMs();
  if (hb.step != w.rec.step) w.stepChangedAt = w.lastSeen;
  w.rec.step = hb.step;
  if (hb.lastShard && hb.lastShard->generation == g && hb.lastShard->outcome.rank == w.rec.rank) {
    relearnShardReport(g, *hb.lastShard);  // Note [Two-phase checkpoint commit]: after a restart
  }
  w.collectives = hb.collectives;
  if (!hb.final() && !hb.message.empty() && hb.message != w.lastWarning) {
    w.lastWarning = hb.message;
    event(kEventWarning, "WorkerWarning", "worker rank " + std::to_string(w.rec.rank) + ": " + hb.message);
  }
  if (!w.abortUnreliableSeen && hb.ext.count("abortUnreliable") && hb.ext.at("abortUnreliable") != 0) {
    w.abortUnreliableSeen = true;
    event(kEventWarning, "AbortUnreliable",
          "worker " + hb.workerId + ": its communicator abort did not release a blocked collective in the start-up "
          "self-test; a hang on it is recovered only by replacing the process");
  }
  if (recovery.recovering) noteRecovered(hb.workerId, hb);
  if (hb.counters.steps >= 1) {
    membership.steppedInGeneration.insert(hb.workerId);  // Note [Elastic membership]: settled
  }
  if (hb.final() && w.outcome == WorkerOutcome::kRunning) {
    w.outcome = hb.state == protocol::WorkerState::kSucceeded ? WorkerOutcome::kSucceeded
                : hb.state == protocol::WorkerState::kStopped ? WorkerOutcome::kStopped
                                                               : WorkerOutcome::kFailed;
    w.message = hb.message.empty() ? "" : "worker rank " + std::to_string(w.rec.rank) + " (" + hb.workerId + "): " + hb.message;
    w.failedAt = env.clock.now();
    if (w.outcome == WorkerOutcome::kFailed) lifecycle.awaitingSettle = true;
    w.rec.state = protocol::workerStateName(hb.state);
    outbox.dirty = true;
  }
  if (w.rec.rank == 0) {
    noteProgress(hb, static_cast<int64_t>(spec.data.batchSize) * rdzv->active()->worldSize(),
                 &record.progress);
    // The checkpoint rank 0 resumed from (committed ones arrive by reportCommit: Note
    // [Two-phase checkpoint commit]).
    if (hb.checkpoint && hb.checkpoint->step > checkpoints.lastStep) checkpoints.lastStep = hb.checkpoint->step;
  }
  WorkerFigures figures = workerFigures(hb);
  figures.etaSeconds = record.progress.etaSeconds;
  env.metrics.heartbeat(name, hb.workerId, g, w.rec.rank, figures);
  outbox.figuresDirty = true;
  if (hb.final()) evaluate();
  HeartbeatFacts f;
  f.final = hb.final();
  f.flightRecordAsked = flightRecordCommand(g, hb);
  f.cancelRequested = lifecycle.cancelRequested;
  f.phase = record.phase;
  f.checkpointAsked = w.checkpointAsked;
  f.checkpointRequests = checkpoints.requests;
  f.checkpointStep = checkpoints.requestStep;
  const Command c = answerHeartbeat(f);
  // Told once: the ranks agree on the step themselves (the trainer's per-step flag allreduce).
  if (c.type == CommandType::kCheckpoint) w.checkpointAsked = checkpoints.requests;
  return c;
}

void Job::handleExit(const WorkerExit& exit) {
  if (handleRetiredExit(exit)) return;
  WorkerState& w = workers[exit.workerId];
  // Cancelled while a replacement was starting: the slot's old process is gone, so an exit of
  // another pid is the replacement's (refused at registration), and it ends the slot.
  const bool replacementOfCancelled = lifecycle.cancelRequested && w.replacing && !w.processAlive;
  if (exit.pid != 0 && w.rec.pid != 0 && exit.pid != w.rec.pid && !replacementOfCancelled) {
    // An earlier process of this slot (replaced since): its exit changes nothing.
    event(kEventNormal, "WorkerExited", exit.describe() + " (replaced)");
    return;
  }
  w.rec.id = exit.workerId;
  w.processAlive = false;
  if (w.replacing && !lifecycle.cancelRequested) {
    // Note [Recovery]: the culprit the controller is replacing.
    rdzv->leave(exit.workerId, env.clock.now());
    event(kEventNormal, "WorkerExited", exit.describe() + " (being replaced)");
    outbox.dirty = true;
    return;
  }
  w.replacing = false;  // a cancel ended the replacement (above): this exit ends the slot
  const bool clean = exit.statusKnown && !exit.signaled && exit.code == 0;
  if (!clean && !exit.killedByLauncher && !lifecycle.cancelRequested) env.metrics.workerDied(exit.jobName);
  if (w.outcome == WorkerOutcome::kFailed && !w.failureFromExit && !exit.ok() && !exit.killedByLauncher) {
    // It said it failed, then died of something: the exit is the cause to report.
    w.message = describeFailure(w.rec.rank, exit);
    w.failureFromExit = exit.signaled;
  }
  if (w.outcome == WorkerOutcome::kRunning) {
    if (exit.killedByLauncher || lifecycle.cancelRequested) {
      w.outcome = WorkerOutcome::kStopped;
    } else if (clean) {
      // Exit 0 without a final heartbeat: a worker that finished (or stopped) cleanly.
      w.outcome = WorkerOutcome::kSucceeded;
    } else {
      w.outcome = WorkerOutcome::kFailed;
      w.message = describeFailure(w.rec.rank, exit);
      w.failureFromExit = true;
      w.badConfigExit = exit.statusKnown && !exit.signaled && exit.code == protocol::kWorkerExitBadConfig;
      w.failedAt = env.clock.now();
    }
  }
  if (record.phase == JobPhase::kRestarting && w.outcome == WorkerOutcome::kFailed && !lifecycle.cancelRequested &&
      !(exit.statusKnown && !exit.signaled && exit.code == protocol::kWorkerExitBadConfig)) {
    // A worker lost while the job re-forms: replaced as part of the same restart.
    event(kEventWarning, "WorkerFailed", w.message);
    w.outcome = WorkerOutcome::kRunning;
    w.failureFromExit = false;
    w.replacing = true;
    rdzv->leave(exit.workerId, env.clock.now());
    recovery.toReplace.push_back(exit.workerId);
    outbox.dirty = true;
    return;
  }
  w.rec.state = w.outcome == WorkerOutcome::kFailed      ? "Failed"
                : w.outcome == WorkerOutcome::kStopped   ? "Stopped"
                                                         : "Succeeded";
  rdzv->leave(exit.workerId, env.clock.now());
  event(w.outcome == WorkerOutcome::kFailed ? kEventWarning : kEventNormal,
        w.outcome == WorkerOutcome::kFailed ? "WorkerFailed" : "WorkerExited", exit.describe());
  outbox.dirty = true;
  evaluate();
}

}  // namespace ddp::controller
