#pragma once
// CheckpointStore: the checkpoint directory of one job (Note [Checkpoint layout] in
// checkpoint_format.h). Pure file I/O; the collective protocol around it lives in the trainer:
//   every rank: writeShard(shard)            (atomic: Note [Atomic file write])
//   barrier (every rank confirms its write)
//   rank 0:     commit(step, world, job)     (reads back and checksums every shard, then writes
//                                             the MANIFEST atomically: the checkpoint is complete)
//   rank 0:     applyRetention(keep)
// On start: rank 0 findLatestComplete() and tells the others the step; each rank readShard().
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

  // Writes this rank's shard atomically (creates the step directory).
  Status writeShard(const CheckpointShard& shard);
  // Rank 0, after every rank's writeShard returned: verifies every shard of `step` (present,
  // decodes, CRC, matching step/rank/world) and writes the MANIFEST last. A missing or bad
  // shard fails the commit (the checkpoint stays incomplete).
  Result<CheckpointManifest> commit(int64_t step, int worldSize, const std::string& job,
                                    int64_t createdUnixMs);
  // Checks the manifest and every shard it lists (size + CRC). DataLoss/NotFound say what.
  Result<CheckpointManifest> verify(int64_t step) const;
  // The newest checkpoint that verifies; newer broken/partial ones are listed in `skipped`.
  // If worldSize > 0, checkpoints for another world size are skipped too (with the reason).
  Result<LatestCheckpoint> findLatestComplete(int worldSize = 0) const;
  // Reads and checks one rank's shard against the manifest.
  Result<CheckpointShard> readShard(const CheckpointManifest& manifest, int rank) const;
  // Steps with a step directory, ascending (complete or not).
  Result<std::vector<int64_t>> listSteps() const;
  // Keeps the `keep` newest complete checkpoints; removes older ones, and incomplete step
  // directories older than the newest complete one. keep <= 0 keeps everything.
  Status applyRetention(int keep) const;

 private:
  std::string root_;
};

}  // namespace ddp::runtime
