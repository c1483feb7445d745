// Job: its side of the two-phase checkpoint commit (Note [Two-phase checkpoint commit] in
// checkpoint_ledger.h): phase-1 shard reports, rank 0's question for the decision, and its
// phase-2 commit report (the catalog follows the disk); on-demand checkpoint requests. The
// decisions are the CheckpointLedger's; the job's state of them is its CheckpointState (checkpoints/).

#include <algorithm>
#include <cstdio>

#include "common/log.h"
#include "controller/jobs/job.h"

namespace ddp::controller {

CheckpointLedger& Job::ledger() {
  return checkpoints.ledgerFor(spec.timeouts, env.options.timings.checkpointForgetMin);
}

void Job::noteLedgerChanges(const std::vector<LedgerChange>& changes) {
  for (const auto& c : changes) {
    if (c.verdict.decision != CommitDecision::kAbandon) continue;
    const std::string message = "checkpoint at step " + std::to_string(c.step) + " (generation " +
                                std::to_string(c.generation) + ") is not committed: " + c.verdict.reason +
                                "; training goes on and the last committed checkpoint stays the resume point";
    DDP_LOG(Warning) << "job " << record.name << ": " << message;
    event(kEventWarning, "CheckpointAbandoned", message);
    env.metrics.checkpointFailed(record.name);
    noteCheckpointOutcome(c.step, false, "CheckpointAbandoned", message);
  }
}

void Job::relearnShardReport(int64_t g, const LastShardReport& shard) {
  if (!rdzv->active() || rdzv->active()->generation != g) return;
  if (shard.step <= checkpoints.lastStep) return;  // committed (the catalog says so)
  std::vector<LedgerChange> changes;
  ledger().relearn(g, shard.step, rdzv->active()->worldSize(), protocol::shardReportOf(shard.outcome),
                  env.clock.now(), &changes);
  noteLedgerChanges(changes);
}

void Job::expireCheckpoints(TimePoint now) {
  if (!checkpoints.ledger) return;
  std::vector<LedgerChange> changes;
  checkpoints.ledger->expire(now, &changes);
  noteLedgerChanges(changes);
}

Result<CheckpointVerdict> Job::reportShard(int64_t g, int64_t step, const ShardReport& report, Fenced* fenced) {
  if (!rdzv->isCurrent(g) || !rdzv->active()) {
    fenced->current = fencingGeneration(*rdzv);
    return abortedError("stale generation " + std::to_string(g));
  }
  std::vector<LedgerChange> changes;
  std::string problem;
  CheckpointVerdict v = ledger().report(g, step, rdzv->active()->worldSize(), report, env.clock.now(), &changes, &problem);
  noteLedgerChanges(changes);
  if (!problem.empty()) return invalidArgument("checkpoint step " + std::to_string(step) + ": " + problem);
  if (report.ok) {  // ddp_checkpoint_seconds{phase}: one observation per rank and phase
    env.metrics.checkpointPhase(record.name, CheckpointPhase::kSnapshot, report.snapshotSeconds);
    env.metrics.checkpointPhase(record.name, CheckpointPhase::kWrite, report.writeSeconds);
  }
  return v;
}

Result<CheckpointVerdict> Job::checkpointDecision(int64_t g, int64_t step) {
  std::vector<LedgerChange> changes;
  CheckpointVerdict v = ledger().decision(g, step, env.clock.now(), &changes);
  noteLedgerChanges(changes);
  return v;
}

Status Job::reportCommit(int64_t g, const CommitReport& report) {
  const std::string at = "checkpoint at step " + std::to_string(report.step);
  if (!report.ok) {
    const std::string message =
        at + " (generation " + std::to_string(g) + ") is not committed: rank 0 could not write the manifest: " + report.error;
    event(kEventWarning, "CheckpointFailed", message);
    env.metrics.checkpointFailed(record.name);
    noteCheckpointOutcome(report.step, false, "CheckpointFailed", message);
    return Status::ok();
  }
  env.metrics.checkpointPhase(record.name, CheckpointPhase::kCommit, report.seconds);
  env.metrics.checkpointCommitted(record.name, report.bytes);
  const int world = rdzv->active() ? rdzv->active()->worldSize() : spec.workers.count;
  outbox.checkpoints.push_back({report.step, wallMs(), report.bytes, world, report.path});
  checkpoints.noteCommitted(report.step);
  if (report.onDisk) {
    std::vector<int64_t> onDisk = *report.onDisk;
    if (std::find(onDisk.begin(), onDisk.end(), report.step) == onDisk.end()) onDisk.push_back(report.step);
    outbox.catalog = std::move(onDisk);
    // Note [Catalog follows the disk]: earlier commits a restart kept out of the catalog.
    for (const CheckpointRecord& r : report.onDiskRecords) {
      if (r.step != report.step) outbox.checkpoints.push_back(r);
    }
  }
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", report.seconds);
  event(kEventNormal, "CheckpointCommitted",
        at + " committed (" + std::to_string(report.bytes) + " bytes, manifest written " + secs +
            " s after every rank reported)");
  noteCheckpointOutcome(report.step, true, "CheckpointCommitted", at + " committed");
  return Status::ok();
}

void Job::noteCheckpointOutcome(int64_t step, bool committed, const std::string& reason, const std::string& message) {
  // Note [Checkpoints failing] (CheckpointState::noteOutcome).
  const bool shown = record.findCondition(kConditionCheckpointsFailing) != nullptr;
  const std::optional<int> inARow = checkpoints.noteOutcome(step, committed, shown);
  if (!inARow) return;
  env.metrics.checkpointsFailing(record.name, *inARow);
  if (record.setCondition(kConditionCheckpointsFailing, !committed, reason, message, wallMs())) outbox.dirty = true;
}

Result<int64_t> Job::requestCheckpoint() {
  const std::string& name = record.name;
  DDP_RETURN_IF_ERROR(open());
  if (spec.checkpoint.dir.empty() && env.options.workerCheckpointDir.empty()) {
    return failedPrecondition("job " + name + " has no checkpoint directory (spec.checkpoint.dir)");
  }
  if (spec.join.enabled) {
    return failedPrecondition("job " + name + " uses Join: its ranks agree on requests at epoch boundaries only, "
                              "so an on-demand checkpoint is not available");
  }
  if (record.phase != JobPhase::kRunning) {
    return failedPrecondition("job " + name + " is " + jobPhaseName(record.phase) + "; ask again once it runs");
  }
  checkpoints.request(record.progress.step);
  event(kEventNormal, "CheckpointRequested", "checkpoint requested at step " + std::to_string(record.progress.step));
  return record.progress.step;
}

}  // namespace ddp::controller
