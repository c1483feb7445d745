// Suspending and resuming a job (Note [Suspended jobs] in suspension.h): the Job's part (its
// state) and the JobManager's (the registry and the launcher). The stop itself is a cancel's
// (job_stop.cc); decideJob ends it in Suspended.
#include "common/log.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"
#include "controller/jobs/lifecycle/suspension.h"

namespace ddp::controller {

void Job::markSuspended() {
  lifecycle.launched = true;  // evaluated (it stays Suspended), never launched as it is
  lifecycle.cancelRequested = true;
  lifecycle.suspendRequested = true;
  lifecycle.stopSent = true;  // no worker to stop
}

Status Job::storeSuspend(bool suspend, JobStore& store) {
  if (spec.suspend == suspend) return Status::ok();
  JobSpec next = spec;
  next.suspend = suspend;
  const std::string yaml = next.toYaml();
  DDP_RETURN_IF_ERROR(store.updateSpec(record.name, yaml));  // durable before the answer
  spec = std::move(next);
  record.specYaml = yaml;
  return Status::ok();
}

void Job::resumeFrom(Job& old) {
  spec = old.spec;
  record = old.record;
  record.workers.clear();
  record.phase = JobPhase::kPending;
  record.setCondition(kConditionSuspended, false, "JobResumed", "the job was resumed", wallMs());
  openRendezvous(record.generation);  // the generations go on: a worker of before is fenced
  generationStart = env.clock.now();
  checkpoints.lastStep = old.checkpoints.lastStep;
  outbox = std::move(old.outbox);  // what was not written yet goes with it
  outbox.dirty = true;
  env.metrics.jobPhase(record.name, JobPhase::kPending);
  event(kEventNormal, "JobResumed", "the job was resumed: its workers start again and load the last committed checkpoint");
  DDP_LOG(Info) << "job " << record.name << ": resumed (Pending)";
}

Result<JobRecord> JobManager::suspend(const std::string& name) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  Job::CancelActions a;
  Duration grace{};
  JobRecord out;
  {
    LockedJob job;
    DDP_RETURN_IF_ERROR(unfinished(name, &job));
    if (decideSuspension(job->record.phase, job->lifecycle.suspendRequested, true) == SuspendAction::kNone) {
      return job->record;
    }
    if (job->lifecycle.cancelRequested) return failedPrecondition("job " + name + " is being cancelled");
    DDP_RETURN_IF_ERROR(job->storeSuspend(true, store_));
    a = job->cancel(/*suspend=*/true);
    grace = job->cancelStopGrace();
    out = job->record;
  }
  stopForCancel(name, a.stopNow, a.signal, grace);
  return out;
}

Result<JobRecord> JobManager::resume(const std::string& name) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  auto fresh = std::make_shared<Job>(env_);
  {
    LockedJob job;
    DDP_RETURN_IF_ERROR(unfinished(name, &job));
    const bool suspending = job->lifecycle.suspendRequested && job->record.phase != JobPhase::kSuspended;
    if (decideSuspension(job->record.phase, suspending, false) != SuspendAction::kResume) {
      if (!suspending) return job->record;  // not suspended: nothing to do
      return failedPrecondition("job " + name + " is still suspending (its workers are stopping): resume it once "
                                "its phase is Suspended");
    }
    DDP_RETURN_IF_ERROR(job->storeSuspend(false, store_));
    fresh->resumeFrom(*job);  // not shared yet: no lock needed on it
    fresh->lifecycle.launchHeld = true;  // not before the launcher forgot the old workers
    job->removed = true;      // its state is the fresh job's now
    for (auto& [g, space] : job->spaces) space->clear();
    std::lock_guard<std::mutex> lock(jobsMu_);
    jobs_[name] = fresh;
  }
  // The launcher starts the workers anew: the old ones (gone) are forgotten first.
  if (Status st = launcher_.forgetJob(name); !st.isOk()) {
    DDP_LOG(Warning) << "job " << name << ": forgetting its workers before the resume: " << st.toString();
  }
  reconcileNow(fresh);  // Note [Tick actions]: its launch
  std::lock_guard<std::mutex> lock(fresh->mu);
  return fresh->record;
}

}  // namespace ddp::controller
