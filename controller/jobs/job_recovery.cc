// Hang detection and in-process recovery (Note [Recovery] in job_manager.h): the Job's methods
// that act on the hang detector's verdicts (the job's side: its RecoveryState, hang/).

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "common/log.h"
#include "controller/jobs/job.h"

namespace ddp::controller {
namespace {

HangConfig hangConfig(const JobSpec& spec, const JobTimings& timings) {
  HangConfig c;
  c.settle = timings.exitSettle;
  c.heartbeatWindow = seconds(spec.timeouts.heartbeatSeconds * spec.timeouts.heartbeatMisses);
  c.hang = seconds(spec.timeouts.hangSeconds);
  c.progress = seconds(spec.timeouts.progressSeconds);
  return c;
}


// The ids of `verdict`'s culprits among `round`'s members; the others go to `survivors`.
std::vector<std::string> splitCulprits(const RendezvousRound& round, const HangVerdict& verdict,
                                       std::set<std::string>* survivors) {
  std::vector<std::string> culprits;
  for (int r = 0; r < round.worldSize(); ++r) {
    const std::string& id = round.members[static_cast<size_t>(r)];
    if (std::find(verdict.culprits.begin(), verdict.culprits.end(), r) != verdict.culprits.end()) {
      culprits.push_back(id);
    } else {
      survivors->insert(id);
    }
  }
  return culprits;
}

// Note [Recovery figures]: a lower bound of where the generation ended. Heartbeats lag; a
// committed checkpoint proves its step was reached; the survivors say where they stopped when
// they rejoin (noteRecovered uses that).
int64_t stepReachedAtLeast(const RendezvousRound& round, const std::map<std::string, WorkerState>& workers,
                           int64_t committed) {
  int64_t reached = committed;
  for (const auto& id : round.members) {
    auto it = workers.find(id);
    if (it != workers.end()) reached = std::max(reached, it->second.rec.step);
  }
  return reached;
}

}  // namespace

bool Job::detectAndRecover() {
  const auto& active = rdzv->active();
  if (active && record.phase == JobPhase::kRunning && !lifecycle.cancelRequested) {
    // Note [Recovery]. A member that failed for a reason no restart can fix (its own final
    // heartbeat said Failed, or it exited with the bad-configuration status) is left to decideJob.
    bool fatal = false;
    std::vector<MemberHealth> members;
    for (int r = 0; r < active->worldSize(); ++r) {
      const std::string& id = active->members[static_cast<size_t>(r)];
      const WorkerState& w = workers[id];
      fatal = fatal || (w.outcome == WorkerOutcome::kFailed && (!w.failureFromExit || w.badConfigExit));
      MemberHealth m;
      m.rank = r;
      m.workerId = id;
      m.finished = w.outcome == WorkerOutcome::kSucceeded || w.outcome == WorkerOutcome::kStopped;
      m.exitedWithFailure = w.outcome == WorkerOutcome::kFailed && w.failureFromExit;
      m.exitMessage = w.message;
      m.exitedAt = w.failedAt;
      m.lastHeartbeat = w.lastSeen;
      m.step = w.rec.step;
      m.stepChangedAt = w.stepChangedAt;
      m.collectives = w.collectives;
      m.leftOnItsOwn = w.leftOnItsOwn;
      m.leftMessage = w.leftMessage;
      m.leftAt = w.leftAt;
      members.push_back(std::move(m));
    }
    if (!fatal) {
      HangReport report = detectHang(members, hangConfig(spec, env.options.timings), generationStart, env.clock.now());
      for (const Straggler& s : report.stragglers) {
        if (recovery.stragglersSeen.insert({s.rank, s.seq}).second) event(kEventWarning, "Straggler", s.message);
      }
      if (report.verdict) {
        recover(*report.verdict);
        return true;
      }
    }
  }
  return false;
}

void Job::recover(const HangVerdict& verdict) {
  const RendezvousRound round = *rdzv->active();
  const std::string reason = faultReasonName(verdict.reason);
  const TimePoint now = env.clock.now();
  event(kEventWarning, reason, verdict.message);
  env.metrics.hangDetected(record.name, reason);
  // A hang's flight records; a worker that exited or a failed collective is no hang (its peers'
  // collectives have failed already), and waiting for records would only delay the replacement.
  if (verdict.reason != FaultReason::kExited && verdict.reason != FaultReason::kCollectiveFailed) {
    requestFlightRecords(round, verdict);
  }
  DDP_LOG(Warning) << "job " << record.name << ": " << reason << ": " << verdict.message;
  if (record.restarts >= spec.maxRestarts) {
    transition(JobPhase::kFailed, reason,
               verdict.message + " (no restarts left: spec.maxRestarts is " + std::to_string(spec.maxRestarts) + ")");
    lifecycle.stopPending = true;
    return;
  }
  const int restart = ++record.restarts;
  const int64_t ms = wallMs();
  record.phase = JobPhase::kRestarting;
  env.metrics.jobPhase(record.name, JobPhase::kRestarting);
  record.setCondition(kConditionRunning, false, reason, verdict.message, ms);
  record.setCondition(kConditionRestarting, true, reason,
                          "restart " + std::to_string(restart) + " of " + std::to_string(spec.maxRestarts) + ": " +
                              verdict.message,
                          ms);
  recovery.survivors.clear();
  // Note [Several ranks per pod]: a culprit's pod is replaced whole, its siblings with it.
  const std::vector<std::string> culprits =
      withPodSiblings(record.name, splitCulprits(round, verdict, &recovery.survivors), spec.workers.perPod);
  for (const auto& id : culprits) recovery.survivors.erase(id);
  // The old generation's store goes: its blocked calls fail, and it is fenced from now on.
  for (auto& [g, space] : spaces) space->clear("generation " + std::to_string(g) + " ended: " + reason);
  spaces.clear();
  rdzv->endGeneration(now);
  {
    std::vector<LedgerChange> changes;
    ledger().endGeneration(round.generation, "verdict " + reason, now, &changes);
    noteLedgerChanges(changes);
  }
  // An elastic job's next round may close with fewer workers than this one: a survivor slow to
  // tear down is waited for rather than left out (as for a planned change, Note [Elastic
  // membership]); the round still waits out its last call for the replacements.
  rdzv->expect(rejoinSurvivors(now), now, survivorWait(spec), /*closeWhenAllJoined=*/false);
  for (const auto& id : culprits) {
    WorkerState& w = workers[id];
    w.replacing = true;
    w.outcome = WorkerOutcome::kRunning;
    w.failureFromExit = false;
    w.rec.state = "Replacing";
    recovery.toReplace.push_back(id);
  }
  recovery.replaceAt = now + restartBackoff(restart, env.options.timings.restartBackoffBase,
                                            env.options.timings.restartBackoffMax);
  const int64_t from = std::max<int64_t>(0, checkpoints.lastStep);
  const int64_t reached = stepReachedAtLeast(round, workers, from);
  recovery.begin(round.generation, now, /*planned=*/false, reached);
  recovery.stragglersSeen.clear();
  recovery.stepAtRejoin.clear();
  outbox.dirty = true;
  std::string who = culprits.empty() ? "no worker is replaced" : "replacing";
  for (const auto& id : culprits) who += " " + id;
  // The workers decide where they resume (Note [Healing from live peers] in
  // worker/training/peer_state.h): from a survivor's own state when one holds it whole, else from
  // the last committed checkpoint. The Recovered event says which step it was.
  event(kEventWarning, "Restarting",
        "restart " + std::to_string(restart) + " of " + std::to_string(spec.maxRestarts) + " after " + reason +
            ": generation " + std::to_string(round.generation) + " ended at step " + std::to_string(reached) +
            " or later (the survivors report their last step when they rejoin); " +
            who + "; " + std::to_string(recovery.survivors.size()) +
            " survivor(s) rejoin without restarting; resuming from a survivor's state, or else from step " +
            std::to_string(from) + " (last committed checkpoint)");
  if (rdzv->active()) wakeAssignments();
}

// Note [Recovery figures]
// ddp_aborts_total counts each worker's communicator abort of a generation once, whichever way
// the controller learns of it: the worker rejoining after aborting on its own (a peer died), a
// heartbeat answered `abort`, or a survivor rejoining after a verdict (it may abort on its own
// before any heartbeat tells it to: counting only the heartbeat path missed it). The Restarting
// event cannot know where the generation ended: heartbeats lag by up to an interval (one said
// 565 while checkpoint 600 had committed). So it gives a lower bound (the last heartbeats and the
// last committed checkpoint), each survivor reports the last step it completed when it rejoins,
// and the Recovered event computes "ended at" and "steps redone" from those and the step the new
// generation resumed at.
std::vector<std::string> Job::rejoinSurvivors(TimePoint now) {
  std::vector<std::string> alive;
  for (const auto& id : recovery.survivors) {
    WorkerState& w = workers[id];
    w.rec.state = "Rejoining";
    if (w.leftOnItsOwn) rdzv->join(id, now);  // already waiting for the next generation
    w.leftOnItsOwn = false;
    if (w.processAlive) alive.push_back(id);
  }
  return alive;
}

void Job::countAbort(const std::string& workerId, int64_t g) {
  if (recovery.countAbort(workerId, g)) env.metrics.communicatorAborted(record.name);
}

void Job::noteRecovered(const std::string& workerId, const Heartbeat& hb) {
  if (hb.counters.steps < 1) return;
  const auto& active = rdzv->active();
  if (!active) {
    recovery.steppedSinceVerdict.insert(workerId);
    return;
  }
  if (!recovery.noteStepped(workerId, active->worldSize())) return;
  // Steps this generation has run so far on the last rank to step: it started from hb.step - steps.
  const int64_t resumedAt = std::max<int64_t>(0, hb.step - hb.counters.steps);
  const double secs = std::chrono::duration<double>(env.clock.now() - recovery.verdictAt).count();
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", secs);
  // Note [Recovery figures]: where the generation ended is the last step a rank completed, as the
  // rejoining survivors reported it; without one (every rank replaced), the verdict's estimate.
  const int64_t ended = recovery.endedAt();
  const std::string resumed = "the last generation ended at step " + std::to_string(ended) + ", resumed at step " +
                              std::to_string(resumedAt) +
                              " (steps redone: " + std::to_string(std::max<int64_t>(0, ended - resumedAt)) + ")";
  if (recovery.plannedChange) {
    // A membership change (Note [Elastic membership]): not a recovery, no ddp_recovery_seconds.
    event(kEventNormal, "Resumed",
          "generation " + std::to_string(active->generation) + ": every rank is stepping again " + buf +
              " s after the membership change; " + resumed);
    return;
  }
  env.metrics.recovered(record.name, secs);
  event(kEventNormal, "Recovered",
        "generation " + std::to_string(active->generation) + ": every rank is stepping again " + buf +
            " s after the verdict (restart " + std::to_string(record.restarts) + "); " + resumed);
}

}  // namespace ddp::controller
