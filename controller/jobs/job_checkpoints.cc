// JobManager: the controller's side of the two-phase checkpoint commit (Note [Two-phase
// checkpoint commit] in checkpoint_ledger.h): phase-1 shard reports, rank 0's question for the
// decision, and its phase-2 commit report, which also reconciles the catalog with the disk; and
// on-demand checkpoint requests. The job's side of it is its CheckpointState (state/).

#include <algorithm>

#include "common/checkpoint/checkpoint_catalog.h"
#include "common/log.h"
#include "controller/jobs/job.h"
#include "controller/jobs/job_manager.h"

namespace ddp::controller {

CheckpointLedger& JobManager::ledger(Job& job) { return job.checkpoints.ledgerFor(job.spec.timeouts); }

void JobManager::noteLedgerChanges(Job& job, const std::vector<LedgerChange>& changes) {
  for (const auto& c : changes) {
    if (c.verdict.decision != CommitDecision::kAbandon) continue;
    const std::string message = "checkpoint at step " + std::to_string(c.step) + " (generation " +
                                std::to_string(c.generation) + ") is not committed: " + c.verdict.reason +
                                "; training goes on and the last committed checkpoint stays the resume point";
    DDP_LOG(Warning) << "job " << job.record.name << ": " << message;
    event(job, kEventWarning, "CheckpointAbandoned", message);
    metrics_.checkpointFailed(job.record.name);
    noteCheckpointOutcome(job, c.step, false, "CheckpointAbandoned", message);
  }
}

void JobManager::relearnShardReport(Job& job, int64_t g, const HeartbeatShard& shard) {
  if (!job.rdzv->active() || job.rdzv->active()->generation != g) return;
  if (shard.step <= job.checkpoints.lastStep) return;  // committed (the catalog says so)
  std::vector<LedgerChange> changes;
  ledger(job).relearn(g, shard.step, job.rdzv->active()->worldSize(), shard.report, clock_.now(), &changes);
  noteLedgerChanges(job, changes);
}

void JobManager::reconcileCatalogs(const std::vector<JobRecord>& records) {
  if (!options_.catalogFromDisk) return;
  for (const JobRecord& rec : records) {
    auto spec = decodeJobSpec(rec.specYaml);
    if (!spec.isOk()) continue;
    const std::string dir = options_.workerCheckpointDir.empty() ? spec->checkpoint.dir : options_.workerCheckpointDir;
    if (dir.empty()) continue;
    auto onDisk = runtime::listCommitted(runtime::CheckpointStore(dir), rec.name);
    if (!onDisk.isOk()) {
      DDP_LOG(Warning) << "job " << rec.name << ": checkpoint catalog not reconciled with " << dir << ": "
                       << onDisk.status().message();
      continue;
    }
    std::vector<int64_t> steps;
    Status st = Status::ok();
    for (const runtime::CommittedCheckpoint& c : *onDisk) {
      steps.push_back(c.step);
      if (st.isOk()) st = store_.addCheckpoint(rec.name, {c.step, c.createdUnixMs, c.bytes, c.worldSize, c.path});
    }
    if (st.isOk()) st = store_.retainCheckpoints(rec.name, steps);
    if (!st.isOk()) DDP_LOG(Warning) << "job " << rec.name << ": checkpoint catalog: " << st.message();
  }
}

void JobManager::expireCheckpoints(Job& job, TimePoint now) {
  if (!job.checkpoints.ledger) return;
  std::vector<LedgerChange> changes;
  job.checkpoints.ledger->expire(now, &changes);
  noteLedgerChanges(job, changes);
}

Result<CheckpointVerdict> JobManager::reportShard(const std::string& name, int64_t g, int64_t step,
                                                  const ShardReport& report, Fenced* fenced) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  if (!job->rdzv->isCurrent(g) || !job->rdzv->active()) {
    fenced->current = fencingGeneration(*job->rdzv);
    return abortedError("stale generation " + std::to_string(g));
  }
  std::vector<LedgerChange> changes;
  std::string problem;
  CheckpointVerdict v =
      ledger(*job).report(g, step, job->rdzv->active()->worldSize(), report, clock_.now(), &changes, &problem);
  noteLedgerChanges(*job, changes);
  if (!problem.empty()) return invalidArgument("checkpoint step " + std::to_string(step) + ": " + problem);
  if (report.ok) {  // ddp_checkpoint_seconds{phase}: one observation per rank and phase
    metrics_.checkpointPhase(name, CheckpointPhase::kSnapshot, report.snapshotSeconds);
    metrics_.checkpointPhase(name, CheckpointPhase::kWrite, report.writeSeconds);
  }
  return v;
}

Result<CheckpointVerdict> JobManager::checkpointDecision(const std::string& name, int64_t g, int64_t step) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  std::vector<LedgerChange> changes;
  CheckpointVerdict v = ledger(*job).decision(g, step, clock_.now(), &changes);
  noteLedgerChanges(*job, changes);
  return v;
}

Status JobManager::reportCommit(const std::string& name, int64_t g, const CommitReport& report) {
  LockedJob job = lockJob(name);
  if (!job) return notFound("job " + name + " is not running");
  const std::string at = "checkpoint at step " + std::to_string(report.step);
  if (!report.ok) {
    const std::string message =
        at + " (generation " + std::to_string(g) + ") is not committed: rank 0 could not write the manifest: " + report.error;
    event(*job, kEventWarning, "CheckpointFailed", message);
    metrics_.checkpointFailed(name);
    noteCheckpointOutcome(*job, report.step, false, "CheckpointFailed", message);
    return Status::ok();
  }
  metrics_.checkpointPhase(name, CheckpointPhase::kCommit, report.seconds);
  metrics_.checkpointCommitted(name, report.bytes);
  const int world = job->rdzv->active() ? job->rdzv->active()->worldSize() : job->spec.workers.count;
  job->outbox.checkpoints.push_back({report.step, wallMs(), report.bytes, world, report.path});
  job->checkpoints.noteCommitted(report.step);
  if (report.onDisk) {
    std::vector<int64_t> onDisk = *report.onDisk;
    if (std::find(onDisk.begin(), onDisk.end(), report.step) == onDisk.end()) onDisk.push_back(report.step);
    job->outbox.catalog = std::move(onDisk);
    // Note [Catalog follows the disk]: earlier commits a restart kept out of the catalog.
    for (const CheckpointRecord& r : report.onDiskRecords) {
      if (r.step != report.step) job->outbox.checkpoints.push_back(r);
    }
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", report.seconds);
  event(*job, kEventNormal, "CheckpointCommitted",
        at + " committed (" + std::to_string(report.bytes) + " bytes, manifest written " + secs +
            " s after every rank reported)");
  noteCheckpointOutcome(*job, report.step, true, "CheckpointCommitted", at + " committed");
  return Status::ok();
}

void JobManager::noteCheckpointOutcome(Job& job, int64_t step, bool committed, const std::string& reason,
                                       const std::string& message) {
  // Note [Checkpoints failing] (CheckpointState::noteOutcome).
  const bool shown = job.record.findCondition(kConditionCheckpointsFailing) != nullptr;
  const std::optional<int> inARow = job.checkpoints.noteOutcome(step, committed, shown);
  if (!inARow) return;
  metrics_.checkpointsFailing(job.record.name, *inARow);
  if (job.record.setCondition(kConditionCheckpointsFailing, !committed, reason, message, wallMs())) job.outbox.dirty = true;
}

Result<int64_t> JobManager::requestCheckpoint(const std::string& name) {
  DDP_RETURN_IF_ERROR(changesAllowed());
  LockedJob job = lockJob(name);
  if (!job) {
    // A finished job (kept in the store) is a conflict; a name never submitted is not found.
    auto rec = store_.get(name);
    if (!rec.isOk()) return rec.status();
    return failedPrecondition("job " + name + " already finished (" + jobPhaseName(rec->phase) + ")");
  }
  if (isTerminal(job->record.phase) || job->lifecycle.cancelRequested) {
    return failedPrecondition("job " + name + " is " +
                              (job->lifecycle.cancelRequested ? "cancelled" : jobPhaseName(job->record.phase)));
  }
  if (job->spec.checkpoint.dir.empty() && options_.workerCheckpointDir.empty()) {
    return failedPrecondition("job " + name + " has no checkpoint directory (spec.checkpoint.dir)");
  }
  if (job->spec.join.enabled) {
    return failedPrecondition("job " + name + " uses Join: its ranks agree on requests at epoch boundaries only, "
                              "so an on-demand checkpoint is not available");
  }
  if (job->record.phase != JobPhase::kRunning) {
    return failedPrecondition("job " + name + " is " + jobPhaseName(job->record.phase) + "; ask again once it runs");
  }
  job->checkpoints.request(job->record.progress.step);
  event(*job, kEventNormal, "CheckpointRequested",
        "checkpoint requested at step " + std::to_string(job->record.progress.step));
  return job->record.progress.step;
}

}  // namespace ddp::controller
