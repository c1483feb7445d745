// Job: stopping it from outside (cancel, fail, replacing chosen workers: the Kubernetes run
// policy) and a stopping job's unresponsive workers (Note [Stopping an unresponsive worker] in
// job_decision.h). Each method changes the job's state and returns what the JobManager then
// does with the launcher, outside the job's lock.
#include <algorithm>
#include <cstdio>

#include "common/log.h"
#include "controller/jobs/job.h"

namespace ddp::controller {

Status Job::open() const {
  if (isTerminal(record.phase) || lifecycle.cancelRequested) {
    return failedPrecondition("job " + record.name + " is " +
                              (lifecycle.cancelRequested ? "cancelled" : jobPhaseName(record.phase)));
  }
  return Status::ok();
}

Job::CancelActions Job::cancel(bool suspend) {
  CancelActions a;
  if (!suspend && lifecycle.suspendRequested) {
    // A cancel of a suspended (or suspending) job: it ends Cancelled once no worker is left.
    lifecycle.suspendRequested = false;
    event(kEventNormal, "CancelRequested", "cancel requested while the job was suspended");
    evaluate();
    return a;
  }
  if (!lifecycle.requestCancel(env.clock.now())) return a;
  lifecycle.suspendRequested = suspend;
  event(kEventNormal, suspend ? "SuspendRequested" : "CancelRequested",
        std::string(suspend ? "suspend" : "cancel") + " requested: the workers checkpoint and stop");
  // No replacement starts once a job is cancelled (Note [Recovery]): a culprit still due for
  // one is no longer being replaced; its process, if any, stops like the others (Note [Stopping
  // an unresponsive worker]), and one already gone counts as stopped.
  for (const auto& id : recovery.toReplace) {
    WorkerState& w = workers[id];
    w.replacing = false;
    if (!w.processAlive) {
      w.outcome = WorkerOutcome::kStopped;
      w.rec.state = "Stopped";
    }
  }
  recovery.toReplace.clear();
  // Workers that are not training yet have nothing to checkpoint: stop them now.
  a.stopNow = !rdzv->active().has_value();
  lifecycle.stopSent = a.stopNow;
  if (!a.stopNow) {
    for (const auto& [id, w] : workers) {
      if (w.processAlive) a.signal.push_back(id);
    }
  }
  // A waiting worker of a suspended job exits as one of a cancelled one (status 0).
  for (auto& w : waiters) {
    replyJson(*w.responder, 409, {{"error", "job " + record.name + " was " + (suspend ? "suspended" : "cancelled")},
                                  {"state", "Cancelled"}});
  }
  waiters.clear();
  return a;
}

Duration Job::cancelStopGrace() const { return std::min<Duration>(env.options.stopGrace, env.options.timings.idleStopGrace); }

void Job::fail(const std::string& reason, const std::string& message) {
  transition(JobPhase::kFailed, reason, message);
  lifecycle.stopPending = true;  // the ticker stops its workers
}

Status Job::markReplacing(const std::vector<std::string>& ids) {
  DDP_RETURN_IF_ERROR(open());
  for (const auto& id : ids) {
    auto w = workers.find(id);
    if (w == workers.end()) return notFound(id + " is not a worker of job " + record.name);
    if (w->second.outcome != WorkerOutcome::kRunning) {
      return failedPrecondition(id + " already ended (" + w->second.rec.state + ")");
    }
  }
  for (const auto& id : ids) {
    // Its exit (the launcher deletes it) is that of a worker being replaced (handleExit).
    workers[id].replacing = true;
    event(kEventNormal, "ReplacingWorker", id + " is deleted and started again");
  }
  outbox.dirty = true;
  return Status::ok();
}

void Job::replacementFailed(const std::string& id, const Status& st) {
  if (st.code() == StatusCode::kUnimplemented) {
    // A launcher that starts nothing (external workers): whatever started the workers starts
    // the replacement; the round waits for it (and the job's rendezvous bound applies).
    event(kEventWarning, "WaitingForReplacement", id + " must be replaced by whatever started it (" + st.message() + ")");
    return;
  }
  DDP_LOG(Error) << "job " << record.name << ": could not replace " << id << ": " << st.toString();
  transition(JobPhase::kFailed, "ReplaceFailed", "could not replace " + id + ": " + st.toString());
  lifecycle.stopPending = true;
}

void Job::markUnresponsiveKilled(const std::string& id, TimePoint now) {
  // Note [Stopping an unresponsive worker] (job_decision.h): reconcileTick chose it.
  WorkerState& w = workers[id];
  const double silent = std::chrono::duration<double>(now - w.lastSeen).count();
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", silent);
  // Killed by the controller while stopping: its exit ends it as Stopped, and it is not picked again.
  w.outcome = WorkerOutcome::kStopped;
  event(kEventWarning, "UnresponsiveKilled",
        "worker " + (w.rec.rank >= 0 ? "rank " + std::to_string(w.rec.rank) + " (" + id + ")" : id) +
            " sent no heartbeat for " + buf + " s while the job was stopping: killed without waiting for the " +
            "stop grace");
  outbox.dirty = true;
}

}  // namespace ddp::controller
