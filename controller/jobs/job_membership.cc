// Elastic membership (Note [Elastic membership] in controller/jobs/membership.h): the JobManager's
// methods that scale a job and end a generation to take late joiners in or leave retired
// workers out. The decisions are membership.h's pure functions.
#include <algorithm>
#include <csignal>
#include <cstdio>

#include "common/log.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/membership.h"

namespace ddp::controller {
namespace {

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

}  // namespace

Result<JobRecord> JobManager::scale(const std::string& name, int workers, const std::string& field) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  std::vector<std::string> signal;   // retired workers with a live process: SIGTERM
  std::vector<std::string> restart;  // re-added slots whose worker a scale-down stopped
  std::optional<JobLaunch> up;
  JobRecord out;
  {
    LockedJob job = lockJob(name);
    if (!job) {
      DDP_ASSIGN_OR_RETURN(auto rec, store_.get(name));
      return failedPrecondition("job " + name + " already finished (" + jobPhaseName(rec.phase) + ")");
    }
    if (isTerminal(job->record.phase) || job->lifecycle.cancelRequested) {
      return failedPrecondition("job " + name + " is " +
                                (job->lifecycle.cancelRequested ? "cancelled" : jobPhaseName(job->record.phase)));
    }
    DDP_RETURN_IF_ERROR(validateScale(job->spec.workers, workers, launcher_.maxWorkersPerJob(), field));
    for (const auto& id : job->membership.retired) {
      auto it = job->workers.find(id);
      if (it != job->workers.end() && it->second.processAlive) {
        return failedPrecondition("job " + name + " is still stopping " + id +
                                  " (its last scale-down); scale again once it exited");
      }
    }
    const int from = job->spec.workers.count;
    if (workers == from) return job->record;
    JobSpec next = job->spec;
    next.workers.count = workers;
    // The global batch stays the submitted one (Note [Elastic batch] in worker/training/trainer.cc):
    // pinned before workers.count, which it defaults to following, changes.
    if (next.data.globalBatchSize == 0) next.data.globalBatchSize = int64_t{next.data.batchSize} * from;
    const std::string yaml = next.toYaml();
    DDP_RETURN_IF_ERROR(store_.updateSpec(name, yaml));  // durable before the answer
    job->spec = next;
    job->record.specYaml = yaml;
    // Assignments carry the spec: the next generation's members get the new count.
    event(*job, kEventNormal, "Scaled",
          "scaled to " + std::to_string(workers) + " worker(s) (from " + std::to_string(from) + ")");
    if (workers > from) {
      restart = addSlots(*job, from, workers);
      if (job->lifecycle.launched) up = jobLaunchOf(*job);
    } else {
      signal = retireSlots(*job, workers);
    }
    job->outbox.dirty = true;
    out = job->record;
  }
  if (up) {
    if (Status st = launcher_.ensureWorkers(*up); !st.isOk()) {
      DDP_LOG(Error) << "job " << name << ": could not start the workers of the scale: " << st.toString();
    }
  }
  for (const auto& id : restart) (void)launcher_.replaceWorker(name, id);
  // A retired worker that is no member takes SIGTERM as its stop (Note [Elastic membership]).
  for (const auto& id : signal) (void)launcher_.killWorker(name, id, SIGTERM);
  return out;
}

std::vector<std::string> JobManager::addSlots(Job& job, int from, int to) {
  std::vector<std::string> restart;
  const TimePoint now = clock_.now();
  for (int s = from; s < to; ++s) {
    const std::string id = workerIdFor(job.record.name, s);
    if (job.membership.retired.erase(id) > 0 && job.membership.stoppedSlots.erase(id) > 0) restart.push_back(id);
    job.workers.erase(id);
    WorkerState ws;
    ws.rec.id = id;
    ws.rec.state = "Starting";
    ws.lastSeen = now;  // like launch(): counted as a live process from now on
    job.workers[id] = ws;
  }
  return restart;
}

std::vector<std::string> JobManager::retireSlots(Job& job, int to) {
  std::vector<std::string> signal;
  const TimePoint now = clock_.now();
  std::vector<std::pair<std::string, int>> slots;
  for (const auto& [id, w] : job.workers) {
    if (auto s = slotOfWorkerId(job.record.name, id)) slots.emplace_back(id, *s);
  }
  for (const auto& id : retiredBy(slots, to)) {
    job.membership.retired.insert(id);
    std::erase(job.recovery.toReplace, id);
    WorkerState& w = job.workers[id];
    const bool member = job.rdzv->active() && job.rdzv->active()->rankOf(id);
    if (w.processAlive) {
      w.rec.state = "Stopping";
      // A member is not signalled: SIGTERM is a stop request its peers would agree on (every
      // rank would stop). The generation ends without it and its next heartbeat gets 410, on
      // which it exits; the ticker SIGKILLs it if it has not after stopGrace.
      if (!member) signal.push_back(id);
      job.membership.retireKillAt = now + options_.stopGrace;
    }
    if (!member) job.rdzv->leave(id, now);
    if (!w.processAlive) job.workers.erase(id);
  }
  // A retired worker that left the open round may have closed it (Rendezvous::expect).
  if (job.rdzv->active() && !job.spaces.count(job.rdzv->active()->generation)) wakeAssignments(job);
  evaluateMembership(job);
  return signal;
}

bool JobManager::evaluateMembership(Job& job) {
  MembershipFacts f;
  const auto& active = job.rdzv->active();
  f.running = active && job.record.phase == JobPhase::kRunning && !job.lifecycle.cancelRequested;
  if (!f.running) return false;
  f.members = active->members;
  f.settled = job.membership.settled(f.members);
  f.lateJoiners = job.rdzv->lateJoiners();
  f.firstLateJoinAt = job.membership.firstLateJoinAt;
  f.target = job.spec.workers.count;
  f.maxWorkers = job.spec.workers.max;
  f.retiring.assign(job.membership.retired.begin(), job.membership.retired.end());
  f.gather = seconds(job.spec.timeouts.lastCallSeconds);
  f.now = clock_.now();
  MembershipDecision d = decideMembership(f);
  if (!d.endGeneration) return false;
  changeMembership(job, d.reason, d.message);
  return true;
}

void JobManager::changeMembership(Job& job, const std::string& reason, const std::string& message) {
  const RendezvousRound round = *job.rdzv->active();
  const TimePoint now = clock_.now();
  const int64_t ms = wallMs();
  DDP_LOG(Info) << "job " << job.record.name << ": " << reason << ": " << message;
  // A planned change, not a failure: restarts stay as they are (TorchElastic's membership
  // change). The members rejoin as survivors do after a verdict (Note [Recovery]).
  event(job, kEventNormal, reason, message);
  job.record.phase = JobPhase::kRestarting;
  metrics_.jobPhase(job.record.name, JobPhase::kRestarting);
  job.record.setCondition(kConditionRunning, false, reason, message, ms);
  job.record.setCondition(kConditionRestarting, true, reason, "membership change (not a failure): " + message, ms);
  job.recovery.survivors.clear();
  for (const auto& id : round.members) {
    if (!job.membership.retired.count(id)) job.recovery.survivors.insert(id);
  }
  for (auto& [g, space] : job.spaces) space->clear("generation " + std::to_string(g) + " ended: " + reason);
  job.spaces.clear();
  job.rdzv->endGeneration(now);
  {
    std::vector<LedgerChange> changes;
    ledger(job).endGeneration(round.generation, "membership change", now, &changes);
    noteLedgerChanges(job, changes);
  }
  // The survivors and the joiners are expected: the round closes once they are all back.
  std::vector<std::string> expected = job.rdzv->waiting();
  for (auto& id : rejoinSurvivors(job, now)) expected.push_back(std::move(id));
  job.rdzv->expect(std::move(expected), now, survivorWait(job.spec));
  job.membership.firstLateJoinAt.reset();
  job.membership.note = message;
  // The Resumed event once every member of the next generation has stepped (noteRecovered).
  int64_t reached = 0;
  for (const auto& id : round.members) {
    if (auto w = job.workers.find(id); w != job.workers.end()) reached = std::max(reached, w->second.rec.step);
  }
  job.recovery.begin(round.generation, now, /*planned=*/true, reached);
  job.outbox.dirty = true;
  if (job.rdzv->active()) wakeAssignments(job);
}

void JobManager::noteMembership(Job& job) {
  const RendezvousRound& active = *job.rdzv->active();
  std::vector<std::string> parts;
  for (const auto& id : job.membership.lastMembers) {
    if (active.rankOf(id)) continue;
    parts.push_back(job.membership.retired.count(id) ? id + " retired by the scale to " + std::to_string(job.spec.workers.count)
                                          : id + " lost, no replacement within lastCall " +
                                                secondsText(job.spec.timeouts.lastCallSeconds) + " s");
  }
  for (const auto& id : active.members) {
    if (std::find(job.membership.lastMembers.begin(), job.membership.lastMembers.end(), id) == job.membership.lastMembers.end()) {
      parts.push_back(id + " joined");
    }
  }
  if (!job.membership.lastMembers.empty() && !parts.empty()) {
    std::string msg = "generation " + std::to_string(active.generation) + ": " + std::to_string(active.worldSize()) +
                      " worker(s) (";
    for (size_t i = 0; i < parts.size(); ++i) msg += (i ? "; " : "") + parts[i];
    event(job, kEventNormal, "MembershipChanged", msg + ")");
  }
  job.membership.generationFormed(active.members);
}

bool JobManager::finishedDuringChange(Job& job) {
  if (job.membership.note.empty() || job.rdzv->active() || isTerminal(job.record.phase) || job.lifecycle.cancelRequested) {
    return false;
  }
  for (const auto& id : job.recovery.survivors) {
    auto w = job.workers.find(id);
    // Proof of completion: it said (or exited) Succeeded having reached the last step. An exit 0
    // alone is not: a worker may exit cleanly without finishing.
    const int64_t total = job.record.progress.totalSteps;
    if (w == job.workers.end() || w->second.outcome != WorkerOutcome::kSucceeded || total <= 0 ||
        w->second.rec.step < total) {
      continue;
    }
    transition(job, JobPhase::kSucceeded, "JobSucceeded",
               "every worker finished training (generation " + std::to_string(job.recovery.abortedGeneration) +
                   " finished before its membership change took effect)");
    job.lifecycle.stopPending = true;  // the joiners waiting for the next round
    return true;
  }
  return false;
}

bool JobManager::handleRetiredExit(Job& job, const WorkerExit& exit) {
  if (!job.membership.retired.count(exit.workerId)) return false;
  job.membership.stoppedSlots.insert(exit.workerId);
  job.workers.erase(exit.workerId);
  job.rdzv->leave(exit.workerId, clock_.now());
  event(job, kEventNormal, "WorkerExited", exit.describe() + " (retired by a scale-down)");
  job.outbox.dirty = true;
  evaluate(job);
  return true;
}

}  // namespace ddp::controller
