#include "controller/jobs/lifecycle/job_decision.h"

#include <algorithm>

namespace ddp::controller {

std::vector<std::string> workersToKillOnStop(const std::vector<WorkerFacts>& workers, Duration heartbeatWindow,
                                             TimePoint now) {
  std::vector<std::string> out;
  for (const auto& w : workers) {
    // The same comparison as the hang detector's Unresponsive: silent for longer than the window.
    if (w.processAlive && w.outcome == WorkerOutcome::kRunning && now - w.lastSeen > heartbeatWindow) {
      out.push_back(w.id);
    }
  }
  return out;
}

Duration restartBackoff(int restart, Duration base, Duration max) {
  if (restart <= 1) return Duration::zero();
  const Duration doubling = base * (int64_t{1} << std::min(restart - 2, 5));
  return std::min<Duration>(max, doubling);
}

JobVerdict decideJob(const JobFacts& f) {
  JobVerdict v;
  if (isTerminal(f.phase)) return v;
  bool allSucceeded = f.generationActive && !f.members.empty();
  for (const auto& w : f.members) allSucceeded = allSucceeded && w.outcome == WorkerOutcome::kSucceeded;
  if (allSucceeded && f.liveProcesses == 0) {
    // Finished before a late cancel could stop it: the training is complete.
    v.next = JobPhase::kSucceeded;
    v.reason = "JobSucceeded";
    v.message = "every worker finished training";
    return v;
  }
  if (f.cancelRequested) {
    if (f.liveProcesses == 0 && f.suspendRequested) {
      v.next = JobPhase::kSuspended;
      v.reason = "JobSuspended";
      v.message = "the job was suspended; its workers checkpointed and stopped";
    } else if (f.liveProcesses == 0) {
      v.next = JobPhase::kCancelled;
      v.reason = "JobCancelled";
      v.message = "the job was cancelled; its workers stopped";
    }
    return v;
  }
  const WorkerFacts* blamed = nullptr;
  bool waitForExit = false;
  for (const auto& w : f.members) {
    if (w.outcome != WorkerOutcome::kFailed) continue;
    if (w.failureFromExit) {
      if (blamed == nullptr || !blamed->failureFromExit || w.failedAt < blamed->failedAt) blamed = &w;
    } else if (f.now - w.failedAt < f.settle && f.liveProcesses > 0) {
      waitForExit = true;  // Note [Blaming the right rank]
    } else if (blamed == nullptr || (!blamed->failureFromExit && w.failedAt < blamed->failedAt)) {
      blamed = &w;
    }
  }
  if (blamed == nullptr && waitForExit) return v;
  if (blamed != nullptr) {
    v.next = JobPhase::kFailed;
    v.reason = "WorkerFailed";
    v.message = blamed->message.empty() ? "worker " + blamed->id + " failed" : blamed->message;
    v.stopWorkers = true;
    return v;
  }
  if (f.generationActive && !f.members.empty()) {
    bool all = true;
    for (const auto& w : f.members) all = all && w.outcome == WorkerOutcome::kSucceeded;
    if (all) {
      v.next = JobPhase::kSucceeded;
      v.reason = "JobSucceeded";
      v.message = "every worker finished training";
      v.stopWorkers = f.liveProcesses > 0;
      return v;
    }
  }
  if (f.liveProcesses == 0) {
    v.next = JobPhase::kFailed;
    v.reason = "WorkersExited";
    v.message = "every worker process exited before the job finished";
    return v;
  }
  if (f.phase == JobPhase::kPending && f.generationActive) {
    v.next = JobPhase::kRunning;
    v.reason = "JobRunning";
    v.message = "rendezvous closed; the workers are training";
  }
  return v;
}

}  // namespace ddp::controller
