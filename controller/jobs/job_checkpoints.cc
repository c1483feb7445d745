// JobManager: the controller's side of the two-phase checkpoint commit (Note [Two-phase
// checkpoint commit] in checkpoint_ledger.h): phase-1 shard reports, rank 0's question for the
// decision, and its phase-2 commit report, which also reconciles the catalog with the disk.

#include <algorithm>

#include "common/checkpoint/checkpoint_catalog.h"
#include "common/log.h"
#include "controller/jobs/job_live.h"
#include "controller/jobs/job_manager.h"

namespace ddp::controller {

CheckpointLedger& JobManager::ledger(Live& job) {
  if (!job.ledger) {
    LedgerConfig c;
    // Every rank's background write has as long as one collective may take.
    c.commitTimeout = seconds(job.spec.timeouts.collectiveSeconds);
    c.forgetAfter = std::max<Duration>(c.commitTimeout * 2, std::chrono::seconds(60));
    job.ledger.emplace(c);
  }
  return *job.ledger;
}

void JobManager::noteLedgerChanges(Live& job, const std::vector<LedgerChange>& changes) {
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

void JobManager::relearnShardReport(Live& job, int64_t g, const HeartbeatShard& shard) {
  if (!job.rdzv->active() || job.rdzv->active()->generation != g) return;
  if (shard.step <= job.lastCheckpointStep) return;  // committed (the catalog says so)
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

void JobManager::expireCheckpoints(Live& job, TimePoint now) {
  if (!job.ledger) return;
  std::vector<LedgerChange> changes;
  job.ledger->expire(now, &changes);
  noteLedgerChanges(job, changes);
}

Result<CheckpointVerdict> JobManager::reportShard(const std::string& name, int64_t g, int64_t step,
                                                  const ShardReport& report, Fenced* fenced) {
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return notFound("job " + name + " is not running");
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
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return notFound("job " + name + " is not running");
  std::vector<LedgerChange> changes;
  CheckpointVerdict v = ledger(*job).decision(g, step, clock_.now(), &changes);
  noteLedgerChanges(*job, changes);
  return v;
}

Status JobManager::reportCommit(const std::string& name, int64_t g, const CommitReport& report) {
  std::lock_guard<std::mutex> lock(mu_);
  Live* job = find(name);
  if (job == nullptr) return notFound("job " + name + " is not running");
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
  job->pendingCheckpoints.push_back({report.step, wallMs(), report.bytes, world, report.path});
  job->lastCheckpointStep = std::max(job->lastCheckpointStep, report.step);
  if (report.onDisk) {
    std::vector<int64_t> onDisk = *report.onDisk;
    if (std::find(onDisk.begin(), onDisk.end(), report.step) == onDisk.end()) onDisk.push_back(report.step);
    job->pendingCatalog = std::move(onDisk);
    // Note [Catalog follows the disk]: earlier commits a restart kept out of the catalog.
    for (const CheckpointRecord& r : report.onDiskRecords) {
      if (r.step != report.step) job->pendingCheckpoints.push_back(r);
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

void JobManager::noteCheckpointOutcome(Live& job, int64_t step, bool committed, const std::string& reason,
                                       const std::string& message) {
  // Note [Checkpoints failing]: the condition appears with the first failure and turns False at
  // the next commit of a later step (reports arrive out of order: rank 0's commit report of an
  // earlier step can follow a later step's failure); a job whose checkpoints never failed has none.
  if (committed && job.record.findCondition(kConditionCheckpointsFailing) == nullptr) return;
  if (committed && step < job.lastFailedCheckpointStep) return;
  if (!committed) job.lastFailedCheckpointStep = std::max(job.lastFailedCheckpointStep, step);
  job.checkpointFailuresInARow = committed ? 0 : job.checkpointFailuresInARow + 1;
  metrics_.checkpointsFailing(job.record.name, job.checkpointFailuresInARow);
  if (job.record.setCondition(kConditionCheckpointsFailing, !committed, reason, message, wallMs())) job.dirty = true;
}

}  // namespace ddp::controller
