#pragma once
// CheckpointStore: the checkpoint directory of one job (Note [Checkpoint layout] in
// checkpoint_format.h). Pure file I/O; the collective protocol around it lives in
// worker/checkpointing/checkpoint_coordinator.h:
//   start, every rank: checkWritable()       (before training: a read-only mount fails at once)
//   start, rank 0:     checkOwnership(job)   (another job's checkpoints: refused)
//   every rank: writeShard(shard)            (atomic: Note [Atomic file write])
//   barrier (every rank confirms its write)
//   rank 0:     commit(step, world, job)     (reads back and checksums every shard, then writes
//                                             the MANIFEST atomically: the checkpoint is complete)
//   rank 0:     applyRetention(keep, job, step)   (Note [Checkpoint retention])
// On start: rank 0 findLatestComplete() and tells the others the step; each rank readShard().
//
// Note [Checkpoint retention]
// Retention counts only this job's own complete checkpoints (matchJob: same name and spec hash,
// or a version-1 manifest of the same name), newest first by commit time (the manifest's
// createdUnixMs, then the step), with the step just committed always counted first: a resized
// run whose new checkpoints have lower step numbers than the old world size's keeps its own
// newest ones, and the older world size's checkpoints age out as new ones are written. It
// keeps `keep` of them and never deletes the newest (keep <= 0 keeps everything). It never
// touches another job's checkpoints (another name or spec). Incomplete step directories (no
// MANIFEST, a broken one, or a failing shard) that are not another job's are removed when
// their step is below the newest kept checkpoint's: they are dead partials (the directory's
// lock, checkpoint_lock.h, keeps any other job from writing there meanwhile).
//
// Thread model: no shared mutable state; one writer per file (each rank writes its own shard,
// rank 0 the manifest). Methods may be called from any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/checkpoint/checkpoint_format.h"

namespace ddp::runtime {

// What findLatestComplete() found.
struct LatestCheckpoint {
  std::optional<CheckpointManifest> manifest;  // empty: no complete checkpoint
  // One line per newer checkpoint that was skipped, with the reason ("step 40: rank 1 shard:
  // checksum mismatch"). The caller reports them.
  std::vector<std::string> skipped;
};

class CheckpointStore {
 public:
  explicit CheckpointStore(std::string root);

  const std::string& root() const { return root_; }
  std::string stepDir(int64_t step) const;
  std::string shardPath(int64_t step, int rank) const;
  std::string manifestPath(int64_t step) const;

  // Creates the directory and writes, fsyncs and removes a probe file (its name carries
  // `tag`, e.g. the rank, so ranks sharing the directory do not collide). FailedPrecondition
  // naming the directory and the system's reason (e.g. "Permission denied", "Read-only file
  // system", "Not a directory").
  Status checkWritable(const std::string& tag) const;
  // Ok unless a readable MANIFEST in the directory belongs to another job or to this job's
  // name with another spec (Note [Checkpoint job identity]): then FailedPrecondition naming
  // the directory, the step and both jobs. Reads manifests only.
  Status checkOwnership(const JobIdentity& job) const;

  // Writes this rank's shard atomically (creates the step directory); its size and the CRC-32
  // of the file, which the manifest records (the rank's report in the two-phase commit).
  Result<ManifestEntry> writeShard(const CheckpointShard& shard);
  // Rank 0, after every rank's writeShard returned: verifies every shard of `step` (present,
  // decodes, CRC, matching step/rank/world) and writes the MANIFEST last, recording `job`. A
  // missing or bad shard fails the commit (the checkpoint stays incomplete).
  Result<CheckpointManifest> commit(int64_t step, int worldSize, const JobIdentity& job,
                                    int64_t createdUnixMs);
  // Rank 0, phase 2 of the controller's two-phase commit (Note [Two-phase checkpoint commit] in
  // controller/jobs/checkpoints/checkpoint_ledger.h): writes the MANIFEST from the sizes and checksums every
  // rank reported (indexed by rank), after checking that each shard file is there with that
  // size (the full CRC check is verify()'s, on load). DataLoss/NotFound naming the shard.
  Result<CheckpointManifest> commitReported(int64_t step, const std::vector<ManifestEntry>& shards,
                                            const JobIdentity& job, int64_t createdUnixMs);
  // Decodes the MANIFEST of `step` (no shard is read).
  Result<CheckpointManifest> readManifest(int64_t step) const;
  // Checks the manifest and every shard it lists (size + CRC). DataLoss/NotFound say what.
  Result<CheckpointManifest> verify(int64_t step) const;
  // The newest checkpoint that verifies; newer broken/partial ones are listed in `skipped`.
  // `worldSize` (this run's, 0: unknown) does not filter: a checkpoint written at any world
  // size is returned (Note [Checkpoints at any world size] in
  // worker/checkpointing/checkpoint_coordinator.h; manifest->worldSize says which).
  // Any job's: the overload below filters by job.
  Result<LatestCheckpoint> findLatestComplete(int worldSize = 0) const;
  // The same, skipping (with the reason) checkpoints that are not `job`'s own (matchJob).
  Result<LatestCheckpoint> findLatestComplete(int worldSize, const JobIdentity& job) const;
  // Reads and checks one rank's shard against the manifest.
  Result<CheckpointShard> readShard(const CheckpointManifest& manifest, int rank) const;
  // Steps of `job`'s own checkpoints whose MANIFEST reads (shards not read), ascending: the
  // catalog rank 0 reports after retention.
  Result<std::vector<int64_t>> ownCommittedSteps(const JobIdentity& job) const;
  // Steps with a step directory, ascending (complete or not).
  Result<std::vector<int64_t>> listSteps() const;
  // Note [Checkpoint retention]: keeps the `keep` newest of `job`'s own complete checkpoints,
  // `committedStep` (the one just written; -1: none) always among them; removes the older own
  // ones and dead partials; never another job's. keep <= 0 keeps everything.
  Status applyRetention(int keep, const JobIdentity& job, int64_t committedStep = -1) const;

 private:
  Result<LatestCheckpoint> findLatest(int worldSize, const JobIdentity* job) const;

  std::string root_;
};

}  // namespace ddp::runtime
