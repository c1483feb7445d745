// JobManager: stopping jobs and workers from outside: cancel, fail, delete, and replacing
// chosen workers (the Kubernetes run policy); a stopping job's unresponsive workers (Note
// [Stopping an unresponsive worker] in job_decision.h). The lifecycle: job_manager.cc.
#include "controller/jobs/job_manager.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <thread>

#include "controller/jobs/job.h"

namespace ddp::controller {

Status JobManager::unfinished(const std::string& name, LockedJob* out) {
  LockedJob job = lockJob(name);
  if (!job) {
    DDP_ASSIGN_OR_RETURN(auto rec, store_.get(name));  // NotFound: never submitted
    return failedPrecondition("job " + name + " already finished (" + jobPhaseName(rec.phase) + ")");
  }
  if (isTerminal(job->record.phase)) {
    return failedPrecondition("job " + name + " already finished (" + jobPhaseName(job->record.phase) + ")");
  }
  *out = std::move(job);
  return Status::ok();
}

Result<JobRecord> JobManager::cancel(const std::string& name) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  bool stopNow = false;
  JobRecord out;
  std::vector<std::string> signal;  // workers to tell at once (SIGTERM: checkpoint and stop)
  {
    LockedJob job;
    DDP_RETURN_IF_ERROR(unfinished(name, &job));
    if (job->lifecycle.requestCancel(clock_.now())) {
      event(*job, kEventNormal, "CancelRequested", "cancel requested: the workers checkpoint and stop");
      // No replacement starts once a job is cancelled (Note [Recovery]): a culprit still due
      // for one is no longer being replaced; its process, if any, stops like the others (Note
      // [Stopping an unresponsive worker]), and one already gone counts as stopped.
      for (const auto& id : job->recovery.toReplace) {
        WorkerState& w = job->workers[id];
        w.replacing = false;
        if (!w.processAlive) {
          w.outcome = WorkerOutcome::kStopped;
          w.rec.state = "Stopped";
        }
      }
      job->recovery.toReplace.clear();
      // Workers that are not training yet have nothing to checkpoint: stop them now.
      stopNow = !job->rdzv->active().has_value();
      job->lifecycle.stopSent = stopNow;
      if (!stopNow) {
        for (const auto& [id, w] : job->workers) {
          if (w.processAlive) signal.push_back(id);
        }
      }
      for (auto& w : job->waiters) {
        replyJson(*w.responder, 409, {{"error", "job " + name + " was cancelled"}, {"state", "Cancelled"}});
      }
      job->waiters.clear();
    }
    out = job->record;
  }
  if (stopNow) (void)launcher_.stopJob(name, cancelStopGrace());
  // A worker takes SIGTERM as it takes the `stop` command, without waiting for its next
  // heartbeat; a launcher that cannot signal (external workers) leaves it to the heartbeat.
  for (const auto& id : signal) (void)launcher_.killWorker(name, id, SIGTERM);
  return out;
}

Duration JobManager::cancelStopGrace() const {
  return std::min<Duration>(options_.stopGrace, options_.timings.idleStopGrace);
}

Result<JobRecord> JobManager::fail(const std::string& name, const std::string& reason, const std::string& message) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  LockedJob job;
  DDP_RETURN_IF_ERROR(unfinished(name, &job));
  transition(*job, JobPhase::kFailed, reason, message);
  job->lifecycle.stopPending = true;  // the ticker stops its workers
  return job->record;
}

Status JobManager::replaceWorkers(const std::string& name, const std::vector<std::string>& workerIds) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  {
    LockedJob job = lockJob(name);
    if (!job) return notFound("job " + name + " is not running");
    if (isTerminal(job->record.phase) || job->lifecycle.cancelRequested) {
      return failedPrecondition("job " + name + " is " +
                                (job->lifecycle.cancelRequested ? "cancelled" : jobPhaseName(job->record.phase)));
    }
    for (const auto& id : workerIds) {
      auto w = job->workers.find(id);
      if (w == job->workers.end()) return notFound(id + " is not a worker of job " + name);
      if (w->second.outcome != WorkerOutcome::kRunning) {
        return failedPrecondition(id + " already ended (" + w->second.rec.state + ")");
      }
    }
    for (const auto& id : workerIds) {
      // Its exit (the launcher deletes it) is that of a worker being replaced (handleExit).
      job->workers[id].replacing = true;
      event(*job, kEventNormal, "ReplacingWorker", id + " is deleted and started again");
    }
    job->outbox.dirty = true;
  }
  for (const auto& id : workerIds) DDP_RETURN_IF_ERROR(launcher_.replaceWorker(name, id));
  return Status::ok();
}

Status JobManager::remove(const std::string& name, Deadline deadline) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  if (lookup(name) != nullptr) {
    // Cancelled first (the workers checkpoint and stop at their next heartbeat); what is still
    // running with a few seconds of the deadline left is signalled.
    (void)cancel(name);
    const Deadline graceful(deadline.at() - std::min<Duration>(deadline.remaining(), options_.timings.deleteSignalBefore));
    while (!launcher_.livePids(name).empty() && !graceful.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    (void)launcher_.stopJob(name, options_.timings.deleteKillGrace);
    while (!launcher_.livePids(name).empty() && !deadline.expired()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (LockedJob job = lockJob(name)) {
      for (auto& w : job->waiters) replyJson(*w.responder, 410, {{"error", "job deleted"}, {"generation", 0}});
      job->waiters.clear();
      unregister(*job);
    }
  }
  (void)launcher_.forgetJob(name);
  metrics_.jobRemoved(name);
  return store_.remove(name);
}

void JobManager::markUnresponsiveKilled(Job& job, const std::string& id, TimePoint now) {
  // Note [Stopping an unresponsive worker] (job_decision.h): reconcileTick chose it.
  WorkerState& w = job.workers[id];
  const double silent = std::chrono::duration<double>(now - w.lastSeen).count();
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", silent);
  // Killed by the controller while stopping: its exit ends it as Stopped, and it is not picked again.
  w.outcome = WorkerOutcome::kStopped;
  event(job, kEventWarning, "UnresponsiveKilled",
        "worker " + (w.rec.rank >= 0 ? "rank " + std::to_string(w.rec.rank) + " (" + id + ")" : id) +
            " sent no heartbeat for " + buf + " s while the job was stopping: killed without waiting for the " +
            "stop grace");
  job.outbox.dirty = true;
}

}  // namespace ddp::controller
