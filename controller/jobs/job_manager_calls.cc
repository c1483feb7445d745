// JobManager: the API's entry points that act on one live job. Each finds the job, locks it,
// calls one of the Job's methods (Note [One object per job] in job.h), and carries out what that
// returns with the launcher after the lock is released.
#include <csignal>
#include <thread>

#include "common/log.h"
#include "common/secret.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"

namespace ddp::controller {

Status JobManager::live(const std::string& name, LockedJob* out) {
  LockedJob job = lockJob(name);
  if (!job) {
    DDP_ASSIGN_OR_RETURN(auto rec, store_.get(name));  // NotFound: never submitted
    return failedPrecondition("job " + name + " already finished (" + jobPhaseName(rec.phase) + ")");
  }
  *out = std::move(job);
  return Status::ok();
}

Status JobManager::unfinished(const std::string& name, LockedJob* out) {
  LockedJob job;
  DDP_RETURN_IF_ERROR(live(name, &job));
  if (isTerminal(job->record.phase)) {
    return failedPrecondition("job " + name + " already finished (" + jobPhaseName(job->record.phase) + ")");
  }
  *out = std::move(job);
  return Status::ok();
}

Result<JobRecord> JobManager::cancel(const std::string& name) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  Job::CancelActions a;
  Duration grace{};
  JobRecord out;
  {
    LockedJob job;
    DDP_RETURN_IF_ERROR(unfinished(name, &job));
    a = job->cancel();
    grace = job->cancelStopGrace();
    out = job->record;
  }
  stopForCancel(name, a.stopNow, a.signal, grace);
  return out;
}

void JobManager::stopForCancel(const std::string& name, bool stopNow, const std::vector<std::string>& signal,
                               Duration grace) {
  if (stopNow) (void)launcher_.stopJob(name, grace);
  // A worker takes SIGTERM as it takes the `stop` command, without waiting for its next
  // heartbeat; a launcher that cannot signal (external workers) leaves it to the heartbeat.
  for (const auto& id : signal) (void)launcher_.killWorker(name, id, SIGTERM);
}

Result<JobRecord> JobManager::fail(const std::string& name, const std::string& reason, const std::string& message) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  LockedJob job;
  DDP_RETURN_IF_ERROR(unfinished(name, &job));
  job->fail(reason, message);
  return job->record;
}

Status JobManager::replaceWorkers(const std::string& name, const std::vector<std::string>& requested) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  std::vector<std::string> workerIds;
  {
    LockedJob job = lockJob(name);
    if (!job) return notFound("job " + name + " is not running");
    // Note [Several ranks per pod]: a pod is replaced whole, its other ranks with it.
    workerIds = withPodSiblings(name, requested, job->spec.workers.perPod);
    DDP_RETURN_IF_ERROR(job->markReplacing(workerIds));
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
      std::this_thread::sleep_for(options_.timings.deletePollEvery);
    }
    (void)launcher_.stopJob(name, options_.timings.deleteKillGrace);
    while (!launcher_.livePids(name).empty() && !deadline.expired()) {
      std::this_thread::sleep_for(options_.timings.deletePollEvery);
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

Result<JobRecord> JobManager::scale(const std::string& name, int workers, const std::string& field) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  Job::ScaleActions a;
  JobRecord out;
  {
    LockedJob job;
    DDP_RETURN_IF_ERROR(live(name, &job));
    DDP_ASSIGN_OR_RETURN(a, job->scale(workers, launcher_.maxWorkersPerJob(), field, store_));
    out = job->record;
  }
  if (a.up) {
    if (Status st = launcher_.ensureWorkers(*a.up); !st.isOk()) {
      DDP_LOG(Error) << "job " << name << ": could not start the workers of the scale: " << st.toString();
    }
  }
  for (const auto& id : a.restart) (void)launcher_.replaceWorker(name, id);
  // A retired worker that is no member takes SIGTERM as its stop (Note [Elastic membership]).
  for (const auto& id : a.signal) (void)launcher_.killWorker(name, id, SIGTERM);
  return out;
}

Result<int64_t> JobManager::requestCheckpoint(const std::string& name) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  LockedJob job;
  // A finished job (kept in the store) is a conflict; a name never submitted is not found.
  DDP_RETURN_IF_ERROR(live(name, &job));
  return job->requestCheckpoint();
}

Result<CheckpointVerdict> JobManager::reportShard(const std::string& name, int64_t g, int64_t step,
                                                  const ShardReport& report, Fenced* fenced) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  return job->reportShard(g, step, report, fenced);
}

Result<CheckpointVerdict> JobManager::checkpointDecision(const std::string& name, int64_t g, int64_t step) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  return job->checkpointDecision(g, step);
}

Status JobManager::reportCommit(const std::string& name, int64_t g, const CommitReport& report) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  return job->reportCommit(g, report);
}

Result<std::vector<FlightRecordEvent>> JobManager::flightRecords(const std::string& name) {
  // The stored ones (they outlive a controller restart), overridden by this controller's own
  // (newer answers may not be written yet), by verdict time.
  std::map<int64_t, FlightRecordEvent> byTime;
  auto stored = store_.flightRecords(name);
  if (!stored.isOk() && stored.status().code() != StatusCode::kNotFound) return stored.status();
  if (stored.isOk()) {
    for (const std::string& doc : *stored) {
      auto e = decodeFlightRecordEvent(doc);
      if (!e.isOk()) {
        DDP_LOG(Warning) << "job " << name << ": a stored flight record is unreadable: " << e.status().message();
        continue;
      }
      byTime[e->timeMs] = std::move(*e);
    }
  }
  {
    LockedJob job = lockJob(name);
    if (!stored.isOk() && !job) return stored.status();
    if (job) {
      for (const auto& e : job->flight.events) byTime[e.timeMs] = e;
    }
  }
  std::vector<FlightRecordEvent> out;
  for (auto& [t, e] : byTime) out.push_back(std::move(e));
  if (out.size() > kFlightRecordEventsPerJob) out.erase(out.begin(), out.end() - kFlightRecordEventsPerJob);
  return out;
}

// --- the worker side

bool JobManager::workerTokenMatches(const std::string& name, const std::string& token) {
  std::string expected;
  {
    LockedJob job = lockJob(name);
    if (!job) return false;
    expected = job->record.workerToken;
  }
  return secretEquals(expected, token);
}

Result<int64_t> JobManager::registerWorker(const std::string& name, const RegisterRequest& req, Fenced* fenced,
                                           std::string* incarnation) {
  std::string ignored;
  if (req.workerId.empty() || req.workerId.size() > 253) return invalidArgument("workerId: required, at most 253 characters");
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  return job->registerWorker(req, fenced, incarnation != nullptr ? incarnation : &ignored);
}

void JobManager::awaitAssignment(const std::string& name, const std::string& workerId, Duration wait,
                                 bool withPeers, int64_t after, std::shared_ptr<http::Responder> responder,
                                 const std::string& incarnation) {
  LockedJob job = lockJob(name);
  if (!job) return replyJson(*responder, 404, {{"error", "job " + name + " is not running"}});
  job->awaitAssignment(workerId, wait, withPeers, after, std::move(responder), incarnation);
}

Result<std::shared_ptr<comm::KeySpace>> JobManager::keySpace(const std::string& name, int64_t g, Fenced* fenced) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  return job->keySpace(g, fenced);
}

Result<Command> JobManager::heartbeat(const std::string& name, int64_t g, const Heartbeat& hb, Fenced* fenced) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  return job->heartbeat(g, hb, fenced);
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

}  // namespace ddp::controller
