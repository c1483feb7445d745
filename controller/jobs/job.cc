// Job: its lifecycle (the state machine's transitions, events, the rendezvous' closed rounds),
// its restore after a controller restart, its launch request, its tick (Note [Tick actions] in
// job_tick.h) and the batch its persistence writes (Note [Persistence order] in job.h).
#include "controller/jobs/job.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "common/log.h"
#include "controller/jobs/lifecycle/job_decision.h"

namespace ddp::controller {
namespace {

using nlohmann::json;

RendezvousConfig rendezvousConfig(const JobSpec& spec) {
  RendezvousConfig c;
  c.minWorkers = spec.workers.min;
  c.maxWorkers = spec.workers.max;
  c.lastCall = seconds(spec.timeouts.lastCallSeconds);
  if (spec.workers.perPod > 1) {  // Note [Several ranks per pod]: a pod's ranks are adjacent
    c.podOf = [job = spec.name, perPod = spec.workers.perPod](const std::string& id) {
      return podOfWorkerId(job, id, perPod);
    };
  }
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

int64_t wallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Job::restore(TimePoint now, const std::vector<int64_t>& livePids, int64_t lastCheckpoint) {
  generationStart = now;
  std::vector<WorkerRecord> byRank;
  for (const auto& w : record.workers) {
    WorkerState ws;
    ws.rec = w;
    ws.lastSeen = now;       // a restarted controller gives every worker a full heartbeat window
    ws.stepChangedAt = now;  // ... and a full progress window
    workers[w.id] = ws;
    if (w.rank >= 0) byRank.push_back(w);
  }
  std::sort(byRank.begin(), byRank.end(), [](const auto& a, const auto& b) { return a.rank < b.rank; });
  if (record.generation > 0 && !byRank.empty()) {
    RendezvousRound round;
    round.generation = record.generation;
    round.closedAt = now;
    for (const auto& w : byRank) round.members.push_back(w.id);
    rdzv = Rendezvous::restored(rendezvousConfig(spec), round);
    assignmentTail = assignmentTailJson(*rdzv->active(), record.specYaml, workers, false);
    assignmentTailWithPeers = assignmentTailJson(*rdzv->active(), record.specYaml, workers, true);
    spaces[round.generation] = std::make_shared<comm::KeySpace>(env.options.storeQuotaBytes);
  } else {
    rdzv.emplace(rendezvousConfig(spec), record.generation);
  }
  if (lastCheckpoint >= 0) checkpoints.lastStep = lastCheckpoint;
  markWorkersAfterRestart(livePids, record.generation, now, &workers);
  event(kEventNormal, "ControllerRestarted", "the controller restarted and took the job over again");
  // Only a job that never reached rendezvous may still have slots to start; a running one
  // keeps the workers it has.
  lifecycle.launched = record.generation > 0;
}

void Job::openRendezvous(int64_t after) { rdzv.emplace(rendezvousConfig(spec), after); }

JobLaunch Job::launchRequest() const {
  return makeJobLaunch(record.name, spec, record.workerToken,
                       {env.options.controllerUrl, env.options.workerLogFormat, env.options.workerCheckpointDir,
                        env.options.commThreadPriority});
}

bool Job::noteLaunched(const JobLaunch& l, const Status& st) {
  lifecycle.launched = true;
  lifecycle.launching = false;
  if (!st.isOk()) {
    transition(JobPhase::kFailed, "LaunchFailed", "could not start the workers: " + st.toString());
    return false;
  }
  for (int i = 0; i < l.workers; ++i) {
    const std::string id = workerIdFor(l.jobName, i);
    if (!workers.count(id)) {
      WorkerState ws;
      ws.rec.id = id;
      ws.rec.state = "Starting";
      ws.lastSeen = env.clock.now();
      workers[id] = ws;
    }
  }
  // The workers may have registered and closed the rendezvous while the launcher was still
  // starting the others: that close found the job not launched yet and decided nothing, and the
  // job would stay Pending (no hang detection) until a worker finished.
  if (rdzv->active()) evaluate();
  // Cancelled while the launcher was still starting the workers: the cancel's stopJob knew only
  // the workers started by then. Stop again, now that every one exists.
  return lifecycle.cancelRequested && lifecycle.stopSent;
}

std::optional<std::pair<JobRecord, Outbox::Batch>> Job::takeBatch(bool periodic) {
  if (removed || !outbox.due(periodic)) return std::nullopt;
  record.workers.clear();
  for (const auto& [id, w] : workers) record.workers.push_back(w.rec);
  return std::make_pair(record, outbox.take());
}

bool Job::anyProcessAlive() const {
  for (const auto& [id, w] : workers) {
    if (w.processAlive) return true;
  }
  return false;
}

std::string Job::assignmentJson(const std::string& workerId, bool withPeers) const {
  return "{\"rank\":" + std::to_string(*rdzv->active()->rankOf(workerId)) +
         (withPeers ? assignmentTailWithPeers : assignmentTail);
}

void Job::wakeAssignments() {
  const auto& active = rdzv->active();
  if (!active) return;
  // The round just closed: its generation's store, ranks, and one reply per waiting member.
  if (!spaces.count(active->generation)) {
    for (auto& [g, space] : spaces) space->clear();
    spaces.clear();
    spaces[active->generation] = std::make_shared<comm::KeySpace>(env.options.storeQuotaBytes);
    record.generation = active->generation;
    for (auto& [id, w] : workers) w.rec.rank = -1;
    membership.steppedInGeneration.clear();
    const TimePoint now = env.clock.now();
    generationStart = now;
    env.metrics.rendezvousClosed(record.name, active->generation, active->worldSize(),
                              std::chrono::duration<double>(active->closedAt - active->openedAt).count());
    for (int r = 0; r < active->worldSize(); ++r) {
      WorkerState& w = workers[active->members[static_cast<size_t>(r)]];
      w.rec.rank = r;
      w.rec.state = "Running";
      w.lastSeen = now;  // the heartbeat window starts with the generation
      w.stepChangedAt = now;
      w.collectives.clear();
      w.leftOnItsOwn = false;
      w.checkpointAsked = checkpoints.requests;  // a request before this generation is void
    }
    if (record.phase == JobPhase::kRestarting) {
      const int64_t ms = wallMs();
      record.setCondition(kConditionRestarting, false, "Rejoined",
                              "generation " + std::to_string(active->generation) + " formed", ms);
      record.phase = JobPhase::kRunning;
      env.metrics.jobPhase(record.name, JobPhase::kRunning);
      record.setCondition(kConditionRunning, true, "Rejoined",
                              "generation " + std::to_string(active->generation) + " with " +
                                  std::to_string(active->worldSize()) + " worker(s) resumes from a survivor's state or the last checkpoint",
                              ms);
    }
    assignmentTail = assignmentTailJson(*active, record.specYaml, workers, false);
    assignmentTailWithPeers = assignmentTailJson(*active, record.specYaml, workers, true);
    event(kEventNormal, "RendezvousClosed",
          "generation " + std::to_string(active->generation) + " with " + std::to_string(active->worldSize()) +
              " worker(s)");
    noteMembership();
    outbox.dirty = true;
    evaluate();
  }
  std::vector<Waiter> still;
  for (auto& w : waiters) {
    if (active->generation > w.after && active->rankOf(w.workerId)) {
      http::Response res;
      res.body = assignmentJson(w.workerId, w.withPeers);
      w.responder->reply(std::move(res));
    } else {
      still.push_back(std::move(w));
    }
  }
  waiters = std::move(still);
}

void Job::evaluate() {
  if (!lifecycle.launched) return;
  if (detectAndRecover()) return;
  if (finishedDuringChange()) return;
  JobFacts f;
  f.now = env.clock.now();
  f.settle = env.options.timings.exitSettle;
  f.phase = record.phase;
  f.cancelRequested = lifecycle.cancelRequested;
  f.suspendRequested = lifecycle.suspendRequested;
  f.generationActive = rdzv->active().has_value();
  for (const auto& [id, w] : workers) {
    if (w.processAlive || w.replacing) ++f.liveProcesses;
    if (f.generationActive && !rdzv->active()->rankOf(id)) continue;
    f.members.push_back({id, w.outcome, w.processAlive, w.message, w.failureFromExit, w.failedAt});
  }
  JobVerdict v = decideJob(f);
  if (!v.next) return;
  transition(*v.next, v.reason, v.message);
  // The ticker signals them, outside the lock (evaluate also runs on request paths that must
  // not wait for the launcher).
  if (v.stopWorkers) lifecycle.stopPending = true;
}

void Job::transition(JobPhase next, const std::string& reason, const std::string& message) {
  const int64_t now = wallMs();
  JobRecord& r = record;
  if (r.phase == next) return;
  if (next == JobPhase::kRunning) {
    if (r.startMs == 0) r.startMs = now;
    r.setCondition(kConditionRunning, true, reason, message, now);
  } else if (next == JobPhase::kSuspended) {
    r.setCondition(kConditionRunning, false, reason, message, now);
    r.setCondition(kConditionSuspended, true, reason, message, now);
  } else if (isTerminal(next)) {
    r.completionMs = now;
    r.setCondition(kConditionRunning, false, reason, message, now);
    const char* type = next == JobPhase::kSucceeded ? kConditionSucceeded
                       : next == JobPhase::kFailed  ? kConditionFailed
                                                    : kConditionCancelled;
    r.setCondition(type, true, reason, message, now);
  }
  r.phase = next;
  env.metrics.jobPhase(r.name, next);
  event(next == JobPhase::kFailed ? kEventWarning : kEventNormal, reason, message);
  DDP_LOG(Info) << "job " << r.name << ": " << jobPhaseName(next) << " (" << message << ")";
  if (isTerminal(next)) {
    for (auto& w : waiters) {
      replyJson(*w.responder, 409, {{"error", "job " + r.name + " is " + jobPhaseName(next)}, {"state", jobPhaseName(next)}});
    }
    waiters.clear();
  }
  outbox.dirty = true;
}

void Job::event(const std::string& type, const std::string& reason, const std::string& message) {
  outbox.events.push_back({wallMs(), type, reason, message});
}

void Job::advance(TimePoint now, bool scan) {
  if (rdzv->tick(now)) wakeAssignments();
  // A worker that left (its exit, above) may have closed the round: the rest of the expected
  // workers had joined (Rendezvous::expect).
  if (rdzv->active() && !spaces.count(rdzv->active()->generation)) wakeAssignments();
  // Late joiners gathered for long enough (Note [Elastic membership]).
  if (rdzv->active() && (!rdzv->lateJoiners().empty() || !membership.retired.empty())) {
    evaluateMembership();
  }
  if (scan) expireCheckpoints(now);
  std::vector<Waiter> still;
  for (auto& w : waiters) {
    if (now >= w.until || w.responder->closed()) {
      http::Response res;
      res.status = 204;
      w.responder->reply(std::move(res));
    } else {
      still.push_back(std::move(w));
    }
  }
  waiters = std::move(still);
  if (lifecycle.awaitingSettle && !isTerminal(record.phase)) evaluate();  // Note [Blaming the right rank]
  // Hang detection (Note [Recovery]) every timings.hangScanEvery, not every tick: at thousands of
  // workers the scan is the tick's main cost, and it is done under the lock.
  if (scan && rdzv->active() && record.phase == JobPhase::kRunning) evaluate();
}

JobTickFacts Job::tickFacts(TimePoint now, bool periodic) const {
  JobTickFacts f;
  f.now = now;
  f.phase = record.phase;
  f.cancelRequested = lifecycle.cancelRequested;
  f.cancelStopDue = lifecycle.stopDue(now, env.options.stopGrace);
  f.stopPending = lifecycle.stopPending;
  f.launchDue = lifecycle.launchDue();
  auto alive = [this](const std::string& id) {
    auto w = workers.find(id);
    return w != workers.end() && w->second.processAlive;
  };
  // Only a stopping job's processes are looked at (O(workers); a running job's silent workers
  // are the hang detector's).
  if (lifecycle.stopping(record.phase)) {
    for (const auto& [id, w] : workers) {
      if (!w.processAlive) continue;
      WorkerFacts wf{id, w.outcome, w.processAlive};
      wf.lastSeen = w.lastSeen;
      f.alive.push_back(std::move(wf));
    }
    f.heartbeatWindow = seconds(spec.timeouts.heartbeatSeconds * spec.timeouts.heartbeatMisses);
  }
  f.retireKillDue = now >= membership.retireKillAt;
  if (f.retireKillDue) f.retiredAlive = membership.retiredAlive(alive);
  f.replaceBackoffOver = recovery.replacementsDue(now);
  if (f.replaceBackoffOver) f.toReplace = recovery.toReplace;
  f.awaitingFlightRecords = flight.awaiting(now);
  f.persistDue = outbox.due(periodic);
  f.persisting = persistQueued;
  f.anyProcessAlive = isTerminal(record.phase) && anyProcessAlive();  // only a finished job is dropped
  f.waitersLeft = !waiters.empty();
  return f;
}

void Job::recordTick(const JobTickActions& a, TimePoint now) {
  if (a.launch) lifecycle.launching = true;
  if (a.cancelStopSent) lifecycle.stopSent = true;
  if (a.stopJob) lifecycle.stopPending = false;
  if (now >= membership.retireKillAt) membership.retireKillAt = TimePoint::max();
  if (!a.replace.empty()) recovery.toReplace.clear();
  for (const auto& id : a.killUnresponsive) markUnresponsiveKilled(id, now);
  if (a.persist) persistQueued = true;
}

}  // namespace ddp::controller
