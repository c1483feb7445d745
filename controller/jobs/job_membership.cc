// Elastic membership (Note [Elastic membership] in controller/jobs/membership/membership.h): the Job's
// methods that scale it and end a generation to take late joiners in or leave retired workers
// out. The decisions are membership.h's pure functions.
#include <algorithm>
#include <csignal>
#include <cstdio>

#include "common/log.h"
#include "controller/jobs/job.h"
#include "controller/jobs/membership/membership.h"

namespace ddp::controller {
namespace {

std::string secondsText(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

}  // namespace

Result<Job::ScaleActions> Job::scale(int count, int maxWorkersPerJob, const std::string& field, JobStore& store) {
  const std::string& name = record.name;
  DDP_RETURN_IF_ERROR(open());
  DDP_RETURN_IF_ERROR(validateScale(spec.workers, count, maxWorkersPerJob, field));
  for (const auto& id : membership.retired) {
    auto it = workers.find(id);
    if (it != workers.end() && it->second.processAlive) {
      return failedPrecondition("job " + name + " is still stopping " + id +
                                " (its last scale-down); scale again once it exited");
    }
  }
  ScaleActions a;
  const int from = spec.workers.count;
  if (count == from) return a;
  JobSpec next = spec;
  next.workers.count = count;
  // The global batch stays the submitted one (Note [Elastic batch] in worker/training/trainer.cc):
  // pinned before workers.count, which it defaults to following, changes.
  if (next.data.globalBatchSize == 0) next.data.globalBatchSize = int64_t{next.data.batchSize} * from;
  const std::string yaml = next.toYaml();
  DDP_RETURN_IF_ERROR(store.updateSpec(name, yaml));  // durable before the answer
  spec = next;
  record.specYaml = yaml;
  // Assignments carry the spec: the next generation's members get the new count.
  event(kEventNormal, "Scaled", "scaled to " + std::to_string(count) + " worker(s) (from " + std::to_string(from) + ")");
  if (count > from) {
    a.restart = addSlots(from, count);
    if (lifecycle.launched) a.up = launchRequest();
  } else {
    a.signal = retireSlots(count);
  }
  outbox.dirty = true;
  return a;
}

std::vector<std::string> Job::addSlots(int from, int to) {
  std::vector<std::string> restart;
  const TimePoint now = env.clock.now();
  for (int s = from; s < to; ++s) {
    const std::string id = workerIdFor(record.name, s);
    if (membership.retired.erase(id) > 0 && membership.stoppedSlots.erase(id) > 0) restart.push_back(id);
    workers.erase(id);
    WorkerState ws;
    ws.rec.id = id;
    ws.rec.state = "Starting";
    ws.lastSeen = now;  // like launch(): counted as a live process from now on
    workers[id] = ws;
  }
  return restart;
}

std::vector<std::string> Job::retireSlots(int to) {
  std::vector<std::string> signal;
  const TimePoint now = env.clock.now();
  std::vector<std::pair<std::string, int>> slots;
  for (const auto& [id, w] : workers) {
    if (auto s = slotOfWorkerId(record.name, id)) slots.emplace_back(id, *s);
  }
  for (const auto& id : retiredBy(slots, to)) {
    membership.retired.insert(id);
    std::erase(recovery.toReplace, id);
    WorkerState& w = workers[id];
    const bool member = rdzv->active() && rdzv->active()->rankOf(id);
    if (w.processAlive) {
      w.rec.state = "Stopping";
      // A member is not signalled: SIGTERM is a stop request its peers would agree on (every
      // rank would stop). The generation ends without it and its next heartbeat gets 410, on
      // which it exits; the ticker SIGKILLs it if it has not after stopGrace.
      if (!member) signal.push_back(id);
      membership.retireKillAt = now + env.options.stopGrace;
    }
    if (!member) rdzv->leave(id, now);
    if (!w.processAlive) workers.erase(id);
  }
  // A retired worker that left the open round may have closed it (Rendezvous::expect).
  if (rdzv->active() && !spaces.count(rdzv->active()->generation)) wakeAssignments();
  evaluateMembership();
  return signal;
}

bool Job::evaluateMembership() {
  MembershipFacts f;
  const auto& active = rdzv->active();
  f.running = active && record.phase == JobPhase::kRunning && !lifecycle.cancelRequested;
  if (!f.running) return false;
  f.members = active->members;
  f.settled = membership.settled(f.members);
  f.lateJoiners = rdzv->lateJoiners();
  f.firstLateJoinAt = membership.firstLateJoinAt;
  f.target = spec.workers.count;
  f.maxWorkers = spec.workers.max;
  f.retiring.assign(membership.retired.begin(), membership.retired.end());
  f.gather = seconds(spec.timeouts.lastCallSeconds);
  f.now = env.clock.now();
  MembershipDecision d = decideMembership(f);
  if (!d.endGeneration) return false;
  changeMembership(d.reason, d.message);
  return true;
}

void Job::changeMembership(const std::string& reason, const std::string& message) {
  const RendezvousRound round = *rdzv->active();
  const TimePoint now = env.clock.now();
  const int64_t ms = wallMs();
  DDP_LOG(Info) << "job " << record.name << ": " << reason << ": " << message;
  // A planned change, not a failure: restarts stay as they are (TorchElastic's membership
  // change). The members rejoin as survivors do after a verdict (Note [Recovery]).
  event(kEventNormal, reason, message);
  record.phase = JobPhase::kRestarting;
  env.metrics.jobPhase(record.name, JobPhase::kRestarting);
  record.setCondition(kConditionRunning, false, reason, message, ms);
  record.setCondition(kConditionRestarting, true, reason, "membership change (not a failure): " + message, ms);
  recovery.survivors.clear();
  for (const auto& id : round.members) {
    if (!membership.retired.count(id)) recovery.survivors.insert(id);
  }
  for (auto& [g, space] : spaces) space->clear("generation " + std::to_string(g) + " ended: " + reason);
  spaces.clear();
  rdzv->endGeneration(now);
  {
    std::vector<LedgerChange> changes;
    ledger().endGeneration(round.generation, "membership change", now, &changes);
    noteLedgerChanges(changes);
  }
  // The survivors and the joiners are expected: the round closes once they are all back.
  std::vector<std::string> expected = rdzv->waiting();
  for (auto& id : rejoinSurvivors(now)) expected.push_back(std::move(id));
  rdzv->expect(std::move(expected), now, survivorWait(spec));
  membership.firstLateJoinAt.reset();
  membership.note = message;
  // The Resumed event once every member of the next generation has stepped (noteRecovered).
  int64_t reached = 0;
  for (const auto& id : round.members) {
    if (auto w = workers.find(id); w != workers.end()) reached = std::max(reached, w->second.rec.step);
  }
  recovery.begin(round.generation, now, /*planned=*/true, reached);
  outbox.dirty = true;
  if (rdzv->active()) wakeAssignments();
}

void Job::noteMembership() {
  const RendezvousRound& active = *rdzv->active();
  std::vector<std::string> parts;
  for (const auto& id : membership.lastMembers) {
    if (active.rankOf(id)) continue;
    parts.push_back(membership.retired.count(id) ? id + " retired by the scale to " + std::to_string(spec.workers.count)
                                          : id + " lost, no replacement within lastCall " +
                                                secondsText(spec.timeouts.lastCallSeconds) + " s");
  }
  for (const auto& id : active.members) {
    if (std::find(membership.lastMembers.begin(), membership.lastMembers.end(), id) == membership.lastMembers.end()) {
      parts.push_back(id + " joined");
    }
  }
  if (!membership.lastMembers.empty() && !parts.empty()) {
    std::string msg = "generation " + std::to_string(active.generation) + ": " + std::to_string(active.worldSize()) +
                      " worker(s) (";
    for (size_t i = 0; i < parts.size(); ++i) msg += (i ? "; " : "") + parts[i];
    event(kEventNormal, "MembershipChanged", msg + ")");
  }
  membership.generationFormed(active.members);
}

bool Job::finishedDuringChange() {
  if (membership.note.empty() || rdzv->active() || isTerminal(record.phase) || lifecycle.cancelRequested) {
    return false;
  }
  for (const auto& id : recovery.survivors) {
    auto w = workers.find(id);
    // Proof of completion: it said (or exited) Succeeded having reached the last step. An exit 0
    // alone is not: a worker may exit cleanly without finishing.
    const int64_t total = record.progress.totalSteps;
    if (w == workers.end() || w->second.outcome != WorkerOutcome::kSucceeded || total <= 0 ||
        w->second.rec.step < total) {
      continue;
    }
    transition(JobPhase::kSucceeded, "JobSucceeded",
               "every worker finished training (generation " + std::to_string(recovery.abortedGeneration) +
                   " finished before its membership change took effect)");
    lifecycle.stopPending = true;  // the joiners waiting for the next round
    return true;
  }
  return false;
}

bool Job::handleRetiredExit(const WorkerExit& exit) {
  if (!membership.retired.count(exit.workerId)) return false;
  membership.stoppedSlots.insert(exit.workerId);
  workers.erase(exit.workerId);
  rdzv->leave(exit.workerId, env.clock.now());
  event(kEventNormal, "WorkerExited", exit.describe() + " (retired by a scale-down)");
  outbox.dirty = true;
  evaluate();
  return true;
}

}  // namespace ddp::controller
