#pragma once
// CheckpointChannel: a rank's line to whoever decides whether a checkpoint is committed (the
// controller: Note [Two-phase checkpoint commit] in controller/jobs/checkpoint_ledger.h).
// Every rank reports its shard (phase 1); rank 0 asks for the decision and, after writing the
// MANIFEST, reports the commit (phase 2). ControllerClient::checkpointChannel() implements it
// over the controller's worker routes (docs/API.md); tests may implement it in process.
// Thread model: implementations are thread-safe; the checkpoint writer thread calls them.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/checkpoint/checkpoint_catalog.h"
#include "common/checkpoint/checkpoint_format.h"
#include "common/clock.h"
#include "common/status.h"

namespace ddp::runtime {

struct ShardOutcome {
  int rank = 0;
  bool ok = false;
  ManifestEntry entry;         // ok: the shard file's size and CRC-32
  double snapshotSeconds = 0;  // the training thread's stall
  double writeSeconds = 0;     // the background write
  std::string error;           // !ok: why
};

enum class CommitDecisionKind { kPending, kCommit, kAbandon };

struct CommitVerdictWire {
  CommitDecisionKind decision = CommitDecisionKind::kPending;
  std::string reason;                // kAbandon: why
  std::vector<ManifestEntry> shards;  // kCommit: every rank's, by rank
};

struct CommitOutcome {
  bool ok = false;
  std::string error;
  int64_t bytes = 0;
  std::string path;
  double seconds = 0;           // decision -> MANIFEST on disk
  // The job's complete checkpoints after retention; empty when the directory could not be listed
  // (then the controller's catalog is left as it is).
  std::optional<std::vector<int64_t>> onDisk;
  // The same checkpoints with their sizes (Note [Catalog follows the disk]); empty when unknown.
  std::vector<CommittedCheckpoint> onDiskDetail;
};

class CheckpointChannel {
 public:
  virtual ~CheckpointChannel() = default;
  virtual Result<CommitVerdictWire> reportShard(int64_t step, const ShardOutcome& outcome, Deadline deadline) = 0;
  virtual Result<CommitVerdictWire> decision(int64_t step, Deadline deadline) = 0;
  virtual Status reportCommit(int64_t step, const CommitOutcome& outcome, Deadline deadline) = 0;
};

}  // namespace ddp::runtime
