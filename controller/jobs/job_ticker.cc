// JobManager: the ticker (Note [Tick actions] in job_tick.h). Each tick handles the launcher's
// exit reports, advances every job's state under the lock (rendezvous deadlines, expired long
// polls, checkpoint timeouts, the hang scan), asks reconcileTick what each job's workers need,
// carries that out with the launcher outside the lock, and writes what is due to the store.
#include <csignal>
#include <deque>

#include "common/log.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/job_tick.h"

namespace ddp::controller {

void JobManager::tickLoop() {
  while (!stopping_) {
    tickOnce();
    std::unique_lock<std::mutex> lock(tickMu_);
    tickCv_.wait_for(lock, options_.tick, [this] { return stopping_.load() || exitsPending_; });
    exitsPending_ = false;
  }
}

void JobManager::tickOnce() {
  std::deque<WorkerExit> exits;
  {
    std::lock_guard<std::mutex> lock(exitsMu_);
    exits.swap(exits_);
  }
  for (const WorkerExit& e : exits) handleExit(e);
  const TimePoint now = clock_.now();
  const bool scan = now - lastHeartbeatScan_ >= options_.timings.hangScanEvery;
  if (scan) lastHeartbeatScan_ = now;
  // One job at a time, each under its own lock (Note [Per-job locking] in job.h); the actions
  // run with no lock held.
  for (const auto& job : snapshot()) {
    JobTickActions a;
    std::string name;
    {
      std::lock_guard<std::mutex> lock(job->mu);
      if (job->removed) continue;
      name = job->record.name;
      advanceJob(*job, now, scan);
      a = reconcileTick(tickFacts(*job, now));
      recordTick(*job, a, now);
    }
    if (!a.empty()) carryOut(name, a);
  }
  persistFigures(false);
}

void JobManager::advanceJob(Job& job, TimePoint now, bool scan) {
  if (job.rdzv->tick(now)) wakeAssignments(job);
  // A worker that left (its exit, above) may have closed the round: the rest of the expected
  // workers had joined (Rendezvous::expect).
  if (job.rdzv->active() && !job.spaces.count(job.rdzv->active()->generation)) wakeAssignments(job);
  // Late joiners gathered for long enough (Note [Elastic membership]).
  if (job.rdzv->active() && (!job.rdzv->lateJoiners().empty() || !job.membership.retired.empty())) {
    evaluateMembership(job);
  }
  if (scan) expireCheckpoints(job, now);
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
  if (job.lifecycle.awaitingSettle && !isTerminal(job.record.phase)) evaluate(job);  // Note [Blaming the right rank]
  // Hang detection (Note [Recovery]) every timings.hangScanEvery, not every tick: at thousands of
  // workers the scan is the tick's main cost, and it is done under the lock.
  if (scan && job.rdzv->active() && job.record.phase == JobPhase::kRunning) evaluate(job);
}

JobTickFacts JobManager::tickFacts(const Job& job, TimePoint now) const {
  JobTickFacts f;
  f.now = now;
  f.phase = job.record.phase;
  f.cancelRequested = job.lifecycle.cancelRequested;
  f.cancelStopDue = job.lifecycle.stopDue(now, options_.stopGrace);
  f.stopPending = job.lifecycle.stopPending;
  auto alive = [&job](const std::string& id) {
    auto w = job.workers.find(id);
    return w != job.workers.end() && w->second.processAlive;
  };
  // Only a stopping job's processes are looked at (O(workers); a running job's silent workers
  // are the hang detector's).
  if (job.lifecycle.stopping(job.record.phase)) {
    for (const auto& [id, w] : job.workers) {
      if (!w.processAlive) continue;
      WorkerFacts wf{id, w.outcome, w.processAlive};
      wf.lastSeen = w.lastSeen;
      f.alive.push_back(std::move(wf));
    }
    f.heartbeatWindow = seconds(job.spec.timeouts.heartbeatSeconds * job.spec.timeouts.heartbeatMisses);
  }
  f.retireKillDue = now >= job.membership.retireKillAt;
  if (f.retireKillDue) f.retiredAlive = job.membership.retiredAlive(alive);
  f.replaceBackoffOver = job.recovery.replacementsDue(now);
  if (f.replaceBackoffOver) f.toReplace = job.recovery.toReplace;
  f.awaitingFlightRecords = job.flight.awaiting(now);
  return f;
}

void JobManager::recordTick(Job& job, const JobTickActions& a, TimePoint now) {
  if (a.cancelStopSent) job.lifecycle.stopSent = true;
  if (a.stopJob) job.lifecycle.stopPending = false;
  if (now >= job.membership.retireKillAt) job.membership.retireKillAt = TimePoint::max();
  if (!a.replace.empty()) job.recovery.toReplace.clear();
  for (const auto& id : a.killUnresponsive) markUnresponsiveKilled(job, id, now);
}

void JobManager::carryOut(const std::string& name, const JobTickActions& a) {
  if (a.stopJob) (void)launcher_.stopJob(name, options_.timings.killGrace);
  for (const auto& id : a.killRetired) (void)launcher_.killWorker(name, id, SIGKILL);
  for (const auto& id : a.killUnresponsive) (void)launcher_.killWorker(name, id, SIGKILL);
  for (const auto& id : a.replace) replaceCulprit(name, id);
}

void JobManager::replaceCulprit(const std::string& name, const std::string& id) {
  Status st = launcher_.replaceWorker(name, id);
  if (st.code() == StatusCode::kUnimplemented) {
    // A launcher that starts nothing (external workers): whatever started the workers starts
    // the replacement; the round waits for it (and the job's rendezvous bound applies).
    if (LockedJob job = lockJob(name)) {
      event(*job, kEventWarning, "WaitingForReplacement",
            id + " must be replaced by whatever started it (" + st.message() + ")");
    }
    return;
  }
  if (!st.isOk()) {
    DDP_LOG(Error) << "job " << name << ": could not replace " << id << ": " << st.toString();
    if (LockedJob job = lockJob(name)) {
      transition(*job, JobPhase::kFailed, "ReplaceFailed", "could not replace " + id + ": " + st.toString());
      job->lifecycle.stopPending = true;
    }
  }
}

}  // namespace ddp::controller
